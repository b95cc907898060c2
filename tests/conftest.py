"""Put ``tests/`` on ``sys.path`` so the shared ``helpers`` package imports from every
test directory, under any import mode."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

"""Put ``tests/`` on ``sys.path`` so the shared ``helpers`` package imports under any mode."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent.parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

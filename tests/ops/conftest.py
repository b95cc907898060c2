"""Put ``tests/`` (shared ``helpers``) and this folder (``op_cases``) on ``sys.path``,
so the imports work under any import mode."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parent), str(_HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

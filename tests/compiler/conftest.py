"""Put ``tests/`` and ``tests/ops`` (the op table) on ``sys.path`` for the compiler tests;
their ``compiled`` executor fixture is session-wide (``tests/conftest.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _path in (str(_TESTS), str(_TESTS / "ops")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

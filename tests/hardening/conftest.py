"""Hardening tests: ``tests/``, ``tests/compiler`` and ``tests/passes`` go on ``sys.path``;
the fuzzers' counts are printed in the terminal summary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent, _HERE.parent / "compiler", _HERE.parent / "passes"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from fuzz_report import REPORTS  # noqa: E402


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not REPORTS:
        return
    terminalreporter.section("tidu_compile fuzzing")
    for counts in REPORTS.values():
        terminalreporter.write_line(counts.line())
        for failure in counts.failures[:20]:
            terminalreporter.write_line(f"    FAILED {failure}")

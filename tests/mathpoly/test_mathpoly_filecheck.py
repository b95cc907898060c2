"""``filecheck/expand-math-polynomials.mlir`` through its stock ``// RUN:`` lines (see
``helpers.filecheck``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.filecheck import cases, run


@pytest.mark.parametrize(("path", "command"), cases(Path(__file__).parent / "filecheck"))
def test_filecheck(path: Path, command: str) -> None:
    run(path, command)

"""Every ``filecheck/<name>.mlir`` through its stock ``// RUN:`` lines (``xdsl-opt -p ...
%s | filecheck %s``, see ``helpers.filecheck``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.filecheck import cases, run

HERE = Path(__file__).parent / "filecheck"


@pytest.mark.parametrize(("path", "command"), cases(HERE))
def test_filecheck(path: Path, command: str) -> None:
    run(path, command)


def test_every_tidu_pass_has_a_filecheck_file() -> None:
    names = {p.stem for p in HERE.glob("*.mlir")}
    assert {"tidu-fuse-elementwise", "tidu-lower-to-loops", "tidu-canonicalize"} <= names

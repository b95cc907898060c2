"""Every ``filecheck/<pass-name>.mlir`` through its stock ``// RUN:`` lines
(``xdsl-opt -p ... %s | filecheck %s``, see ``helpers.filecheck``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.filecheck import cases, run
from tidu_compile.passes import get_all_passes

HERE = Path(__file__).parent / "filecheck"


def test_every_backend_pass_has_a_filecheck_file() -> None:
    backend = {
        "convert-arith-to-llvm", "convert-cf-to-llvm", "convert-func-to-llvm",
        "convert-index-to-i64", "convert-math-to-llvm", "convert-memref-to-ptr-fast",
        "convert-ptr-to-llvm-fast",
        "convert-ptradd-to-gep",
    }
    stems = {p.stem for p in HERE.glob("*.mlir")}
    assert stems >= backend and stems <= set(get_all_passes())


@pytest.mark.parametrize(("path", "command"), cases(HERE))
def test_filecheck(path: Path, command: str) -> None:
    run(path, command)

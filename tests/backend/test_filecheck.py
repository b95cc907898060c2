"""Run every ``filecheck/<pass-name>.mlir`` through its ``// RUN:`` pipelines and
FileCheck the printed result against the file itself (see ``helpers.filecheck``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.filecheck import RunLine, check_output, run_lines
from tidu_compile.passes import get_all_passes
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.transforms import get_all_passes as get_xdsl_passes

HERE = Path(__file__).parent / "filecheck"

CASES = [
    pytest.param(path, run, id=f"{path.stem}[{run.prefix}]")
    for path in sorted(HERE.glob("*.mlir"))
    for run in run_lines(path)
]


def test_every_backend_pass_has_a_filecheck_file() -> None:
    backend = {
        "convert-arith-to-llvm", "convert-cf-to-llvm", "convert-func-to-llvm",
        "convert-index-to-i64", "convert-math-to-llvm", "convert-ptr-to-llvm-fast",
        "convert-ptradd-to-gep",
    }
    stems = {p.stem for p in HERE.glob("*.mlir")}
    assert stems >= backend and stems <= set(get_all_passes())


@pytest.mark.parametrize(("path", "run"), CASES)
def test_filecheck(ctx: Context, path: Path, run: RunLine) -> None:
    module = Parser(ctx, path.read_text(), str(path)).parse_module()
    available = {**get_xdsl_passes(), **get_all_passes()}
    PassPipeline.parse_spec(available, run.pipeline).apply(ctx, module)
    module.verify()
    check_output(path, str(module), run.prefix)

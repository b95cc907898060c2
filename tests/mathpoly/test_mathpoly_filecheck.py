"""``filecheck/expand-math-polynomials.mlir`` through its ``// RUN:`` lines (see
``helpers.filecheck``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.filecheck import RunLine, check_output, run_lines
from mathpoly_support import make_context
from tidu_compile.passes import get_all_passes
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.transforms import get_all_passes as get_xdsl_passes

SOURCE = Path(__file__).parent / "filecheck" / "expand-math-polynomials.mlir"


@pytest.mark.parametrize("run", run_lines(SOURCE), ids=lambda r: f"{r.pipeline}[{r.prefix}]")
def test_filecheck(run: RunLine) -> None:
    ctx = make_context()
    module = Parser(ctx, SOURCE.read_text(), str(SOURCE)).parse_module()
    available = {**get_xdsl_passes(), **get_all_passes()}
    PassPipeline.parse_spec(available, run.pipeline).apply(ctx, module)
    module.verify()
    check_output(SOURCE, str(module), run.prefix)

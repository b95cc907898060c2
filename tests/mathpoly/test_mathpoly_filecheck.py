"""``filecheck/expand-math-polynomials.mlir`` through its ``// RUN:`` lines.

A RUN line holds a pass pipeline in ``xdsl-opt -p`` syntax and optionally
``--check-prefix=NAME``; the printed result is checked with the ``filecheck`` tool.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from mathpoly_support import make_context
from tidu_compile.passes import get_all_passes
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.transforms import get_all_passes as get_xdsl_passes

SOURCE = Path(__file__).parent / "filecheck" / "expand-math-polynomials.mlir"
FILECHECK = Path(sys.executable).parent / "filecheck"


def _run_lines() -> list[tuple[str, str]]:
    runs = []
    for line in SOURCE.read_text().splitlines():
        if line.startswith("// RUN:"):
            spec, *flags = shlex.split(line.removeprefix("// RUN:"))
            prefix = next((f.split("=", 1)[1] for f in flags if f.startswith("--check-prefix")),
                          "CHECK")
            runs.append((spec, prefix))
    return runs


@pytest.mark.parametrize(("spec", "prefix"), _run_lines(), ids=lambda v: str(v))
def test_filecheck(spec: str, prefix: str) -> None:
    ctx = make_context()
    module = Parser(ctx, SOURCE.read_text(), str(SOURCE)).parse_module()
    available = {**get_xdsl_passes(), **get_all_passes()}
    PassPipeline.parse_spec(available, spec).apply(ctx, module)
    module.verify()
    result = subprocess.run(
        [str(FILECHECK), str(SOURCE), f"--check-prefix={prefix}"],
        input=str(module), capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, f"{result.stderr}\n--- output ---\n{module}"

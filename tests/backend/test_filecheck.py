"""Run every ``filecheck/<pass-name>.mlir`` through its ``// RUN:`` pipelines.

A RUN line holds a pass pipeline in ``xdsl-opt -p`` syntax and optionally
``--check-prefix=NAME``; the printed result is checked with the ``filecheck``
tool against the file itself.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tidu_compile.passes import get_all_passes
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.transforms import get_all_passes as get_xdsl_passes

HERE = Path(__file__).parent / "filecheck"
FILECHECK = Path(sys.executable).parent / "filecheck"


def _run_lines(path: Path) -> list[tuple[str, str]]:
    runs = []
    for line in path.read_text().splitlines():
        if line.startswith("// RUN:"):
            spec, *flags = shlex.split(line.removeprefix("// RUN:"))
            prefix = next((f.split("=", 1)[1] for f in flags if f.startswith("--check-prefix")),
                          "CHECK")
            runs.append((spec, prefix))
    return runs


CASES = [
    pytest.param(path, spec, prefix, id=f"{path.stem}[{prefix}]")
    for path in sorted(HERE.glob("*.mlir"))
    for spec, prefix in _run_lines(path)
]


def test_every_backend_pass_has_a_filecheck_file() -> None:
    backend = {
        "convert-arith-to-llvm", "convert-cf-to-llvm", "convert-func-to-llvm",
        "convert-index-to-i64", "convert-math-to-llvm", "convert-ptr-to-llvm-fast",
        "convert-ptradd-to-gep",
    }
    stems = {p.stem for p in HERE.glob("*.mlir")}
    assert stems >= backend and stems <= set(get_all_passes())


@pytest.mark.parametrize(("path", "spec", "prefix"), CASES)
def test_filecheck(ctx: Context, path: Path, spec: str, prefix: str) -> None:
    module = Parser(ctx, path.read_text(), str(path)).parse_module()
    available = {**get_xdsl_passes(), **get_all_passes()}
    PassPipeline.parse_spec(available, spec).apply(ctx, module)
    module.verify()
    result = subprocess.run(
        [str(FILECHECK), str(path), f"--check-prefix={prefix}"],
        input=str(module),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{result.stderr}\n--- output ---\n{module}"

"""Run every ``filecheck/<name>.mlir`` through its ``// RUN:`` lines and FileCheck it.

A RUN line is ``// RUN: <pipeline> [flags]`` with the pipeline in ``xdsl-opt -p``
syntax. Flags:

* ``--check-prefix=NAME``: check ``NAME:`` lines instead of ``CHECK:``;
* ``--split-input-file``: run each ``// -----``-separated chunk on its own (the
  outputs are joined by ``// -----``);
* ``--verify-errors``: an exception in a chunk prints ``error: <message>`` as that
  chunk's output instead of failing, so the CHECK lines can match the error text.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tidu_pass_support import parse_module, run_pipeline
from xdsl.context import Context

HERE = Path(__file__).parent / "filecheck"
FILECHECK = Path(sys.executable).parent / "filecheck"
SPLIT = "// -----"


@dataclass(frozen=True)
class Run:
    pipeline: str
    prefix: str = "CHECK"
    split: bool = False
    errors: bool = False


def _runs(path: Path) -> list[Run]:
    runs = []
    for line in path.read_text().splitlines():
        if line.startswith("// RUN:"):
            pipeline, *flags = shlex.split(line.removeprefix("// RUN:"))
            prefix = next(
                (f.split("=", 1)[1] for f in flags if f.startswith("--check-prefix=")), "CHECK"
            )
            runs.append(Run(pipeline, prefix, "--split-input-file" in flags,
                            "--verify-errors" in flags))
    return runs


CASES = [
    pytest.param(path, run, id=f"{path.stem}[{run.prefix}]")
    for path in sorted(HERE.glob("*.mlir"))
    for run in _runs(path)
]


def _output(ctx: Context, path: Path, text: str, run: Run) -> str:
    try:
        module = run_pipeline(ctx, parse_module(ctx, text, str(path)), run.pipeline)
    except Exception as error:  # noqa: BLE001 - printed for FileCheck to match
        if not run.errors:
            raise
        return f"error: {error}"
    return str(module)


@pytest.mark.parametrize(("path", "run"), CASES)
def test_filecheck(ctx: Context, path: Path, run: Run) -> None:
    text = path.read_text()
    chunks = text.split(SPLIT) if run.split else [text]
    output = f"\n{SPLIT}\n".join(_output(ctx, path, chunk, run) for chunk in chunks)
    result = subprocess.run(
        [str(FILECHECK), str(path), f"--check-prefix={run.prefix}"],
        input=output,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{result.stderr}\n--- output ---\n{output}"


def test_every_tidu_pass_has_a_filecheck_file() -> None:
    names = {p.stem for p in HERE.glob("*.mlir")}
    assert {"tidu-fuse-elementwise", "tidu-lower-to-loops", "tidu-canonicalize"} <= names

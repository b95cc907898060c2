"""Run every ``filecheck/<name>.mlir`` through its ``// RUN:`` lines and FileCheck it
(RUN-line flags: see ``helpers.filecheck``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.filecheck import SPLIT, RunLine, check_output, run_lines
from tidu_pass_support import parse_module, run_pipeline
from xdsl.context import Context

HERE = Path(__file__).parent / "filecheck"

CASES = [
    pytest.param(path, run, id=f"{path.stem}[{run.prefix}]")
    for path in sorted(HERE.glob("*.mlir"))
    for run in run_lines(path)
]


def _output(ctx: Context, path: Path, text: str, run: RunLine) -> str:
    try:
        module = run_pipeline(ctx, parse_module(ctx, text, str(path)), run.pipeline)
    except Exception as error:  # noqa: BLE001 - printed for FileCheck to match
        if not run.errors:
            raise
        return f"error: {error}"
    return str(module)


@pytest.mark.parametrize(("path", "run"), CASES)
def test_filecheck(ctx: Context, path: Path, run: RunLine) -> None:
    text = path.read_text()
    chunks = text.split(SPLIT) if run.split else [text]
    output = f"\n{SPLIT}\n".join(_output(ctx, path, chunk, run) for chunk in chunks)
    check_output(path, output, run.prefix)


def test_every_tidu_pass_has_a_filecheck_file() -> None:
    names = {p.stem for p in HERE.glob("*.mlir")}
    assert {"tidu-fuse-elementwise", "tidu-lower-to-loops", "tidu-canonicalize"} <= names

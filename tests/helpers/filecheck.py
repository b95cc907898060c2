"""FileCheck for IR tests: the ``// RUN:`` lines of an ``.mlir`` file, and the check.

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

FILECHECK = Path(sys.executable).parent / "filecheck"
SPLIT = "// -----"


@dataclass(frozen=True)
class RunLine:
    """One ``// RUN:`` line."""

    pipeline: str
    prefix: str = "CHECK"
    split: bool = False
    errors: bool = False


def run_lines(path: Path) -> list[RunLine]:
    """The RUN lines of ``path``, in order."""
    runs = []
    for line in path.read_text().splitlines():
        if line.startswith("// RUN:"):
            pipeline, *flags = shlex.split(line.removeprefix("// RUN:"))
            prefix = next(
                (f.split("=", 1)[1] for f in flags if f.startswith("--check-prefix=")), "CHECK"
            )
            runs.append(RunLine(pipeline, prefix, "--split-input-file" in flags,
                                "--verify-errors" in flags))  # fmt: skip
    return runs


def check_output(path: Path, output: str, prefix: str) -> None:
    """Assert that ``output`` passes the ``prefix`` checks of ``path``."""
    result = subprocess.run(
        [str(FILECHECK), str(path), f"--check-prefix={prefix}"],
        input=output,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{result.stderr}\n--- output ---\n{output}"

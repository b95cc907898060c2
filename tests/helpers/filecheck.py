"""FileCheck IR tests in xDSL's stock form, run exactly as written.

Every ``.mlir`` test file starts with its RUN lines, as in xDSL's own tests::

    // RUN: xdsl-opt -p tidu-fuse-elementwise %s | filecheck %s
    // RUN: xdsl-opt -p "tidu-lower-to-loops{chunked=true}" %s | filecheck %s --check-prefix=C

``run`` executes one through bash (``pipefail`` set, as lit does), ``%s`` being the
file, with this interpreter's ``bin`` directory first on ``PATH``: the stock ``xdsl-opt``
finds our dialect and passes through the ``xdsl.universe`` entry point, so the same
line typed in a shell (with the venv active) runs the same test. ``check_text`` runs
filecheck on IR a test made itself (a loop kernel's, a backward node's).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def run_lines(path: Path) -> list[str]:
    """The commands of the ``// RUN:`` lines of ``path``, in order."""
    prefix = "// RUN:"
    return [line.removeprefix(prefix).strip() for line in path.read_text().splitlines()
            if line.startswith(prefix)]  # fmt: skip


def run(path: Path, command: str) -> None:
    """Run one RUN line on ``path``; fail with its output when it does not pass."""
    script = command.replace("%s", shlex.quote(str(path)))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True,
                          text=True, env=env, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, f"RUN: {command}\n{done.stderr}{done.stdout}"


def check_text(directory: Path, text: str, checks: str) -> None:
    """``filecheck`` of ``text`` (IR made by a test) against ``checks`` (``CHECK:`` lines);
    the two files are written to ``directory``. Fails with filecheck's output."""
    (directory / "input.mlir").write_text(text)
    (directory / "checks").write_text(checks)
    done = subprocess.run([str(BIN / "filecheck"), str(directory / "checks"), "--input-file",
                           str(directory / "input.mlir")], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout


def cases(directory: Path) -> list[object]:
    """One pytest param per RUN line of every ``.mlir`` file in ``directory``."""
    return [
        pytest.param(path, command, id=f"{path.stem}[{index}]")
        for path in sorted(directory.glob("*.mlir"))
        for index, command in enumerate(run_lines(path))
    ]

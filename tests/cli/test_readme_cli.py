"""The README's command-line section shows real output: its ``dump`` and ``passes``
blocks are what the commands print today."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
CLI = [sys.executable, "-m", "tidu_compile.tools.cli"]


def block_after(marker: str) -> str:
    """The text of the first fenced block after ``marker``."""
    start = README.index(marker)
    match = re.compile(r"```[a-z]*\n(.*?)```", re.S).search(README, start)
    assert match is not None, marker
    return match.group(1)


def test_the_dump_example_is_real_output(tmp_path: Path) -> None:
    command = "tidu-compile dump model.py:layer --input x=4x3:f32 --input w=3x5:f32 --stage fused"
    assert f"`{command}`" in README
    model = tmp_path / "model.py"
    model.write_text(block_after("dump` shows what runs"))
    args = command.split()[1:]
    args[1] = f"{model}:layer"
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block_after(f"`{command}`")


def test_the_passes_listing_is_real_output() -> None:
    done = subprocess.run([*CLI, "passes"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block_after("`tidu-compile passes` prints")


def test_the_cache_commands_are_two_commands() -> None:
    assert "cache info | clear" not in README
    assert "tidu-compile cache info " in README and "tidu-compile cache clear " in README

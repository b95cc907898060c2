"""Mistakes the CLI refuses with one line on stderr, exit status 2 and no traceback, and
before doing anything: a target that exits on import, an empty cache directory, an input
too big to allocate, a negative seed, a ``--json`` path that cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "tidu_compile.tools.cli"]

MODEL = """
import tidu_compile as tc

def loss(x):
    return tc.sum(x * x)
"""


def run(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if cache is not None:
        env["TIDU_COMPILE_CACHE_DIR"] = str(cache)
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=env)


def assert_refused(result: subprocess.CompletedProcess[str], text: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("tidu-compile: error: ") and text in lines[0], lines[0]
    assert result.stdout == ""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return path


@pytest.mark.parametrize("code", ["0", "3", "'bye'", ""])
def test_a_target_that_exits_on_import(tmp_path: Path, code: str) -> None:
    path = tmp_path / "exits.py"
    path.write_text(f"import sys\nsys.exit({code})\ndef loss(x):\n    return x\n")
    shown = code or "None"
    assert_refused(run("dump", f"{path}:loss", "--input", "x=3", "--stage", "graph"),
                   f"importing it called sys.exit({shown})")  # fmt: skip


def test_a_target_function_that_exits(tmp_path: Path) -> None:
    path = tmp_path / "exits_later.py"
    path.write_text("import sys\ndef loss(x):\n    sys.exit(0)\n")
    assert_refused(run("dump", f"{path}:loss", "--input", "x=3", "--stage", "graph"),
                   "it called sys.exit(0)")  # fmt: skip


@pytest.mark.parametrize("action", ["clear", "info"])
@pytest.mark.parametrize("directory", ["", "  "])
def test_an_empty_cache_directory_is_refused(tmp_path: Path, action: str, directory: str) -> None:
    """Not read as "the default": the default cache (here TIDU_COMPILE_CACHE_DIR) stays."""
    entry = tmp_path / f"{'a' * 64}.tidu"
    entry.write_bytes(b"x" * 10)
    assert_refused(run("cache", action, "--dir", directory, cache=tmp_path), "an empty path")
    assert entry.exists()
    cleared = run("cache", "clear", cache=tmp_path)  # without --dir: the default, cleared
    assert cleared.returncode == 0 and "removed 1 entries" in cleared.stdout
    assert not entry.exists()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("x=100000000000x100000000:f64", "--input x: 100000000000x100000000 float64 is 69.4 EiB"),
        ("x=70000x70000:f32", "--input x: 70000x70000 float32 is 18.3 GiB"),
        ("x=1073741824x2:c64", "--input x: 1073741824x2 complex64 is 16 GiB"),
    ],
)
def test_an_input_too_big_to_allocate_is_refused_first(
    model: Path, spec: str, message: str
) -> None:
    start = time.perf_counter()
    result = run("dump", f"{model}:loss", "--input", spec, "--stage", "graph")
    assert_refused(result, message)
    assert "more than the 4 GiB an input may have" in result.stderr
    assert time.perf_counter() - start < 60  # nothing was drawn


def test_an_input_at_the_limit_is_accepted_by_the_parser() -> None:
    from tidu_compile.tools.cli import MAX_INPUT_BYTES, CliError, parse_input_spec

    elements = MAX_INPUT_BYTES // 8
    assert parse_input_spec(f"x={elements}:f64") == ("x", (elements,), "float64")
    with pytest.raises(CliError, match="is 4 GiB"):
        parse_input_spec(f"x={elements + 1}:f64")


def test_a_negative_seed_is_refused(model: Path) -> None:
    assert_refused(run("dump", f"{model}:loss", "--input", "x=3", "--stage", "graph",
                       "--seed", "-1"), "--seed -1: a seed is a non-negative integer")  # fmt: skip
    assert_refused(run("dump", "--example", "mlp", "--stage", "graph", "--seed", "-7"),
                   "--seed -7")  # fmt: skip
    assert run("dump", f"{model}:loss", "--input", "x=3", "--stage", "graph",
               "--seed", str(2**70)).returncode == 0  # fmt: skip


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("missing/dir/out.json", "cannot write it: No such file or directory"),
        (".", "a directory, not a file"),
    ],
)
def test_bench_json_that_cannot_be_written_is_refused_before_the_bench(
    tmp_path: Path, where: str, message: str
) -> None:
    """Refused at once: no workload runs (no progress line, no table)."""
    path = tmp_path / where
    result = run("bench", "--quick", "--workload", "W1", "--no-peers", "--json", str(path))
    assert_refused(result, f"--json {path}: {message}")
    assert not (tmp_path / "missing").exists()


def test_bench_negative_seed_is_refused() -> None:
    assert_refused(run("bench", "--quick", "--workload", "W1", "--no-peers", "--seed", "-1"),
                   "--seed -1")  # fmt: skip


def test_a_writable_json_path_is_left_as_it_was(tmp_path: Path) -> None:
    """The check writes nothing: a new path is not left behind, an old file keeps its text."""
    import argparse

    from tidu_compile.tools.bench.main import check_options

    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("kept")
    check_options(argparse.Namespace(seed=0, json=str(new)))
    check_options(argparse.Namespace(seed=0, json=str(old)))
    assert not new.exists() and old.read_text() == "kept"

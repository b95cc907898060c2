"""``tidu-compile bench`` end to end on small workloads (no speed assertions)."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tidu_compile.tools.bench import main as bench_main
from tidu_compile.tools.bench.peers import peer_installed, run_peer
from tidu_compile.tools.bench.report import BACKWARD_TITLE, STEP_TITLE
from tidu_compile.tools.bench.timing import Policy
from tidu_compile.tools.bench.workloads import find_workload

CLI = [sys.executable, "-m", "tidu_compile.tools.cli", "bench"]


def args(**overrides: Any) -> argparse.Namespace:
    defaults = {"quick": True, "workload": None, "repeat": None, "json": None,
                "no_peers": True, "seed": 0}  # fmt: skip
    return argparse.Namespace(**{**defaults, **overrides})


#: The rows of ``bench --quick`` run here (the n = 1e5 and 1e6 ones would take 20 s more
#: of the suite): per-op and composite, f64 and f32.
QUICK_ROWS = ("W1 n=1e3", "W1 n=1e3 composite", "W1 f32 n=1e5 composite")


@pytest.fixture(scope="module")
def quick_w1(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                                 dict[str, Any]]:  # fmt: skip
    out = tmp_path_factory.mktemp("bench") / "out.json"
    done = subprocess.run(
        [*CLI, "--quick", "--workload", ",".join(QUICK_ROWS), "--no-peers", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done, json.loads(out.read_text())


def test_quick_w1_json_structure(quick_w1: tuple[Any, dict[str, Any]]) -> None:
    _, document = quick_w1
    assert document["passed"] is True and document["failures"] == []
    assert {"machine", "options", "peers", "workloads", "process_warmup_seconds"} <= set(document)
    assert document["options"]["quick"] is True
    assert document["peers"]["torch"]["status"] == "disabled"
    rows = document["workloads"]
    assert [r["workload"] for r in rows] == list(QUICK_ROWS)
    for row in rows:
        assert row["status"] == "ok"
        for column in ("tidu", "tidu_step", "numpy", "numpy_step"):
            timing = row[column]
            assert timing["runs"] >= 3
            assert 0 < timing["min"] <= timing["median"] <= timing["max"]
        assert row["grad_check"]["passed"] is True
        assert set(row["grad_check"]["errors"]) == {"x", "y"}
        assert row["grad_check"]["rtol"] == (1e-3 if "f32" in row["workload"] else 1e-6)
        assert row["ratios"]["numpy"] == pytest.approx(
            row["tidu"]["median"] / row["numpy"]["median"])
        assert row["ratios"]["torch"] is None and row["ratios"]["jax"] is None
        assert row["step_ratios"]["torch"] is None and row["step_ratios"]["jax"] is None
        assert row["step_ratios"]["numpy"] == pytest.approx(  # W1: numpy's step by hand
            row["tidu_step"]["median"] / row["numpy_step"]["median"])
        compile_ = row["compile"]
        assert compile_["compiles"] >= 1
        assert compile_["cold_seconds"] >= 0 and compile_["compile_seconds"] > 0
        assert compile_["per_node_seconds"] == pytest.approx(
            compile_["compile_seconds"] / compile_["compiles"])
        assert isinstance(compile_["stage_seconds"], dict)
        warm = compile_["warm_disk"]
        assert "error" not in warm, warm
        assert warm["stats"]["disk_hits"] >= 1 and warm["stats"]["compiles"] == 0
        assert compile_["warm_disk_seconds"] >= 0
        assert warm["stats"]["disk_seconds"] > 0
        assert compile_["disk_load_per_node_seconds"] == pytest.approx(
            warm["stats"]["disk_seconds"] / warm["stats"]["disk_hits"])


def test_quick_w1_table_and_progress(quick_w1: tuple[Any, dict[str, Any]]) -> None:
    done, _ = quick_w1
    out = done.stdout
    for text in ("workload", "tidu median [min-max]", "tidu/numpy", "tidu/torch", "tidu/jax",
                 "W1 n=1e3", "compile (tidu", "disk/node", "machine:", "cores", "LLVM: ",
                 "-bit vectors", "W1 f32 n=1e5 composite"):  # fmt: skip
        assert text in out, text
    # Both tables say what they compare.
    assert BACKWARD_TITLE in out and STEP_TITLE in out
    assert "jitted vjp_fn holding jax's residuals" in BACKWARD_TITLE
    assert "jax.jit(jax.value_and_grad)" in STEP_TITLE
    step_table = out[out.index(STEP_TITLE):out.index("compile (tidu")]
    assert "W1 n=1e3 composite" in step_table
    assert "FAIL" not in out
    assert "[1/" in done.stderr and "W1 n=1e3 tidu..." in done.stderr


def test_unknown_workload_is_a_usage_error() -> None:
    done = subprocess.run([*CLI, "--workload", "W9", "--no-peers"], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2
    assert "W9" in done.stderr and "Traceback" not in done.stderr


def test_composite_row_is_na_without_the_decorator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_main, "_composite_available", lambda: False)
    document = bench_main.run(args(workload="W2 1000 ops composite"), io.StringIO())
    (row,) = document["workloads"]
    assert row["status"] == "n/a"
    assert row["note"] == "n/a (composite recording not available)"
    assert row["numpy"]["runs"] >= 3 and row["tidu"] is None
    assert document["passed"] is True


def test_gradient_mismatch_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = find_workload("W1 n=1e3")

    def wrong_backward(saved: Any) -> list[np.ndarray]:
        dx, dy = real.numpy_backward(saved)
        return [dx * 1.01, dy]

    broken = dataclasses.replace(real, numpy_backward=wrong_backward)
    monkeypatch.setattr(bench_main, "select_workloads", lambda spec, quick: [broken])
    out = tmp_path / "fail.json"
    status = bench_main.command(args(repeat=2, json=str(out)))
    assert status == 1
    document = json.loads(out.read_text())
    (row,) = document["workloads"]
    assert row["status"] == "FAIL" and document["passed"] is False
    assert row["grad_check"]["errors"]["y"] <= 1e-6 < row["grad_check"]["errors"]["x"]
    captured = capsys.readouterr()
    assert "GRADIENT CHECK FAILED" in captured.out and "FAIL W1 n=1e3" in captured.err


@pytest.mark.skipif(not (peer_installed("torch") and peer_installed("jax")),
                    reason="torch and jax not installed")  # fmt: skip
def test_peers_in_subprocesses() -> None:
    started: list[str] = []
    workloads = [find_workload("W1 n=1e3"), find_workload("W3 f32")]
    for peer in ("torch", "jax"):
        outcome = run_peer(peer, workloads, Policy.fixed(2), 0, on_start=started.append)
        assert outcome["error"] is None, outcome
        assert outcome["info"]["version"]
        for key in ("W1 n=1e3", "W3 f32"):
            result = outcome["results"][key]
            assert result["grad_ok"] is True, result
            assert result["timing"]["runs"] == 2 and result["step_timing"]["runs"] == 2
            assert result["timing"]["runs"] == 2
    assert started == ["W1 n=1e3", "W3 f32"] * 2


def test_bench_times_native_code_not_the_background_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Warm timings must be of compiled code and "cold" the compile itself: the bench
    compiles on the calling thread whatever the user's default."""
    from tidu_compile.tools.bench import kernels

    monkeypatch.setenv("TIDU_COMPILE_BACKGROUND", "1")
    monkeypatch.setattr(kernels, "command", lambda args: 0)
    assert bench_main.command(argparse.Namespace(kernels=True)) == 0
    assert os.environ["TIDU_COMPILE_BACKGROUND"] == "0"

"""``tidu-compile bench --compile``: the child measures a compiled first forward +
backward (every stage timed, gradients equal to the reference's, nothing on the
reference path), and the table prints what the document holds."""

from __future__ import annotations

import argparse

import pytest
from tidu_compile.tools.bench import compile_time
from tidu_compile.tools.bench.main import BenchError, check_options


def test_a_quick_run_compiles_and_checks_its_gradients() -> None:
    document = compile_time.run(compile_time.QUICK_SIZES, timeout=300, peers=False)
    (row,) = document["rows"]
    ours, fused = row["tidu"], row["tidu_fused"]
    for cell in (ours, fused):
        assert "error" not in cell, cell
        assert cell["fallbacks"] == 0 and cell["compiles"] >= 1
        assert cell["relative_error"] <= 1e-12
        # the executor's walk writes llvm-ir straight from the kernels (no ``llvm`` stage)
        assert {"tidu", "fused", "loops", "kernels", "llvm-ir", "opt-ir", "codegen"} == set(
            cell["stages"])
        assert cell["cpu_seconds"] > 0 and cell["seconds"] > 0
    assert fused["compiles"] == 1  # value_and_grad: one program from the first call
    assert ours["compiles"] == 1  # the tape's path: the joint forward, loss and gradient
    table = compile_time.format_compile(document)
    line = table.splitlines()[-1]
    assert line.startswith(f"{compile_time.QUICK_SIZES[0]:>6}  {compile_time._cell(ours)} ")
    assert f" {compile_time._cell(fused)} " in line


def test_a_peer_past_the_timeout_is_reported_as_stopped() -> None:
    result = compile_time._measure("tidu", 3200, timeout=0.5)
    assert result == {"error": "more than 0 s (stopped)"}


def test_the_ratio_columns() -> None:
    document = {"cpu": "x", "elements": 64, "rows": [{
        "ops": 100, "tidu": {"seconds": 1.0, "cpu_seconds": 0.5, "stages": {"llvm": 0.25}},
        "tidu_fused": {"seconds": 0.5, "cpu_seconds": 0.4, "stages": {"llvm": 0.125}},
        "jax": {"seconds": 2.0, "cpu_seconds": 2.0}}]}  # fmt: skip
    line = compile_time.format_compile(document).splitlines()[-1]
    assert "  0.50  0.25  0.25  0.20  llvm 0.12" in line


def test_a_timeout_of_zero_is_a_usage_mistake() -> None:
    with pytest.raises(BenchError, match="--compile-timeout"):
        check_options(argparse.Namespace(seed=0, json=None, compile_timeout=0.0))

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
    ours = row["tidu"]
    assert "error" not in ours, ours
    assert ours["fallbacks"] == 0 and ours["compiles"] >= 1
    assert ours["relative_error"] <= 1e-12
    assert {"tidu", "fused", "loops", "llvm", "opt-ir", "codegen"} <= set(ours["stages"])
    assert ours["cpu_seconds"] > 0 and ours["seconds"] > 0
    table = compile_time.format_compile(document)
    assert f"{compile_time.QUICK_SIZES[0]:>6}  {ours['seconds']:.2f} s" in table


def test_a_peer_past_the_timeout_is_reported_as_stopped() -> None:
    result = compile_time._measure("tidu", 3200, timeout=0.5)
    assert result == {"error": "more than 0 s (stopped)"}


def test_the_ratio_columns() -> None:
    document = {"cpu": "x", "elements": 64, "rows": [{
        "ops": 100, "tidu": {"seconds": 1.0, "cpu_seconds": 0.5, "stages": {"llvm": 0.25}},
        "jax": {"seconds": 2.0, "cpu_seconds": 2.0}}]}  # fmt: skip
    line = compile_time.format_compile(document).splitlines()[-1]
    assert "  0.50  0.25  llvm 0.25" in line


def test_a_timeout_of_zero_is_a_usage_mistake() -> None:
    with pytest.raises(BenchError, match="--compile-timeout"):
        check_options(argparse.Namespace(seed=0, json=None, compile_timeout=0.0))

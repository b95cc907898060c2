"""``tidu-compile bench --per-example`` checks every per-example gradient against the
hand-written ones and prints the table (no speed assertions)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from tidu_compile.tools.bench import main, per_example


def test_per_example_bench_runs_checks_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "per_example.json"
    args = argparse.Namespace(kernels=False, hvp=False, per_example=True, quick=True,
                              json=str(out))  # fmt: skip
    assert main.command(args) == 0
    document = json.loads(out.read_text())
    assert document["rows"][0]["name"] == "tidu vmap(grad)"
    assert all(row["relative_error"] < 1e-10 and row["seconds"] > 0 for row in document["rows"])
    assert "per-example gradients" in capsys.readouterr().out


def test_the_hand_gradients_are_the_loop_of_per_example_gradients() -> None:
    """The check's reference is right: it equals a loop of ``func.grad`` per example."""
    import tidu_compile as tc
    from tidu_compile import func

    params, x, y = per_example._inputs(3, np.random.default_rng(2))
    expected = per_example._expected(params, x, y)

    def loss(p, xi, yi):  # type: ignore[no-untyped-def]
        w1, b1, w2, b2 = p
        return tc.sum((tc.tanh(xi @ w1 + b1) @ w2 + b2 - yi) ** 2)

    for b in range(3):
        for got, e in zip(func.grad(loss)(params, x[b], y[b]), expected, strict=True):
            np.testing.assert_allclose(got.numpy(), e[b], rtol=1e-12)

"""``tidu-compile bench --train``: each runner trains in a fresh process from a cold
cache; the losses are checked against SGD written by hand in numpy (no speed assertions)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from tidu_compile.tools.bench import main, train, train_mlp

from tidu_compile.frontend import native_elementwise


def _numpy_losses(steps: int) -> list[float]:
    """The same SGD by hand: ``loss = sum((tanh(X@W1 + b1)@W2 + b2 - Y)**2)``."""
    params, x, y = train.make_data(0)
    losses = []
    for xb, yb in train.batches(x, y, steps):
        w1, b1, w2, b2 = params
        h = np.tanh(xb @ w1 + b1)
        r = h @ w2 + b2 - yb
        losses.append(float(np.sum(r * r)))
        dr = 2 * r
        dz = (dr @ w2.T) * (1 - h * h)
        grads = [xb.T @ dz, dz.sum(0), h.T @ dr, dr.sum(0)]
        params = [p - train.LEARNING_RATE * g for p, g in zip(params, grads, strict=True)]
    return losses


def test_batches_cycle_through_the_sizes() -> None:
    _, x, y = train.make_data(0)
    sizes = [len(xb) for xb, _ in train.batches(x, y, 7)]
    assert sizes == [256, 200, 128, 64, 33, 256, 200]


@pytest.mark.parametrize("runner", ["tidu per-op", "tidu @tc.function"])
def test_tidu_trains_like_sgd_by_hand(runner: str) -> None:
    steps = 6
    result = train.train(runner, steps)
    expected = _numpy_losses(steps)
    assert result["first_loss"] == pytest.approx(expected[0], rel=1e-4)
    assert result["final_loss"] == pytest.approx(expected[-1], rel=1e-3)
    assert result["final_loss"] < result["first_loss"]
    # the sixth step repeats the first batch size: nothing new to compile but, per-op, the
    # tape's whole-backward program (its first backward ran node by node: executors.capture)
    # and the eager tanh's one-op program (256 x 512 elements, from the second sighting of
    # its shape on: frontend.native_elementwise; at step 1 if another test saw it first)
    assert 256 * train.HIDDEN >= native_elementwise.NATIVE_ELEMENTS
    extra = 2 if runner == "tidu per-op" else 0
    assert result["compiles"] <= result["compiles_after_first_cycle"] + extra


def test_train_bench_runs_fresh_processes_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "train.json"
    args = argparse.Namespace(kernels=False, hvp=False, train=True, quick=True, seed=0,
                              json=str(out))  # fmt: skip
    assert main.command(args) == 0
    document = json.loads(out.read_text())
    rows = {row["runner"]: row for row in document["rows"]}
    assert {"tidu per-op", "tidu @tc.function", "tidu @tc.function, blocking"} <= set(rows)
    expected = _numpy_losses(train.QUICK_STEPS)[-1]
    for row in rows.values():
        assert row["loss_agrees"] and row["final_loss"] == pytest.approx(expected, rel=1e-3)
        assert row["seconds"] > 0
    # a cold cache: the blocking runner compiles before it runs; the others run nodes on
    # the reference path while workers compile
    assert rows["tidu @tc.function, blocking"]["compiles"] > 0
    assert rows["tidu @tc.function, blocking"]["reference_runs"] == 0
    assert rows["tidu per-op"]["compiles"] + rows["tidu per-op"]["reference_runs"] > 0
    printed = capsys.readouterr().out
    assert "--train" in printed and "tidu @tc.function" in printed
    _check_mlp_row(document["mlp"])
    assert "784-256-10" in printed


def _check_mlp_row(document: dict) -> None:
    """The 784-256-10 row: torch eager (when installed), per-op and @tc.function, cold and
    warm, in one child with every thread pool pinned to one thread; per-op's warm phase
    runs its captured whole-backward program."""
    assert "error" not in document
    rows = {row["runner"]: row for row in document["rows"]}
    assert {"tidu per-op", "tidu @tc.function"} <= set(rows)
    assert all(document["machine"][v] == "1" for v in train_mlp.THREAD_VARIABLES)
    # cold means the default background compiles, though the bench (and this suite) set 0
    assert document["machine"]["TIDU_COMPILE_BACKGROUND"] == "1"
    per_op, function = rows["tidu per-op"], rows["tidu @tc.function"]
    assert per_op["captured"] == 1 and per_op["fallbacks"] == 0
    assert per_op["final_loss"] == pytest.approx(function["final_loss"], rel=1e-4)
    assert all(row["cold"] > 0 and row["warm"] > 0 for row in rows.values())
    if "torch eager" in rows:
        assert rows["torch eager"]["final_loss"] == pytest.approx(per_op["final_loss"], rel=1e-4)
        assert document["machine"]["torch_threads"] == 1


def test_a_failing_runner_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that prints no result becomes an error row, and the command fails."""
    monkeypatch.setattr(train, "RUNNERS", ("tidu per-op", "no such runner"))
    document = train.run(steps=1)
    rows = {row["runner"]: row for row in document["rows"]}
    assert "error" in rows["no such runner"]
    assert "error" in train.format_train(document)


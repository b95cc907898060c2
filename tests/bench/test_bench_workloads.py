"""The hand-written numpy backward functions, checked against the ReferenceExecutor."""

from __future__ import annotations

import numpy as np
import pytest
from tidu_compile.tools.bench.row import COMPOSITE_UNAVAILABLE, Workload, relative_errors
from tidu_compile.tools.bench.workloads import (
    all_workloads,
    find_workload,
    make_w1,
    make_w2,
    make_w3,
    make_w4,
    select_workloads,
    w2_ops,
)

import tidu_compile as tc

SMALL = [
    make_w1(50),
    make_w1(50, dtype="float32"),
    make_w2(31),
    make_w2(32),
    make_w3("float64", batch=6, features=5, hidden=4, outputs=3),
    make_w3("float32", batch=6, features=5, hidden=4, outputs=3),
    make_w4(7, 5),
]


def reference_gradients(workload: Workload, arrays: list[np.ndarray]) -> list[np.ndarray]:
    tensors = [tc.tensor(a, requires_grad=i in workload.grad_inputs)
               for i, a in enumerate(arrays)]  # fmt: skip
    loss = workload.tidu_loss(*tensors)
    wrt = [tensors[i] for i in workload.grad_inputs]
    grads = tc.grad(loss, wrt, executor=tc.ReferenceExecutor())
    assert all(g is not None for g in grads)
    return [np.asarray(g) for g in grads]


@pytest.mark.parametrize("workload", SMALL, ids=lambda w: w.key)
def test_hand_gradients_match_reference_executor(workload: Workload) -> None:
    arrays = workload.make_inputs(3)
    hand = workload.numpy_gradients(arrays)
    want = reference_gradients(workload, arrays)
    assert len(hand) == len(want) == len(workload.grad_inputs)
    for name, h, w in zip(workload.grad_names, hand, want, strict=True):
        assert h.shape == w.shape, name
        assert h.dtype == np.dtype(workload.dtype), name
    errors = relative_errors(hand, want)
    assert max(errors) <= workload.rtol, dict(zip(workload.grad_names, errors, strict=True))


def test_hand_gradient_w1_against_finite_differences() -> None:
    workload = make_w1(4)
    x, y = workload.make_inputs(0)

    def loss(x: np.ndarray, y: np.ndarray) -> float:
        return float(np.sum(np.tanh(x * y + np.exp(-x)) * y))

    dx, dy = workload.numpy_gradients([x, y])
    step = 1e-6
    for i in range(4):
        e = np.zeros(4)
        e[i] = step
        assert dx[i] == pytest.approx((loss(x + e, y) - loss(x - e, y)) / (2 * step), rel=1e-5)
        assert dy[i] == pytest.approx((loss(x, y + e) - loss(x, y - e)) / (2 * step), rel=1e-5)


def test_inputs_are_deterministic() -> None:
    workload = make_w3("float32", batch=4, features=3, hidden=3, outputs=2)
    first, second = workload.make_inputs(11), workload.make_inputs(11)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert all(a.dtype == np.float32 for a in first)
    assert not np.array_equal(first[0], workload.make_inputs(12)[0])


def test_w2_op_sequence() -> None:
    assert w2_ops(7) == ["mul", "add", "sin", "mul", "add", "sin", "mul"]
    assert len(w2_ops(1000)) == 1000


def test_composite_row_shares_the_per_op_problem() -> None:
    per_op, composite = make_w2(10), make_w2(10, composite=True)
    assert composite.problem == per_op.problem == per_op.key
    assert composite.recording == "composite" and composite.key != per_op.key


def test_composite_reports_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(tc, "function", raising=False)
    workload = make_w2(4, composite=True)
    tensors = [tc.tensor(a, requires_grad=True) for a in workload.make_inputs(0)]
    with pytest.raises(NotImplementedError, match="composite recording not available"):
        workload.tidu_loss(*tensors)
    assert "n/a" in COMPOSITE_UNAVAILABLE


def test_suite_and_selection() -> None:
    full, quick = all_workloads(), all_workloads(quick=True)
    assert [w.key for w in full][:4] == ["W1 n=1e3", "W1 n=1e5", "W1 n=1e6", "W1 n=1e7"]
    assert "W1 n=1e7" not in {w.key for w in quick}
    assert {w.group for w in full} == {"W1", "W2", "W3", "W4", "W5", "W6", "W7"}
    assert {w.key for w in select_workloads("W1,w3", quick=True)} == {
        "W1 n=1e3", "W1 n=1e5", "W1 n=1e6", "W3 f32", "W3 f64",
        "W1 n=1e3 composite", "W1 n=1e5 composite", "W1 n=1e6 composite",
        "W1 f32 n=1e5", "W1 f32 n=1e5 composite",
        "W3 f32 composite", "W3 f64 composite"}  # fmt: skip
    assert {w.key for w in full if w.dtype == "float32" and w.group == "W1"} == {
        f"W1 f32 n=1e{k}{c}" for k in (5, 6, 7) for c in ("", " composite")}  # fmt: skip
    composite = {w.key: w for w in full if w.recording == "composite"}
    assert {w.problem for w in composite.values()} <= {w.key for w in full}
    assert [w.key for w in select_workloads("W3 f32")] == ["W3 f32"]
    assert find_workload("W4 500x500").size == 500
    with pytest.raises(ValueError, match="W9"):
        select_workloads("W1,W9")
    with pytest.raises(KeyError):
        find_workload("nope")


def test_relative_errors() -> None:
    want = [np.array([1.0, -4.0]), np.zeros(2)]
    assert relative_errors([np.array([1.0, -4.0]), np.zeros(2)], want) == [0.0, 0.0]
    errors = relative_errors([np.array([1.0, -3.0]), np.array([0.0, 1e-3])], want)
    assert errors == [pytest.approx(0.25), pytest.approx(1e-3)]
    assert relative_errors([None, np.zeros(3)], want) == [float("inf"), float("inf")]
    assert np.isnan(relative_errors([np.array([np.nan, 0.0])], want[:1])[0])


@pytest.mark.parametrize("workload", [w for w in SMALL if w.numpy_step], ids=lambda w: w.key)
def test_numpy_step_gives_the_loss_and_the_hand_gradients(workload: Workload) -> None:
    arrays = workload.make_inputs(4)
    assert workload.numpy_step is not None
    loss, *grads = workload.numpy_step(*arrays)
    tensors = [tc.tensor(a) for a in arrays]
    assert float(loss) == pytest.approx(workload.tidu_loss(*tensors).item(), rel=1e-5)
    assert max(relative_errors(grads, workload.numpy_gradients(arrays))) <= workload.rtol

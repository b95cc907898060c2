"""Composite recording with ``tidu_compile.function``: one tape node per call."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

REFERENCE = tc.ReferenceExecutor()


def w1(x: tc.Tensor, y: tc.Tensor) -> tc.Tensor:
    return tc.sum(tc.tanh(x * y + tc.exp(-x)) * y)


def mlp(x: tc.Tensor, w: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
    return tc.mean((tc.tanh(x @ w + b) - 0.5) ** 2)


def inputs(*shapes: tuple[int, ...], seed: int = 0, dtype: type = np.float64) -> list[tc.Tensor]:
    rng = np.random.default_rng(seed)
    return [tc.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in shapes]


@pytest.mark.parametrize("executor", [REFERENCE, CompiledExecutor(False)], ids=["ref", "compiled"])
@pytest.mark.parametrize(
    ("fn", "shapes"), [(w1, [(50,), (50,)]), (mlp, [(6, 4), (4, 3), (3,)])], ids=["w1", "mlp"]
)
def test_composite_gradients_equal_per_op_gradients(executor, fn, shapes) -> None:  # type: ignore[no-untyped-def]
    composite = tc.function(fn)
    args = inputs(*shapes)
    loss = composite(*args)
    assert loss._trace is not None and len(loss._trace.graph.graph.operations) > 3
    per_op = fn(*args)
    assert loss.item() == pytest.approx(per_op.item(), rel=1e-14)
    got = tc.grad(loss, args, executor=executor)
    want = tc.grad(per_op, args, executor=REFERENCE)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_replay_reuses_the_trace_and_new_shapes_retrace() -> None:
    calls = []

    @tc.function
    def f(x: tc.Tensor) -> tc.Tensor:
        calls.append(x.shape)
        return tc.sum(tc.sin(x) * 2.0)

    for seed in range(3):
        (x,) = inputs((5,), seed=seed)
        loss = f(x)
        np.testing.assert_allclose(tc.grad(loss, [x])[0], 2 * np.cos(x.numpy()), rtol=1e-12)
    assert calls == [(5,)]  # traced once, replayed twice
    (x,) = inputs((7,))
    f(x)
    (x32,) = inputs((7,), dtype=np.float32)
    f(x32)
    assert calls == [(5,), (7,), (7,)] and len(f.traces) == 3


def test_second_iteration_compiles_nothing() -> None:
    executor = CompiledExecutor(False)
    composite = tc.function(w1)
    for seed in range(3):
        x, y = inputs((64,), (64,), seed=seed)
        tc.grad(composite(x, y), [x, y], executor=executor)
        executor.forbid_compile = True
    assert executor.stats.compiles == 1  # one node, one kernel program


def test_multiple_outputs_and_non_tensor_arguments() -> None:
    @tc.function
    def f(x: tc.Tensor, scale: float) -> tuple[tc.Tensor, tc.Tensor]:
        s, c = tc.sincos(x * scale)
        return tc.sum(s), tc.sum(c * c)

    (x,) = inputs((4,))
    s, c = f(x, 3.0)
    assert s._trace is c._trace
    gs = tc.grad(s, [x])[0]
    np.testing.assert_allclose(gs, 3 * np.cos(3 * x.numpy()), rtol=1e-12)
    gc = tc.grad(c, [x])[0]
    np.testing.assert_allclose(gc, -3 * np.sin(6 * x.numpy()), rtol=1e-12)
    _, c2 = f(x, 2.0)
    np.testing.assert_allclose(tc.grad(c2, [x])[0], -2 * np.sin(4 * x.numpy()), rtol=1e-12)
    assert len(f.traces) == 2


def test_closed_over_arrays_are_constants_and_tensors_needing_grad_are_errors() -> None:
    weights = np.arange(4.0)

    @tc.function
    def f(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(x * weights)

    (x,) = inputs((4,))
    np.testing.assert_allclose(tc.grad(f(x), [x])[0], weights)
    (w,) = inputs((4,))

    @tc.function
    def g(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(x * w)

    with pytest.raises(TypeError, match="pass it as an argument"):
        g(x)


def test_no_grad_and_constant_inputs_run_eagerly() -> None:
    composite = tc.function(w1)
    x, y = inputs((3,), (3,))
    with tc.no_grad():
        assert not composite(x, y).requires_grad
    plain = tc.tensor(np.ones(3))
    assert not composite(plain, plain).requires_grad
    assert composite.traces == {}


def test_bad_results_and_unhashable_arguments() -> None:
    @tc.function
    def returns_array(x: tc.Tensor) -> np.ndarray:
        return np.ones(3)

    @tc.function
    def takes_list(x: tc.Tensor, items: list[int]) -> tc.Tensor:
        return tc.sum(x)

    (x,) = inputs((3,))
    with pytest.raises(TypeError, match="must return a Tensor"):
        returns_array(x)
    with pytest.raises(TypeError, match="hashable"):
        takes_list(x, [1, 2])

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
    def takes_set(x: tc.Tensor, items: set[int]) -> tc.Tensor:
        return tc.sum(x)

    (x,) = inputs((3,))
    with pytest.raises(TypeError, match="must return a Tensor"):
        returns_array(x)
    with pytest.raises(TypeError, match="hashable"):
        takes_set(x, {1, 2})  # lists, tuples and dicts are walked; a set is a leaf


def test_keyword_arguments_and_nested_parameters() -> None:
    @tc.function
    def predict(params: list[tuple[tc.Tensor, tc.Tensor]], inputs: np.ndarray, *,
                scale: float = 1.0) -> tc.Tensor:  # fmt: skip
        for w, b in params:
            inputs = tc.tanh(inputs @ w + b)
        return tc.sum(inputs) * scale

    rng = np.random.default_rng(3)
    data = rng.standard_normal((5, 3))
    params = [tuple(inputs((3, 4), (4,), seed=1)), tuple(inputs((4, 2), (2,), seed=2))]
    flat = [p for pair in params for p in pair]
    for scale in (1.0, 2.0, 2.0):
        loss = predict(params, data, scale=scale)
        assert len(loss._trace.graph.graph.operations) > 3  # one node
        with tc.no_grad():
            expected = predict.__wrapped__(params, data, scale=scale)
        assert loss.item() == pytest.approx(expected.item(), rel=1e-14)
        got = tc.grad(loss, flat)
        want = tc.grad(predict.__wrapped__(params, data, scale=scale), flat)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    assert len(predict.traces) == 2  # scale is part of the key
    with_dict = tc.function(lambda p: tc.sum(p["w"] * p["v"]))
    w, v = inputs((3,), (3,))
    np.testing.assert_allclose(tc.grad(with_dict({"w": w, "v": v}), [w])[0], v.numpy())


def test_array_arguments_are_inputs_passed_at_every_call() -> None:
    @tc.function
    def weighted(x: tc.Tensor, weights: np.ndarray) -> tc.Tensor:
        return tc.sum(x * weights)

    (x,) = inputs((3,))
    for weights in (np.array([1.0, 2.0, 3.0]), np.array([-4.0, 0.5, 7.0])):
        np.testing.assert_array_equal(tc.grad(weighted(x, weights), [x])[0], weights)
        assert weighted(x, weights).item() == pytest.approx(float(x.numpy() @ weights))
    assert len(weighted.traces) == 1  # the values are not part of the key
    labels = np.array([0, 2, 1])

    @tc.function
    def picked(x: tc.Tensor, onehot: np.ndarray) -> tc.Tensor:
        return tc.sum(tc.where(onehot, x, 0.0))

    for column in range(3):
        onehot = labels == column
        np.testing.assert_array_equal(tc.grad(picked(x, onehot), [x])[0], onehot * 1.0)


@pytest.mark.parametrize(
    "read",
    [
        lambda t: t.item(),
        lambda t: float(tc.sum(t)),
        lambda t: bool(tc.sum(t) > 0),
        lambda t: t.numpy(),
        lambda t: np.asarray(t * 2.0),
        lambda t: t.tolist(),
        lambda t: [row.item() for row in t],
        lambda t: np.median(t),
        lambda t: t.detach(),
    ],
    ids=["item", "float", "bool", "numpy", "asarray", "tolist", "rows", "np.median", "detach"],
)
def test_reading_a_traced_value_raises_and_says_why(read) -> None:  # type: ignore[no-untyped-def]
    @tc.function
    def f(x: tc.Tensor) -> tc.Tensor:
        read(x)
        return tc.sum(x)

    (x,) = inputs((1,))
    with pytest.raises(TypeError, match="traced") as info:
        f(x)
    assert isinstance(info.value, tc.TracedValueError) or "numpy.median" in str(info.value)
    assert not f.traces


def test_a_traced_mask_stays_in_the_graph() -> None:
    @tc.function
    def relu_sum(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(x * (x > 0.0)) + tc.sum(np.greater(x, 1.0).astype(np.float64) * x)

    for sign in (1.0, -1.0):
        x = tc.tensor(sign * np.array([0.5, 2.0, -1.0]), requires_grad=True)
        expected = (x.numpy() > 0) * 1.0 + (x.numpy() > 1.0) * 1.0
        np.testing.assert_array_equal(tc.grad(relu_sum(x), [x])[0], expected)
    assert len(relu_sum.traces) == 1


def test_random_draws_inside_a_trace_are_refused() -> None:
    import tidu_compile.numpy.random as npr

    @tc.function
    def noisy(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(x * npr.randn(*x.shape))

    (x,) = inputs((3,))
    with pytest.raises(TypeError, match="numpy.random.randn inside @tidu_compile.function"):
        noisy(x)
    assert npr.randn(2).shape == (2,)  # outside traces, numpy's


def test_function_of_a_gradient_transform_is_the_transform_of_the_function() -> None:
    """``tc.function(func.grad(f))`` (JAX's ``jax.jit(jax.grad(f))``) traces ``f`` and runs
    forward and backward as one program, as ``func.grad(tc.function(f))`` does; a
    gradient of a gradient too. Before, a call with arrays (nothing to record) ran ``f``
    op by op. A function that calls a transform itself still runs, eagerly."""
    from typing import Any

    from tidu_compile import func

    def f(w: Any, x: Any) -> Any:
        return tc.sum(tc.tanh(x @ w) ** 2)

    def cube_of_sine(u: Any) -> Any:
        return tc.sin(u) ** 3

    w, x = np.linspace(-1, 1, 6).reshape(3, 2), np.linspace(0, 2, 12).reshape(4, 3)
    with tc.use_executor(tc.ReferenceExecutor()):
        value, grads = func.value_and_grad(f, argnums=(0, 1))(w, x)
        second = func.grad(func.grad(cube_of_sine))(np.array(0.7))
        nested = func.grad(lambda v: func.grad(lambda u: tc.sum(tc.sin(u) ** 3))(v).sum())(w)
    executor = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(executor):
        jitted = tc.function(func.value_and_grad(f, argnums=(0, 1)))
        for _ in range(3):
            hits = executor.stats.memory_hits
            got_value, got_grads = jitted(w, x)
        assert executor.stats.memory_hits - hits <= 2  # one program, not one per op
        np.testing.assert_allclose(got_value.numpy(), value.numpy(), rtol=1e-12)
        for got, want in zip(got_grads, grads, strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        twice = tc.function(func.grad(func.grad(cube_of_sine)))
        np.testing.assert_allclose(twice(np.array(0.7)).numpy(), second.numpy(), rtol=1e-12)
        by_lambdas = tc.function(func.grad(lambda v: func.grad(
            lambda u: tc.sum(tc.sin(u) ** 3))(v).sum()))  # fmt: skip
        for _ in range(2):  # the first call finds the inner transform; the second remembers
            np.testing.assert_allclose(by_lambdas(w).numpy(), nested.numpy(), rtol=1e-12)

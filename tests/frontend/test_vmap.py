"""``func.vmap``: a batch as the stack of its examples, in_axes and out_axes, nesting,
composition with the derivative transforms, one compiled node, and clear errors.

Each test runs twice (``executor`` fixture): on the reference executor and on a compiled
one that must end with no fallback. Expected values are per-example loops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor

RNG = np.random.default_rng(7)
B = 4
X = RNG.normal(size=(B, 3))
Y = RNG.normal(size=(B,))
W = RNG.normal(size=(3,))
M = RNG.normal(size=(3, 2))


def _stack(f: Any, *per_example_args: Any) -> np.ndarray:
    return np.stack([np.asarray(f(*args)) for args in zip(*per_example_args, strict=True)])


def _values(t: Any) -> np.ndarray:
    return t.numpy() if isinstance(t, tc.Tensor) else np.asarray(t)


FRONTEND_FUNCTIONS = {
    "mlp": lambda x: tc.sum(tc.tanh(x @ M) ** 2),
    "softmax": lambda x: tc.exp(x - tc.max(x)) / tc.sum(tc.exp(x - tc.max(x))),
    "cumsum_sort": lambda x: tc.cumsum(tc.sort(x)) * tc.prod(x),
    "slices": lambda x: tc.concatenate([x[1:], x[:1] * 2.0, x[::2]]),
    "where": lambda x: tc.where(x > 0, x, -x * 0.5) + tc.maximum(x, 0.1),
    "argmax_index": lambda x: x[tc.argmax(x)] * tc.mean(x),
    "outer": lambda x: tc.reshape(x[:, None] * x[None, :], (9,)).sum(),
}


@pytest.mark.parametrize("name", sorted(FRONTEND_FUNCTIONS))
def test_batch_is_the_stack_of_its_examples(name: str, executor: tc.BackwardExecutor) -> None:
    f = FRONTEND_FUNCTIONS[name]
    batched = func.vmap(f)(X)
    np.testing.assert_allclose(_values(batched), _stack(lambda x: _values(f(tc.tensor(x))), X),
                               rtol=1e-12)  # fmt: skip


def test_in_axes_variants(executor: tc.BackwardExecutor) -> None:
    f = lambda w, x: tc.sum(tc.sin(x * w))  # noqa: E731
    expected = _stack(lambda x: np.sum(np.sin(x * W)), X)
    np.testing.assert_allclose(func.vmap(f, in_axes=(None, 0))(W, X).numpy(), expected)
    np.testing.assert_allclose(func.vmap(f, in_axes=[None, 1])(W, X.T).numpy(), expected)
    np.testing.assert_allclose(func.vmap(f, in_axes=(None, -1))(W, X.T).numpy(), expected)
    g = lambda p: tc.sum(p["w"] * p["x"])  # noqa: E731
    dict_axes = func.vmap(g, in_axes=({"w": None, "x": 0},))({"w": W, "x": X})
    np.testing.assert_allclose(dict_axes.numpy(), X @ W)
    sized = func.vmap(lambda w: w * 2.0, in_axes=None, axis_size=3)(W)
    np.testing.assert_allclose(sized.numpy(), np.stack([W * 2.0] * 3))
    with_number = func.vmap(lambda x, s: x * s, in_axes=(0, None))(X, 3.0)
    np.testing.assert_allclose(with_number.numpy(), X * 3.0)


def test_out_axes_variants(executor: tc.BackwardExecutor) -> None:
    f = lambda x: (tc.exp(x), tc.sum(x))  # noqa: E731
    e, s = func.vmap(f, out_axes=(1, 0))(X)
    np.testing.assert_allclose(e.numpy(), np.exp(X).T)
    np.testing.assert_allclose(s.numpy(), X.sum(1))
    last = func.vmap(lambda x: x[:, None] * M, out_axes=-1)(X)
    np.testing.assert_allclose(last.numpy(), np.moveaxis(X[:, :, None] * M, 0, -1))
    shared = func.vmap(lambda x: (x * 2.0, tc.tensor(W)), out_axes=(0, None))(X)
    np.testing.assert_allclose(shared[1].numpy(), W)
    broadcast = func.vmap(lambda x: tc.tensor(W))(X)  # an unbatched output is broadcast
    np.testing.assert_allclose(broadcast.numpy(), np.stack([W] * B))


def test_nested_vmap(executor: tc.BackwardExecutor) -> None:
    dot = lambda a, b: tc.sum(a * b)  # noqa: E731
    gram = func.vmap(func.vmap(dot, in_axes=(None, 0)), in_axes=(0, None))(X, X)
    np.testing.assert_allclose(gram.numpy(), X @ X.T)
    twice = func.vmap(func.vmap(tc.tanh))(np.stack([X, 2 * X]))
    np.testing.assert_allclose(twice.numpy(), np.tanh(np.stack([X, 2 * X])))


def _loss(w: Any, x: Any, y: Any) -> Any:
    return (tc.sum(tc.tanh(x * w)) - y) ** 2


def test_per_example_gradients(executor: tc.BackwardExecutor) -> None:
    expected = _stack(lambda x, y: func.grad(_loss)(W, x, y).numpy(), X, Y)
    per_example = func.vmap(func.grad(_loss), in_axes=(None, 0, 0))(W, X, Y)
    np.testing.assert_allclose(per_example.numpy(), expected, rtol=1e-12)
    value, gradient = func.vmap(func.value_and_grad(_loss), in_axes=(None, 0, 0))(W, X, Y)
    np.testing.assert_allclose(value.numpy(), _stack(lambda x, y: _loss(W, x, y).numpy(), X, Y))
    np.testing.assert_allclose(gradient.numpy(), expected, rtol=1e-12)
    columns = func.vmap(func.grad(_loss), in_axes=(None, 0, 0), out_axes=1)(W, X, Y)
    np.testing.assert_allclose(columns.numpy(), expected.T, rtol=1e-12)
    both = func.vmap(func.grad(_loss, argnums=(0, 1)), in_axes=(None, 0, 0))(W, X, Y)
    np.testing.assert_allclose(both[1].numpy(), _stack(
        lambda x, y: func.grad(_loss, argnums=1)(W, x, y).numpy(), X, Y), rtol=1e-12)  # fmt: skip


def test_one_executor_serves_programs_that_differ_only_in_constants(
    executor: tc.BackwardExecutor,
) -> None:
    """The batched program is memoized by the trace's structure: calls whose closed-over
    arrays, scalar constants or batch sizes differ run one after
    another through one executor and each equals its own per-example loop."""
    w = tc.tensor(np.array([0.5, -0.3]))
    for c, k, n in ((np.array([1.0, 2.0]), 0.0, 3), (np.array([3.0, -1.0]), -0.0, 3),
                    (np.array([3.0, -1.0]), 0.7, 2)):
        def loss(w: Any, x: Any, c: Any = c, k: float = k) -> Any:
            return tc.sum(tc.tanh(x * w + k) * c) + k * tc.sum(w)

        xs = np.arange(2.0 * n).reshape(n, 2) / 5
        got = func.vmap(func.grad(loss), in_axes=(None, 0))(w, tc.tensor(xs))
        with tc.use_executor(tc.ReferenceExecutor()):
            expected = _stack(lambda x: func.grad(loss)(w, x).numpy(), tc.tensor(xs))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_per_example_gradients_are_one_node_and_differentiable(
    executor: tc.BackwardExecutor,
) -> None:
    """The forward of one example, its VJP graph, batched: one tape node whose inputs are
    the leaves; differentiating it again gives the sum of the per-example Hessians."""
    w = tc.tensor(W, requires_grad=True)
    per_example = func.vmap(func.grad(_loss), in_axes=(None, 0, 0))(w, X, Y)
    trace = per_example._trace
    assert trace is not None and all(edge.trace is None for edge in trace.inputs)
    (second,) = tc.grad(tc.sum(per_example), [w])
    hessians = _stack(lambda x, y: func.hessian(lambda v: _loss(v, x, y))(W).numpy(), X, Y)
    np.testing.assert_allclose(second, hessians.sum(axis=(0, 2)), rtol=1e-10)
    unused = func.vmap(func.grad(lambda a, b: tc.sum(a * 2.0), argnums=(0, 1)))(X, X)
    np.testing.assert_allclose(unused[1].numpy(), np.zeros_like(X))
    number = func.vmap(func.grad(lambda s, x: s * tc.sum(x)), in_axes=(None, 0))(2.0, X)
    np.testing.assert_allclose(number.numpy(), X.sum(1))
    second_order = func.vmap(func.grad(func.grad(lambda s: tc.sin(s) * s)))(Y)
    np.testing.assert_allclose(second_order.numpy(), 2 * np.cos(Y) - Y * np.sin(Y), rtol=1e-12)


def test_per_example_gradients_nest_and_trace(executor: tc.BackwardExecutor) -> None:
    """``vmap(vmap(grad))`` batches the one-program gradient again; inside a
    ``@tc.function`` it is part of the trace, differentiable."""
    grid = np.stack([X, 2 * X])
    twice = func.vmap(func.vmap(func.grad(_loss), in_axes=(None, 0, 0)),
                      in_axes=(None, 0, None))(W, grid, Y)  # fmt: skip
    expected = np.stack([_stack(lambda x, y: func.grad(_loss)(W, x, y).numpy(), xs, Y)
                         for xs in grid])  # fmt: skip
    np.testing.assert_allclose(twice.numpy(), expected, rtol=1e-12)

    @tc.function
    def total(w: Any, x: Any) -> Any:
        return tc.sum(func.vmap(func.grad(_loss), in_axes=(None, 0, 0))(w, x, Y))

    w = tc.tensor(W, requires_grad=True)
    value = total(w, X)
    np.testing.assert_allclose(value.numpy(), expected[0].sum(), rtol=1e-12)
    (gw,) = tc.grad(value, [w])
    hessians = _stack(lambda x, y: func.hessian(lambda v: _loss(v, x, y))(W).numpy(), X, Y)
    np.testing.assert_allclose(gw, hessians.sum(axis=(0, 1)), rtol=1e-10)


def test_per_example_gradients_with_integer_labels(executor: tc.BackwardExecutor) -> None:
    labels = np.array([0, 1, 1, 0])

    def cross_entropy(m: Any, x: Any, label: Any) -> Any:
        logits = x @ m
        return tc.log(tc.sum(tc.exp(logits))) - logits[label]

    per_example = func.vmap(func.grad(cross_entropy), in_axes=(None, 0, 0))(M, X, labels)
    expected = _stack(lambda x, y: func.grad(cross_entropy)(M, x, int(y)).numpy(), X, labels)
    np.testing.assert_allclose(per_example.numpy(), expected, rtol=1e-12)


def test_jacobians_and_hessian_per_example(executor: tc.BackwardExecutor) -> None:
    f = lambda x: tc.sin(x) * tc.sum(x**2)  # noqa: E731
    jacobians = _stack(lambda x: func.jacrev(f)(x).numpy(), X)
    np.testing.assert_allclose(func.vmap(func.jacrev(f))(X).numpy(), jacobians, rtol=1e-12)
    np.testing.assert_allclose(func.vmap(func.jacfwd(f))(X).numpy(), jacobians, rtol=1e-12)
    h = lambda x: tc.sum(tc.sin(x) * x)  # noqa: E731
    hessians = _stack(lambda x: func.hessian(h)(x).numpy(), X)
    np.testing.assert_allclose(func.vmap(func.hessian(h))(X).numpy(), hessians, rtol=1e-12)
    blocks = func.vmap(func.hessian(lambda a, b: tc.sum(a * b * a), argnums=(0, 1)))(X, X)
    np.testing.assert_allclose(blocks[0][1].numpy(), np.stack([np.diag(2 * x) for x in X]))


def test_derivatives_of_a_vmap(executor: tc.BackwardExecutor) -> None:
    total = lambda w: tc.sum(func.vmap(_loss, in_axes=(None, 0, 0))(w, X, Y))  # noqa: E731
    expected = sum(func.grad(_loss)(W, x, y).numpy() for x, y in zip(X, Y, strict=True))
    np.testing.assert_allclose(func.grad(total)(W).numpy(), expected, rtol=1e-12)
    v = RNG.normal(size=(B, 3))
    _, tangent = func.jvp(func.vmap(tc.sin), (X,), (v,))
    np.testing.assert_allclose(tangent.numpy(), np.cos(X) * v, rtol=1e-12)
    w = tc.tensor(W, requires_grad=True)  # a closed-over tensor: its gradient flows
    tc.sum(func.vmap(lambda x: tc.sum(tc.exp(x * w)))(X)).backward()
    np.testing.assert_allclose(w.grad, np.sum(X * np.exp(X * W), axis=0), rtol=1e-12)


def test_vmap_inside_a_traced_function(executor: tc.BackwardExecutor) -> None:
    @tc.function
    def loss(x: Any) -> Any:
        return tc.sum(func.vmap(lambda row: tc.sum(row * M[:, 0]) ** 2)(x))

    x = tc.tensor(X, requires_grad=True)
    (gx,) = tc.grad(loss(x), [x])
    np.testing.assert_allclose(gx, 2 * (X @ M[:, 0])[:, None] * M[:, 0], rtol=1e-12)


def test_the_batched_program_is_one_compiled_node(tmp_path: Path) -> None:
    compiled = CompiledExecutor(tmp_path, background=False)
    with tc.use_executor(compiled):
        x = tc.tensor(X, requires_grad=True)
        out = func.vmap(lambda m, row: tc.sum(tc.tanh(row @ m) * row[:2]),
                        in_axes=(None, 0))(M, x)  # fmt: skip
        trace = out._trace
        assert trace is not None and all(edge.trace is None for edge in trace.inputs)
        assert len(trace.graph.graph.operations) > 3  # the whole function, one node
        (gx,) = tc.grad(tc.sum(out), [x])
        grads = func.vmap(func.grad(_loss), in_axes=(None, 0, 0))(W, X, Y)
    assert compiled.stats.compiles > 0 and compiled.stats.fallbacks == 0
    assert not compiled.stats.errors, compiled.stats.errors
    expected = _stack(lambda r: func.grad(
        lambda r: tc.sum(tc.tanh(r @ M) * r[:2]))(r).numpy(), X)  # fmt: skip
    np.testing.assert_allclose(gx, expected, rtol=1e-12)
    assert grads.shape == (B, 3)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: func.vmap(lambda a, b: a + b)(X, X[:2]), ValueError, "different sizes"),
        (lambda: func.vmap(tc.sin, in_axes=2)(X), ValueError, "out of range"),
        (lambda: func.vmap(tc.sin, in_axes=(0, 0))(X), ValueError, "2 entries"),
        (lambda: func.vmap(tc.sin, in_axes="rows")(X), TypeError, "in_axes must be"),
        (lambda: func.vmap(tc.sin, in_axes=None)(X), ValueError, "axis_size"),
        (lambda: func.vmap(tc.sin, out_axes=None)(X), ValueError, "out_axes None"),
        (lambda: func.vmap(tc.sin, out_axes=3)(X), ValueError, "out_axes 3"),
        (lambda: func.vmap(tc.sin)(X[:0]), ValueError, "empty"),
        (lambda: func.vmap(lambda x: x * 1.0, in_axes=0)(3.0), ValueError, "out of range"),
        (lambda: func.vmap(lambda x: float(x))(X), tc.TracedValueError, "traced"),
        (lambda: func.vmap(func.grad(lambda x: x))(X), ValueError, "real scalar per example"),
        (lambda: func.vmap(lambda x: func.grad(tc.sum)(x) * 2.0)(X), TypeError,
         r"pass the transform itself to vmap"),
    ],
)
def test_errors_name_the_problem(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()

"""``tc.scan``, ``tc.fori_loop``, ``tc.while_loop`` and ``tc.cond``: one primitive each.

Checked on both executors against the same program unrolled op by op and against
central differences: an RNN, an RK4 neural ODE (50 steps of a small MLP), both branches
of a cond, a forward while loop; the function transforms through them (grad, jvp,
hessian through a fori_loop); and the errors for carries that change, non-scalar
predicates and the like.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor, func

RNG = np.random.default_rng(7)
W = RNG.standard_normal((4, 4)) * 0.4
U = RNG.standard_normal((3, 4)) * 0.4
XS = RNG.standard_normal((6, 3))
H0 = RNG.standard_normal(4) * 0.1


@pytest.fixture(params=["reference", "compiled"])
def executor(request: pytest.FixtureRequest) -> Iterator[tc.BackwardExecutor]:
    chosen = (ReferenceExecutor() if request.param == "reference"
              else CompiledExecutor(cache_dir=False, background=False))  # fmt: skip
    with tc.use_executor(chosen):
        yield chosen
    if isinstance(chosen, CompiledExecutor):
        assert chosen.stats.fallbacks == 0, chosen.stats.errors


def _central_differences(
    f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6
) -> np.ndarray:
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def _rnn_step(w: tc.Tensor, u: tc.Tensor) -> Callable[..., tuple[tc.Tensor, tc.Tensor]]:
    def step(h: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
        h = tc.tanh(h @ w + x @ u)
        return h, tc.sum(h * h)

    return step


def _rnn_loss(w: tc.Tensor, u: tc.Tensor, xs: tc.Tensor, h0: tc.Tensor, *, scan: bool,
              **options: bool) -> tc.Tensor:  # fmt: skip
    step = _rnn_step(w, u)
    if scan:
        h, ys = tc.scan(step, h0, xs, **options)
        return tc.sum(ys) + tc.sum(h)
    h, ys = h0, []
    for t in (reversed(range(xs.shape[0])) if options.get("reverse") else range(xs.shape[0])):
        h, y = step(h, xs[t])
        ys.append(y)
    return tc.sum(tc.stack(ys)) + tc.sum(h)


@pytest.mark.parametrize("options", [{}, {"reverse": True}, {"checkpoint": True}],
                         ids=["forward", "reverse", "checkpoint"])  # fmt: skip
def test_rnn_scan_matches_the_unrolled_program_and_differences(
    executor: tc.BackwardExecutor, options: dict[str, bool]
) -> None:
    args = [tc.tensor(a, requires_grad=True) for a in (W, U, XS, H0)]
    loss = _rnn_loss(*args, scan=True, **options)
    unrolled = _rnn_loss(*args, scan=False, **options)
    np.testing.assert_allclose(loss.numpy(), unrolled.numpy(), rtol=1e-12)
    grads = tc.grad(loss, args)
    expected = tc.grad(unrolled, args)
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    with tc.use_executor(ReferenceExecutor()):
        def of_w(w: np.ndarray) -> float:
            return float(_rnn_loss(tc.tensor(w), *args[1:], scan=True, **options).numpy())

        np.testing.assert_allclose(grads[0], _central_differences(of_w, W), rtol=1e-6, atol=1e-8)


def test_a_scan_records_one_node_and_its_backward_is_one_program() -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    w = tc.tensor(W, requires_grad=True)
    with tc.use_executor(executor):
        h, _ = tc.scan(_rnn_step(w, tc.tensor(U)), tc.tensor(H0), tc.tensor(XS))
    node = h._trace
    assert node is not None and len(node.inputs) == 4  # w, u, h0, xs: ONE node
    assert executor.stats.fallbacks == 0


def _compiles_for(steps: int) -> int:
    executor = CompiledExecutor(cache_dir=False, background=False)
    xs = np.resize(XS, (steps, 3))
    with tc.use_executor(executor):
        args = [tc.tensor(a, requires_grad=True) for a in (W, U, xs, H0)]
        tc.grad(_rnn_loss(*args, scan=True), args)
    assert executor.stats.fallbacks == 0, executor.stats.errors
    return executor.stats.compiles + executor.stats.generic_hits


def test_compile_work_does_not_grow_with_the_trip_count() -> None:
    """10 and 1000 steps compile the same programs: the body (forward and backward) and
    the loop's plans, never one per step."""
    assert _compiles_for(10) == _compiles_for(1000)


def _mlp(params: dict[str, tc.Tensor]) -> Callable[[tc.Tensor], tc.Tensor]:
    return lambda y: tc.tanh(y @ params["w1"] + params["b1"]) @ params["w2"]


def _rk4(
    params: dict[str, tc.Tensor], y0: tc.Tensor, steps: int, dt: float, *, loop: bool
) -> tc.Tensor:
    f = _mlp(params)

    def step(y: tc.Tensor) -> tc.Tensor:
        k1 = f(y)
        k2 = f(y + dt / 2 * k1)
        k3 = f(y + dt / 2 * k2)
        k4 = f(y + dt * k3)
        return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    if loop:
        return tc.fori_loop(0, steps, lambda i, y: step(y), y0)
    for _ in range(steps):
        y0 = step(y0)
    return y0


def test_rk4_neural_ode_over_50_steps(executor: tc.BackwardExecutor) -> None:
    raw = {"w1": RNG.standard_normal((2, 8)) * 0.5, "b1": RNG.standard_normal(8) * 0.1,
           "w2": RNG.standard_normal((8, 2)) * 0.5}  # fmt: skip
    params = {k: tc.tensor(v, requires_grad=True) for k, v in raw.items()}
    y0 = tc.tensor([1.0, -0.5], requires_grad=True)
    loss = tc.sum(_rk4(params, y0, 50, 0.05, loop=True) ** 2)
    unrolled = tc.sum(_rk4(params, y0, 50, 0.05, loop=False) ** 2)
    np.testing.assert_allclose(loss.numpy(), unrolled.numpy(), rtol=1e-12)
    order = [params["w1"], params["b1"], params["w2"], y0]
    for g, e in zip(tc.grad(loss, order), tc.grad(unrolled, order), strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
    (g_b1,) = tc.grad(tc.sum(_rk4(params, y0, 50, 0.05, loop=True) ** 2), [params["b1"]])

    def of_b1(b1: np.ndarray) -> float:
        ps = {**params, "b1": tc.tensor(b1)}
        with tc.use_executor(ReferenceExecutor()):
            return float(tc.sum(_rk4(ps, tc.tensor([1.0, -0.5]), 50, 0.05, loop=True) ** 2).numpy())

    np.testing.assert_allclose(g_b1, _central_differences(of_b1, raw["b1"]), rtol=1e-6, atol=1e-8)


def test_carries_and_xs_are_pytrees(executor: tc.BackwardExecutor) -> None:
    w = tc.tensor(W, requires_grad=True)

    def step(carry: dict[str, tc.Tensor], x: tuple[tc.Tensor, tc.Tensor]) -> tuple[dict, tc.Tensor]:
        h = tc.tanh(carry["h"] @ w + x[0] * x[1])
        return {"h": h, "n": carry["n"] + 1}, {"norm": tc.sum(h * h)}

    xs = (tc.tensor(RNG.standard_normal((5, 4))), np.ones((5, 1)))
    carry, ys = tc.scan(step, {"h": tc.tensor(H0), "n": np.int64(0)}, xs)
    assert int(carry["n"].numpy()) == 5 and ys["norm"].shape == (5,)
    (g,) = tc.grad(tc.sum(ys["norm"]), [w])
    h, expected = tc.tensor(H0), []
    for t in range(5):
        h = tc.tanh(h @ w + xs[0][t] * xs[1][t])
        expected.append(tc.sum(h * h))
    np.testing.assert_allclose(g, tc.grad(tc.sum(tc.stack(expected)), [w])[0], rtol=1e-10)


def test_cond_takes_either_branch(executor: tc.BackwardExecutor) -> None:
    x = tc.tensor(RNG.standard_normal(3), requires_grad=True)
    w = tc.tensor(RNG.standard_normal(3), requires_grad=True)
    for pred, expected in ((True, lambda: tc.sin(x) * w), (False, lambda: tc.exp(x) + 2.0)):
        out = tc.cond(tc.tensor(pred), lambda a: tc.sin(a) * w, lambda a: tc.exp(a) + 2.0, x)
        np.testing.assert_allclose(out.numpy(), expected().numpy(), rtol=1e-14)
        gx, gw = tc.grad(tc.sum(out), [x, w])
        ex, ew = tc.grad(tc.sum(expected()), [x, w]) if pred else (
            tc.grad(tc.sum(expected()), [x])[0], None)
        np.testing.assert_allclose(gx, ex, rtol=1e-12)
        if pred:
            np.testing.assert_allclose(gw, ew, rtol=1e-12)
        else:
            np.testing.assert_array_equal(gw, np.zeros(3))


def test_cond_in_a_traced_function_picks_by_the_data() -> None:
    @tc.function
    def f(x: tc.Tensor) -> tc.Tensor:
        return tc.cond(tc.sum(x) > 0, lambda a: a * a, lambda a: -a, x)

    for values in ([1.0, 2.0], [-1.0, -2.0]):
        x = tc.tensor(values, requires_grad=True)
        (g,) = tc.grad(tc.sum(f(x)), [x])
        np.testing.assert_allclose(g, 2 * np.array(values) if values[0] > 0 else -np.ones(2))
    assert len(f.traces) == 1


def test_while_loop_runs_forward(executor: tc.BackwardExecutor) -> None:
    x = tc.tensor([1.0, 3.0])
    count, value = tc.while_loop(lambda c: tc.sum(c[1]) < 100.0,
                                 lambda c: (c[0] + 1, c[1] * 2.0), (np.int64(0), x))  # fmt: skip
    assert int(count.numpy()) == 5
    np.testing.assert_array_equal(value.numpy(), [32.0, 96.0])
    total = tc.fori_loop(tc.tensor(np.int64(2)), tc.tensor(np.int64(7)),
                         lambda i, s: s + i.astype("float64"), tc.tensor(0.0))  # fmt: skip
    assert float(total.numpy()) == 2 + 3 + 4 + 5 + 6


def test_while_loop_refuses_a_derivative() -> None:
    x = tc.tensor([1.0, 3.0], requires_grad=True)
    y = tc.while_loop(lambda c: tc.sum(c) < 10.0, lambda c: c * 2.0, x)
    with pytest.raises(tc.ADRuleError, match="forward only"):
        tc.grad(tc.sum(y), [x], executor=ReferenceExecutor())


def test_function_transforms_compose_with_loops(executor: tc.BackwardExecutor) -> None:
    w0 = tc.tensor(W)

    def loss(w: tc.Tensor) -> tc.Tensor:
        return _rnn_loss(w, tc.tensor(U), tc.tensor(XS), tc.tensor(H0), scan=True)

    def unrolled(w: tc.Tensor) -> tc.Tensor:
        return _rnn_loss(w, tc.tensor(U), tc.tensor(XS), tc.tensor(H0), scan=False)

    np.testing.assert_allclose(func.grad(loss)(w0).numpy(), func.grad(unrolled)(w0).numpy(),
                               rtol=1e-10)  # fmt: skip
    v = RNG.standard_normal((4, 4))
    _, t = func.jvp(loss, (w0,), (v,))
    _, e = func.jvp(unrolled, (w0,), (v,))
    np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-10)

    def poly(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.fori_loop(0, 3, lambda i, y: tc.sin(y) * x, x))

    def poly_unrolled(x: tc.Tensor) -> tc.Tensor:
        y = x
        for _ in range(3):
            y = tc.sin(y) * x
        return tc.sum(y)

    x0 = np.array([0.3, -0.8])
    np.testing.assert_allclose(func.hessian(poly)(x0).numpy(),
                               func.hessian(poly_unrolled)(x0).numpy(), rtol=1e-10)  # fmt: skip


def test_a_scan_inside_a_traced_function_and_a_nested_scan(executor: tc.BackwardExecutor) -> None:
    @tc.function
    def f(w: tc.Tensor, xs: tc.Tensor) -> tc.Tensor:
        def outer(h: tc.Tensor, row: tc.Tensor) -> tuple[tc.Tensor, None]:
            inner, _ = tc.scan(lambda c, x: (tc.tanh(c * w + x), None), h, row)
            return inner, None

        h, _ = tc.scan(outer, tc.zeros(2), xs)
        return tc.sum(h)

    xs = RNG.standard_normal((3, 4, 2))
    w = tc.tensor([0.5, -0.3], requires_grad=True)
    (g,) = tc.grad(f(w, tc.tensor(xs)), [w])

    def plain(w: np.ndarray) -> float:
        h = np.zeros(2)
        for row in xs:
            for x in row:
                h = np.tanh(h * w + x)
        return float(np.sum(h))

    np.testing.assert_allclose(g, _central_differences(plain, np.array([0.5, -0.3])), rtol=1e-6)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: tc.scan(lambda c, x: (c[:2], x), tc.zeros(3), tc.zeros((4, 3))), TypeError,
         "keep its shape and dtype"),
        (lambda: tc.scan(lambda c, x: (c.astype("float32"), x), tc.zeros(3), tc.zeros((4, 3))),
         TypeError, "keep its shape and dtype"),
        (lambda: tc.scan(lambda c, x: ((c, c), x), tc.zeros(3), tc.zeros((4, 3))), TypeError,
         "structure"),
        (lambda: tc.scan(lambda c, x: c, tc.zeros(3), tc.zeros((4, 3))), TypeError, "pair"),
        (lambda: tc.scan(lambda c, x: (c, x), tc.zeros(3), (tc.zeros((4, 3)), tc.zeros((5, 3)))),
         ValueError, "length"),
        (lambda: tc.scan(lambda c, x: (c, x), tc.zeros(3), tc.zeros((4, 3)), length=5),
         ValueError, "length"),
        (lambda: tc.scan(lambda c, x: (c, None), tc.zeros(3)), ValueError, "xs or length"),
        (lambda: tc.cond(tc.tensor([True, False]), lambda: tc.zeros(1), lambda: tc.zeros(1)),
         TypeError, "bool scalar"),
        (lambda: tc.cond(tc.tensor(1.0), lambda: tc.zeros(1), lambda: tc.zeros(1)), TypeError,
         "bool scalar"),
        (lambda: tc.cond(True, lambda: tc.zeros(1), lambda: tc.zeros(2)), TypeError,
         "different types"),
        (lambda: tc.while_loop(lambda c: c, lambda c: c, tc.zeros(2)), TypeError, "bool scalar"),
        (lambda: tc.while_loop(lambda c: tc.sum(c) < 1, lambda c: c[:1], tc.zeros(2)), TypeError,
         "keep its shape and dtype"),
        (lambda: tc.fori_loop(tc.tensor(0.5), 3, lambda i, c: c, tc.zeros(2)), TypeError,
         "integer scalars"),
    ],
)
def test_clear_errors(call: Callable[[], object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_a_zero_length_scan_gives_its_initial_carries_compiled_too() -> None:
    """``compiler.empty`` folded a scan over no rows like an op on nothing, to zeros: the
    compiled program returned ``[0, 0]`` for the carries ``[1, 2]``, and a zero gradient."""
    h0, xs = np.array([1.0, 2.0]), np.zeros((0, 2))

    def run(h: Any, x: Any) -> Any:
        carry, ys = tc.scan(lambda c, r: (c * 2.0 + r, c), h, x, reverse=True)
        return tc.sum(carry**2) + tc.sum(ys)

    for executor in (tc.ReferenceExecutor(), CompiledExecutor(cache_dir=False, background=False)):
        with tc.use_executor(executor):
            traced = tc.function(run, always_compiled=True)
            assert float(traced(h0, xs).numpy()) == 5.0
            w = tc.tensor(h0, requires_grad=True)
            np.testing.assert_array_equal(tc.grad(tc.function(run)(w, xs), [w])[0], 2 * h0)
            np.testing.assert_array_equal(tc.grad(run(w, xs), [w])[0], 2 * h0)

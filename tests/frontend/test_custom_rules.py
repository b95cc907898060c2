"""Custom derivative rules from user code: ``tc.custom_jvp``, ``tc.custom_vjp`` and
``tc.autograd.Function`` (``frontend/custom_rules.py``, ``ops/custom_calls.py``).

The classic examples against closed forms and central differences, per-op, under
``@tc.function`` and nested in ``tidu_compile.func``; rules that differ from the true
derivative, to prove the rule is what runs; the errors a wrong rule gets. Every test runs
on both executors (the ``executor`` fixture: the compiled one must end with no fallback).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor

pytestmark = pytest.mark.usefixtures("executor")


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def central_difference(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d sum(f) / dx by central differences (f on numpy arrays)."""
    grad = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        grad.flat[i] = (np.sum(f(x + step)) - np.sum(f(x - step))) / (2 * eps)
    return grad


# ----------------------------------------------------------------- the examples


@tc.custom_jvp
def log1pexp(x):
    return tc.log(1.0 + tc.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + tc.exp(x)))  # stable where exp(x) is inf


@tc.custom_vjp
def clip_gradient(lo, hi, x):
    return x  # the identity; its gradient is clipped


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return None, None, tc.clip(g, lo, hi)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


class StraightThrough(tc.autograd.Function):
    """sign(x) forward; backward the gradient of clip(x, -1, 1) (a straight-through
    estimator)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return tc.sign(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return tc.where(tc.abs(x) <= 1.0, g, 0.0)


X = np.array([-3.0, -0.5, 0.0, 1.0, 50.0, 800.0])


def test_log1pexp_gradient_is_stable_where_autodiff_gives_nan() -> None:
    x = tc.tensor(X, requires_grad=True)
    with np.errstate(over="ignore"):  # the value log(1 + exp(800)) is inf
        (g,) = tc.grad(tc.sum(log1pexp(x)), [x])
    assert np.allclose(g, sigmoid(X), rtol=1e-13, atol=0)
    with np.errstate(over="ignore", invalid="ignore"):
        (naive,) = tc.grad(tc.sum(tc.log(1.0 + tc.exp(x))), [x])
    assert np.isnan(naive[-1])  # exp(800) / (1 + exp(800)): the rule is what fixed it


def test_log1pexp_against_central_differences() -> None:
    x = np.array([-2.0, -0.3, 0.4, 3.0])
    t = tc.tensor(x, requires_grad=True)
    (g,) = tc.grad(tc.sum(log1pexp(t) * t), [t])
    expected = central_difference(lambda v: np.log1p(np.exp(v)) * v, x)
    assert np.allclose(g, expected, rtol=1e-7, atol=1e-9)


def test_log1pexp_in_func_transforms() -> None:
    x, v = np.array([0.0, 1.0, -2.0]), np.array([1.0, -0.5, 2.0])
    f = lambda x: tc.sum(log1pexp(x))  # noqa: E731
    assert np.allclose(func.grad(f)(x).numpy(), sigmoid(x), rtol=1e-13)
    out, tangent = func.jvp(log1pexp, (x,), (v,))
    assert np.allclose(out.numpy(), np.log1p(np.exp(x)), rtol=1e-13)
    assert np.allclose(tangent.numpy(), sigmoid(x) * v, rtol=1e-13)
    out, vjp_fn = func.vjp(log1pexp, x)
    assert np.allclose(vjp_fn(tc.tensor(v))[0].numpy(), sigmoid(x) * v, rtol=1e-13)
    hessian = func.hessian(f)(x).numpy()  # the rule's own derivative: sigmoid'
    assert np.allclose(hessian, np.diag(sigmoid(x) * (1 - sigmoid(x))), rtol=1e-12, atol=1e-15)
    _, hvp = func.jvp(func.grad(f), (x,), (v,))
    assert np.allclose(hvp.numpy(), sigmoid(x) * (1 - sigmoid(x)) * v, rtol=1e-12)


def test_clip_gradient_clips_the_cotangent() -> None:
    x = tc.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    y = clip_gradient(-0.5, 0.5, x)
    assert np.array_equal(y.numpy(), x.numpy())
    (g,) = tc.grad(tc.sum(y * np.array([4.0, 0.2, -3.0])), [x])
    assert np.array_equal(g, [0.5, 0.2, -0.5])
    (g,) = tc.grad(tc.sum(clip_gradient(-0.5, 0.5, tc.sin(x)) * 4.0), [x])
    assert np.allclose(g, 0.5 * np.cos([1.0, 2.0, 3.0]), rtol=1e-14)


def test_clip_gradient_in_func_and_forward_mode_refused() -> None:
    x = np.array([1.0, -2.0])
    g = func.grad(lambda x: tc.sum(clip_gradient(-1.0, 1.0, x * 3.0)))(x)
    assert np.array_equal(g.numpy(), [3.0, 3.0])  # clip(1) * 3
    out, vjp_fn = func.vjp(lambda x: clip_gradient(-1.0, 1.0, x), x)
    assert np.array_equal(vjp_fn(tc.tensor(np.array([5.0, -0.25])))[0].numpy(), [1.0, -0.25])
    with pytest.raises(TypeError, match="forward-mode.*custom_vjp function 'clip_gradient'"):
        func.jvp(lambda x: clip_gradient(-1.0, 1.0, x), (x,), (np.ones(2),))
    with pytest.raises(TypeError, match="forward-mode"):
        func.hessian(lambda x: tc.sum(clip_gradient(-1.0, 1.0, x) ** 3))(x)


def test_straight_through_estimator() -> None:
    x = tc.tensor(np.array([-2.0, -0.5, 0.25, 0.0, 1.5]), requires_grad=True)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = StraightThrough.apply(x)
    assert np.array_equal(y.numpy(), np.sign(x.numpy()))
    (g,) = tc.grad(tc.sum(y * w), [x])
    assert np.array_equal(g, w * (np.abs(x.numpy()) <= 1.0))  # sign's true gradient is 0


def test_custom_rules_under_tc_function() -> None:
    @tc.function
    def loss(x, w):
        hidden = StraightThrough.apply(x * w)
        return tc.sum(log1pexp(hidden * x) + clip_gradient(-0.1, 0.1, tc.sin(x)) * 3.0)

    xv, wv = np.array([0.3, -0.8, 2.0]), np.array([1.5, 0.5, 0.25])
    for _ in range(2):  # the trace, then its replay
        x, w = tc.tensor(xv, requires_grad=True), tc.tensor(wv, requires_grad=True)
        gx, gw = tc.grad(loss(x, w), [x, w])
        s = np.sign(xv * wv)
        pass_through = np.abs(xv * wv) <= 1.0
        d_hidden = sigmoid(s * xv) * xv
        assert np.allclose(gx, sigmoid(s * xv) * s + d_hidden * pass_through * wv
                           + 0.1 * np.cos(xv), rtol=1e-13)  # fmt: skip
        assert np.allclose(gw, d_hidden * pass_through * xv, rtol=1e-13)


def test_rules_that_differ_from_the_true_gradient_are_used() -> None:
    @tc.custom_vjp
    def double_grad_sin(x):
        return tc.sin(x)

    double_grad_sin.defvjp(lambda x: (tc.sin(x), ()), lambda res, g: (2.0 * g,))

    @tc.custom_jvp
    def triple_tangent_exp(x):
        return tc.exp(x)

    triple_tangent_exp.defjvp(lambda p, t: (tc.exp(p[0]), 3.0 * t[0]))

    x = np.array([0.2, 1.0])
    t = tc.tensor(x, requires_grad=True)
    assert np.array_equal(tc.grad(tc.sum(double_grad_sin(t)), [t])[0], [2.0, 2.0])
    assert np.array_equal(tc.grad(tc.sum(triple_tangent_exp(t)), [t])[0], [3.0, 3.0])
    assert np.allclose(double_grad_sin(t).numpy(), np.sin(x))
    _, tangent = func.jvp(triple_tangent_exp, (x,), (np.array([1.0, 2.0]),))
    assert np.array_equal(tangent.numpy(), [3.0, 6.0])


def test_residuals_multiple_outputs_against_central_differences() -> None:
    @tc.custom_vjp
    def polar(r, theta):
        return r * tc.cos(theta), r * tc.sin(theta)

    def fwd(r, theta):
        c, s = tc.cos(theta), tc.sin(theta)
        return (r * c, r * s), {"cos": c, "sin": s, "r": r}

    def bwd(res, g):
        gx, gy = g
        c, s, r = res["cos"], res["sin"], res["r"]
        return gx * c + gy * s, r * (gy * c - gx * s)

    polar.defvjp(fwd, bwd)
    rv, thv = np.array([1.0, 2.0]), np.array([0.3, -1.1])
    r, th = tc.tensor(rv, requires_grad=True), tc.tensor(thv, requires_grad=True)
    x, y = polar(r, th)
    gr, gth = tc.grad(tc.sum(x * 2.0 + y * y), [r, th])
    expected_r = central_difference(lambda v: 2 * v * np.cos(thv) + (v * np.sin(thv)) ** 2, rv)
    expected_th = central_difference(lambda v: 2 * rv * np.cos(v) + (rv * np.sin(v)) ** 2, thv)
    assert np.allclose(gr, expected_r, rtol=1e-7)
    assert np.allclose(gth, expected_th, rtol=1e-7)


def test_second_order_through_a_vjp_rule_and_fwd_calling_the_function() -> None:
    @tc.custom_vjp
    def cube(x):
        return x * x * x

    cube.defvjp(lambda x: (cube(x), x), lambda x, g: (3.0 * x * x * g,))
    x = np.array([0.5, -2.0])
    second = func.grad(lambda x: tc.sum(func.grad(lambda y: tc.sum(cube(y)))(x)))(x)
    assert np.allclose(second.numpy(), 6.0 * x, rtol=1e-14)  # the bwd rule differentiated


def test_nondiff_argnums_and_static_arguments() -> None:
    @functools.partial(tc.custom_vjp, nondiff_argnums=(0,))
    def scaled_grad(scale, x):
        return x

    scaled_grad.defvjp(lambda scale, x: (x, None), lambda scale, res, g: (scale * g,))

    @functools.partial(tc.custom_jvp, nondiff_argnums=(0,))
    def power(n, x):
        return x**n

    power.defjvp(lambda n, p, t: (p[0] ** n, n * p[0] ** (n - 1) * t[0]))

    x = tc.tensor(np.array([1.5, -0.5]), requires_grad=True)
    for scale in (2.0, -3.0):  # a new static value traces again
        (g,) = tc.grad(tc.sum(scaled_grad(scale, x)), [x])
        assert np.array_equal(g, [scale, scale])
    (g,) = tc.grad(tc.sum(power(3, x)), [x])
    assert np.allclose(g, 3 * x.numpy() ** 2, rtol=1e-14)

    class Scale(tc.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor, y):
            ctx.factor = factor
            ctx.save_for_backward(y)
            assert ctx.needs_input_grad == (True, False, False)
            return x * factor * y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * ctx.factor * y, None, None

    y = tc.tensor(np.array([2.0, 4.0]))
    (g,) = tc.grad(tc.sum(Scale.apply(x, 0.5, y)), [x])
    assert np.array_equal(g, [1.0, 2.0])


def test_traced_once_per_signature_and_plain_without_gradient() -> None:
    calls = []

    @tc.custom_jvp
    def f(x):
        calls.append(x.shape)
        return tc.sin(x)

    f.defjvp(lambda p, t: (tc.sin(p[0]), tc.cos(p[0]) * t[0]))
    for n in (3, 3, 3, 4):
        x = tc.tensor(np.linspace(0.0, 1.0, n), requires_grad=True)
        (g,) = tc.grad(tc.sum(f(x)), [x])
        assert np.allclose(g, np.cos(x.numpy()))
    assert calls == [(3,), (4,)]  # a trace per shape (the rule's own call runs f too)
    assert isinstance(f(np.ones(2)), tc.Tensor) and calls[-1] == (2,)  # no gradient: f itself
    with tc.no_grad():
        f(tc.tensor(np.ones(5), requires_grad=True))
    assert calls[-1] == (5,)


def test_nested_custom_functions() -> None:
    @tc.custom_vjp
    def outer(x):
        return log1pexp(x) * 2.0

    outer.defvjp(lambda x: (log1pexp(x) * 2.0, log1pexp(x)), lambda res, g: (g * res,))
    x = tc.tensor(np.array([0.1, 0.7]), requires_grad=True)
    (g,) = tc.grad(tc.sum(outer(x)), [x])
    assert np.allclose(g, np.log1p(np.exp(x.numpy())), rtol=1e-14)


# ----------------------------------------------------------------- errors


def _x() -> tc.Tensor:
    return tc.tensor(np.array([1.0, 2.0]), requires_grad=True)


def test_wrong_cotangent_count_shape_and_dtype_name_the_function() -> None:
    @tc.custom_vjp
    def two_args(a, b):
        return a * b

    two_args.defvjp(lambda a, b: (a * b, (a, b)), lambda res, g: (g * res[1],))
    with pytest.raises(TypeError, match=r"two_args: .*bwd rule returned 1 cotangents, expected 2"):
        two_args(_x(), _x())
    two_args.defvjp(lambda a, b: (a * b, (a, b)), lambda res, g: (g, tc.sum(g)))
    with pytest.raises(TypeError, match=r"two_args: the bwd rule's cotangent 1 has shape \(\)"):
        two_args(_x(), _x())
    two_args.defvjp(lambda a, b: (a * b, ()), lambda res, g: (g, g.astype(np.float32)))
    with pytest.raises(TypeError, match="two_args: .* dtype float32, expected .* dtype float64"):
        two_args(_x(), _x())
    two_args.defvjp(lambda a, b: (a * b, ()), lambda res, g: g)
    with pytest.raises(TypeError, match="two_args: the custom_vjp bwd rule must return a tuple"):
        two_args(_x(), _x())


def test_wrong_jvp_rules_name_the_function() -> None:
    @tc.custom_jvp
    def g(x):
        return tc.sin(x)

    with pytest.raises(TypeError, match="g: no JVP rule"):
        g(_x())
    g.defjvp(lambda p, t: t[0])
    with pytest.raises(TypeError, match="g: the custom_jvp rule must return a pair"):
        g(_x())
    g.defjvp(lambda p, t: (tc.sin(p[0]), t[0] * t[0]))
    with pytest.raises(TypeError, match="g: the custom_jvp rule's tangent output must be linear"):
        g(_x())
    g.defjvp(lambda p, t: (tc.sin(p[0]), tc.sum(t[0])))
    with pytest.raises(TypeError, match=r"g: the rule's tangent output 0 has shape \(\)"):
        g(_x())
    g.defjvp(lambda p, t: (tc.sin(p[0]), tc.cos(p[0])))
    with pytest.raises(TypeError, match="g: the custom_jvp rule's tangent output 0 does not"):
        g(_x())


def test_wrong_function_backward_and_saved_values() -> None:
    class TooFew(tc.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="TooFew.backward returned 1 gradients, expected 2"):
        TooFew.apply(_x(), 2.0)

    class GradForNumber(TooFew):
        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(TypeError, match="GradForNumber.backward returned a gradient for arg"):
        GradForNumber.apply(_x(), 2.0)

    class Unsaved(tc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.hidden = tc.exp(x)
            return ctx.hidden

        @staticmethod
        def backward(ctx, g):
            return g * ctx.hidden

    with pytest.raises(TypeError, match="Unsaved.*computed by the forward.*save_for_backward"):
        Unsaved.apply(_x())


def test_closing_over_a_tensor_that_requires_grad_is_refused() -> None:
    w = tc.tensor(np.array([3.0, 4.0]), requires_grad=True)

    @tc.custom_jvp
    def uses_w(x):
        return x * w

    uses_w.defjvp(lambda p, t: (p[0] * w, t[0] * w))
    with pytest.raises(TypeError, match="uses_w: the function uses a tensor that requires grad"):
        uses_w(_x())


# ----------------------------------------------------------------- compiled


def test_compiled_with_no_fallback_and_equal_to_the_reference() -> None:
    def loss(x, w):
        return tc.sum(log1pexp(x * w) * StraightThrough.apply(w)
                      + clip_gradient(-0.2, 0.2, tc.tanh(x)))  # fmt: skip

    xv, wv = np.linspace(-2.0, 2.0, 7), np.linspace(0.5, -1.5, 7)
    results = []
    for executor in (tc.ReferenceExecutor(), CompiledExecutor(cache_dir=False, background=False)):
        with tc.use_executor(executor):
            for recorded in (loss, tc.function(loss)):
                x, w = tc.tensor(xv, requires_grad=True), tc.tensor(wv, requires_grad=True)
                results.append(tc.grad(recorded(x, w), [x, w]))
                results.append([func.grad(lambda x: loss(x, tc.tensor(wv)))(xv).numpy()])
        if isinstance(executor, CompiledExecutor):
            assert executor.stats.compiles > 0
            assert executor.stats.fallbacks == 0 and not executor.stats.errors
    for reference, compiled in zip(results[:4], results[4:], strict=True):
        for a, b in zip(reference, compiled, strict=True):
            assert np.allclose(a, b, rtol=1e-13, atol=1e-15)


def test_function_is_importable_from_autograd_and_differentiable_twice() -> None:
    from tidu_compile.autograd import Function

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2.0 * x * g

    x = tc.tensor(np.array([1.5, -0.5]), requires_grad=True)
    (g,) = tc.grad(tc.sum(Square.apply(x) * x), [x], create_graph=True)
    assert np.allclose(g.numpy(), 3 * x.numpy() ** 2)
    (h,) = tc.grad(tc.sum(g), [x])  # the backward rule differentiated by the standard rules
    assert np.allclose(h, 6 * x.numpy())


def test_integer_arguments_and_unused_outputs() -> None:
    @tc.custom_vjp
    def pick(x, idx):
        return x[idx]

    def pick_bwd(idx, g):  # not gather's true adjoint: a rule of its own
        return tc.concatenate([g, tc.sum(g, keepdims=True)]) * 10.0, None

    pick.defvjp(lambda x, idx: (x[idx], idx), pick_bwd)

    @tc.function
    def loss(x, idx):
        return tc.sum(pick(x, idx) ** 2)

    x = tc.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    assert np.array_equal(tc.grad(tc.sum(pick(x, tc.tensor(np.array([0, 2])))), [x])[0],
                          [10.0, 10.0, 20.0])  # fmt: skip
    for idx, expected in (([0, 2], [20.0, 60.0, 80.0]), ([1, 1], [40.0, 40.0, 80.0])):
        (g,) = tc.grad(loss(x, tc.tensor(np.array(idx))), [x])  # the index is an input
        assert np.array_equal(g, expected)

    @tc.custom_vjp
    def sin_cos(x):
        return tc.sin(x), tc.cos(x)

    sin_cos.defvjp(lambda x: (sin_cos(x), x),
                   lambda x, g: (g[0] * tc.cos(x) - g[1] * tc.sin(x),))  # fmt: skip
    s, c = sin_cos(x)
    assert np.allclose(tc.grad(tc.sum(c), [x])[0], -np.sin(x.numpy()), rtol=1e-14)


def test_two_custom_rules_of_one_name_in_scan_bodies_stay_apart() -> None:
    """Two ``custom_jvp`` functions named alike (a factory's, closing over different
    constants), each in a ``scan`` body, one after the other: a loop body's identity is
    its ops' text, and a call op prints its traced functions' digests, so the second
    loop's gradient is its own on both executors (it was the first's, silently)."""

    def make(scale: float):  # type: ignore[no-untyped-def]
        @tc.custom_jvp
        def f(x):  # type: ignore[no-untyped-def]
            return tc.sin(x) * scale

        @f.defjvp
        def f_jvp(primals, tangents):  # type: ignore[no-untyped-def]
            (x,), (t,) = primals, tangents
            return f(x), tc.cos(x) * scale * t

        return f

    def loss_of(f):  # type: ignore[no-untyped-def]
        def body(c, x):  # type: ignore[no-untyped-def]
            c = c + f(x)
            return c, c

        return lambda xs: tc.scan(body, tc.zeros(()), xs)[0]

    xs = np.linspace(0.1, 1.0, 5)
    compiled = CompiledExecutor(False, background=False)
    for scale in (2.0, 3.0):
        loss = loss_of(make(scale))
        for executor in (compiled, tc.ReferenceExecutor()):
            x = tc.tensor(xs, requires_grad=True)
            (g,) = tc.grad(loss(x), [x], executor=executor)
            np.testing.assert_allclose(g, scale * np.cos(xs), rtol=1e-12)
    assert compiled.stats.fallbacks == 0

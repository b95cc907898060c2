"""Higher order and forward mode for Tensor users: ``tc.grad(create_graph=True)`` and
``tidu_compile.func``, on both executors, against closed forms and central differences.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import central_difference_grad

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor, CompileForbiddenError

X = np.array([0.3, 1.2, -0.7, 2.1])


def _values(t: tc.Tensor) -> np.ndarray:
    return t.numpy()


# nth derivative of sin at x: sin, cos, -sin, -cos, sin, ...
SIN_DERIVATIVES = [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin]


def test_nth_derivatives_of_sin_by_create_graph(executor: tc.BackwardExecutor) -> None:
    x = tc.tensor(X, requires_grad=True)
    current = tc.sin(x)
    for order, closed_form in enumerate(SIN_DERIVATIVES, start=1):
        (current,) = tc.grad(tc.sum(current), [x], create_graph=True)
        assert isinstance(current, tc.Tensor)
        np.testing.assert_allclose(_values(current), closed_form(X), rtol=1e-13, err_msg=order)


def test_nth_derivatives_of_sin_by_nested_func_grad(executor: tc.BackwardExecutor) -> None:
    derivative: Callable[[tc.Tensor], tc.Tensor] = tc.sin
    for order, closed_form in enumerate(SIN_DERIVATIVES, start=1):
        derivative = func.grad(lambda x, d=derivative: tc.sum(d(x)))
        np.testing.assert_allclose(_values(derivative(X)), closed_form(X), rtol=1e-13,
                                   err_msg=str(order))  # fmt: skip


def test_third_derivative_of_x_cubed_exp(executor: tc.BackwardExecutor) -> None:
    """d^3/dx^3 x^3 e^x = (x^3 + 9x^2 + 18x + 6) e^x."""
    f = lambda x: tc.sum(x**3 * tc.exp(x))  # noqa: E731
    third = func.grad(lambda x: tc.sum(func.grad(lambda y: tc.sum(func.grad(f)(y)))(x)))
    expected = (X**3 + 9 * X**2 + 18 * X + 6) * np.exp(X)
    np.testing.assert_allclose(_values(third(X)), expected, rtol=1e-12)


def _poly(x: tc.Tensor) -> tc.Tensor:
    """f(x, y) = x^2 y + 3 x y^3 - y^2 on x = (x, y) given as two entries."""
    a, b = x
    return a * a * b + 3.0 * a * b**3 - b * b


def _poly_hessian(a: float, b: float) -> np.ndarray:
    return np.array([[2 * b, 2 * a + 9 * b * b], [2 * a + 9 * b * b, 18 * a * b - 2]])


def test_hessian_vector_products_forward_over_reverse(executor: tc.BackwardExecutor) -> None:
    a, b = 0.7, -1.3
    f = lambda x, y: _poly((x, y))  # noqa: E731
    hessian = _poly_hessian(a, b)
    for v in (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.5, -2.0])):
        (ga, gb), (ha, hb) = func.jvp(func.grad(f, argnums=(0, 1)), (a, b), (v[0], v[1]))
        np.testing.assert_allclose([ha.item(), hb.item()], hessian @ v, rtol=1e-13)
        gradient = [2 * a * b + 3 * b**3, a * a + 9 * a * b * b - 2 * b]
        np.testing.assert_allclose([ga.item(), gb.item()], gradient)


def test_hessian_vector_product_reverse_over_forward(executor: tc.BackwardExecutor) -> None:
    f = lambda x: tc.sum(tc.sin(x) * x * x)  # noqa: E731
    v = np.array([1.0, -0.5, 2.0, 0.25])
    hvp = func.grad(lambda x: tc.sum(func.jvp(f, (x,), (v,))[1]))(X)
    second = (2 - X * X) * np.sin(X) + 4 * X * np.cos(X)  # f is a sum: H is diagonal
    np.testing.assert_allclose(_values(hvp), second * v, rtol=1e-12)


def test_create_graph_gradient_differentiated_again_matches_differences(
    executor: tc.BackwardExecutor,
) -> None:
    """``L(w) = |grad_x f(x, w)|^2``: its gradient in w against central differences."""
    rng = np.random.default_rng(3)
    xv, wv = rng.standard_normal(5), rng.standard_normal(5)

    def grad_norm(w_array: np.ndarray, keep: bool = False):  # type: ignore[no-untyped-def]
        x = tc.tensor(xv, requires_grad=True)
        w = tc.tensor(w_array, requires_grad=True)
        loss = tc.sum(tc.tanh(x * w) * tc.exp(w) + x * x * w)
        (gx,) = tc.grad(loss, [x], create_graph=True)
        norm = tc.sum(gx * gx)
        return (norm, w) if keep else norm.item()

    norm, w = grad_norm(wv, keep=True)
    (gw,) = tc.grad(norm, [w])
    expected = central_difference_grad(lambda a: grad_norm(a), [wv], 0)
    np.testing.assert_allclose(gw, expected, rtol=1e-7, atol=1e-8)


def test_jvp_of_holomorphic_function_is_f_prime_dz(executor: tc.BackwardExecutor) -> None:
    z = np.array([0.5 + 0.2j, -0.3 + 1.0j])
    dz = np.array([1.0 - 0.5j, 0.25j])
    out, tangent = func.jvp(lambda z: tc.exp(z) * z, (z,), (dz,))
    np.testing.assert_allclose(out.numpy(), np.exp(z) * z)
    np.testing.assert_allclose(tangent.numpy(), (np.exp(z) * (1 + z)) * dz, rtol=1e-13)


def test_value_and_grad_trees(executor: tc.BackwardExecutor) -> None:
    params = {"w": np.array([[1.0, 2.0], [3.0, 4.0]]), "b": [np.array([0.5, -0.5])]}

    def loss(p, x):  # type: ignore[no-untyped-def]
        return tc.sum(tc.tanh(x @ p["w"] + p["b"][0]) ** 2)

    x = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]])
    value, grads = func.value_and_grad(loss)(params, x)
    assert set(grads) == {"w", "b"} and isinstance(grads["b"], list)
    h = np.tanh(x @ params["w"] + params["b"][0])
    dz = 2 * h * (1 - h * h)
    np.testing.assert_allclose(value.item(), np.sum(h**2))
    np.testing.assert_allclose(grads["w"].numpy(), x.T @ dz, rtol=1e-13)
    np.testing.assert_allclose(grads["b"][0].numpy(), dz.sum(0), rtol=1e-13)


def test_vjp_with_two_outputs(executor: tc.BackwardExecutor) -> None:
    a, b = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    (p, e), vjp_fn = func.vjp(lambda a, b: (a * b, tc.exp(a)), a, b)
    ca, cb = vjp_fn((np.array([1.0, 0.5]), np.array([2.0, -1.0])))
    np.testing.assert_allclose(ca.numpy(), b * [1.0, 0.5] + np.exp(a) * [2.0, -1.0])
    np.testing.assert_allclose(cb.numpy(), a * [1.0, 0.5])


def test_no_perturbation_confusion(executor: tc.BackwardExecutor) -> None:
    """d/dx [x * (d/dy x*y)(x)] = d/dx x^2 = 2x, not 4x (Siskind and Pearlmutter)."""
    result = func.grad(lambda x: x * func.grad(lambda y: x * y)(x))(2.0)
    assert result.item() == pytest.approx(4.0)


def test_zero_gradient_for_unused_argument(executor: tc.BackwardExecutor) -> None:
    ga, gb = func.grad(lambda a, b: tc.sum(a * 2.0), argnums=(0, 1))(X, X)
    np.testing.assert_array_equal(ga.numpy(), np.full(4, 2.0))
    np.testing.assert_array_equal(gb.numpy(), np.zeros(4))


# ------------------------------------------------------------------ compiled and cached


def test_higher_order_nodes_hit_the_cache_on_a_second_run(tmp_path: Path) -> None:
    """Second order backward nodes and forward-mode tangent programs are compiled once:
    a second run with compiling forbidden finds every one in the disk cache."""
    f = lambda x: tc.sum(tc.tanh(x) * tc.exp(-x) * x)  # noqa: E731
    v = np.linspace(-1.0, 1.0, 4)

    def run(executor: CompiledExecutor) -> np.ndarray:
        with tc.use_executor(executor):
            _, hvp = func.jvp(func.grad(f), (X,), (v,))
            (second,) = tc.grad(tc.sum(func.grad(f)(tc.tensor(X, requires_grad=True)) ** 2),
                                [tc.tensor(X, requires_grad=True)])  # fmt: skip
            assert second is None  # the leaf given is not the one used
            return hvp.numpy()

    first = CompiledExecutor(tmp_path)
    expected = run(first)
    assert first.stats.compiles + first.stats.disk_hits > 0 and first.stats.fallbacks == 0
    again = CompiledExecutor(tmp_path, forbid_compile=True)
    np.testing.assert_array_equal(run(again), expected)
    assert again.stats.compiles == 0 and again.stats.disk_hits > 0 and again.stats.fallbacks == 0
    forbidden = CompiledExecutor(False, forbid_compile=True)
    with pytest.raises(CompileForbiddenError), tc.use_executor(forbidden):
        func.jvp(func.grad(f), (X,), (v,))


# ------------------------------------------------------------------ bad input


def test_bad_input_is_a_clear_error(executor: tc.BackwardExecutor) -> None:
    f = lambda x: tc.sum(x * x)  # noqa: E731
    with pytest.raises(ValueError, match="tangent 0 is \\(3,\\) float64, its primal is \\(4,\\)"):
        func.jvp(f, (X,), (np.ones(3),))
    with pytest.raises(ValueError, match="tangent 0 is \\(4,\\) float32"):
        func.jvp(f, (X,), (np.ones(4, np.float32),))
    with pytest.raises(ValueError, match="2 primals but 1 tangents"):
        func.jvp(lambda a, b: a * b, (X, X), (X,))
    with pytest.raises(ValueError, match="argnums 3 is out of range"):
        func.grad(f, argnums=3)(X)
    with pytest.raises(ValueError, match="real scalar, got shape \\(4,\\)"):
        func.grad(lambda x: x * 2.0)(X)
    with pytest.raises(ValueError, match="real scalar.*complex128"):
        func.grad(lambda z: tc.sum(z * z))(X + 1j)
    with pytest.raises(TypeError, match="float or complex values, got int64"):
        func.grad(f)(np.arange(4))
    x = tc.tensor(X, requires_grad=True)
    with pytest.raises(ValueError, match="seed: shape"):
        tc.grad(x * 2.0, [x], seed=np.ones(3), create_graph=True)
    with pytest.raises(ValueError, match="seed is required"):
        tc.grad(x * 2.0, [x], create_graph=True)
    with pytest.raises(ValueError, match="does not require gradients"):
        tc.grad(tc.tensor(X), [x], create_graph=True)
    (p, _), vjp_fn = func.vjp(lambda a: (a * 2.0, a), X)
    with pytest.raises(ValueError, match="expected 2 cotangents"):
        vjp_fn(np.ones(4))


def test_transforms_inside_a_traced_function_are_refused() -> None:
    @tc.function
    def traced(x):  # type: ignore[no-untyped-def]
        return func.grad(lambda y: tc.sum(y * y))(x)

    with pytest.raises(TypeError, match="inside a @tidu_compile.function trace"):
        traced(tc.tensor(X, requires_grad=True))


def test_math_reference() -> None:
    """The closed forms used above, against differences of numpy (guards the tests)."""
    h = 2e-3
    f = lambda x: x**3 * math.exp(x)  # noqa: E731
    third = (f(0.4 + 2 * h) - 2 * f(0.4 + h) + 2 * f(0.4 - h) - f(0.4 - 2 * h)) / (2 * h**3)
    assert third == pytest.approx((0.4**3 + 9 * 0.16 + 18 * 0.4 + 6) * math.exp(0.4), rel=1e-4)

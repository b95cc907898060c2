"""``func.jacrev``, ``func.jacfwd`` and ``func.hessian`` on both executors, against
central differences and closed forms (never against the library itself alone)."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import func

X = np.array([0.4, -1.3, 0.9])


def r3_to_r4(x: tc.Tensor) -> tc.Tensor:
    """``(x0 x1, sin x2, x0^2 + x2, e^{x1} x2)``: R^3 -> R^4."""
    return tc.stack([x[0] * x[1], tc.sin(x[2]), x[0] ** 2 + x[2], tc.exp(x[1]) * x[2]])


def r3_to_r4_numpy(x: np.ndarray) -> np.ndarray:
    return np.array([x[0] * x[1], np.sin(x[2]), x[0] ** 2 + x[2], np.exp(x[1]) * x[2]])


def central_jacobian(f: object, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """``J[i, j] = d f_i / d x_j`` by central differences."""
    columns = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = step
        columns.append((f(x + e) - f(x - e)) / (2 * step))  # type: ignore[operator]
    return np.stack(columns, axis=-1)


def test_jacrev_and_jacfwd_agree_with_differences(executor: tc.BackwardExecutor) -> None:
    expected = central_jacobian(r3_to_r4_numpy, X)
    by_reverse = func.jacrev(r3_to_r4)(X)
    by_forward = func.jacfwd(r3_to_r4)(X)
    assert by_reverse.shape == by_forward.shape == (4, 3)
    np.testing.assert_allclose(by_reverse.numpy(), expected, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(by_forward.numpy(), expected, rtol=1e-8, atol=1e-9)


def test_jacobian_of_a_matrix_function_has_output_then_input_axes(
    executor: tc.BackwardExecutor,
) -> None:
    """``f(A) = A @ B``: ``J[i, k, j, l] = delta_ij B[l, k]``, both modes."""
    a = np.arange(6.0).reshape(2, 3) / 5
    b = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 0.0]])
    expected = np.einsum("ij,lk->ikjl", np.eye(2), b)
    for transform in (func.jacrev, func.jacfwd):
        got = transform(lambda m: m @ b)(a)
        assert got.shape == (2, 2, 2, 3)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14)


def test_jacobians_with_respect_to_two_arguments(executor: tc.BackwardExecutor) -> None:
    """``f(x, y) = x * y**2`` elementwise: ``diag(y^2)`` and ``diag(2 x y)``."""
    y = np.array([1.5, -0.5, 2.0])
    for transform in (func.jacrev, func.jacfwd):
        jx, jy = transform(lambda u, v: u * v**2, argnums=(0, 1))(X, y)
        np.testing.assert_allclose(jx.numpy(), np.diag(y**2), rtol=1e-14)
        np.testing.assert_allclose(jy.numpy(), np.diag(2 * X * y), rtol=1e-14)


def polynomial(x: tc.Tensor) -> tc.Tensor:
    """``x0^2 x1 + 3 x1^3 + x0 x2 - 2 x2^2``."""
    return x[0] ** 2 * x[1] + 3 * x[1] ** 3 + x[0] * x[2] - 2 * x[2] ** 2


def polynomial_hessian(x: np.ndarray) -> np.ndarray:
    return np.array(
        [
            [2 * x[1], 2 * x[0], 1.0],
            [2 * x[0], 18 * x[1], 0.0],
            [1.0, 0.0, -4.0],
        ]
    )


def test_hessian_of_a_polynomial_is_its_closed_form(executor: tc.BackwardExecutor) -> None:
    got = func.hessian(polynomial)(X)
    np.testing.assert_allclose(got.numpy(), polynomial_hessian(X), rtol=1e-13, atol=1e-14)


def test_hessian_of_a_quadratic_form_is_the_symmetrized_matrix(
    executor: tc.BackwardExecutor,
) -> None:
    m = np.array([[2.0, 1.0, 0.0], [3.0, -1.0, 4.0], [0.5, 0.0, 1.0]])
    got = func.hessian(lambda x: tc.sum(x * (m @ x)))(X)
    np.testing.assert_allclose(got.numpy(), m + m.T, rtol=1e-14)


def test_hessian_blocks_for_two_arguments(executor: tc.BackwardExecutor) -> None:
    """``f(x, y) = sum(x^2 y) + sum(y^3)``: blocks ``diag(2y)``, ``diag(2x)``,
    ``diag(2x)``, ``diag(6y)``."""
    y = np.array([0.5, 2.0, -1.0])
    blocks = func.hessian(lambda u, v: tc.sum(u**2 * v) + tc.sum(v**3), argnums=(0, 1))(X, y)
    expected = [[np.diag(2 * y), np.diag(2 * X)], [np.diag(2 * X), np.diag(6 * y)]]
    for row, expected_row in zip(blocks, expected, strict=True):
        for block, want in zip(row, expected_row, strict=True):
            np.testing.assert_allclose(block.numpy(), want, rtol=1e-14, atol=1e-15)


def test_jacobians_of_nested_arguments_and_outputs(executor: tc.BackwardExecutor) -> None:
    """Parameters as a dict: each block has the output leaf's axes then the argument
    leaf's; a dict output nests outside the argument's tree, in both modes."""
    w, b = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.3, -0.2])

    def f(params: dict) -> dict:
        y = params["w"] @ X[:2] + params["b"]
        return {"y": y, "s": tc.sum(y * y)}

    y = w @ X[:2] + b
    for transform in (func.jacrev, func.jacfwd):
        jac = transform(f)({"w": w, "b": b})
        np.testing.assert_allclose(jac["y"]["b"].numpy(), np.eye(2), rtol=1e-14)
        np.testing.assert_allclose(jac["y"]["w"].numpy(),
                                   np.einsum("ij,k->ijk", np.eye(2), X[:2]), rtol=1e-14)
        np.testing.assert_allclose(jac["s"]["b"].numpy(), 2 * y, rtol=1e-14)
        np.testing.assert_allclose(jac["s"]["w"].numpy(), 2 * np.outer(y, X[:2]), rtol=1e-14)


def test_hessian_of_a_nested_argument(executor: tc.BackwardExecutor) -> None:
    """``f(p) = sum(p["a"]^2 * p["c"])``: blocks ``[a][a] = diag(2c)``, ``[a][c] =
    diag(2a)``, ``[c][c] = 0``."""
    a, c = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    h = func.hessian(lambda p: tc.sum(p["a"] ** 2 * p["c"]))({"a": a, "c": c})
    np.testing.assert_allclose(h["a"]["a"].numpy(), np.diag(2 * c), rtol=1e-14)
    np.testing.assert_allclose(h["a"]["c"].numpy(), np.diag(2 * a), rtol=1e-14)
    np.testing.assert_allclose(h["c"]["a"].numpy(), np.diag(2 * a), rtol=1e-14)
    np.testing.assert_allclose(h["c"]["c"].numpy(), np.zeros((2, 2)), atol=1e-15)


def test_jacobian_errors_name_what_is_wrong() -> None:
    with pytest.raises(TypeError, match="must return a Tensor"):
        func.jacfwd(lambda x: 3.0)(X)
    with pytest.raises(ValueError, match="argnums 3 is out of range"):
        func.jacrev(tc.sin, argnums=3)(X)

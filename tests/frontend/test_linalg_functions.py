"""``tidu_compile.numpy.linalg`` and ``tidu_compile.scipy.linalg``: numpy's and scipy's
values, gradients against central differences, batching, errors before any call, and a
Gaussian-process marginal likelihood compiled whole under ``@tc.function``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.linalg

import tidu_compile as tc
import tidu_compile.numpy as tnp
import tidu_compile.scipy.linalg as tsl
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor

RNG = np.random.default_rng(7)
GENERAL = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
SPD = GENERAL @ np.swapaxes(GENERAL, -1, -2)
TALL = RNG.standard_normal((5, 3))
RHS = RNG.standard_normal((2, 4, 3))
VECTOR = RNG.standard_normal(4)


def _numeric_grad(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


#: name -> (tidu_compile function, numpy/scipy function, input); a scalar loss of each
#: result is checked against central differences of the numpy one.
FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any], np.ndarray]] = {
    "solve": (lambda a: tnp.linalg.solve(a, RHS), lambda a: np.linalg.solve(a, RHS), GENERAL),
    "solve_vector": (lambda a: tnp.linalg.solve(a[0], VECTOR),
                     lambda a: np.linalg.solve(a[0], VECTOR), GENERAL),
    "inv": (tnp.linalg.inv, np.linalg.inv, GENERAL),
    "det": (tnp.linalg.det, np.linalg.det, GENERAL),
    "slogdet": (lambda a: tnp.linalg.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1], GENERAL),
    "cholesky": (tnp.linalg.cholesky, np.linalg.cholesky, SPD),
    "cholesky_upper": (lambda a: tnp.linalg.cholesky(a, upper=True),
                       lambda a: np.linalg.cholesky(a, upper=True), SPD),
    "eigvalsh": (tnp.linalg.eigvalsh, np.linalg.eigvalsh, SPD),
    "eigh_vectors_squared": (lambda a: tnp.linalg.eigh(a)[1] ** 2,
                             lambda a: np.linalg.eigh(a)[1] ** 2, SPD),
    "eigh_upper": (lambda a: tnp.linalg.eigh(a, UPLO="U")[0],
                   lambda a: np.linalg.eigh(a, UPLO="U")[0], GENERAL),
    "svdvals": (tnp.linalg.svdvals, np.linalg.svdvals, TALL),
    "svd_projector": (lambda a: (lambda u: u @ u.T)(tnp.linalg.svd(a, full_matrices=False)[0]),
                      lambda a: (lambda u: u @ u.T)(np.linalg.svd(a, full_matrices=False)[0]),
                      TALL),
    "qr_r_abs": (lambda a: abs(tnp.linalg.qr(a)[1]), lambda a: abs(np.linalg.qr(a)[1]), TALL),
    "pinv": (tnp.linalg.pinv, np.linalg.pinv, TALL),
    "matrix_power5": (lambda a: tnp.linalg.matrix_power(a, 5),
                      lambda a: np.linalg.matrix_power(a, 5), GENERAL / 4),
    "matrix_power-2": (lambda a: tnp.linalg.matrix_power(a, -2),
                       lambda a: np.linalg.matrix_power(a, -2), GENERAL),
    "lstsq": (lambda a: tnp.linalg.lstsq(a, TALL[:, 0] * 2 + 1)[0],
              lambda a: np.linalg.lstsq(a, TALL[:, 0] * 2 + 1)[0], TALL),
    "lstsq_residuals": (lambda a: tnp.linalg.lstsq(a, np.arange(5.0))[1],
                        lambda a: np.linalg.lstsq(a, np.arange(5.0))[1], TALL),
    "norm2": (lambda a: tnp.linalg.norm(a, 2), lambda a: np.linalg.norm(a, 2), TALL),
    "norm-2": (lambda a: tnp.linalg.norm(a, -2), lambda a: np.linalg.norm(a, -2), TALL),
    "norm_nuc": (lambda a: tnp.linalg.norm(a, "nuc", axis=(0, 1)),
                 lambda a: np.linalg.norm(a, "nuc", axis=(0, 1)), TALL),
    "solve_triangular": (lambda a: tsl.solve_triangular(a[0], RHS[0], lower=True),
                         lambda a: scipy.linalg.solve_triangular(a[0], RHS[0], lower=True),
                         GENERAL),
    "solve_triangular_t": (lambda a: tsl.solve_triangular(a[1], VECTOR, trans="T"),
                           lambda a: scipy.linalg.solve_triangular(a[1], VECTOR, trans="T"),
                           GENERAL),
    "cho_solve": (lambda a: tsl.cho_solve(tsl.cho_factor(a[0]), RHS[0]),
                  lambda a: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a[0]), RHS[0]), SPD),
    "cho_solve_lower": (lambda a: tsl.cho_solve(tsl.cho_factor(a[1], lower=True), VECTOR),
                        lambda a: scipy.linalg.cho_solve(scipy.linalg.cho_factor(a[1], True),
                                                         VECTOR), SPD),
    "scipy_cholesky": (lambda a: tsl.cholesky(a[0]), lambda a: scipy.linalg.cholesky(a[0]), SPD),
    "expm": (lambda a: tsl.expm(a[0] / 4), lambda a: scipy.linalg.expm(a[0] / 4), GENERAL),
    "vector_norm": (lambda a: tnp.linalg.vector_norm(a, ord=3),
                    lambda a: np.linalg.vector_norm(a, ord=3), GENERAL),
    "matrix_norm_2": (lambda a: tnp.linalg.matrix_norm(a, ord=2, keepdims=True),
                      lambda a: np.linalg.matrix_norm(a, ord=2, keepdims=True), GENERAL),
    "cond": (tnp.linalg.cond, np.linalg.cond, GENERAL),
    "cond_1": (lambda a: tnp.linalg.cond(a, 1), lambda a: np.linalg.cond(a, 1), GENERAL),
    "multi_dot": (lambda a: tnp.linalg.multi_dot([a[0], a[1], VECTOR]),
                  lambda a: np.linalg.multi_dot([a[0], a[1], VECTOR]), GENERAL),
}  # fmt: skip


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_values_and_gradients_match_numpy(name: str, executor: tc.BackwardExecutor) -> None:
    ours, theirs, data = FUNCTIONS[name]
    weights = np.cos(np.arange(np.asarray(theirs(data)).size)).reshape(np.shape(theirs(data)))
    x = tc.tensor(data, requires_grad=True)
    y = ours(x)
    np.testing.assert_allclose(y.numpy(), theirs(data), rtol=1e-10, atol=1e-12)
    (grad,) = tc.grad(tc.sum(y * weights), [x])
    expected = _numeric_grad(lambda v: float(np.sum(theirs(v) * weights)), data)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


def test_second_derivatives_through_the_rules() -> None:
    """The rules are written with primitives: a Hessian-vector product of log det."""
    a = tc.tensor(GENERAL[0])
    direction = np.sin(np.arange(16.0)).reshape(4, 4)

    def logdet(m: tc.Tensor) -> tc.Tensor:
        return tnp.linalg.slogdet(m)[1]

    _, hvp = func.jvp(func.grad(logdet), (a,), (tc.tensor(direction),))
    inverse = np.linalg.inv(GENERAL[0])  # d(A^-T)[V] = -(A^-1 V A^-1)^T
    np.testing.assert_allclose(hvp.numpy(), -(inverse @ direction @ inverse).T, rtol=1e-10)


def _gp_negative_log_likelihood(x: tc.Tensor, y: tc.Tensor, log_scale: tc.Tensor,
                                log_noise: tc.Tensor) -> tc.Tensor:  # fmt: skip
    """``½ yᵀ K⁻¹ y + ½ log det K + n/2 log 2π`` with an RBF kernel, each half of each
    term computed another way: ``yᵀ K⁻¹ y`` by ``cho_solve`` and as ``|L⁻¹ y|²``
    (``solve_triangular``), ``log det K`` by ``slogdet`` and as ``2 Σ log diag L``."""
    squared = tnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    kernel = tnp.exp(-0.5 * squared / tnp.exp(2 * log_scale))
    kernel = kernel + tnp.exp(log_noise) * np.eye(x.shape[0])
    factor = tnp.linalg.cholesky(kernel)
    alpha = tsl.cho_solve((factor, True), y)
    whitened = tsl.solve_triangular(factor, y, lower=True)
    _, logdet = tnp.linalg.slogdet(kernel)
    quadratic = 0.25 * tnp.sum(y * alpha) + 0.25 * tnp.sum(whitened**2)
    half_logdet = 0.25 * logdet + 0.5 * tnp.sum(tnp.log(tnp.diagonal(factor)))
    return quadratic + half_logdet + 0.5 * x.shape[0] * np.log(2 * np.pi)


def test_gp_marginal_likelihood_compiles_with_no_fallback() -> None:
    """Cholesky, cho_solve, solve_triangular and slogdet in one ``@tc.function``: its
    forward and backward programs run natively, the factorisations as LAPACK kernels
    (``tests/compiler/test_lapack_kernels.py`` checks the plans)."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((12, 2)), rng.standard_normal(12)
    compiled = CompiledExecutor(False)
    loss = tc.function(_gp_negative_log_likelihood)
    params = [tc.tensor(0.3, requires_grad=True), tc.tensor(-1.0, requires_grad=True)]
    with tc.use_executor(compiled):
        value = loss(tc.tensor(x), tc.tensor(y), *params)
        grads = tc.grad(value, params)
        value = loss(tc.tensor(x), tc.tensor(y), *params)  # replayed
        grads = tc.grad(value, params)
    assert compiled.stats.compiles >= 1
    assert compiled.stats.fallbacks == 0 and not compiled.stats.errors, compiled.stats.errors

    def numpy_loss(log_scale: float, log_noise: float) -> float:
        squared = np.sum((x[:, None] - x[None]) ** 2, -1)
        kernel = np.exp(-0.5 * squared / np.exp(2 * log_scale)) + np.exp(log_noise) * np.eye(12)
        sign, logdet = np.linalg.slogdet(kernel)
        return float(0.5 * y @ np.linalg.solve(kernel, y) + 0.5 * logdet + 6 * np.log(2 * np.pi))

    np.testing.assert_allclose(float(value), numpy_loss(0.3, -1.0), rtol=1e-10)
    h = 1e-6
    expected = [(numpy_loss(0.3 + h, -1.0) - numpy_loss(0.3 - h, -1.0)) / (2 * h),
                (numpy_loss(0.3, -1.0 + h) - numpy_loss(0.3, -1.0 - h)) / (2 * h)]  # fmt: skip
    np.testing.assert_allclose(np.array(grads, dtype=float), expected, rtol=1e-6)


def test_batched_over_leading_axes() -> None:
    stacked = np.stack([SPD, SPD * 2])  # 2 x 2 x 4 x 4
    np.testing.assert_allclose(tnp.linalg.cholesky(stacked).numpy(), np.linalg.cholesky(stacked))
    np.testing.assert_allclose(tnp.linalg.solve(stacked, RHS).numpy(),
                               np.linalg.solve(stacked, RHS))  # fmt: skip
    np.testing.assert_allclose(tnp.linalg.det(stacked).numpy(), np.linalg.det(stacked))
    u, s, vh = tnp.linalg.svd(stacked)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), stacked)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: tnp.linalg.inv(np.ones((2, 3))), ValueError, "square"),
        (lambda: tnp.linalg.det(np.ones(3)), ValueError, "two-dimensional"),
        (lambda: tnp.linalg.solve(np.eye(3), np.ones(4)), ValueError, "must be 3"),
        (lambda: tnp.linalg.eigh(np.eye(2), UPLO="X"), ValueError, "UPLO"),
        (lambda: tnp.linalg.matrix_power(np.eye(2), 1.5), TypeError, "integer"),
        (lambda: tnp.linalg.svd(tc.tensor(TALL, requires_grad=True)), ValueError,
         "full_matrices"),
        (lambda: tnp.linalg.qr(np.eye(2), mode="raw"), ValueError, "mode"),
        (lambda: tsl.solve_triangular(np.eye(2), np.ones(2), trans=3), ValueError, "trans"),
        (lambda: tnp.linalg.lstsq(np.ones((2, 2, 2)), np.ones(2)), ValueError, "2-dim"),
        (lambda: tnp.linalg.eig, AttributeError, "not differentiable"),
        (lambda: tsl.lu, AttributeError, "not differentiable"),
    ],
)
def test_bad_inputs_raise_clear_errors(call: Callable[[], Any], error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        call()


def test_matrix_rank_counts_singular_values_above_the_tolerance() -> None:
    deficient = np.stack([TALL @ TALL.T, np.outer(TALL[:, 0], TALL[:, 1])])
    rank = tnp.linalg.matrix_rank(deficient)
    assert rank.dtype == np.int64
    np.testing.assert_array_equal(rank.numpy(), np.linalg.matrix_rank(deficient))


def test_integer_matrices_become_float64() -> None:
    result = tnp.linalg.inv(np.array([[2, 0], [0, 4]]))
    assert result.dtype == np.float64
    np.testing.assert_allclose(result.numpy(), [[0.5, 0], [0, 0.25]])


def test_numpy_linalg_calls_on_tensors_dispatch() -> None:
    """``np.linalg.inv(t)`` (numpy's own function) runs tidu_compile's, keeping the
    gradient."""
    x = tc.tensor(GENERAL[0], requires_grad=True)
    (grad,) = tc.grad(np.linalg.slogdet(x)[1] + tnp.sum(np.linalg.inv(x)), [x])
    inverse = np.linalg.inv(GENERAL[0])
    ones = np.ones((4, 4))
    np.testing.assert_allclose(grad, inverse.T - (inverse @ ones @ inverse).T, rtol=1e-10)


def test_hessian_through_cholesky_eigh_and_expm() -> None:
    """``func.hessian`` (forward over reverse) of a likelihood with cholesky, cho_solve,
    eigh and expm, against second central differences (on the reference executor: the
    rules are under test here, and compiling every node of a Hessian takes minutes)."""
    rng = np.random.default_rng(0)
    points, targets = rng.standard_normal((8, 2)), rng.standard_normal(8)
    squared = np.sum((points[:, None] - points[None]) ** 2, -1)

    def nll(p: tc.Tensor) -> tc.Tensor:
        kernel = tnp.exp(-0.5 * squared / tnp.exp(2 * p[0])) + tnp.exp(p[1]) * np.eye(8)
        factor = tnp.linalg.cholesky(kernel)
        alpha = tsl.cho_solve((factor, True), targets)
        eigenvalues = tnp.linalg.eigvalsh(kernel)
        return (0.5 * tnp.sum(targets * alpha) + tnp.sum(tnp.log(tnp.diagonal(factor)))
                + 0.1 * tnp.sum(eigenvalues**2) + 0.1 * tnp.sum(tsl.expm(kernel / 8)))

    p0 = np.array([0.2, -1.0])
    with tc.use_executor(tc.ReferenceExecutor()):  # the rules, not the compiler: fast
        hessian = func.hessian(nll)(tc.tensor(p0)).numpy()
    h, steps = 1e-4, np.eye(2) * 1e-4
    value = lambda p: float(nll(tc.tensor(p)))  # noqa: E731
    expected = [[(value(p0 + steps[i] + steps[j]) - value(p0 + steps[i] - steps[j])
                  - value(p0 - steps[i] + steps[j]) + value(p0 - steps[i] - steps[j])) / (4 * h * h)
                 for j in range(2)] for i in range(2)]  # fmt: skip
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)


def test_every_function_compiles_under_function_with_no_fallback() -> None:
    """One ``@tc.function`` using the rest (lstsq and its int64 rank, pinv, norms by
    singular values, qr, eigh, det, inv, matrix_power, expm): traced, its forward and
    backward compiled, replayed with the same values."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal(6)

    def everything(x: tc.Tensor) -> tc.Tensor:
        gram = x.T @ x + np.eye(3)
        solution, residuals, rank, _ = tnp.linalg.lstsq(x, b)
        return (tnp.sum(solution) + tnp.sum(residuals) + rank * 1.0 + tnp.sum(tnp.linalg.pinv(x))
                + tnp.linalg.norm(x, 2) + tnp.linalg.norm(x, "nuc")
                + tnp.sum(tnp.linalg.qr(x)[1] ** 2)
                + tnp.sum(tnp.linalg.eigh(gram)[0] ** 2) + tnp.linalg.det(gram)
                + tnp.sum(tnp.linalg.inv(gram)) + tnp.sum(tnp.linalg.matrix_power(gram, 3))
                + tnp.sum(tsl.expm(gram / 10)))  # fmt: skip

    compiled = CompiledExecutor(False, background=False)
    traced = tc.function(everything)
    with tc.use_executor(compiled):
        x = tc.tensor(a, requires_grad=True)
        first = traced(x)
        (grad,) = tc.grad(first, [x])
        again = traced(x)
    assert compiled.stats.fallbacks == 0 and not compiled.stats.errors, compiled.stats.errors
    with tc.use_executor(tc.ReferenceExecutor()):
        x = tc.tensor(a, requires_grad=True)
        expected = everything(x)
        (expected_grad,) = tc.grad(expected, [x])
    np.testing.assert_allclose(float(again), float(expected), rtol=1e-10)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9)

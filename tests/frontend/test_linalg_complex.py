"""Complex matrices in the solves, determinants, Cholesky, the factorisations and the
matrix exponential (``numpy.linalg.solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``,
``matrix_power``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals`` (gauge-invariant losses
of the vectors), ``pinv``, ``lstsq``, ``qr``; ``scipy.linalg.solve_triangular``,
``cho_solve``, ``expm``): the gradient of a real loss is ``dL/dRe + i dL/dIm`` (tidu's
convention, PyTorch's), checked against central differences in both parts, on the
reference executor and compiled (per op and under ``@tc.function``, no fallback)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
import tidu_compile.numpy as tnp
import tidu_compile.scipy.linalg as tsl
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor

RNG = np.random.default_rng(11)
_X = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
HPD = _X @ _X.conj().T + 3 * np.eye(3)  # Hermitian positive definite, well conditioned
RHS = RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2))
WEIGHTS = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))

#: name -> the function of a complex matrix (a matrix of at most 3 x 3)
FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "solve": lambda a: tnp.linalg.solve(a, RHS),
    "inv": tnp.linalg.inv,
    "det": lambda a: tnp.linalg.det(a)[None, None],
    "slogdet": lambda a: tnp.stack([tnp.linalg.slogdet(a)[0], tnp.linalg.slogdet(a)[1]])[:, None],
    "cholesky": tnp.linalg.cholesky,
    "cholesky_upper": lambda a: tnp.linalg.cholesky(a, upper=True),
    "matrix_power-2": lambda a: tnp.linalg.matrix_power(a, -2),
    "solve_triangular_T": lambda a: tsl.solve_triangular(a, RHS, trans="T"),
    "solve_triangular_C_unit": lambda a: tsl.solve_triangular(a, RHS, trans="C", lower=True,
                                                              unit_diagonal=True),
    "cho_solve_upper": lambda a: tsl.cho_solve(tsl.cho_factor(a), RHS),
    # eigh and svd: gauge-invariant functions of the vectors only (a phase per column)
    "eigvalsh": lambda a: tnp.linalg.eigvalsh(a)[None, :],
    "eigh_abs2": lambda a: tnp.abs(tnp.linalg.eigh(a)[1]) ** 2,
    "eigh_upper_projector": lambda a: _projector(tnp.linalg.eigh(a, UPLO="U")[1][:, :1]),
    "svdvals": lambda a: tnp.linalg.svdvals(a)[None, :],
    "svd_abs2_u": lambda a: tnp.abs(tnp.linalg.svd(a)[0]) ** 2,
    "svd_polar": lambda a: _polar(tnp.linalg.svd(a)),
    "svd_tall_polar": lambda a: _polar(tnp.linalg.svd(a[:, :2], full_matrices=False)),
    "pinv": tnp.linalg.pinv,
    "pinv_tall": lambda a: tnp.linalg.pinv(a[:, :2]),
    "svd_wide_abs2_vh": lambda a: tnp.abs(tnp.linalg.svd(a[:2], full_matrices=False)[2]) ** 2,
    "qr": lambda a: _product_free(tnp.linalg.qr(a)),
    "qr_tall_q": lambda a: tnp.linalg.qr(a[:, :2])[0],
    "qr_tall_r": lambda a: tnp.linalg.qr(a[:, :2], mode="r"),
    "expm": lambda a: tsl.expm(a / 3),
    "expm_batched": lambda a: tsl.expm(tnp.stack([a, 1j * a]) / 4).sum(axis=0),
    "lstsq": lambda a: tnp.linalg.lstsq(a, RHS)[0],
    "lstsq_tall_residuals": lambda a: _solution_and_residuals(tnp.linalg.lstsq(a[:, :2], RHS)),
    "lstsq_wide_vector": lambda a: tnp.linalg.lstsq(a[:2], RHS[:2, 0])[0][:, None],
    "cond": lambda a: tnp.linalg.cond(a)[None, None],
    "cond_fro": lambda a: tnp.linalg.cond(a, "fro")[None, None],
}


def _product_free(qr: Any) -> Any:
    """``Q + R`` (a loss of both factors that is no function of ``Q R = a``)."""
    return qr[0] + qr[1]


def _solution_and_residuals(result: Any) -> Any:
    """``x + residuals`` (broadcast over ``x``'s rows): both in one result."""
    return result[0] + result[1][None, :]


def _projector(v: Any) -> Any:
    """``v v^H``: the same for every phase of ``v``'s columns."""
    return v @ tnp.conj(tnp.swapaxes(v, -1, -2))


def _polar(usv: Any) -> Any:
    """``U V^H`` and ``U diag(s) V^H`` (both invariant under a phase per pair)."""
    u, s, vh = usv
    return u @ vh + (u * s[None, :]) @ vh


def _loss(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A real loss reading both parts of ``f``'s result."""

    def loss(a: Any) -> Any:
        y = f(a)
        w = WEIGHTS[: y.shape[0], : y.shape[-1]]
        return tnp.sum(tnp.real(y * np.conj(w))) + tnp.sum(tnp.abs(y) ** 2)

    return loss


def _central_differences(loss: Callable[[Any], Any], a: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(a)
    for index in np.ndindex(*a.shape):
        for unit in (1.0, 1j):
            step = np.zeros_like(a)
            step[index] = unit * h
            grad[index] += unit * (float(loss(a + step)) - float(loss(a - step))) / (2 * h)
    return grad


@pytest.mark.parametrize("name", FUNCTIONS)
def test_complex_gradients_match_central_differences_on_both_executors(
    name: str, compiled: CompiledExecutor
) -> None:
    """On the session's compiled executor (``tests/conftest.py``): the functions share
    many nodes (the loss, the complex elementwise steps), compiled once per run."""
    loss = _loss(FUNCTIONS[name])
    with tc.use_executor(tc.ReferenceExecutor()):
        expected = _central_differences(loss, HPD)
        reference = func.grad(loss)(HPD).numpy()
    scale = np.abs(expected).max()
    np.testing.assert_allclose(reference, expected, atol=1e-7 * scale)
    fallbacks = compiled.stats.fallbacks
    with tc.use_executor(compiled):
        per_op = func.grad(loss)(HPD).numpy()
        traced = tc.function(func.grad(loss))(HPD).numpy()
    np.testing.assert_allclose(per_op, reference, rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(traced, reference, rtol=1e-12, atol=1e-12 * scale)
    assert compiled.stats.fallbacks == fallbacks


def test_complex_values_match_numpy_and_scipy() -> None:
    import scipy.linalg

    factor = tnp.linalg.cholesky(HPD).numpy()
    np.testing.assert_allclose(factor, np.linalg.cholesky(HPD), rtol=1e-12)
    upper = tsl.cholesky(HPD).numpy()
    np.testing.assert_allclose(upper, scipy.linalg.cholesky(HPD), rtol=1e-12)
    x = tsl.solve_triangular(HPD, RHS, trans="C", lower=True).numpy()
    np.testing.assert_allclose(x, scipy.linalg.solve_triangular(HPD, RHS, trans="C", lower=True),
                               rtol=1e-12)  # fmt: skip
    x = tsl.cho_solve(tsl.cho_factor(HPD), RHS).numpy()
    np.testing.assert_allclose(x, np.linalg.solve(HPD, RHS), rtol=1e-10)
    general = HPD + 1j * WEIGHTS
    sign, logabsdet = tnp.linalg.slogdet(general)
    assert sign.dtype == np.complex128 and logabsdet.dtype == np.float64
    np.testing.assert_allclose(sign.numpy(), np.linalg.slogdet(general)[0], rtol=1e-12)
    np.testing.assert_allclose(logabsdet.numpy(), np.linalg.slogdet(general)[1], rtol=1e-12)
    np.testing.assert_allclose(tnp.linalg.det(general).numpy(), np.linalg.det(general),
                               rtol=1e-12)  # fmt: skip


def test_complex_eigh_and_svd_match_numpy_up_to_phases_batched() -> None:
    batch = np.stack([HPD, HPD + 1j * (WEIGHTS - WEIGHTS.conj().T)])
    w, v = tnp.linalg.eigh(batch)
    w_np, v_np = np.linalg.eigh(batch)
    assert w.dtype == np.float64 and v.dtype == np.complex128
    np.testing.assert_allclose(w.numpy(), w_np, rtol=1e-12)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(v_np), atol=1e-12)
    top = np.take_along_axis(v.numpy(), np.argmax(np.abs(v.numpy()), -2)[..., None, :], -2)
    np.testing.assert_allclose(top.imag, 0, atol=1e-15)
    assert (top.real > 0).all()
    tall = np.concatenate([batch, batch[:, :1] * 2j], axis=1)  # 2 x 4 x 3
    u, s, vh = tnp.linalg.svd(tall, full_matrices=False)
    assert s.dtype == np.float64
    np.testing.assert_allclose(s.numpy(), np.linalg.svdvals(tall), rtol=1e-12)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ vh.numpy(), tall,
                               atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(tnp.linalg.svdvals(tall).numpy(), s.numpy(), rtol=1e-14)
    full = tnp.linalg.svd(tall)  # non-square, full_matrices: numpy's, no gradient
    np.testing.assert_allclose(full.S.numpy(), s.numpy(), rtol=1e-12)


@pytest.mark.parametrize("executor", ["reference", "compiled"])
def test_complex_lstsq_matches_numpy(executor: str) -> None:
    tall = np.concatenate([HPD, 1j * WEIGHTS[:1]], axis=0)  # 4 x 3
    cases = [(tall, np.concatenate([RHS, WEIGHTS[1:2, :2]])), (tall, tall[:, 0].real),
             (tall.T, RHS), (tall.real, RHS[0].repeat(2)[:4])]  # fmt: skip
    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(compiled if executor == "compiled" else tc.ReferenceExecutor()):
        for a, b in cases:
            results = tnp.linalg.lstsq(a, b)
            for got, expected in zip(results, np.linalg.lstsq(a, b), strict=True):
                got = got.numpy()
                assert got.shape == np.shape(expected)
                assert got.dtype.kind == np.asarray(expected).dtype.kind
                np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert compiled.stats.fallbacks == 0


@pytest.mark.parametrize("executor", ["reference", "compiled"])
def test_complex_qr_matches_numpy(executor: str) -> None:
    tall = np.concatenate([HPD, 1j * WEIGHTS[:1]], axis=0)  # 4 x 3
    batch = np.stack([tall, tall[::-1] * (1 - 2j)]).astype(np.complex64)
    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(compiled if executor == "compiled" else tc.ReferenceExecutor()):
        for a, tolerance in ((HPD, 1e-12), (tall, 1e-12), (batch, 1e-5)):
            q, r = tnp.linalg.qr(a)
            q_np, r_np = np.linalg.qr(a)
            assert q.dtype == a.dtype and r.dtype == a.dtype
            np.testing.assert_allclose(q.numpy(), q_np, atol=tolerance)
            np.testing.assert_allclose(r.numpy(), r_np, atol=tolerance * 10)
            np.testing.assert_allclose(tnp.linalg.qr(a, mode="r").numpy(), r_np,
                                       atol=tolerance * 10)  # fmt: skip
        complete = tnp.linalg.qr(tall, mode="complete")  # tall: numpy's, no gradient
        np.testing.assert_allclose(complete.Q.numpy(), np.linalg.qr(tall, "complete")[0])
    assert compiled.stats.fallbacks == 0


@pytest.mark.parametrize("executor", ["reference", "compiled"])
def test_complex_expm_matches_scipy(executor: str) -> None:
    import scipy.linalg

    batch = np.stack([HPD / 3, 1j * WEIGHTS]).astype(np.complex64)
    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(compiled if executor == "compiled" else tc.ReferenceExecutor()):
        got = tsl.expm(WEIGHTS).numpy()
        np.testing.assert_allclose(got, scipy.linalg.expm(WEIGHTS), rtol=1e-12)
        assert got.dtype == np.complex128
        got = tsl.expm(batch).numpy()
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got, scipy.linalg.expm(batch), rtol=1e-5, atol=1e-5)
    assert compiled.stats.fallbacks == 0


def test_complex_pinv_matches_numpy() -> None:
    tall = np.concatenate([HPD, 1j * WEIGHTS[:1]], axis=0)
    np.testing.assert_allclose(tnp.linalg.pinv(tall).numpy(), np.linalg.pinv(tall), atol=1e-12)


@pytest.mark.parametrize("p", [None, 2, -2, 1, "fro", np.inf])
def test_complex_cond_matrix_rank_and_matrix_norm_match_numpy(p: Any) -> None:
    tall = np.concatenate([HPD, 1j * WEIGHTS[:1]], axis=0)
    np.testing.assert_allclose(tnp.linalg.cond(HPD, p).numpy(), np.linalg.cond(HPD, p),
                               rtol=1e-10)  # fmt: skip
    if p is not None and p not in (2, -2):
        np.testing.assert_allclose(tnp.linalg.matrix_norm(tall, ord=p).numpy(),
                                   np.linalg.matrix_norm(tall, ord=p), rtol=1e-12)  # fmt: skip
    singular = np.outer(HPD[0], HPD[1].conj())  # rank one
    assert int(tnp.linalg.matrix_rank(singular)) == np.linalg.matrix_rank(singular) == 1
    assert int(tnp.linalg.matrix_rank(tall)) == np.linalg.matrix_rank(tall) == 3

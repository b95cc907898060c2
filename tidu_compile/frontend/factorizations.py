"""numpy's ``linalg`` functions, differentiable: formulas of the linalg primitives.

=====================  ==========================================================
function               as
=====================  ==========================================================
solve(a, b)            ``solve`` (LU); ``b`` a vector or a batch of matrices
inv(a)                 ``solve(a, I)``
slogdet, det           ``slogdet`` (LU); ``det = sign * exp(logabsdet)``
cholesky(a, upper)     ``cholesky`` (of ``aᵀ`` for the upper triangle), as numpy reads
eigh, eigvalsh         ``eigh`` (of ``aᵀ`` for ``UPLO='U'``)
svd, svdvals           reduced ``svd`` (``full_matrices`` only for square matrices)
qr(a, mode)            reduced ``qr`` (``'reduced'``, ``'r'``; ``'complete'`` when square)
pinv(a, rcond)         ``V diag(1/s) U^H`` over the singular values above the cutoff
matrix_power(a, n)     products by repeated squaring (``inv`` first when ``n < 0``)
lstsq(a, b, rcond)     ``V diag(1/s) U^H b``, pinv's (see ``lstsq``)
=====================  ==========================================================

All batch over leading axes, as numpy; integers become float64. Complex matrices:
``solve``, ``inv``, ``slogdet`` and ``det`` (``complex_slogdet``: a complex sign, a real
log-determinant), ``cholesky`` (``a = L L^H``), ``matrix_power``, ``eigh``/``eigvalsh``
(Hermitian: real eigenvalues, ``complex_eigh``), ``svd``/``svdvals`` (real singular
values, ``a = U diag(S) V^H``, ``complex_svd``), ``pinv``, ``lstsq`` and ``qr``
(numpy's factors: ``R``'s diagonal real) take them, as do scipy's triangular and
Cholesky solves and ``expm``, and the functions built on them (``cond``,
``matrix_rank``, ``matrix_norm``: ``matrix_norms``).
Complex vectors are defined up to a phase per column: the gradients are those of the
ops' fixed gauge (``ops.complex_decompositions``), so only gauge-invariant functions
of them (``|v|²``, ``U diag(S) V^H``) match numpy-based finite differences.
Bad shapes raise ``LinAlgError``-like ``ValueError``s before any call. eigh and svd:
the derivatives of the vectors are infinite where two eigenvalues (singular values)
tie; see ``ops.decompositions``.
"""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import compare, conj, real, unary, where
from tidu_compile.frontend.linalg import matmul
from tidu_compile.frontend.promotion import broadcast_to, unary_input
from tidu_compile.frontend.reductions import max, sum
from tidu_compile.frontend.shapes import swapaxes
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor, apply1, apply_op

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "adjoint",
    "cholesky", "det",
    "eigh", "eigvalsh", "inv", "lstsq", "matrix_power", "matrices", "pinv", "qr", "slogdet",
    "solve", "svd", "svdvals", "vector_rhs",
]  # fmt: skip


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    U: Tensor  # noqa: N815 - numpy's field names
    S: Tensor  # noqa: N815
    Vh: Tensor  # noqa: N815


class QRResult(NamedTuple):
    Q: Tensor  # noqa: N815
    R: Tensor  # noqa: N815


def matrices(a: Any, name: str, square: bool = True) -> Tensor:
    """``a`` as a tensor of matrices (``[..., m, n]``), checked before any call."""
    x = unary_input(a)
    if x.ndim < 2:
        raise ValueError(f"{name}: {x.ndim}-dimensional array given; the array must be at "
                         "least two-dimensional")  # fmt: skip
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name}: last 2 dimensions of the array must be square, got "
                         f"shape {x.shape}")  # fmt: skip
    return x


def adjoint(x: Tensor) -> Tensor:
    """``x^H`` of the last two axes (``x^T`` for real matrices)."""
    return conj(swapaxes(x, -1, -2))


def _lower_reads(x: Tensor, upper: bool) -> Tensor:
    """What the primitives that read a lower triangle get for ``x``'s lower (``upper``:
    upper) triangle: ``x`` itself, or ``x^H`` (the Hermitian matrix ``x``'s upper
    triangle gives has that lower triangle)."""
    return adjoint(x) if upper else x


def _common_dtype(a: Tensor, rhs: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``rhs`` as their common dtype (numpy's promotion)."""
    if rhs.dtype == a.dtype:
        return a, rhs
    dtype = np.result_type(a.dtype, rhs.dtype)
    return a.astype(dtype), rhs.astype(dtype)


def vector_rhs(a: Tensor, b: Any, name: str) -> tuple[Tensor, Tensor, bool]:
    """``a`` and ``b`` with broadcast batch dims, ``b`` as matrices; whether ``b`` was a
    vector (numpy 2: ``b`` is a vector only when 1-d)."""
    a, rhs = _common_dtype(a, unary_input(b))
    n = a.shape[-1]
    vector = rhs.ndim == 1
    if vector:
        rhs = rhs.reshape(n, 1) if rhs.shape == (n,) else rhs
    if rhs.ndim < 2 or rhs.shape[-2] != n:
        raise ValueError(f"{name}: b has shape {unary_input(b).shape}; a has {a.shape} (b's "
                         f"{'length' if vector else 'second-to-last dimension'} must be {n})")
    batch = np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
    return broadcast_to(a, (*batch, n, n)), broadcast_to(rhs, (*batch, *rhs.shape[-2:])), vector


def solve(a: Any, b: Any) -> Tensor:
    """``x`` with ``a @ x = b`` (LU with partial pivoting)."""
    a_t = matrices(a, "solve")
    a_t, rhs, vector = vector_rhs(a_t, b, "solve")
    x = apply1(ops.Solve(a_t.shape, rhs.shape), a_t, rhs)
    return x.reshape(x.shape[:-1]) if vector else x


def _identity(x: Tensor) -> Tensor:
    return Tensor(np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape).copy())


def inv(a: Any) -> Tensor:
    """The inverse matrices, ``solve(a, I)``."""
    x = matrices(a, "inv")
    return apply1(ops.Solve(x.shape, x.shape), x, _identity(x))


def slogdet(a: Any) -> SlogdetResult:
    """``(sign, log|det a|)`` (LU); the gradient of ``logabsdet`` is ``inv(a)ᵀ``."""
    x = matrices(a, "slogdet")
    op = ops.ComplexSlogdet if x.dtype.kind == "c" else ops.Slogdet
    sign, logabsdet = apply_op(op(x.shape), [x])
    return SlogdetResult(sign, logabsdet)


def det(a: Any) -> Tensor:
    """The determinants, ``sign * exp(logabsdet)``."""
    sign, logabsdet = slogdet(a)
    return sign * unary(ops.Exp, logabsdet)


def cholesky(a: Any, upper: bool = False) -> Tensor:
    """The lower factor ``L`` of ``a = L L^H`` (``upper``: ``L^H``), from ``a``'s lower
    (upper) triangle, as numpy (the gradient flows to that triangle)."""
    x = matrices(a, "cholesky")
    factor = apply1(ops.Cholesky(x.shape), _lower_reads(x, upper))
    return adjoint(factor) if upper else factor


def eigh(a: Any, UPLO: str = "L") -> EighResult:  # noqa: N803 - numpy's name
    """Ascending (real) eigenvalues and orthonormal eigenvectors (columns) of the
    symmetric (Hermitian) matrices ``a``'s ``UPLO`` triangle gives. Each eigenvector's
    entry of largest magnitude is real and positive (complex: numpy's vectors up to a
    phase per column). Eigenvector derivatives are infinite at repeated eigenvalues."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    x = matrices(a, "eigh")
    op = ops.ComplexEigh if x.dtype.kind == "c" else ops.Eigh
    w, v = apply_op(op(x.shape), [_lower_reads(x, UPLO == "U")])
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: str = "L") -> Tensor:  # noqa: N803 - numpy's name
    """The ascending eigenvalues of ``eigh``."""
    return eigh(a, UPLO).eigenvalues


def _constant_only(x: Tensor, name: str, why: str) -> None:
    if x.requires_grad or current_capture() is not None:
        raise ValueError(f"{name}: {why} has no derivative (and is not traced); {name} "
                         "differentiates the reduced form")  # fmt: skip


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False) -> Any:  # fmt: skip
    """``SVDResult(U, S, Vh)`` with ``a = U diag(S) Vh`` (reduced when
    ``full_matrices=False``), ``S`` real, descending; ``S`` alone when ``not compute_uv``.
    Each column of ``U`` has its entry of largest magnitude real and positive (``Vh``'s
    row turned with it; complex: numpy's vectors up to a phase per pair). For a
    non-square matrix the full ``U``/``Vh`` are not unique: ``full_matrices=True`` gives
    numpy's values without gradient (an error on a tensor that requires one)."""
    x = matrices(a, "svd", square=False)
    m, n = x.shape[-2:]
    if compute_uv and full_matrices and m != n:
        _constant_only(x, "svd", "full_matrices=True of a non-square matrix")
        full = np.linalg.svd(x.numpy(), full_matrices=True)
        return SVDResult(*(Tensor(part) for part in full))
    op = ops.ComplexSvd if x.dtype.kind == "c" else ops.Svd
    u, s, vh = apply_op(op(x.shape), [x])
    return SVDResult(u, s, vh) if compute_uv else s


def svdvals(x: Any) -> Tensor:
    """The singular values, descending."""
    return svd(x, compute_uv=False)


def qr(a: Any, mode: str = "reduced") -> Any:
    """``QRResult(Q, R)`` with ``a = Q R`` (reduced: ``Q`` ``[..., m, k]``, ``k =
    min(m, n)``), or ``R`` for ``mode='r'``; numpy's (LAPACK's) factors, also of complex
    ``a`` (``Q^H Q = I``, ``R``'s diagonal real). Differentiable for ``m >= n`` (as
    JAX)."""
    if mode not in ("reduced", "r", "complete"):
        raise ValueError(f"qr: mode {mode!r} is not supported (use 'reduced', 'r' or "
                         "'complete')")  # fmt: skip
    x = matrices(a, "qr", square=False)
    m, n = x.shape[-2:]
    if mode == "complete" and m > n:
        _constant_only(x, "qr", "mode='complete' of a tall matrix")
        complete = np.linalg.qr(x.numpy(), mode="complete")
        return QRResult(*(Tensor(part) for part in complete))
    q, r = apply_op(ops.Qr(x.shape), [x])
    return r if mode == "r" else QRResult(q, r)


def _reciprocal_above(s: Tensor, rcond: Any) -> Tensor:
    """``1/s`` where ``s > rcond * max(s)``, else 0 (with gradient 0 there)."""
    cutoff = max(s, axis=-1, keepdims=True) * rcond
    keep = compare("gt", s, cutoff)
    return where(keep, 1.0 / where(keep, s, 1.0), 0.0)


def _default_rcond(x: Tensor) -> float:
    return float(np.finfo(x.dtype).eps) * float(builtins.max(x.shape[-2:]))


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Tensor:
    """The pseudo-inverse ``V diag(1/s) U^H`` (complex matrices too) over the singular
    values above ``rcond * max(s)`` (default ``max(m, n) * eps``, numpy's ``rtol``)."""
    x = matrices(a, "pinv", square=False)
    cut = rcond if rcond is not None else rtol if rtol is not None else _default_rcond(x)
    scaled, u_h, _ = _pseudo_inverse_factors(x, cut)
    return matmul(scaled, u_h)


def _pseudo_inverse_factors(x: Tensor, cut: Any) -> tuple[Tensor, Tensor, Tensor]:
    """``(V diag(1/s), U^H, s)`` from the reduced SVD of ``x``, ``1/s`` over the singular
    values above ``cut * max(s)`` (0 for the others): ``pinv(x)`` is their product."""
    u, s, vh = svd(x, full_matrices=False)
    return adjoint(vh) * _reciprocal_above(s, cut)[..., None, :], adjoint(u), s


def matrix_power(a: Any, n: int) -> Tensor:
    """``a`` to the integer power ``n`` (the identity for 0; ``inv(a)`` to ``-n`` when
    negative), by repeated squaring."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"matrix_power: exponent must be an integer, got {type(n).__name__}")
    x = matrices(a, "matrix_power")
    if n == 0:
        return _identity(x)
    base, exponent = (inv(x), -int(n)) if n < 0 else (x, int(n))
    while not exponent & 1:  # the lowest set bit: the first factor
        base, exponent = matmul(base, base), exponent >> 1
    result, exponent = base, exponent >> 1
    while exponent:
        base = matmul(base, base)
        if exponent & 1:
            result = matmul(result, base)
        exponent >>= 1
    return result


def lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(x, residuals, rank, s)`` minimizing ``|b - a x|`` (numpy's ``lstsq``, 2-d ``a``,
    real or complex): ``x = V diag(1/s) U^H b`` (the pseudo-inverse's, from the reduced
    SVD); ``residuals`` the real squared residual norms ``|b - a x|²`` per column when
    ``m > n`` (computed for a full-rank ``a``: numpy gives an empty array for a
    rank-deficient one), else empty; ``rank`` an int64 tensor (the singular values
    above the cutoff), ``s`` the (real) singular values."""
    x = matrices(a, "lstsq", square=False)
    if x.ndim != 2:
        raise ValueError(f"lstsq: a must be 2-dimensional, got shape {x.shape}")
    rhs = unary_input(b)
    m, n = x.shape
    if rhs.ndim not in (1, 2) or rhs.shape[0] != m:
        raise ValueError(f"lstsq: b has shape {rhs.shape}; its first dimension must be {m}")
    x, rhs = _common_dtype(x, rhs)
    cut = rcond if rcond is not None else _default_rcond(x)
    scaled, u_h, s = _pseudo_inverse_factors(x, cut)
    solution = matmul(scaled, matmul(u_h, rhs))
    if m > n:
        error = rhs - matmul(x, solution)
        residuals = sum(real(error * conj(error)), axis=0)
        residuals = residuals.reshape(1) if rhs.ndim == 1 else residuals
    else:
        residuals = Tensor(np.zeros((0,), dtype=s.dtype))
    rank = sum(compare("gt", s, max(s) * cut).astype(np.int64))
    return solution, residuals, rank, s

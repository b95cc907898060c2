"""Matrix decompositions with several results: ``eigh``, ``svd``, ``qr``.

JVP rules as JAX's (``jax/_src/lax/linalg.py``: ``_eigh_jvp_rule``, ``_svd_jvp_rule``,
``qr_jvp_rule``), written with primitives, real dtypes (``qr`` complex ones too: the
complex ``eigh`` and ``svd`` are ``complex_decompositions.py``'s). With ``S = Vᵀ sym(dA) V``
(``sym(dA) = tril(dA) + tril(dA, -1)ᵀ``: eigh reads the lower triangle) and
``F_ij = 1/(w_j - w_i)`` off the diagonal (0 on it):

=====================  ==============================================================
op                     rules
=====================  ==============================================================
eigh -> (w, V)         ``dw = diag(S)``, ``dV = V (F ∘ S)``
svd -> (U, s, Vᵀ)      ``dS = Uᵀ dA V``, ``ds = diag(dS)``, ``F_ij = 1/(s_j² - s_i²)``,
(reduced)              ``dU = U (F ∘ (dS s + (dS s)ᵀ)) [+ (I - UUᵀ) dA V / s]``,
                       ``dV = V (F ∘ (s dS + (s dS)ᵀ)) [+ (I - VVᵀ) dAᵀ U / s]``
qr -> (Q, R)           ``C = Q^H dA R⁻¹``, ``P = C - Ω`` = ``triu(C + C^H)`` with half
(reduced, m >= n;      its diagonal (``Ω = tril(C, -1) - tril(C, -1)^H + i Im diag(C)``),
real or complex)       ``dQ = dA R⁻¹ - Q P``, ``dR = P R``
=====================  ==============================================================

Degenerate spectra: the eigenvectors of a repeated eigenvalue (the singular vectors of
a repeated singular value) are not unique and have no derivative; ``F`` is infinite
there. As JAX, the rules divide by the gaps as they are (``1/(eye + w_j - w_i) - eye``):
the derivatives are inf or NaN at exact ties and large near them; functions of the
eigenvalues alone (``w``, ``s``, ``log det``) are fine. Signs: each eigenvector (each
left singular vector, with its right one) is normalized so that its entry of largest
magnitude is positive, so the results are smooth functions of the input away from ties.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.ops.base import TensorType, apply, linear, primitive
from tidu_compile.ops.complex_ops import Conj
from tidu_compile.ops.elementwise import Add, Div, FullLike, Mul, Scale, Sub
from tidu_compile.ops.ir_fields import shape_of_operand
from tidu_compile.ops.linalg import (
    COMPLEX_LINALG,
    LinalgOp,
    TrianglePart,
    TriangularSolve,
    adjoint_last,
    identity_like,
    lower_symmetric,
    lower_symmetric_values,
    matmul_op,
    swap_last,
)
from tidu_compile.ops.structural import BroadcastInDim, ReduceSum

__all__ = ["Eigh", "Qr", "Svd"]


def _positive_columns(vectors: np.ndarray) -> np.ndarray:
    """The sign (+1 or -1) of each column's entry of largest magnitude, shaped to
    multiply the columns (``vectors * signs``)."""
    index = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    signs = np.sign(np.take_along_axis(vectors, index, axis=-2))
    return np.where(signs == 0, 1, signs).astype(vectors.dtype)


def _spread(b, values, shape: tuple[int, ...], along: int):  # type: ignore[no-untyped-def]
    """The vectors ``values`` (``[..., k]``) broadcast to ``shape`` (``[..., p, q]``) so
    that they vary along axis ``along`` (-1: ``[i, j] = v_j``; -2: ``[i, j] = v_i``)."""
    nb = len(shape) - 2
    dims = (*range(nb), nb + 2 + along)
    operand = (*shape[:nb], shape[along])
    return apply(b, BroadcastInDim(tuple(shape), dims, operand), [values])


def _inverse_gaps(b, upper, lower, eye):  # type: ignore[no-untyped-def]
    """``F = 1/(eye + upper - lower) - eye``: the inverse gaps off the diagonal, 0 on it."""
    gaps = apply(b, Add(), [eye, apply(b, Sub(), [upper, lower])])
    return apply(b, Sub(), [apply(b, Div(), [apply(b, FullLike(1.0), [gaps]), gaps]), eye])


def _diagonal(b, t: int, eye, shape: tuple[int, ...]) -> int:  # type: ignore[no-untyped-def]
    """The diagonals of the matrices ``t`` (linear in ``t``)."""
    masked = linear(b, Mul(), [t, eye], (True, False))
    return linear(b, ReduceSum((len(shape) - 1,), tuple(shape)), [masked], (True,))


def _mm(b, x, y, x_shape, y_shape, mask):  # type: ignore[no-untyped-def]
    return linear(b, matmul_op(tuple(x_shape), tuple(y_shape)), [x, y], mask)


@primitive
class Eigh(LinalgOp):
    """``(w, V)`` with ``A V = V diag(w)``, ascending ``w``, for the symmetric ``A`` its
    lower triangle gives (only that triangle is read, as numpy's ``eigh``)."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    output_count = 2
    status_error = "Eigenvalues did not converge"  # numpy's

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        self.check_matrix(t)
        return (TensorType(t.shape[:-1], t.dtype), t)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = arrays[0]
        w, v = np.linalg.eigh(a)
        return (w.astype(a.dtype), (v * _positive_columns(v)).astype(a.dtype))

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """``eig`` of the symmetric matrix, sorted, vectors normalized."""
        w, v = np.linalg.eig(lower_symmetric_values(arrays[0]))
        order = np.argsort(w.real, axis=-1)
        w = np.take_along_axis(w.real, order, -1)
        v = np.take_along_axis(v.real, order[..., None, :], -1)
        v = v / np.linalg.norm(v, axis=-2, keepdims=True)
        return (w, v * _positive_columns(v))

    def jvp_rule(self, b, xs, ys, ts, ctx):
        shape, nd = self.shape, len(self.shape)
        w, v = ys
        projected = _mm(b, swap_last(b, v, nd, None), lower_symmetric(b, ts[0], nd), shape, shape,
                        (False, True))  # fmt: skip
        projected = _mm(b, projected, v, shape, shape, (True, False))
        eye = identity_like(b, v)
        gaps = _inverse_gaps(b, _spread(b, w, shape, -1), _spread(b, w, shape, -2), eye)
        dv = _mm(b, v, linear(b, Mul(), [projected, gaps], (True, False)), shape, shape,
                 (False, True))  # fmt: skip
        return [_diagonal(b, projected, eye, shape), dv]


@primitive
class Svd(LinalgOp):
    """The reduced SVD ``A = U diag(s) Vᵀ``: ``U [..., m, k]``, ``s [..., k]`` descending,
    ``Vᵀ [..., k, n]``, ``k = min(m, n)``."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    output_count = 3
    square: ClassVar[bool] = False
    status_error = "SVD did not converge"  # numpy's

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        m, n = self.check_matrix(t)
        k, batch = min(m, n), t.shape[:-2]
        return (TensorType((*batch, m, k), t.dtype), TensorType((*batch, k), t.dtype),
                TensorType((*batch, k, n), t.dtype))  # fmt: skip

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = arrays[0]
        u, s, vt = np.linalg.svd(a, full_matrices=False)
        signs = _positive_columns(u)
        return (
            (u * signs).astype(a.dtype),
            s.astype(a.dtype),
            (vt * np.swapaxes(signs, -1, -2)).astype(a.dtype),
        )

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """From ``eigh`` of ``A Aᵀ`` (the left vectors and squared values), ``Vᵀ =
        diag(1/s) Uᵀ A``; full rank inputs."""
        a = arrays[0]
        m, n = a.shape[-2:]
        gram = a @ np.swapaxes(a, -1, -2) if m <= n else np.swapaxes(a, -1, -2) @ a
        w, vectors = np.linalg.eigh(gram)
        s = np.sqrt(np.flip(w, -1))
        vectors = np.flip(vectors, -1)
        if m <= n:
            u = vectors * _positive_columns(vectors)
            vt = (np.swapaxes(u, -1, -2) @ a) / s[..., None]
        else:
            vt_rows = (a @ vectors) / s[..., None, :]
            signs = _positive_columns(vt_rows)
            u = vt_rows * signs
            vt = np.swapaxes(vectors * signs, -1, -2)
        return (u, s, vt)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        shape, nd = self.shape, len(self.shape)
        m, n = shape[-2:]
        batch, k = shape[:-2], min(m, n)
        u, s, vt = ys
        da = ts[0]
        ut, v = swap_last(b, u, nd, None), swap_last(b, vt, nd, None)
        square = (*batch, k, k)
        d_s = _mm(b, _mm(b, ut, da, (*batch, k, m), shape, (False, True)), v,
                  (*batch, k, n), (*batch, n, k), (True, False))  # fmt: skip
        s_col, s_row = _spread(b, s, square, -1), _spread(b, s, square, -2)
        eye = identity_like(b, s_col)
        squares = apply(b, Mul(), [s_col, s_col]), apply(b, Mul(), [s_row, s_row])
        gaps = _inverse_gaps(b, *squares, eye)

        def rotation(scaled: int) -> int:  # F ∘ (X + Xᵀ)
            both = linear(b, Add(), [scaled, swap_last(b, scaled, nd)], (True, True))
            return linear(b, Mul(), [both, gaps], (True, False))

        du_inner = rotation(linear(b, Mul(), [d_s, s_col], (True, False)))
        dv_inner = rotation(linear(b, Mul(), [d_s, s_row], (True, False)))
        du = _mm(b, u, du_inner, (*batch, m, k), square, (False, True))
        dv = _mm(b, v, dv_inner, (*batch, n, k), square, (False, True))
        if m > n:
            du = linear(b, Add(), [du, self._complement(b, da, v, u, shape, s)], (True, True))
        if n > m:
            da_t = swap_last(b, da, nd)
            t_shape = (*batch, n, m)
            dv = linear(b, Add(), [dv, self._complement(b, da_t, u, v, t_shape, s)],
                        (True, True))  # fmt: skip
        return [du, _diagonal(b, d_s, eye, square), swap_last(b, dv, nd)]

    @staticmethod
    def _complement(b, da: int, right, basis, shape, s) -> int:  # type: ignore[no-untyped-def]
        """``(I - basis basisᵀ) da right / s``: the part of ``da right`` outside the span
        of ``basis`` (``[..., p, k]``), for the longer side of a non-square matrix."""
        p, q = shape[-2:]
        batch, k = shape[:-2], min(p, q)
        product = _mm(b, da, right, shape, (*batch, q, k), (True, False))
        basis_t = swap_last(b, basis, len(shape), None)
        inside = _mm(b, basis_t, product, (*batch, k, p), (*batch, p, k), (False, True))
        inside = _mm(b, basis, inside, (*batch, p, k), (*batch, k, k), (False, True))
        outside = linear(b, Sub(), [product, inside], (True, True))
        return linear(b, Div(), [outside, _spread(b, s, (*batch, p, k), -1)], (True, False))


@primitive
class Qr(LinalgOp):
    """The reduced QR ``A = Q R``: ``Q [..., m, k]`` orthonormal (unitary) columns, ``R
    [..., k, n]`` upper triangular, ``k = min(m, n)`` (Householder, LAPACK's
    ``geqrf``/``orgqr``, ``ungqr`` for complex ``A``: numpy's factors, ``R``'s diagonal
    real; a native kernel when compiled, complex too: ``passes/lapack_decompositions``)."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    output_count = 2
    square: ClassVar[bool] = False
    allowed_dtypes = COMPLEX_LINALG

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        m, n = self.check_matrix(t)
        k, batch = min(m, n), t.shape[:-2]
        return (TensorType((*batch, m, k), t.dtype), TensorType((*batch, k, n), t.dtype))

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = arrays[0]
        q, r = np.linalg.qr(a)
        return (q.astype(a.dtype), r.astype(a.dtype))

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """Gram-Schmidt on the columns, with the signs of ``R``'s (real) diagonal as
        LAPACK's."""
        a = arrays[0].astype(np.result_type(arrays[0].dtype, np.float64))
        r_ref = np.linalg.qr(a)[1]
        signs = np.sign(np.diagonal(r_ref, axis1=-2, axis2=-1).real)
        k = min(a.shape[-2:])
        q = np.zeros(a.shape[:-1] + (k,), a.dtype)
        for j in range(k):
            basis = q[..., :, :j]
            overlaps = np.einsum("...ik,...i->...k", np.conj(basis), a[..., :, j])
            column = a[..., :, j] - np.einsum("...ik,...k->...i", basis, overlaps)
            q[..., :, j] = column / np.linalg.norm(column, axis=-1, keepdims=True)
        q = q * signs[..., None, :]
        return (q, np.conj(np.swapaxes(q, -1, -2)) @ a)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        """JAX's ``qr_jvp_rule`` with ``C - Ω`` (``Ω`` its skew-Hermitian part, with the
        imaginary part of ``C``'s diagonal) written as ``P = triu(C + C^H)`` with half
        its diagonal: ``dQ = dA R⁻¹ - Q P``, ``dR = P R``; one rule for real and complex
        (``Conj`` is the identity on real values)."""
        shape, nd = self.shape, len(self.shape)
        m, n = shape[-2:]
        if m < n:
            raise ADRuleError.invalid_input(self, ADRuleKind.JVP, "qr of a wide matrix (m < n) "
                                            "has no derivative here (as JAX)")  # fmt: skip
        batch = shape[:-2]
        q, r = ys
        square = (*batch, n, n)
        solve = TriangularSolve(square, (*batch, n, m), upper=True, transpose_a=True)
        da_rinv = swap_last(b, linear(b, solve, [r, swap_last(b, ts[0], nd)], (False, True)), nd)
        q_h = apply(b, Conj(), [swap_last(b, q, nd, None)])
        c = _mm(b, q_h, da_rinv, (*batch, n, m), shape, (False, True))
        hermitian = linear(b, Add(), [c, adjoint_last(b, c, nd)], (True, True))
        halves = linear(b, Add(), [linear(b, TrianglePart(0, True), [hermitian], (True,)),
                                   linear(b, TrianglePart(1, True), [hermitian], (True,))],
                        (True, True))  # fmt: skip
        p = linear(b, Scale(0.5), [halves], (True,))
        dq = _mm(b, q, p, shape, square, (False, True))
        dq = linear(b, Sub(), [da_rinv, dq], (True, True))
        dr = _mm(b, p, r, square, square, (True, False))
        return [dq, dr]

"""Hermitian eigendecomposition and SVD of complex matrices: ``complex_eigh``,
``complex_svd`` (the real ones are ``decompositions.py``'s, lowered to native LAPACK
kernels; these are library calls by design, as the complex solves and Cholesky; ``qr``
is one primitive for both, native for complex matrices too).

JVP rules as JAX's (``jax/_src/lax/linalg.py``: ``eigh_jvp_rule``, ``svd_jvp_rule``),
with a gauge term. ``^H`` is the conjugate transpose; ``F`` the real inverse gaps of
``decompositions.py`` (0 on the diagonal):

=====================  ==============================================================
op                     rules
=====================  ==============================================================
complex_eigh           ``S = V^H herm(dA) V`` (``herm``: the Hermitian matrix of dA's
-> (w real, V)         lower triangle), ``dw = Re diag(S)``, ``dV = V (F ∘ S) + gauge``
complex_svd            ``dS = U^H dA V``, ``ds = Re diag(dS)``, ``F_ij = 1/(s_j² - s_i²)``,
-> (U, s real, V^H)    ``dU = U (F ∘ (dS s + (dS s)^H) + (dS - dS^H)/2 diag(1/s))
(reduced)              [+ (I - UU^H) dA V / s] + gauge``, ``dV = V (F ∘ (s dS + (s dS)^H))
                       [+ (I - VV^H) dA^H U / s] + gauge`` (the same phase turn as U's)
=====================  ==============================================================

Gauge: a complex eigenvector (a pair of singular vectors) is defined up to a phase per
column. These ops fix it as the real ones fix the sign: the entry of largest magnitude
of each eigenvector (left singular vector) is real and positive (the right singular
vector turns with its left one, so ``U diag(s) V^H`` is numpy's). That makes the results
smooth functions of the input away from ties, and the gauge term of the rules is the
turn ``i dθ_k`` that keeps that entry real: ``dθ_k = -Im(dv_pk) / v_pk`` at its row
``p``. Degenerate spectra (repeated eigenvalues / singular values; a tie for the largest
entry) have no vector derivative: ``F`` is infinite there, as JAX and the real ops.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from tidu_compile.ops.base import (
    COMPLEX_DTYPES,
    TensorType,
    apply,
    linear,
    primitive,
    real_dtype_of,
)
from tidu_compile.ops.complex_ops import Conj, Imag, Real, ToComplex
from tidu_compile.ops.decompositions import _diagonal, _inverse_gaps, _mm, _spread
from tidu_compile.ops.elementwise import Add, Compare, Div, FullLike, Mul, Neg, Scale, Select, Sub
from tidu_compile.ops.ir_fields import shape_of_operand
from tidu_compile.ops.linalg import (
    LinalgOp,
    adjoint_last,
    identity_like,
    lower_symmetric,
    lower_symmetric_values,
    swap_last,
)
from tidu_compile.ops.reductions import ReduceMax
from tidu_compile.ops.structural import BroadcastInDim, ReduceSum

__all__ = ["ComplexEigh", "ComplexSvd"]


def unit_phases(vectors: np.ndarray) -> np.ndarray:
    """``conj(x_p) / |x_p|`` of each column's entry ``x_p`` of largest magnitude, shaped
    to multiply the columns (``vectors * phases`` has that entry real and positive)."""
    index = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    top = np.take_along_axis(vectors, index, axis=-2)
    size = np.abs(top)
    return np.where(size == 0, 1, np.conj(top) / np.where(size == 0, 1, size)).astype(
        vectors.dtype)  # fmt: skip


def _complex(b, real: int) -> int:  # type: ignore[no-untyped-def]
    """A real primal value as complex (``x + 0j``)."""
    return apply(b, ToComplex(False), [real])


def _phase_turn(b, dv: int, v, shape: tuple[int, ...]) -> int:  # type: ignore[no-untyped-def]
    """``i dθ`` (``[..., k]``, linear in ``dv``): the turn of each column of ``v``
    (``[..., p, k]``, its largest entry real and positive) that keeps that entry real,
    ``dθ_k = -Im(dv_pk) / v_pk``."""
    nd = len(shape)
    size = apply(b, Real(), [apply(b, Mul(), [v, apply(b, Conj(), [v])])])
    top = apply(b, ReduceMax((nd - 2,), shape), [size])
    hit = apply(b, Compare("eq"), [size, _spread(b, top, shape, -1)])
    hits = apply(b, Select(), [hit, apply(b, FullLike(1.0), [size]),
                               apply(b, FullLike(0.0), [size])])  # fmt: skip
    pivot = apply(b, ReduceSum((nd - 2,), shape), [apply(b, Mul(), [hits, apply(b, Real(), [v])])])
    weights = _complex(b, apply(b, Div(), [hits, _spread(b, pivot, shape, -1)]))
    picked = linear(b, Mul(), [dv, weights], (True, False))
    picked = linear(b, ReduceSum((nd - 2,), shape), [picked], (True,))
    angle = linear(b, Neg(), [linear(b, Imag(), [picked], (True,))], (True,))
    return linear(b, ToComplex(True), [angle], (True,))


def _turned(b, dv: int, v, turn: int, shape: tuple[int, ...]) -> int:  # type: ignore[no-untyped-def]
    """``dv + v diag(turn)``."""
    nb = len(shape) - 2
    spread = BroadcastInDim(tuple(shape), (*range(nb), nb + 1), (*shape[:nb], shape[-1]))
    spun = linear(b, Mul(), [linear(b, spread, [turn], (True,)), v], (True, False))
    return linear(b, Add(), [dv, spun], (True, True))


class _ComplexFactorisation(LinalgOp):
    allowed_dtypes = COMPLEX_DTYPES


@primitive
class ComplexEigh(_ComplexFactorisation):
    """``(w, V)`` with ``A V = V diag(w)``, ascending real ``w``, for the Hermitian ``A``
    its lower triangle gives (only that triangle is read, as numpy's ``eigh``); each
    column of ``V`` has its entry of largest magnitude real and positive."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    output_count = 2
    status_error = "Eigenvalues did not converge"  # numpy's

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        self.check_matrix(t)
        return (TensorType(t.shape[:-1], real_dtype_of(t.dtype)), t)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = arrays[0]
        w, v = np.linalg.eigh(a)
        return (w.astype(real_dtype_of(a.dtype.name)), (v * unit_phases(v)).astype(a.dtype))

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """``eig`` of the Hermitian matrix, sorted, vectors normalized and turned."""
        w, v = np.linalg.eig(lower_symmetric_values(arrays[0]))
        order = np.argsort(w.real, axis=-1)
        w = np.take_along_axis(w.real, order, -1)
        v = np.take_along_axis(v, order[..., None, :], -1)
        v = v / np.linalg.norm(v, axis=-2, keepdims=True)
        return (w, v * unit_phases(v))

    def jvp_rule(self, b, xs, ys, ts, ctx):
        shape, nd = self.shape, len(self.shape)
        w, v = ys
        vh = apply(b, Conj(), [swap_last(b, v, nd, None)])
        projected = _mm(b, vh, lower_symmetric(b, ts[0], nd), shape, shape, (False, True))
        projected = _mm(b, projected, v, shape, shape, (True, False))
        w_col = _spread(b, w, shape, -1)
        eye = identity_like(b, w_col)
        gaps = _complex(b, _inverse_gaps(b, w_col, _spread(b, w, shape, -2), eye))
        dv = _mm(b, v, linear(b, Mul(), [projected, gaps], (True, False)), shape, shape,
                 (False, True))  # fmt: skip
        dv = _turned(b, dv, v, _phase_turn(b, dv, v, shape), shape)
        dw = linear(b, Real(), [_diagonal(b, projected, _complex(b, eye), shape)], (True,))
        return [dw, dv]


@primitive
class ComplexSvd(_ComplexFactorisation):
    """The reduced SVD ``A = U diag(s) V^H`` of complex ``A``: ``U [..., m, k]``, ``s
    [..., k]`` real descending, ``V^H [..., k, n]``, ``k = min(m, n)``; each column of
    ``U`` has its entry of largest magnitude real and positive."""

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
        return (TensorType((*batch, m, k), t.dtype),
                TensorType((*batch, k), real_dtype_of(t.dtype)),
                TensorType((*batch, k, n), t.dtype))  # fmt: skip

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = arrays[0]
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        phases = unit_phases(u)
        return ((u * phases).astype(a.dtype), s.astype(real_dtype_of(a.dtype.name)),
                (vh * np.conj(np.swapaxes(phases, -1, -2))).astype(a.dtype))  # fmt: skip

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """From ``eigh`` of the Gram matrix ``A A^H`` (or ``A^H A``), full rank inputs."""
        a = arrays[0]
        m, n = a.shape[-2:]
        ah = np.conj(np.swapaxes(a, -1, -2))
        w, vectors = np.linalg.eigh(a @ ah if m <= n else ah @ a)
        s = np.sqrt(np.flip(w, -1))
        vectors = np.flip(vectors, -1)
        if m <= n:
            u = vectors * unit_phases(vectors)
            vh = (np.conj(np.swapaxes(u, -1, -2)) @ a) / s[..., None]
        else:
            left = (a @ vectors) / s[..., None, :]
            phases = unit_phases(left)
            u = left * phases
            vh = np.conj(np.swapaxes(vectors * phases, -1, -2))
        return (u, s, vh)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        shape, nd = self.shape, len(self.shape)
        m, n = shape[-2:]
        batch, k = shape[:-2], min(m, n)
        u, s, vh = ys
        da = ts[0]
        uh, v = (apply(b, Conj(), [swap_last(b, x, nd, None)]) for x in (u, vh))
        square = (*batch, k, k)
        d_s = _mm(b, _mm(b, uh, da, (*batch, k, m), shape, (False, True)), v,
                  (*batch, k, n), (*batch, n, k), (True, False))  # fmt: skip
        s_col, s_row = _spread(b, s, square, -1), _spread(b, s, square, -2)
        eye = identity_like(b, s_col)
        squares = apply(b, Mul(), [s_col, s_col]), apply(b, Mul(), [s_row, s_row])
        gaps = _complex(b, _inverse_gaps(b, *squares, eye))
        inverse_s = _complex(b, apply(b, Div(), [eye, s_row]))  # diag(1/s)

        def rotation(scaled: int) -> int:  # F ∘ (X + X^H)
            both = linear(b, Add(), [scaled, adjoint_last(b, scaled, nd)], (True, True))
            return linear(b, Mul(), [both, gaps], (True, False))

        du_inner = rotation(linear(b, Mul(), [d_s, _complex(b, s_col)], (True, False)))
        skew = linear(b, Scale(0.5), [linear(b, Sub(), [d_s, adjoint_last(b, d_s, nd)],
                                             (True, True))], (True,))  # fmt: skip
        skew = linear(b, Mul(), [skew, inverse_s], (True, False))
        du_inner = linear(b, Add(), [du_inner, skew], (True, True))
        dv_inner = rotation(linear(b, Mul(), [d_s, _complex(b, s_row)], (True, False)))
        du = _mm(b, u, du_inner, (*batch, m, k), square, (False, True))
        dv = _mm(b, v, dv_inner, (*batch, n, k), square, (False, True))
        if m > n:
            du = linear(b, Add(), [du, _complement(b, da, v, u, shape, s)], (True, True))
        if n > m:
            da_h = adjoint_last(b, da, nd)
            dv = linear(b, Add(), [dv, _complement(b, da_h, u, v, (*batch, n, m), s)],
                        (True, True))  # fmt: skip
        turn = _phase_turn(b, du, u, (*batch, m, k))
        du = _turned(b, du, u, turn, (*batch, m, k))
        dv = _turned(b, dv, v, turn, (*batch, n, k))
        ds = linear(b, Real(), [_diagonal(b, d_s, _complex(b, eye), square)], (True,))
        return [du, ds, adjoint_last(b, dv, nd)]


def _complement(b, da: int, right, basis, shape, s) -> int:  # type: ignore[no-untyped-def]
    """``(I - basis basis^H) da right / s``: the part of ``da right`` outside the span of
    ``basis`` (``[..., p, k]``), for the longer side of a non-square matrix."""
    p, q = shape[-2:]
    batch, k = shape[:-2], min(p, q)
    product = _mm(b, da, right, shape, (*batch, q, k), (True, False))
    basis_h = apply(b, Conj(), [swap_last(b, basis, len(shape), None)])
    inside = _mm(b, basis_h, product, (*batch, k, p), (*batch, p, k), (False, True))
    inside = _mm(b, basis, inside, (*batch, p, k), (*batch, k, k), (False, True))
    outside = linear(b, Sub(), [product, inside], (True, True))
    return linear(b, Div(), [outside, _complex(b, _spread(b, s, (*batch, p, k), -1))],
                  (True, False))  # fmt: skip

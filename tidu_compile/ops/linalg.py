"""Linear-algebra primitives: triangles, solves, Cholesky and log-determinants.

Every op works on the last two axes and batches over the leading ones (numpy's
``linalg`` convention). Rules are written with primitives (so derivatives differentiate
again); the solves are linear in their right-hand side and transpose to solves with the
transposed matrix. The factorisations (``decompositions.py``) build on these.

=========================  ============================================================
op                         rules
=========================  ============================================================
triangle_part(k, upper)    ``tril(x, k)`` (``triu(x, k)``); linear and self-adjoint
triangular_solve           ``X = op(A)^-1 B`` for triangular A; ``dX = op(A)^-1 (dB -
(upper, transpose_a,       op(tri(dA)) X)``; transpose in B: ``conj`` of the solve with
unit_diagonal)             ``transpose_a`` flipped of ``conj(ct)`` (``op(A)^-H ct``)
solve(transpose_a)         ``X = op(A)^-1 B`` (LU); ``dX = op(A)^-1 (dB - op(dA) X)``;
                           transpose in B as above
cholesky                   ``L L^H = A`` from A's lower triangle (LAPACK's ``potrf``);
                           ``dL = L Phi(L^-1 S L^-H)``, ``S = tril(dA) + tril(dA, -1)^H``,
                           ``Phi`` = lower triangle, half diagonal (Murray 2016; JAX's
                           ``_cholesky_jvp_rule``)
slogdet                    ``(sign, log|det A|)``; ``d log|det| = sum(A^-T * dA)``; the
                           sign is locally constant (tangent 0)
complex_slogdet            slogdet of complex A: sign complex, ``log|det|`` real; with
                           ``tau = sum(A^-T * dA)``: ``d log|det| = Re tau``,
                           ``d sign = sign * i Im tau``
=========================  ============================================================

They run as library calls between kernels, by design (LAPACK through numpy and scipy;
``library_call``): a factorisation is not an elementwise region (the real ones are
LAPACK kernels in native code: ``passes/tidu_lower_linalg.py``). The solves and Cholesky
take complex matrices too (``COMPLEX_LINALG``): their rules are written with ``Conj``
(the identity on real values, folded away by the compiler), so one rule serves both;
on complex values a transpose is the conjugate transpose (the adjoint, tidu's
convention). slogdet is real only; complex matrices have ``complex_slogdet`` (its
sign has a tangent, its log-determinant is real).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.ops.base import (
    COMPLEX_DTYPES,
    FLOAT_DTYPES,
    Ref,
    TensorOp,
    TensorType,
    active,
    apply,
    linear,
    primitive,
    real_dtype_of,
)
from tidu_compile.ops.batching import batch_by_moving_axis
from tidu_compile.ops.complex_ops import Conj, Imag, Real, ToComplex
from tidu_compile.ops.elementwise import Add, FullLike, Mul, Neg, Scale, Sub
from tidu_compile.ops.ir_fields import shape_of_operand
from tidu_compile.ops.structural import DotGeneral, ReduceSum, Transpose

__all__ = [
    "COMPLEX_LINALG", "Cholesky", "ComplexSlogdet", "LinalgOp", "Slogdet", "Solve",
    "TrianglePart", "TriangularSolve",
]  # fmt: skip

#: The dtypes of the primitives that take complex matrices too (solves, Cholesky).
COMPLEX_LINALG = FLOAT_DTYPES + COMPLEX_DTYPES


class LinalgOp(TensorOp):
    """An op on matrices in the last two axes, batched over the leading ones; a library
    call (LAPACK) between kernels. Its dialect ops share one family
    (``dialects/tidu_linalg.py``: several results)."""

    library_call = True
    batch_rule = batch_by_moving_axis  # batched over leading axes already
    allowed_dtypes: ClassVar[tuple[str, ...]] = FLOAT_DTYPES
    #: Whether the matrices must be square (``n x n``).
    square: ClassVar[bool] = True
    #: The output slots whose derivative is zero wherever it exists (slogdet's sign).
    locally_constant_outputs: ClassVar[tuple[int, ...]] = ()
    #: The ``numpy.linalg.LinAlgError`` text of a failed factorisation (``{info}``:
    #: LAPACK's info, ``{diagonal}``: info - 1), shared by the library path and the
    #: native one (``passes/tidu_lower_linalg.py``); "": the op cannot fail.
    status_error: ClassVar[str] = ""

    def check_matrix(self, t: TensorType, argument: str = "input") -> tuple[int, int]:
        """``t`` is a (batch of) matrices of a float dtype; its last two extents."""
        self.check_dtype(t, self.allowed_dtypes, argument)
        if t.ndim < 2:
            raise ValueError(f"{self!r}: {argument} has shape {t.shape}; expected at least 2 "
                             "dimensions (a matrix or a batch of matrices)")  # fmt: skip
        m, n = t.shape[-2:]
        if self.square and m != n:
            raise ValueError(f"{self!r}: {argument} has shape {t.shape}; the last two "
                             "dimensions must be equal (a square matrix)")  # fmt: skip
        return m, n


# ------------------------------------------------------------------ rule helpers


def swap_last(b, x: Ref, ndim: int, mask: bool | None = True) -> int:  # type: ignore[no-untyped-def]
    """``x^T`` of the last two axes; linear in ``x`` (``mask=None``: a primal op)."""
    perm = (*range(ndim - 2), ndim - 1, ndim - 2)
    if mask is None:
        return apply(b, Transpose(perm), [x])
    return linear(b, Transpose(perm), [x], (True,))


def matmul_op(x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> DotGeneral:
    """The batched ``x @ y`` (same leading dims) as a ``DotGeneral``."""
    batch = tuple(range(len(x_shape) - 2))
    nb = len(batch)
    return DotGeneral((nb + 1,), (nb,), batch, batch, tuple(x_shape), tuple(y_shape))


def adjoint_last(b, x: Ref, ndim: int) -> int:  # type: ignore[no-untyped-def]
    """``x^H``, ``conj(x^T)`` of the last two axes (``x^T`` on real values); linear."""
    return linear(b, Conj(), [swap_last(b, x, ndim)], (True,))


def lower_symmetric(b, t: int, ndim: int) -> int:  # type: ignore[no-untyped-def]
    """``H + H^H`` with ``H = tril(t, -1) + diag(t) / 2``: the symmetric (Hermitian)
    matrices ``t``'s lower triangles give, as LAPACK's symmetric routines read them
    (``tril(t) + tril(t, -1)ᵀ`` on real values; the real part of a complex diagonal);
    linear in ``t``."""
    strict = linear(b, TrianglePart(-1), [t], (True,))
    lower = linear(b, TrianglePart(0), [t], (True,))
    both = linear(b, Add(), [lower, strict], (True, True))
    half = linear(b, Scale(0.5), [both], (True,))
    return linear(b, Add(), [half, adjoint_last(b, half, ndim)], (True, True))


def lower_symmetric_values(a: np.ndarray) -> np.ndarray:
    """``lower_symmetric`` of arrays (the oracles')."""
    half = (np.tril(a) + np.tril(a, -1)) / 2
    return half + np.conj(np.swapaxes(half, -1, -2))


def identity_like(b, square: Ref) -> int:  # type: ignore[no-untyped-def]
    """The identity matrices of the shape of ``square`` (a primal value)."""
    ones = apply(b, FullLike(1.0), [square])
    return apply(b, TrianglePart(0, True), [apply(b, TrianglePart(0), [ones])])


def batched(function, shape: tuple[int, ...], *arrays: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    """``function`` (of matrices, giving a matrix of ``shape[-2:]``) on every matrix of a
    batch (the leading dims of ``shape``, shared by ``arrays``)."""
    batch = tuple(shape[:-2])
    if not batch:
        return np.asarray(function(*arrays))
    out = np.empty(shape, dtype=arrays[-1].dtype)
    for index in np.ndindex(*batch):
        out[index] = function(*(a[index] for a in arrays))
    return out


@functools.lru_cache(maxsize=64)
def _triangle_mask(rows: int, columns: int, offset: int, upper: bool) -> np.ndarray:
    """The read-only mask of ``TrianglePart(offset, upper)`` on ``rows x columns``."""
    mask = np.tri(rows, columns, offset - 1 if upper else offset, dtype=bool)
    mask = ~mask if upper else mask
    mask.flags.writeable = False
    return mask


# ------------------------------------------------------------------ the primitives


@primitive
class TrianglePart(TensorOp):
    """``tril(x, offset)``, or ``triu(x, offset)`` when ``upper``, of the last two axes."""

    offset: int
    upper: bool = False
    input_count = 1
    library_call = True  # complex ones, unless fused
    kernel_mask = True
    batch_rule = batch_by_moving_axis

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        if t.ndim < 2:
            raise ValueError(f"{self!r}: operand has shape {t.shape}; expected at least 2 dims")
        self.check_dtype(t, FLOAT_DTYPES + ("complex64", "complex128"))
        return (t,)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """``where(mask, x, 0)`` with the mask of these extents made once."""
        x = arrays[0]
        keep = _triangle_mask(x.shape[-2], x.shape[-1], self.offset, self.upper)
        return (np.where(keep, x, np.zeros((), x.dtype)),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        rows, cols = np.indices(x.shape[-2:])
        keep = cols - rows >= self.offset if self.upper else cols - rows <= self.offset
        return (np.where(keep, x, 0).astype(x.dtype),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, self, [cts[0]], (True,))]


class _SolveBase(LinalgOp):
    """``X = op(A)^-1 B`` with ``A`` of ``a_shape`` ``[..., n, n]`` and ``B`` of
    ``b_shape`` ``[..., n, k]`` (same leading dims); ``op(A) = A^T`` when ``transpose_a``."""

    input_count = 2
    allowed_dtypes = COMPLEX_LINALG

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        a, rhs = inputs
        n, _ = self.check_matrix(a, "a")
        self.check_dtype(rhs, self.allowed_dtypes, "b")
        if rhs.dtype != a.dtype:
            raise TypeError(f"{self!r}: b has dtype {rhs.dtype}, a has {a.dtype}")
        if rhs.ndim != a.ndim or rhs.shape[:-2] != a.shape[:-2] or rhs.shape[-2] != n:
            raise ValueError(f"{self!r}: b has shape {rhs.shape}; expected {a.shape[:-1]} "
                             "followed by the number of right-hand sides")  # fmt: skip
        return (rhs,)

    def a_tangent(self, b, t: int) -> int:  # type: ignore[no-untyped-def]
        """The part of ``dA`` the solve reads (all of it; a triangle for triangular)."""
        return t

    def jvp_rule(self, b, xs, ys, ts, ctx):
        da, db = ts
        rhs = db
        if da is not None:
            read = self.a_tangent(b, da)
            op_da = swap_last(b, read, len(self.a_shape)) if self.transpose_a else read  # type: ignore[attr-defined]
            product = linear(b, matmul_op(self.a_shape, self.b_shape), [op_da, ys[0]],  # type: ignore[attr-defined]
                             (True, False))  # fmt: skip
            rhs = (linear(b, Neg(), [product], (True,)) if db is None
                   else linear(b, Sub(), [db, product], (True, True)))  # fmt: skip
        return [linear(b, self, [xs[0], rhs], (False, True))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        if active(role, 0):
            raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE, "not linear in a")
        # op(A)^-H ct = conj(op(A)^-T conj(ct)): the adjoint, also of complex A
        flipped = dataclasses.replace(self, transpose_a=not self.transpose_a)  # type: ignore[attr-defined,type-var]
        conj_ct = linear(b, Conj(), [cts[0]], (True,))
        solved = linear(b, flipped, [inputs[0], conj_ct], (False, True))
        return [None, linear(b, Conj(), [solved], (True,))]


@primitive
class TriangularSolve(_SolveBase):
    """``op(A)^-1 B`` for a lower (``upper``: upper) triangular ``A``; only that triangle
    is read (and not the diagonal when ``unit_diagonal``: ones)."""

    a_shape: tuple[int, ...] = shape_of_operand(0)
    b_shape: tuple[int, ...] = shape_of_operand(1)
    upper: bool = False
    transpose_a: bool = False
    unit_diagonal: bool = False
    status_error = "singular matrix: resolution failed at diagonal {diagonal}"

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        import scipy.linalg

        def solve(a: np.ndarray, rhs: np.ndarray) -> np.ndarray:
            return scipy.linalg.solve_triangular(
                a, rhs, trans=1 if self.transpose_a else 0, lower=not self.upper,
                unit_diagonal=self.unit_diagonal, check_finite=False,
            )  # fmt: skip

        return (batched(solve, arrays[1].shape, *arrays),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a, rhs = arrays
        tri = np.triu(a) if self.upper else np.tril(a)
        if self.unit_diagonal:
            tri = tri - tri * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
        return (np.linalg.solve(np.swapaxes(tri, -1, -2) if self.transpose_a else tri, rhs),)

    def a_tangent(self, b, t: int) -> int:  # type: ignore[no-untyped-def]
        offset = int(self.unit_diagonal) * (1 if self.upper else -1)
        return linear(b, TrianglePart(offset, self.upper), [t], (True,))


@primitive
class Solve(_SolveBase):
    """``op(A)^-1 B`` for a general square ``A`` (LU with partial pivoting)."""

    a_shape: tuple[int, ...] = shape_of_operand(0)
    b_shape: tuple[int, ...] = shape_of_operand(1)
    transpose_a: bool = False
    status_error = "Singular matrix"

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a, rhs = arrays
        a = np.swapaxes(a, -1, -2) if self.transpose_a else a
        return (np.asarray(np.linalg.solve(a, rhs), dtype=rhs.dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a, rhs = arrays
        inverse = np.linalg.inv(a)
        return ((np.swapaxes(inverse, -1, -2) if self.transpose_a else inverse) @ rhs,)


@primitive
class Cholesky(LinalgOp):
    """The lower factor ``L`` of ``L L^H = A`` for the symmetric (Hermitian) ``A`` its
    lower triangle gives (only that triangle is read, as numpy's and LAPACK's ``potrf``)."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    allowed_dtypes = COMPLEX_LINALG
    status_error = "cholesky: the matrix is not positive definite (LAPACK potrf info {info})"

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        self.check_matrix(inputs[0])
        return (inputs[0],)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """LAPACK's ``potrf`` matrix by matrix (scipy's binding: no checks; numpy's
        gufunc is slower on one matrix)."""
        import scipy.linalg.lapack

        a = arrays[0]
        (potrf,) = scipy.linalg.lapack.get_lapack_funcs(("potrf",), (a,))

        def factor(m: np.ndarray) -> np.ndarray:
            lower, info = potrf(m, lower=1, clean=1)
            if info:
                raise np.linalg.LinAlgError(self.status_error.format(info=info))
            return lower  # type: ignore[no-any-return]

        return (batched(factor, a.shape, a),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """numpy's factor (its own LAPACK call, batched) of the symmetric matrix."""
        return (np.linalg.cholesky(lower_symmetric_values(arrays[0])),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        nd, shape = len(self.shape), self.shape
        factor = ys[0]
        solve = TriangularSolve(shape, shape)
        left = linear(b, solve, [factor, lower_symmetric(b, ts[0], nd)], (False, True))
        # L^-1 S L^-H is Hermitian: the solve of L^-1 (L^-1 S)^H is it.
        inner = linear(b, solve, [factor, adjoint_last(b, left, nd)], (False, True))
        halves = linear(b, Add(), [linear(b, TrianglePart(0), [inner], (True,)),
                                   linear(b, TrianglePart(-1), [inner], (True,))], (True, True))
        phi = linear(b, Scale(0.5), [halves], (True,))
        return [linear(b, matmul_op(shape, shape), [factor, phi], (False, True))]


@primitive
class Slogdet(LinalgOp):
    """``(sign(det A), log|det A|)`` over the batch (LU)."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    output_count = 2
    locally_constant_outputs = (0,)

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        self.check_matrix(t)
        batch = TensorType(t.shape[:-2], t.dtype)
        return (batch, batch)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = arrays[0]
        sign, logdet = np.linalg.slogdet(a)
        return (np.asarray(sign, dtype=a.dtype), np.asarray(logdet, dtype=a.dtype))

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        det = np.linalg.det(arrays[0])
        return (np.sign(det), np.log(np.abs(det)))

    def jvp_rule(self, b, xs, ys, ts, ctx):
        nd = len(self.shape)
        eye = identity_like(b, xs[0])
        inverse_t = apply(b, Solve(self.shape, self.shape, transpose_a=True), [xs[0], eye])
        weighted = linear(b, Mul(), [ts[0], inverse_t], (True, False))
        d_logdet = linear(b, ReduceSum((nd - 2, nd - 1), self.shape), [weighted], (True,))
        return [linear(b, Scale(0.0), [d_logdet], (True,)), d_logdet]


@primitive
class ComplexSlogdet(LinalgOp):
    """``(sign(det A), log|det A|)`` of complex ``A`` over the batch (LU): ``sign`` of
    modulus 1, of ``A``'s dtype; ``log|det A|`` of the real dtype of its precision."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    output_count = 2
    allowed_dtypes = COMPLEX_DTYPES

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        self.check_matrix(t)
        batch = t.shape[:-2]
        return (TensorType(batch, t.dtype), TensorType(batch, real_dtype_of(t.dtype)))

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = arrays[0]
        sign, logdet = np.linalg.slogdet(a)
        return (np.asarray(sign, dtype=a.dtype),
                np.asarray(logdet, dtype=real_dtype_of(a.dtype.name)))  # fmt: skip

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        det = np.linalg.det(arrays[0])
        return (det / np.abs(det), np.log(np.abs(det)))

    def jvp_rule(self, b, xs, ys, ts, ctx):
        """``tau = tr(A^-1 dA) = sum(A^-T * dA)``, complex-linear in ``dA``; ``log|det|``
        moves by its real part, the sign turns by its imaginary part."""
        nd = len(self.shape)
        eye = identity_like(b, xs[0])
        inverse_t = apply(b, Solve(self.shape, self.shape, transpose_a=True), [xs[0], eye])
        weighted = linear(b, Mul(), [ts[0], inverse_t], (True, False))
        tau = linear(b, ReduceSum((nd - 2, nd - 1), self.shape), [weighted], (True,))
        d_logdet = linear(b, Real(), [tau], (True,))
        turn = linear(b, ToComplex(True), [linear(b, Imag(), [tau], (True,))], (True,))
        return [linear(b, Mul(), [turn, ys[0]], (True, False)), d_logdet]

"""The matrix exponential and its Fréchet derivative.

=====================  ==============================================================
op                     rules
=====================  ==============================================================
expm(A)                ``d expm(A) = L(A, dA)``: ``expm_frechet``
expm_frechet(A, E)     ``L(A, E)``, linear in ``E``; transpose ``L(A^H, ·)`` (the adjoint
                       of ``E -> L(A, E)`` for the real inner product ``Re tr(X^H Y)``,
                       ``L(Aᵀ, ·)`` on real matrices); JVP: the
                       top-right block of ``L(M, dM)``, ``M = [[A, E], [0, A]]``,
                       ``dM = [[dA, dE], [0, dA]]`` (``L(A, E)`` is the top-right block
                       of ``expm(M)``), so it differentiates to any order
=====================  ==============================================================

Both are library calls (scipy's scaling-and-squaring Padé ``expm`` and Al-Mohy and
Higham's ``expm_frechet``), matrix by matrix over the batch; real and complex dtypes
(the rules are the same: ``Conj`` is the identity on real values).
"""

from __future__ import annotations

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.ops.base import TensorType, active, add_tangents, apply, linear, primitive
from tidu_compile.ops.complex_ops import Conj
from tidu_compile.ops.elementwise import Add
from tidu_compile.ops.indexing import Pad, Slice
from tidu_compile.ops.ir_fields import shape_of_operand
from tidu_compile.ops.linalg import COMPLEX_LINALG, LinalgOp, batched, swap_last

__all__ = ["Expm", "ExpmFrechet"]


@primitive
class Expm(LinalgOp):
    """``exp(A) = sum_k A^k / k!`` of square matrices."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    allowed_dtypes = COMPLEX_LINALG

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        self.check_matrix(inputs[0])
        return (inputs[0],)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        import scipy.linalg

        a = arrays[0]
        return (batched(scipy.linalg.expm, a.shape, a).astype(a.dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """By the eigendecomposition ``V diag(exp(w)) V⁻¹`` (distinct eigenvalues)."""
        a = arrays[0]
        w, v = np.linalg.eig(a)
        exponential = (v * np.exp(w)[..., None, :]) @ np.linalg.inv(v)
        return (exponential if np.iscomplexobj(a) else np.real(exponential),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, ExpmFrechet(self.shape), [xs[0], ts[0]], (False, True))]


@primitive
class ExpmFrechet(LinalgOp):
    """``L(A, E) = d/dt expm(A + t E)`` at ``t = 0``, of matrices of ``shape``."""

    shape: tuple[int, ...] = shape_of_operand()
    input_count = 2
    allowed_dtypes = COMPLEX_LINALG

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        a, e = inputs
        self.check_matrix(a, "a")
        if e != a:
            raise ValueError(f"{self!r}: e is {e}, a is {a}; they must match")
        return (a,)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        import scipy.linalg

        def frechet(a: np.ndarray, e: np.ndarray) -> np.ndarray:
            return scipy.linalg.expm_frechet(a, e, compute_expm=False, check_finite=False)

        return (batched(frechet, arrays[0].shape, *arrays).astype(arrays[0].dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The top-right block of ``expm([[A, E], [0, A]])``."""
        import scipy.linalg

        a, e = arrays
        n = a.shape[-1]
        block = np.zeros((*a.shape[:-2], 2 * n, 2 * n), np.result_type(a, e))
        block[..., :n, :n] = block[..., n:, n:] = a
        block[..., :n, n:] = e
        return (batched(scipy.linalg.expm, block.shape, block)[..., :n, n:],)

    def _block(self, b, parts, mask):  # type: ignore[no-untyped-def]
        """``[[p0, p1], [0, p2]]`` of the three ``parts`` (None: zero), linear in them
        when ``mask`` (else a primal value)."""
        nb, n = len(self.shape) - 2, self.shape[-1]
        big = (*self.shape[:-2], 2 * n, 2 * n)
        total = None
        for part, (row, column) in zip(parts, ((0, 0), (0, n), (n, n)), strict=True):
            if part is None:
                continue
            pad = Pad((0,) * nb + (row, column), (1,) * (nb + 2), big, self.shape)
            placed = linear(b, pad, [part], (True,)) if mask else apply(b, pad, [part])
            if total is None:
                total = placed
            elif mask:
                total = add_tangents(b, total, placed)
            else:
                total = apply(b, Add(), [total, placed])
        return total, big

    def jvp_rule(self, b, xs, ys, ts, ctx):
        da, de = ts
        if da is None:
            return [linear(b, self, [xs[0], de], (False, True))]
        primal, big = self._block(b, [xs[0], xs[1], xs[0]], False)
        tangent, _ = self._block(b, [da, de, da], True)
        frechet = linear(b, ExpmFrechet(big), [primal, tangent], (False, True))
        nb, n = len(self.shape) - 2, self.shape[-1]
        corner = Slice((0,) * nb + (0, n), (1,) * (nb + 2), self.shape, big)
        return [linear(b, corner, [frechet], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        if active(role, 0):
            raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE, "not linear in a")
        a_h = apply(b, Conj(), [swap_last(b, inputs[0], len(self.shape), None)])
        return [None, linear(b, self, [a_h, cts[0]], (False, True))]

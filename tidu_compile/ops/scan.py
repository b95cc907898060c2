"""Scans along one axis (``cumsum``, ``cumprod``, ``logcumsumexp``) and the sorting
permutation.

=====================  ============================================================
op                     rules
=====================  ============================================================
cum_sum(axis, rev)     linear; transpose: the reverse cumulative sum
cum_prod(axis)         ``dy_i = x_i dy_{i-1} + y_{i-1} dx_i``: a ``linear_scan`` of
                       ``a = x`` over ``b = shift(y) * dx`` (exact where x is 0)
linear_scan(axis, rev) ``y_i = a_i y_{i-1} + b_i``; linear in b; transpose: the reverse
                       scan of ``conj(a)`` shifted by one
log_cum_sum_exp        ``dy_i = exp(y_{i-1} - y_i) dy_{i-1} + exp(x_i - y_i) dx_i``: a
(axis, rev)            ``linear_scan``, as cum_prod's
argsort(axis)          int64 permutation (stable); no derivative
=====================  ============================================================

They run as numpy library calls between kernels, by design: a scan is a loop-carried
dependency along its axis, which a fused elementwise kernel cannot hold (numpy's
``cumsum`` is one pass; ``linear_scan`` evaluates in ``log2(n)`` vectorized steps).

An op of this family (``AlongAxis``) is its block here, and its frontend function if it
has one: its dialect op (``tidu.<mnemonic> %x, axis = 0 reverse : ...``) comes from its
fields, its test cases from the family's rows (``tests/ops/op_cases.py``), checked
against its ``oracle``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.ops.base import (
    DIFFERENTIABLE_DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    TensorOp,
    TensorType,
    active,
    add_tangents,
    apply,
    linear,
    primitive,
)
from tidu_compile.ops.batching import all_materialized
from tidu_compile.ops.complex_ops import Conj
from tidu_compile.ops.elementwise import Exp, FullLike, Mul, Sub
from tidu_compile.ops.indexing import Pad, Slice
from tidu_compile.ops.ir_fields import shape_of_result


class AlongAxis(TensorOp):
    """An op along ``axis`` of operands of one shape (a ``shape`` field, where the op
    has one, is that shape), run as a numpy library call between kernels."""

    library_call = True
    #: ``cum_sum`` and ``cum_prod`` take integers too (exact, in their own dtype: the
    #: frontend widens them first, as numpy's ``cumsum``).
    allowed_dtypes: ClassVar[tuple[str, ...]] = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES
    #: The results' dtype; ``None``: the operands' (``argsort``: ``int64``).
    result_dtype: ClassVar[str | None] = None


    def batch_rule(self, b, inputs, dims):
        """Along ``axis + 1`` of operands with the batch axis first."""
        fronted = all_materialized(b, inputs, dims)
        changes = {"axis": self.axis + 1}
        if hasattr(self, "shape"):
            changes["shape"] = (b.size, *self.shape)
        return [b.add1(replace(self, **changes), fronted)], [0]

    def check_axis(self, t: TensorType) -> None:
        axis = self.axis  # type: ignore[attr-defined]
        if not 0 <= axis < max(t.ndim, 1) or t.ndim == 0:
            raise ValueError(f"{self!r}: axis {axis} is out of range for shape {t.shape}")

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        t = self.check_same_types(inputs)
        shape = getattr(self, "shape", t.shape)
        if t.shape != shape:
            raise ValueError(f"{self!r}: inputs have shape {t.shape}, expected {shape}")
        self.check_axis(t)
        self.check_dtype(t, self.allowed_dtypes)
        return (TensorType(t.shape, self.result_dtype or t.dtype),)


def _flip(x: np.ndarray, axis: int, reverse: bool) -> np.ndarray:
    return np.flip(x, axis) if reverse else x


@primitive
class CumSum(AlongAxis):
    """Cumulative sum along ``axis`` (from the end when ``reverse``)."""

    axis: int
    reverse: bool = False
    input_count = 1

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        total = np.cumsum(_flip(x, self.axis, self.reverse), axis=self.axis, dtype=x.dtype)
        return (np.ascontiguousarray(_flip(total, self.axis, self.reverse)),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        if self.reverse:
            return (np.flip(np.cumsum(np.flip(x, self.axis), self.axis), self.axis),)
        return (np.cumsum(x, self.axis),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, CumSum(self.axis, not self.reverse), [cts[0]], (True,))]


@primitive
class LinearScan(AlongAxis):
    """``y_i = a_i * y_{i-1} + b_i`` along ``axis`` (``y_{-1} = 0``; from the end when
    ``reverse``: ``y_i = a_i * y_{i+1} + b_i``). Linear in ``b``."""

    axis: int
    shape: tuple[int, ...] = shape_of_result()
    reverse: bool = False
    input_count = 2
    allowed_dtypes = DIFFERENTIABLE_DTYPES

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """Hillis-Steele doubling on pairs ``(A, B)``: after the step of distance ``d``,
        ``y_i = A_i * y_{i-d} + B_i``; ``log2(n)`` vectorized steps."""
        a = np.moveaxis(_flip(arrays[0], self.axis, self.reverse), self.axis, 0).copy()
        y = np.moveaxis(_flip(arrays[1], self.axis, self.reverse), self.axis, 0).copy()
        distance = 1
        while distance < len(y):
            y[distance:] = y[distance:] + a[distance:] * y[:-distance]
            a[distance:] = a[distance:] * a[:-distance]
            a[:distance] = 0
            distance *= 2
        out = _flip(np.moveaxis(y, 0, self.axis), self.axis, self.reverse)
        return (np.ascontiguousarray(out, dtype=arrays[1].dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """One step at a time."""
        a, b = (np.moveaxis(v, self.axis, 0) for v in arrays)
        steps = range(len(b) - 1, -1, -1) if self.reverse else range(len(b))
        y, previous = np.zeros_like(b), np.zeros_like(b[0])
        for i in steps:
            previous = a[i] * previous + b[i]
            y[i] = previous
        return (np.moveaxis(y, 0, self.axis),)

    def shifted(self, b, x, value: float, forward: bool = True) -> int:  # type: ignore[no-untyped-def]
        """``x_{i-1}`` (``forward``, in the scan's direction) or ``x_{i+1}``, with
        ``value`` where nothing moves in; ``x`` is a primal value."""
        n = self.shape[self.axis]
        if n <= 1:  # nothing moves along the axis: every element is ``value``
            return apply(b, FullLike(value), [x])
        later = forward != self.reverse  # moves toward larger indices
        cut = tuple(n - 1 if d == self.axis else s for d, s in enumerate(self.shape))
        start = tuple(0 if later or d != self.axis else 1 for d in range(len(self.shape)))
        place = tuple(1 if later and d == self.axis else 0 for d in range(len(self.shape)))
        ones = (1,) * len(self.shape)
        kept = apply(b, Slice(start, ones, cut, self.shape), [x])
        return apply(b, Pad(place, ones, self.shape, cut, value), [kept])

    def jvp_rule(self, b, xs, ys, ts, ctx):
        da, db = ts
        drive = db
        if da is not None:
            previous = self.shifted(b, ys[0], 0.0)
            drive = add_tangents(b, linear(b, Mul(), [da, previous], (True, False)), db)
        return [linear(b, self, [xs[0], drive], (False, True))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        if active(role, 0) or not active(role, 1):
            raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE,
                                            "linear_scan is linear in b only")  # fmt: skip
        coefficient = self.shifted(b, apply(b, Conj(), [inputs[0]]), 0.0, forward=False)
        back = LinearScan(self.axis, self.shape, not self.reverse)
        return [None, linear(b, back, [coefficient, cts[0]], (False, True))]


@primitive
class CumProd(AlongAxis):
    """Cumulative product along ``axis``; its tangent is a ``LinearScan`` (no division,
    so exact where ``x`` has zeros)."""

    axis: int
    shape: tuple[int, ...] = shape_of_result()
    input_count = 1

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        return (np.cumprod(x, axis=self.axis, dtype=x.dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.cumprod(arrays[0], self.axis),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        scan = LinearScan(self.axis, self.shape)
        previous = scan.shifted(b, ys[0], 1.0)  # y_{i-1}, 1 before the start
        drive = linear(b, Mul(), [ts[0], previous], (True, False))
        return [linear(b, scan, [xs[0], drive], (False, True))]


@primitive
class Argsort(AlongAxis):
    """The stable sorting permutation along ``axis`` (int64); no derivative. A sort is
    a ``Gather`` of it (``frontend.arrays.sort``)."""

    axis: int
    input_count = 1
    differentiable = False
    allowed_dtypes = FLOAT_DTYPES
    result_dtype = "int64"

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.argsort(arrays[0], axis=self.axis, kind="stable").astype(np.int64),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.argsort(arrays[0], self.axis, kind="stable"),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [None]


@primitive
class LogCumSumExp(AlongAxis):
    """``y_i = log(exp(y_{i-1}) + exp(x_i))`` along ``axis`` (from the end when
    ``reverse``), ``jax.lax.cumlogsumexp``; its tangent ``dy_i = exp(y_{i-1} - y_i)
    dy_{i-1} + exp(x_i - y_i) dx_i`` is a ``LinearScan`` (both factors at most 1)."""

    axis: int
    shape: tuple[int, ...] = shape_of_result()
    reverse: bool = False
    input_count = 1
    allowed_dtypes = FLOAT_DTYPES

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = _flip(arrays[0], self.axis, self.reverse)
        y = np.logaddexp.accumulate(x, axis=self.axis)
        return (np.ascontiguousarray(_flip(y, self.axis, self.reverse)),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """``log(cumsum(exp(x - m))) + m``, ``m`` the maximum along the axis."""
        x = _flip(arrays[0], self.axis, self.reverse)
        m = np.max(x, axis=self.axis, keepdims=True)
        y = np.log(np.cumsum(np.exp(x - m), axis=self.axis)) + m
        return (_flip(y, self.axis, self.reverse),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        scan = LinearScan(self.axis, self.shape, self.reverse)
        previous = scan.shifted(b, ys[0], -np.inf)  # y_{i-1}, -inf before the start
        decay = apply(b, Exp(), [apply(b, Sub(), [previous, ys[0]])])
        weight = apply(b, Exp(), [apply(b, Sub(), [xs[0], ys[0]])])
        drive = linear(b, Mul(), [ts[0], weight], (True, False))
        return [linear(b, scan, [decay, drive], (False, True))]

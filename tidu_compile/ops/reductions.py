"""Reductions other than the sum, and ``stop_gradient``.

=============  =========================================  =================================
op             value                                      JVP (linear in ``t``)
=============  =========================================  =================================
reduce_max     numpy's ``max`` (NaN propagates; -inf over  ``sum(t * w)``, ``w = [x == y] /
               no elements; ``any`` on bool)              (number of ties)``
reduce_min     numpy's ``min`` (+inf over no elements;    the same, ties of the minimum
               ``all`` on bool)
reduce_prod    numpy's ``prod`` (1 over no elements)      ``sum(t * others)``, ``others``
                                                          the product of the other elements
argmax/argmin  the first index of the extremum (int64)    none: not differentiable
stop_gradient  ``x``                                      none: a constant for AD
=============  =========================================  =================================

Every JVP is a ``Mul`` by a residual weight and a ``ReduceSum``, so the transposes are
those of ``Mul`` and ``ReduceSum`` (a broadcast back): nothing new to compile in the
backward pass but the residuals. The weights are piecewise constant in ``x`` (comparisons
and selects), so a second derivative of max or min is 0.

``others`` of ``reduce_prod`` is exact at zeros: ``y / x`` where ``x != 0``; at the one
zero of a slice, the product of the rest (``reduce_prod`` of ``x`` with the zero replaced
by 1); 0 at every element of a slice with two zeros or more. Limits: where ``y``
overflows to inf or underflows to 0 with no zero element, ``y / x`` is inf or 0 where
the product of the others is finite and nonzero (JAX's two-sided cumulative products
avoid it, at the cost of library scans); and the second derivative is wrong with two
zeros or more in a slice (it is 0 where the product of the elements other than the two
zeros is not).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from tidu_compile.ops.base import (
    DIFFERENTIABLE_DTYPES,
    INTEGER_DTYPES,
    ORDERED_DTYPES,
    TensorOp,
    TensorType,
    apply,
    linear,
    primitive,
)
from tidu_compile.ops.batching import moved
from tidu_compile.ops.elementwise import (
    Compare,
    Div,
    FullLike,
    Maximum,
    Mul,
    Select,
    Unary,
)
from tidu_compile.ops.structural import ReduceSum, Reduction

__all__ = [
    "ArgExtremum", "Argmax", "Argmin", "ReduceMax", "ReduceMin", "ReduceProd", "StopGradient",
]  # fmt: skip


def _weighted_sum(b, reduction: Reduction, t: int | None, weight: int) -> int | None:  # type: ignore[no-untyped-def]
    """``sum(t * weight)`` over the reduction's axes: the JVP of every reduction here."""
    if t is None:
        return None
    weighted = linear(b, Mul(), [t, weight], (True, False))
    total = ReduceSum(reduction.axes, reduction.operand_shape)
    return linear(b, total, [weighted], (True,))


class _Extremum(Reduction):
    """``reduce_max`` or ``reduce_min``: reals, integers, and bool (``any``/``all``)."""

    allowed_dtypes = ORDERED_DTYPES
    numpy_fn: ClassVar = np.max
    #: The value over no elements (for bool: ``identity > 0``; for integers the dtype's
    #: smallest or largest value).
    identity: ClassVar[float] = -np.inf

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        initial: Any = self.identity
        if x.dtype == np.bool_:
            initial = bool(self.identity > 0)
        elif x.dtype.kind in "iu":
            limits = np.iinfo(x.dtype)
            initial = limits.max if self.identity > 0 else limits.min
        value = type(self).numpy_fn(x, axis=self.axes, initial=initial)
        return (np.asarray(value, dtype=x.dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (type(self).numpy_fn(arrays[0], axis=self.axes),)

    def tie_weights(self, b, x, y) -> int:  # type: ignore[no-untyped-def]
        """``[x == y] / (number of ties)``, ``y`` broadcast back: 1 at a unique extremum,
        ``1/k`` at each of ``k`` tied ones, 0 elsewhere (and everywhere in a slice whose
        extremum is NaN, which equals nothing)."""
        hit = apply(b, Compare("eq"), [x, apply(b, self.broadcast_back(), [y])])
        one, zero = (apply(b, FullLike(v), [x]) for v in (1.0, 0.0))
        hits = apply(b, Select(), [hit, one, zero])
        count = apply(b, ReduceSum(self.axes, self.operand_shape), [hits])
        at_least_one = apply(b, Maximum(), [apply(b, self.broadcast_back(), [count]), one])
        return apply(b, Div(), [hits, at_least_one])

    def jvp_rule(self, b, xs, ys, ts, ctx):
        if ts[0] is None:
            return [None]
        return [_weighted_sum(b, self, ts[0], self.tie_weights(b, xs[0], ys[0]))]


@primitive
class ReduceMax(_Extremum):
    """Maximum over ``axes`` (numpy's ``max``, NaN-propagating; ``any`` on bool); ties
    share the tangent equally."""

    numpy_fn = np.max
    identity = -np.inf
    combiner = "max"


@primitive
class ReduceMin(_Extremum):
    """Minimum over ``axes`` (numpy's ``min``, NaN-propagating; ``all`` on bool); ties
    share the tangent equally."""

    numpy_fn = np.min
    identity = np.inf
    combiner = "min"


@primitive
class ReduceProd(Reduction):
    """Product over ``axes``; the tangent is ``sum(t * others)`` (module docstring);
    integers multiply exactly in their own dtype."""

    allowed_dtypes = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES
    combiner = "mul"

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        return (np.asarray(np.prod(x, axis=self.axes, dtype=x.dtype), dtype=x.dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.prod(arrays[0], axis=self.axes),)

    def others(self, b, x, y) -> int:  # type: ignore[no-untyped-def]
        """The product of the other elements of each element's slice, exact at zeros."""
        zero, one = (apply(b, FullLike(v), [x]) for v in (0.0, 1.0))
        is_zero = apply(b, Compare("eq"), [x, zero])
        safe = apply(b, Select(), [is_zero, one, x])
        total = ReduceSum(self.axes, self.operand_shape)
        zeros = apply(b, total, [apply(b, Select(), [is_zero, one, zero])])
        single = apply(b, Compare("eq"), [apply(b, self.broadcast_back(), [zeros]), one])
        rest = apply(b, self.broadcast_back(), [apply(b, self, [safe])])
        at_zero = apply(b, Select(), [single, rest, zero])
        quotient = apply(b, Div(), [apply(b, self.broadcast_back(), [y]), safe])
        return apply(b, Select(), [is_zero, at_zero, quotient])

    def jvp_rule(self, b, xs, ys, ts, ctx):
        if ts[0] is None:
            return [None]
        return [_weighted_sum(b, self, ts[0], self.others(b, xs[0], ys[0]))]


class ArgExtremum(TensorOp):
    """The int64 index of the first extremum along ``axis``, which the result drops; not
    differentiable; a numpy library call between kernels."""

    axis: int
    input_count = 1
    differentiable = False
    library_call = True
    numpy_fn: ClassVar = np.argmax


    def batch_rule(self, b, inputs, dims):
        batched = type(self)(self.axis + 1)
        return [b.add1(batched, [moved(b, inputs[0], dims[0])])], [0]

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        (t,) = inputs
        if not 0 <= self.axis < t.ndim:
            raise ValueError(f"{self!r}: axis {self.axis} is out of range for shape {t.shape}")
        if t.shape[self.axis] == 0:
            raise ValueError(f"{self!r}: axis {self.axis} of shape {t.shape} is empty")
        self.check_dtype(t, ORDERED_DTYPES)
        shape = tuple(s for d, s in enumerate(t.shape) if d != self.axis)
        return (TensorType(shape, "int64"),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(type(self).numpy_fn(arrays[0], axis=self.axis), dtype=np.int64),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (type(self).numpy_fn(arrays[0], axis=self.axis),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [None]


@primitive
class Argmax(ArgExtremum):
    """The index of the first maximum along ``axis`` (the first NaN if any), int64."""

    axis: int
    numpy_fn = np.argmax


@primitive
class Argmin(ArgExtremum):
    """The index of the first minimum along ``axis`` (the first NaN if any), int64."""

    axis: int
    numpy_fn = np.argmin


@primitive
class StopGradient(Unary):
    """``x``, a constant for differentiation (JAX's ``stop_gradient``): no tangent."""

    numpy_fn = np.positive
    differentiable = False

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [None]

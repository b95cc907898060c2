"""Statistics over ``axis``: ``var``, ``std`` and ``average``, formulas of reductions.

=========  ==========================================================================
function   formula
=========  ==========================================================================
var        ``sum(|x - mean(x)|^2) / (n - ddof)`` (``|d|^2 = Re(d conj(d))`` for complex
           values: a real result, as numpy); inf or NaN when ``n - ddof <= 0``
std        ``sqrt(var)``: its gradient is NaN where the variance is 0 (a constant
           slice: ``sqrt'(0) = inf``), as JAX's; over one element it is ``var`` (0,
           gradient 0, as autograd's)
average    ``sum(x * w) / sum(w)`` (``weights`` the shape of ``x``, or 1-d along an int
           ``axis``); ``mean`` without weights. Weights summing to 0 give inf or NaN
           (numpy raises ``ZeroDivisionError``, which needs the values)
=========  ==========================================================================
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import conj, real
from tidu_compile.frontend.promotion import astype, broadcast_to, constant, unary_input
from tidu_compile.frontend.reductions import mean, normalize_axes, reduced_count, sum
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import Tensor, apply1

__all__ = ["average", "std", "var"]


def var(x: Any, axis: Any = None, *, ddof: float = 0, keepdims: bool = False) -> Tensor:
    """The variance over ``axis``: the mean of ``|x - mean(x)|^2`` with ``n - ddof`` as the
    count (``ddof=1``: the unbiased estimate). Real for complex ``x``."""
    x = unary_input(x)
    count = reduced_count(x.shape, normalize_axes(axis, x.ndim)) - ddof
    centered = x - mean(x, axis, keepdims=True)
    squares = real(centered * conj(centered)) if x.dtype.kind == "c" else centered * centered
    total = sum(squares, axis, keepdims)
    return apply1(ops.Scale(1.0 / count if count > 0 else math.inf), total)


def std(x: Any, axis: Any = None, *, ddof: float = 0, keepdims: bool = False) -> Tensor:
    """The standard deviation ``sqrt(var(x, axis, ddof))``. Over one element (``ddof``
    0) the variance is 0 whatever ``x`` is, and so is the standard deviation: it is the
    variance itself there, so its gradient is 0 (as autograd's), not ``0 / sqrt(0)``."""
    variance = var(x, axis, ddof=ddof, keepdims=keepdims)
    x = unary_input(x)
    if ddof == 0 and reduced_count(x.shape, normalize_axes(axis, x.ndim)) == 1:
        return variance
    return apply1(ops.Sqrt(), variance)


def _weights_like(x: Tensor, weights: Tensor, axis: Any) -> Tensor:
    """The weights broadcast to ``x``'s shape: the same shape, or 1-d along ``axis``."""
    if weights.shape == x.shape:
        return weights
    if weights.ndim != 1 or not isinstance(axis, (int, np.integer)):
        raise TypeError(
            f"average: weights of shape {weights.shape} differ from the data's {x.shape}; "
            "they must have its shape, or be 1-d with an int axis"
        )
    (a,) = normalize_axes(axis, x.ndim)
    if weights.shape[0] != x.shape[a]:
        raise ValueError(
            f"average: {weights.shape[0]} weights for axis {a} of length {x.shape[a]}"
        )
    along = reshape(weights, tuple(x.shape[a] if d == a else 1 for d in range(x.ndim)))
    return broadcast_to(along, x.shape)


def average(
    x: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
    keepdims: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """The weighted average over ``axis`` (numpy's ``average``); with ``returned``, also
    the sum of the weights (broadcast to the average's shape)."""
    if weights is None:
        x = unary_input(x)
        result = mean(x, axis, keepdims)
        count = reduced_count(x.shape, normalize_axes(axis, x.ndim))
        total = constant(np.full(result.shape, count), result.dtype)
    else:
        x, w = unary_input(x), unary_input(weights)
        dtype = np.result_type(x.dtype, w.dtype)
        x, w = astype(x, dtype), astype(w, dtype)
        w = _weights_like(x, w, axis)
        total = sum(w, axis, keepdims)
        result = sum(x * w, axis, keepdims) / total
    return (result, total) if returned else result

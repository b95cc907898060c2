"""``logsumexp``, ``softmax`` and ``log_softmax``: stable, shifted by the maximum.

With ``m = stop_gradient(max(x))`` over the axes (0 where the maximum is not finite,
as scipy's, so that all -inf gives -inf and an inf or NaN propagates):

=============  ==============================================================
function       formula
=============  ==============================================================
logsumexp      ``log(sum(b * exp(x - m))) + m`` (``b`` optional weights);
               the gradient is the softmax: the shift carries none
softmax        ``e / sum(e)``, ``e = exp(x - m)``
log_softmax    ``(x - m) - log(sum(exp(x - m)))``
=============  ==============================================================

``softmax`` and ``log_softmax`` take ``axis=-1`` by default (JAX's ``jax.nn``);
``tidu_compile.scipy.special`` has them with scipy's default (all axes) and
``logsumexp``. Complex ``x`` is shifted by the maximum of its real part.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.activations import stop_gradient
from tidu_compile.frontend.elementwise import compare, real, where
from tidu_compile.frontend.formulas import absolute
from tidu_compile.frontend.promotion import coerce, unary_input
from tidu_compile.frontend.reductions import (
    keep_dims,
    max,
    normalize_axes,
    reduced_count,
    sum,
)
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import Tensor, apply1

__all__ = ["log_softmax", "logsumexp", "softmax"]


def _shift(x: Tensor, axes: tuple[int, ...]) -> Tensor | None:
    """``stop_gradient(max(x))`` over ``axes`` with the axes kept, 0 where it is not
    finite; None when the axes hold no element (nothing to shift)."""
    if reduced_count(x.shape, axes) == 0 or not axes:
        return None
    peak = max(stop_gradient(real(x)), axes, keepdims=True)
    return where(compare("lt", absolute(peak), math.inf), peak, 0.0)


def _drop(result: Tensor, x: Tensor, axes: tuple[int, ...], keepdims: bool) -> Tensor:
    """``result`` (with the reduced axes kept as 1) without them unless ``keepdims``."""
    if keepdims:
        return result
    return reshape(result, tuple(s for d, s in enumerate(x.shape) if d not in axes))


def logsumexp(x: Any, axis: Any = None, b: Any = None, keepdims: bool = False) -> Tensor:
    """``log(sum(b * exp(x)))`` over ``axis`` without overflow (``b`` defaults to 1;
    -inf over no elements); the gradient in ``x`` is the softmax (times ``b``)."""
    x = unary_input(x)
    if b is not None:
        x, weights = coerce(x, b)
    axes = normalize_axes(axis, x.ndim)
    shift = _shift(x, axes)
    shifted = x - shift if shift is not None else x
    terms = apply1(ops.Exp(), shifted)
    if b is not None:
        terms = terms * weights
    with np.errstate(divide="ignore"):  # log(0) = -inf, as scipy's
        total = apply1(ops.Log(), keep_dims(sum(terms, axes), x.shape, axes))
    result = total + shift if shift is not None else total
    return _drop(result, x, axes, keepdims)


def softmax(x: Any, axis: Any = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` over ``axis`` (default: the last), shifted by the maximum."""
    x = unary_input(x)
    axes = normalize_axes(axis, x.ndim)
    shift = _shift(x, axes)
    e = apply1(ops.Exp(), x - shift if shift is not None else x)
    return e / keep_dims(sum(e, axes), x.shape, axes)


def log_softmax(x: Any, axis: Any = -1) -> Tensor:
    """``x - logsumexp(x)`` over ``axis`` (default: the last), without overflow; the
    gradient is ``1 - softmax`` along the axis."""
    x = unary_input(x)
    axes = normalize_axes(axis, x.ndim)
    shift = _shift(x, axes)
    shifted = x - shift if shift is not None else x
    with np.errstate(divide="ignore"):
        norm = apply1(ops.Log(), keep_dims(sum(apply1(ops.Exp(), shifted), axes), x.shape, axes))
    return shifted - norm

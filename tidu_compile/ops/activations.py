"""Primitives for machine learning that numpy lacks: ``sigmoid``, ``relu``, ``erf``.

They are not numpy names (``numpy_names`` is empty): ``tidu_compile.frontend.activations``
exports them (``tc.sigmoid``, ``tc.relu``, ``tc.erf``), with the formulas ``softplus``
and ``gelu``. Real dtypes only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile.ops.base import FLOAT_DTYPES, apply, primitive
from tidu_compile.ops.elementwise import (
    Compare,
    Exp,
    FullLike,
    Mul,
    Neg,
    Scale,
    Shift,
    Unary,
    select_tangents,
)


def numpy_sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` without overflow: ``e / (1 + e)`` with ``e = exp(x)`` below 0."""
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
        r = 1 / (1 + e)
        return np.asarray(np.where(x >= 0, r, e * r), dtype=np.result_type(x))


_scalar_erf = np.frompyfunc(math.erf, 1, 1)


def numpy_erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise (``math.erf``: numpy has none)."""
    return np.asarray(_scalar_erf(x), dtype=np.result_type(x))


def numpy_relu(x: np.ndarray) -> Any:
    return np.maximum(x, 0)


@primitive
class Sigmoid(Unary):
    """``1 / (1 + exp(-x))``; ``dy = dx * y (1 - y)``."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = numpy_sigmoid

    def derivative(self, b, x, y):
        return apply(b, Mul(), [y, apply(b, Shift(1.0), [apply(b, Neg(), [y])])])


@primitive
class Relu(Unary):
    """``max(x, 0)`` (NaN-propagating); ``dy = dx`` where ``x > 0``, else 0
    (``relu'(0) = 0``, as JAX and PyTorch)."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = numpy_relu
    domain = "nonzero"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        positive = apply(b, Compare("gt"), [xs[0], apply(b, FullLike(0.0), [xs[0]])])
        return [select_tangents(b, positive, ts[0], None, xs[0])]


@primitive
class Erf(Unary):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``;
    ``dy = dx * 2/sqrt(pi) exp(-x^2)``."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = numpy_erf

    def derivative(self, b, x, y):
        gauss = apply(b, Exp(), [apply(b, Neg(), [apply(b, Mul(), [x, x])])])
        return apply(b, Scale(2.0 / math.sqrt(math.pi)), [gauss])


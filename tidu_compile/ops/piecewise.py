"""Piecewise primitives on real values: absolute value, sign, rounding, min/max, mod,
floor division. Those that numpy defines on integers (``abs``, ``sign``, min/max,
``mod``, ``floor_divide``) take them too and compute exactly, with numpy's signs: the
remainder has the sign of the divisor, the quotient is rounded down, and ``x // 0`` and
``x % 0`` are 0 (numpy warns); on floats ``floor_divide`` and ``mod`` are numpy's
``npy_divmod``.

Conventions where numpy is silent about derivatives (JAX's and PyTorch's):

* ``abs'(0) = 0`` (``sign(0) = 0``);
* min, max, fmin, fmax: the input that is selected carries the tangent, tied inputs
  share it equally (``balanced_tangent``);
* ``sign``, ``floor``, ``ceil``, ``round``, ``trunc``, ``floor_divide`` are piecewise
  constant: they are not differentiable (``differentiable = False``, like comparisons):
  their results carry no tangent.

Complex values: ``abs`` and ``sign`` of a complex tensor are formulas in the
frontend (``frontend/formulas.py``: ``hypot(re, im)`` and ``z / |z|``); the others are
undefined (as numpy).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from tidu_compile.ops.base import (
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    ORDERED_DTYPES,
    add_tangents,
    apply,
    linear,
    primitive,
)
from tidu_compile.ops.elementwise import (
    Div,
    Elementwise,
    Mul,
    Neg,
    Sub,
    Unary,
    balanced_tangent,
)


class PiecewiseConstant(Elementwise):
    """A unary op that is constant between jumps: no derivative, no tangent."""

    input_count = 1
    allowed_dtypes: ClassVar[tuple[str, ...]] = FLOAT_DTYPES
    differentiable = False

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [None]


@primitive
class Sign(PiecewiseConstant):
    """``sign(x)``: -1, 0 or 1 (NaN for NaN); integers too; not differentiable."""

    numpy_fn = np.sign
    allowed_dtypes = FLOAT_DTYPES + INTEGER_DTYPES


@primitive
class Floor(PiecewiseConstant):
    """``floor(x)`` (integers and bool: themselves, as numpy); not differentiable."""

    allowed_dtypes = ORDERED_DTYPES
    numpy_fn = np.floor
    numpy_names = ("floor",)


@primitive
class Ceil(PiecewiseConstant):
    """``ceil(x)`` (integers and bool: themselves, as numpy); not differentiable."""

    allowed_dtypes = ORDERED_DTYPES
    numpy_fn = np.ceil
    numpy_names = ("ceil",)


@primitive
class Round(PiecewiseConstant):
    """``rint(x)``, halves to even (numpy's ``rint``, and ``round`` with 0 decimals);
    not differentiable."""

    numpy_fn = np.rint
    numpy_names = ("rint",)


@primitive
class Trunc(PiecewiseConstant):
    """``trunc(x)``, towards zero (integers and bool: themselves); not differentiable."""

    allowed_dtypes = ORDERED_DTYPES
    numpy_fn = np.trunc
    numpy_names = ("trunc", "fix")


@primitive
class Abs(Unary):
    """``|x|`` (real, integer and bool dtypes; the most negative integer stays itself, as
    numpy's); ``dy = dx * sign(x)``, so ``abs'(0) = 0``."""

    allowed_dtypes = ORDERED_DTYPES
    numpy_fn = np.abs
    domain = "nonzero"

    def derivative(self, b, x, y):
        return apply(b, Sign(), [x])


class Selection(Elementwise):
    """``z`` is one of the two inputs: ``balanced_tangent`` (ties share the tangent)."""

    input_count = 2
    commutative = True
    allowed_dtypes = ORDERED_DTYPES

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [balanced_tangent(b, xs, ys[0], ts)]


@primitive
class Minimum(Selection):
    """``min(x, y)``, NaN-propagating; ties share the tangent."""

    numpy_fn = np.minimum
    numpy_names = ("minimum",)


@primitive
class Fmax(Selection):
    """``max(x, y)`` ignoring a NaN operand (numpy's ``fmax``); ties share the tangent."""

    numpy_fn = np.fmax
    numpy_names = ("fmax",)


@primitive
class Fmin(Selection):
    """``min(x, y)`` ignoring a NaN operand (numpy's ``fmin``); ties share the tangent."""

    numpy_fn = np.fmin
    numpy_names = ("fmin",)


@primitive
class Mod(Elementwise):
    """``x mod y`` with the sign of ``y`` (numpy's ``mod``/``remainder``);
    ``dz = dx - dy * q`` with ``q = round((x - z) / y)``, the integer quotient."""

    input_count = 2
    allowed_dtypes = FLOAT_DTYPES + INTEGER_DTYPES
    bool_as = "int8"
    numpy_fn = np.remainder
    numpy_names = ("mod", "remainder")
    domain = "nonzero"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        x, y = xs
        dx, dy = ts
        right = None
        if dy is not None:
            quotient = apply(b, Round(), [apply(b, Div(), [apply(b, Sub(), [x, ys[0]]), y])])
            right = linear(b, Mul(), [dy, apply(b, Neg(), [quotient])], (True, False))
        return [add_tangents(b, dx, right)]


@primitive
class FloorDivide(Elementwise):
    """``x // y``: ``floor(x / y)`` (numpy's ``floor_divide``; on floats ``(x - mod(x, y))
    / y`` rounded, on integers exact); piecewise constant, not differentiable."""

    input_count = 2
    allowed_dtypes = FLOAT_DTYPES + INTEGER_DTYPES
    bool_as = "int8"
    differentiable = False
    numpy_fn = np.floor_divide
    numpy_names = ("floor_divide",)
    domain = "nonzero"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [None]

"""Unary math primitives beyond ``exp log sin cos tanh sqrt``: one block each.

A block gives the numpy function, the frontend names, where the function is smooth
(``domain``: the op tests draw their inputs there) and the derivative, built from
primitives so that it can be differentiated again. All of them take complex values
as numpy does (the derivatives hold on the principal branches). The lowering rows are
in ``passes/tidu_math_lowering.py``.

==========  =====================================  ==========
op          derivative                             domain
==========  =====================================  ==========
log1p       1 / (1 + x)                            open_unit
expm1       y + 1                                  real
log2        1 / (x ln 2)                           positive
log10       1 / (x ln 10)                          positive
exp2        y ln 2                                 real
tan         1 + y^2                                open_unit
arcsin      (1 - x^2)^(-1/2)                       open_unit
arccos      -(1 - x^2)^(-1/2)                      open_unit
arctan      1 / (1 + x^2)                          open_unit
sinh        cosh x                                 real
cosh        sinh x                                 real
arcsinh     (1 + x^2)^(-1/2)                       open_unit
arccosh     (x - 1)^(-1/2) (x + 1)^(-1/2)          above_one
arctanh     1 / (1 - x^2)                          open_unit
==========  =====================================  ==========

(``open_unit`` keeps the complex test inputs away from the branch points at +-1 and
+-i; the real rows are checked far beyond it by ``tests/compiler/test_lowering_rows``.)
"""

from __future__ import annotations

import math

import numpy as np

from tidu_compile.ad import PrimitiveBuilder
from tidu_compile.ops.base import Ref, apply, linear, primitive
from tidu_compile.ops.elementwise import Div, Mul, Neg, Pow, Scale, Shift, Unary


def _one_minus_square(b: PrimitiveBuilder, x: Ref) -> int:
    """``1 - x*x``."""
    return apply(b, Shift(1.0), [apply(b, Neg(), [apply(b, Mul(), [x, x])])])


def _one_plus_square(b: PrimitiveBuilder, x: Ref) -> int:
    """``1 + x*x``."""
    return apply(b, Shift(1.0), [apply(b, Mul(), [x, x])])


def _divide_tangent(b: PrimitiveBuilder, t: int, denominator: int) -> list[int]:
    """``t / denominator``, linear in ``t``."""
    return [linear(b, Div(), [t, denominator], (True, False))]


@primitive
class Log1p(Unary):
    """``log(1 + x)``, accurate near 0; ``dy = dx / (1 + x)``."""

    numpy_fn = np.log1p
    numpy_names = ("log1p",)
    domain = "open_unit"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, Div(), [ts[0], apply(b, Shift(1.0), [xs[0]])], (True, False))]


@primitive
class Expm1(Unary):
    """``exp(x) - 1``, accurate near 0; ``dy = dx * (y + 1)``."""

    numpy_fn = np.expm1
    numpy_names = ("expm1",)

    def derivative(self, b, x, y):
        return apply(b, Shift(1.0), [y])


@primitive
class Log2(Unary):
    """``log2(x)``; ``dy = dx / (x ln 2)``."""

    numpy_fn = np.log2
    numpy_names = ("log2",)
    domain = "positive"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return _divide_tangent(b, ts[0], apply(b, Scale(math.log(2.0)), [xs[0]]))


@primitive
class Log10(Unary):
    """``log10(x)``; ``dy = dx / (x ln 10)``."""

    numpy_fn = np.log10
    numpy_names = ("log10",)
    domain = "positive"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return _divide_tangent(b, ts[0], apply(b, Scale(math.log(10.0)), [xs[0]]))


@primitive
class Exp2(Unary):
    """``2 ** x``; ``dy = dx * y ln 2``."""

    numpy_fn = np.exp2
    numpy_names = ("exp2",)

    def derivative(self, b, x, y):
        return apply(b, Scale(math.log(2.0)), [y])


@primitive
class Tan(Unary):
    """``tan(x)``; ``dy = dx * (1 + y^2)``."""

    numpy_fn = np.tan
    numpy_names = ("tan",)
    domain = "open_unit"

    def derivative(self, b, x, y):
        return _one_plus_square(b, y)


@primitive
class Arcsin(Unary):
    """``arcsin(x)``; ``dy = dx / sqrt(1 - x^2)``."""

    numpy_fn = np.arcsin
    numpy_names = ("arcsin",)
    domain = "open_unit"

    def derivative(self, b, x, y):
        return apply(b, Pow(-0.5), [_one_minus_square(b, x)])


@primitive
class Arccos(Unary):
    """``arccos(x)``; ``dy = -dx / sqrt(1 - x^2)``."""

    numpy_fn = np.arccos
    numpy_names = ("arccos",)
    domain = "open_unit"

    def derivative(self, b, x, y):
        return apply(b, Neg(), [apply(b, Pow(-0.5), [_one_minus_square(b, x)])])


@primitive
class Arctan(Unary):
    """``arctan(x)``; ``dy = dx / (1 + x^2)``."""

    numpy_fn = np.arctan
    numpy_names = ("arctan",)
    domain = "open_unit"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return _divide_tangent(b, ts[0], _one_plus_square(b, xs[0]))


@primitive
class Sinh(Unary):
    """``sinh(x)``; ``dy = dx * cosh(x)``."""

    numpy_fn = np.sinh
    numpy_names = ("sinh",)

    def derivative(self, b, x, y):
        return apply(b, Cosh(), [x])


@primitive
class Cosh(Unary):
    """``cosh(x)``; ``dy = dx * sinh(x)``."""

    numpy_fn = np.cosh
    numpy_names = ("cosh",)

    def derivative(self, b, x, y):
        return apply(b, Sinh(), [x])


@primitive
class Arcsinh(Unary):
    """``arcsinh(x)``; ``dy = dx / sqrt(1 + x^2)``."""

    numpy_fn = np.arcsinh
    numpy_names = ("arcsinh",)
    domain = "open_unit"

    def derivative(self, b, x, y):
        return apply(b, Pow(-0.5), [_one_plus_square(b, x)])


@primitive
class Arccosh(Unary):
    """``arccosh(x)``; ``dy = dx / (sqrt(x - 1) sqrt(x + 1))``."""

    numpy_fn = np.arccosh
    numpy_names = ("arccosh",)
    domain = "above_one"

    def derivative(self, b, x, y):
        below, above = (apply(b, Pow(-0.5), [apply(b, Shift(s), [x])]) for s in (-1.0, 1.0))
        return apply(b, Mul(), [below, above])


@primitive
class Arctanh(Unary):
    """``arctanh(x)``; ``dy = dx / (1 - x^2)``."""

    numpy_fn = np.arctanh
    numpy_names = ("arctanh",)
    domain = "open_unit"

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return _divide_tangent(b, ts[0], _one_minus_square(b, xs[0]))

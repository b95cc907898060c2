"""Unary math primitives beyond ``exp log sin cos tanh sqrt``: one block each.

A block gives the numpy function, the frontend names, where the function is smooth
(``domain``: the op tests draw their inputs there) and the derivative, built from
primitives so that it can be differentiated again. Its one lowering row is in
``passes/tidu_scalar_lowering.py``.
"""

from __future__ import annotations

import numpy as np

from tidu_compile.ops.base import apply, linear, primitive
from tidu_compile.ops.elementwise import Div, Shift, Unary


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

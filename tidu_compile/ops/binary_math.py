"""Binary math primitives: ``arctan2``, ``hypot``, ``logaddexp``, ``logaddexp2``, ``power``.

Each JVP is ``dz = dx * w_x + dy * w_y`` with residual weights (a missing tangent
drops its term):

===========  ====================================  ====================================
op           w_x                                   w_y
===========  ====================================  ====================================
arctan2      y / r2   (z = arctan2(x, y))          -x / r2    (r2 = x^2 + y^2; 0 at 0)
hypot        x / z                                 y / z      (0 where z = 0)
logaddexp    exp(x - z)                            exp(y - z)
logaddexp2   exp2(x - z)                           exp2(y - z)
power        y x^(y-1), 0 where y = 0              log(x) z, log(1) where x = 0 (JAX)
===========  ====================================  ====================================

``arctan2`` and ``hypot`` are given the derivative 0 at the origin, where they have
none (as ``abs'(0) = 0``): ``abs`` and ``angle`` of a complex 0 stay finite.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tidu_compile.ad import PrimitiveBuilder
from tidu_compile.graph import PrimitiveValue
from tidu_compile.ops.base import (
    DIFFERENTIABLE_DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    Ref,
    add_tangents,
    apply,
    linear,
    primitive,
)
from tidu_compile.ops.elementwise import (
    Add,
    Compare,
    Div,
    Elementwise,
    Exp,
    FullLike,
    Log,
    Mul,
    Neg,
    Select,
    Shift,
    Sub,
)
from tidu_compile.ops.unary_math import Exp2


def weighted_tangent(
    b: PrimitiveBuilder, ts: Sequence[int | None], weights: Sequence[Ref | None]
) -> int | None:
    """``sum(t * w)`` over the present tangents (the weights of absent ones unused)."""
    total: int | None = None
    for t, w in zip(ts, weights, strict=True):
        if t is not None:
            assert w is not None
            total = add_tangents(b, total, linear(b, Mul(), [t, w], (True, False)))
    return total


def replace_zero(b: PrimitiveBuilder, x: Ref, value: float = 1.0) -> int:
    """``where(x == 0, value, x)``: a divisor or logarithm argument safe at 0."""
    zero = apply(b, FullLike(0.0), [x])
    is_zero = apply(b, Compare("eq"), [x, zero])
    return apply(b, Select(), [is_zero, apply(b, FullLike(value), [x]), x])


class BinaryMath(Elementwise):
    """A binary op whose JVP is ``weighted_tangent`` of ``weights``."""

    input_count = 2

    def weights(
        self, b: PrimitiveBuilder, x: PrimitiveValue, y: PrimitiveValue, z: PrimitiveValue,
        ts: Sequence[int | None],
    ) -> list[Ref | None]:
        raise NotImplementedError

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [weighted_tangent(b, ts, self.weights(b, xs[0], xs[1], ys[0], ts))]


@primitive
class Arctan2(BinaryMath):
    """``arctan2(x, y)``: the angle of the point ``(y, x)``; real dtypes."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = np.arctan2
    numpy_names = ("arctan2",)

    def weights(self, b, x, y, z, ts):
        r2 = apply(b, Add(), [apply(b, Mul(), [x, x]), apply(b, Mul(), [y, y])])
        safe = replace_zero(b, r2)
        return [apply(b, Div(), [y, safe]), apply(b, Neg(), [apply(b, Div(), [x, safe])])]


@primitive
class Hypot(BinaryMath):
    """``sqrt(x^2 + y^2)`` without overflow; real dtypes."""

    allowed_dtypes = FLOAT_DTYPES
    commutative = True
    numpy_fn = np.hypot
    numpy_names = ("hypot",)

    def weights(self, b, x, y, z, ts):
        safe = replace_zero(b, z)
        return [apply(b, Div(), [v, safe]) for v in (x, y)]


@primitive
class Logaddexp(BinaryMath):
    """``log(exp(x) + exp(y))`` without overflow; real dtypes."""

    allowed_dtypes = FLOAT_DTYPES
    commutative = True
    numpy_fn = np.logaddexp
    numpy_names = ("logaddexp",)

    def weights(self, b, x, y, z, ts):
        return [apply(b, Exp(), [apply(b, Sub(), [v, z])]) for v in (x, y)]


@primitive
class Logaddexp2(BinaryMath):
    """``log2(2^x + 2^y)`` without overflow; real dtypes."""

    allowed_dtypes = FLOAT_DTYPES
    commutative = True
    numpy_fn = np.logaddexp2
    numpy_names = ("logaddexp2",)

    def weights(self, b, x, y, z, ts):
        return [apply(b, Exp2(), [apply(b, Sub(), [v, z])]) for v in (x, y)]


@primitive
class Power(BinaryMath):
    """``x ** y`` for a tensor exponent (``Pow`` is the constant-exponent op); complex
    values on the principal branch; integers exact (numpy's ``ValueError`` for a negative
    exponent; compiled, a numpy library call). ``power`` in the frontend picks the op."""

    numpy_fn = np.power
    domain = "positive"
    allowed_dtypes = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES
    bool_as = "int8"

    def weights(self, b, x, y, z, ts):
        weight_x = weight_y = None
        if ts[0] is not None:
            zero = apply(b, FullLike(0.0), [y])
            y_is_zero = apply(b, Compare("eq"), [y, zero])
            slope = apply(b, Mul(), [y, apply(b, Power(), [x, apply(b, Shift(-1.0), [y])])])
            weight_x = apply(b, Select(), [y_is_zero, zero, slope])
        if ts[1] is not None:
            weight_y = apply(b, Mul(), [apply(b, Log(), [replace_zero(b, x)]), z])
        return [weight_x, weight_y]

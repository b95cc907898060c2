"""Lowering rows of the math primitives (``ops.unary_math``, ``ops.binary_math``,
``ops.piecewise``, ``ops.activations``) on real scalars: ``MATH_LOWERINGS``, merged into
``tidu_scalar_lowering.SCALAR_LOWERINGS``.

Formulas are built on ``math.exp``, ``math.log``, ``math.sin``, ``math.cos`` (which
``expand-math-polynomials`` turns into vectorizable polynomials, below 1 ulp) and
``arith``, where they stay within a few ulps of numpy (``tests/compiler/
test_lowering_rows.py`` checks every row at random and edge values within 4 ulps, with
numpy's infinities, NaNs and signed zeros). Functions without such a formula are
``math`` ops that ``convert-math-to-llvm`` turns into libm calls (``arcsin``,
``arccos``, ``arctan``, ``arctan2``, ``erf``, ``power``; ``mod`` is ``llvm.frem``,
i.e. ``fmod``: xDSL's ``arith`` has no ``remf``).

========== ==========================================================================
op         formula (a = |x|; the sign of x restored by copysign for odd functions)
========== ==========================================================================
log1p      x log(u) / (u - 1), u = 1 + x (Goldberg); x where u = 1
expm1      (u - 1) x / log(u), u = exp(x) (Kahan); x where u = 1, -1 where u - 1 = -1
log2/10    log(x) / ln 2, log(x) / ln 10
exp2       u + u e, u = exp(p), p = x ln2 rounded, e = its rounding error (fma)
tan        sin(x) / cos(x)
sinh       t = expm1(a): t - t^2 / (2 (t + 1)) (a < 1), (t + t / (t + 1)) / 2 (a < 22),
           exp(a) / 2, and h (h / 2) with h = exp(a / 2) near overflow
cosh       (u + 1/u) / 2 with u = exp(a); h (h / 2) near overflow
arcsinh    log1p(a + a^2 / (1 + sqrt(1 + a^2))) (a < 2),
           log(2a + 1 / (a + sqrt(a^2 + 1))) (a < 2^28), log(a) + ln 2
arccosh    log1p(t + sqrt(2t + t^2)), t = x - 1 (x < 2),
           log(2x - 1 / (x + sqrt(x^2 - 1))) (x < 2^28), log(x) + ln 2; NaN below 1
arctanh    log1p(2a + 2a^2 / (1 - a)) / 2 (a < 1/2), log1p(2a / (1 - a)) / 2
hypot      M sqrt(1 + (m/M)^2), M = max(|x|, |y|), m = min; 0 at 0, inf if either is
logaddexp  max(x, y) + log1p(exp(-|x - y|)); x + ln 2 where x == y (numpy's)
logaddexp2 max(x, y) + log1p(exp2(-|x - y|)) / ln 2; x + 1 where x == y
           (both with log1p(t) = log(u) + e / u, u + e = 1 + t; f32 computed in f64)
sigmoid    r = 1 / (1 + e), e = exp(-a): r for x >= 0, e r below
sign       1, -1, +0, NaN by selects; abs, floor, ceil, rint, trunc: math ops
mod        r = fmod(x, y); r + y where r != 0 has the other sign than y; +-0 with the
           sign of y (numpy's ``npy_divmod``)
floor_     q = (x - r) / y, minus 1 where r moved; floor(q), plus 1 where q - floor(q)
divide     > 1/2; copysign(0, x / y) where q = 0; x / y where y = 0 (``npy_divmod``)
========== ==========================================================================

The cases (a < 1, a < 22, ...) are all computed and chosen by selects: no branch.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from decimal import Decimal, localcontext

import numpy as np
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import f64
from xdsl.ir import Operation, SSAValue

from tidu_compile import ops
from tidu_compile.ops import TensorOp

from .scalar_emit import Emit, Scalars

ScalarLowering = Callable[[Operation, Sequence[SSAValue], Emit], Sequence[SSAValue]]

LN2 = pymath.log(2.0)

#: Above this |x|, exp(|x|) overflows but exp(|x|) / 2 may not: sinh and cosh square
#: exp(|x| / 2). Keyed by float width.
NEAR_OVERFLOW = {64: 709.0, 32: 88.0}

#: From here on sqrt(x^2 + 1) = x in every float width used: arcsinh(x) = log(2x).
ASINH_BIG = 2.0**28


def _ln2_split(bits: int) -> tuple[float, float]:
    """ln 2 as ``hi + lo``, ``hi`` rounded to the float width ``bits`` (40 digits)."""
    with localcontext() as context:
        context.prec = 40
        exact = Decimal(2).ln()
        dtype = np.float64 if bits == 64 else np.float32
        hi = float(dtype(float(exact)))
        return hi, float(dtype(float(exact - Decimal(hi))))


# --------------------------------------------------------------- value builders


def log1p_of(f: Scalars, x: SSAValue) -> SSAValue:
    """``log1p(x) = x * log(u) / (u - 1)`` with ``u = 1 + x`` (Goldberg): the rounding
    of ``u`` cancels; ``x`` where ``u == 1``, ``u`` where ``u`` is inf."""
    one = f.const(1.0)
    u = f.add(one, x)
    value = f.mul(f.log(u), f.div(x, f.sub(u, one)))
    value = f.where(u, "oeq", f.const(float("inf")), u, value)
    return f.where(u, "oeq", one, x, value)


def expm1_parts(f: Scalars, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """``(expm1(x), exp(x))``: ``expm1(x) = (u - 1) * x / log(u)`` with ``u = exp(x)``
    (Kahan); ``x`` where ``u == 1``, -1 where ``u - 1 == -1``, ``u`` where ``u`` is inf."""
    one = f.const(1.0)
    u = f.exp(x)
    um1 = f.sub(u, one)
    value = f.mul(um1, f.div(x, f.log(u)))
    value = f.where(u, "oeq", f.const(float("inf")), u, value)
    minus_one = f.const(-1.0)
    value = f.where(um1, "oeq", minus_one, minus_one, value)
    return f.where(u, "oeq", one, x, value), u


def exp2_of(f: Scalars, x: SSAValue) -> SSAValue:
    """``2^x = exp(p) (1 + e)`` where ``p + e = x ln2`` (``e`` from an fma and the low
    part of ln 2): rounding ``x ln2`` alone would cost up to |x ln2| ulps."""
    hi, lo = _ln2_split(f.bits)
    ln2_hi = f.const(hi)
    p = f.rounded_mul(x, ln2_hi)
    e = f.add(f.fma(x, ln2_hi, f.neg(p)), f.mul(x, f.const(lo)))
    u = f.exp(p)
    value = f.fma(u, e, u)
    value = f.where(u, "oeq", f.const(float("inf")), u, value)  # e is NaN at x = +-inf
    return f.where(u, "oeq", f.const(0.0), u, value)


def _half_square_of_exp_half(f: Scalars, a: SSAValue) -> SSAValue:
    """``exp(a) / 2`` as ``h * (h / 2)``, ``h = exp(a / 2)``: finite up to ln(2 max)."""
    h = f.exp(f.mul(a, f.const(0.5)))
    return f.mul(h, f.mul(h, f.const(0.5)))


def sinh_of(f: Scalars, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    t, u = expm1_parts(f, a)
    half, one = f.const(0.5), f.const(1.0)
    t_over = f.div(t, f.add(t, one))  # t / (t + 1)
    small = f.sub(t, f.mul(half, f.mul(t, t_over)))  # (2t - t^2/(t+1)) / 2
    value = f.where(a, "oge", one, f.mul(half, f.add(t, t_over)), small)
    value = f.where(a, "oge", f.const(22.0), f.mul(half, u), value)
    near = f.const(NEAR_OVERFLOW[f.bits])
    value = f.where(a, "oge", near, _half_square_of_exp_half(f, a), value)
    return f.copysign(value, x)


def cosh_of(f: Scalars, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    u = f.exp(a)
    half = f.const(0.5)
    value = f.add(f.mul(half, u), f.div(half, u))
    near = f.const(NEAR_OVERFLOW[f.bits])
    return f.where(a, "oge", near, _half_square_of_exp_half(f, a), value)


def _log_cases(
    f: Scalars, a: SSAValue, small_arg: SSAValue, mid_arg: SSAValue, small_limit: float
) -> SSAValue:
    """``log1p(small_arg)`` below ``small_limit``, ``log(mid_arg)`` up to ``ASINH_BIG``,
    ``log(a) + ln2`` beyond (shared by arcsinh and arccosh)."""
    big = f.const(ASINH_BIG)
    is_big = f.cmp(a, "oge", big)
    log_arg = f.select(is_big, a, mid_arg)
    large = f.add(f.log(log_arg), f.select(is_big, f.const(LN2), f.const(0.0)))
    return f.where(a, "olt", f.const(small_limit), log1p_of(f, small_arg), large)


def arcsinh_of(f: Scalars, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    one = f.const(1.0)
    a2 = f.mul(a, a)
    root = f.sqrt(f.add(a2, one))
    small_arg = f.add(a, f.div(a2, f.add(one, root)))
    mid_arg = f.add(f.add(a, a), f.div(one, f.add(root, a)))
    return f.copysign(_log_cases(f, a, small_arg, mid_arg, 2.0), x)


def arccosh_of(f: Scalars, x: SSAValue) -> SSAValue:
    one = f.const(1.0)
    t = f.sub(x, one)
    small_arg = f.add(t, f.sqrt(f.fma(t, t, f.add(t, t))))
    mid_arg = f.sub(f.add(x, x), f.div(one, f.add(x, f.sqrt(f.fma(x, x, f.neg(one))))))
    value = _log_cases(f, x, small_arg, mid_arg, 2.0)
    return f.where(x, "olt", one, f.const(float("nan")), value)


def arctanh_of(f: Scalars, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    one, half = f.const(1.0), f.const(0.5)
    two_a = f.add(a, a)
    one_minus = f.sub(one, a)
    small_arg = f.add(two_a, f.div(f.mul(two_a, a), one_minus))
    arg = f.where(a, "olt", half, small_arg, f.div(two_a, one_minus))
    return f.copysign(f.mul(half, log1p_of(f, arg)), x)


def hypot_of(f: Scalars, x: SSAValue, y: SSAValue) -> SSAValue:
    a, b = f.abs(x), f.abs(y)
    big, small = f.maximum(a, b), f.minimum(a, b)
    r = f.div(small, big)
    value = f.mul(big, f.sqrt(f.fma(r, r, f.const(1.0))))
    zero, inf = f.const(0.0), f.const(float("inf"))
    value = f.where(big, "oeq", zero, zero, value)
    value = f.where(a, "oeq", inf, inf, value)
    return f.where(b, "oeq", inf, inf, value)


def log1p_unit_of(f: Scalars, t: SSAValue) -> SSAValue:
    """``log1p(t)`` for ``0 <= t <= 1``: ``log(u) + e / u`` with ``u + e = 1 + t``
    exactly (Dekker's fast two-sum)."""
    one = f.const(1.0)
    u = f.add(one, t)
    e = f.add(f.sub(one, u), t)
    return f.add(f.log(u), f.div(e, u))


def _logaddexp_of(
    f: Scalars, x: SSAValue, y: SSAValue, exp: Callable[[SSAValue], SSAValue],
    log_scale: float, tie_offset: float,
) -> SSAValue:
    """``max + log1p(exp(-|x - y|)) * log_scale``; ``x + tie_offset`` where ``x == y``
    (numpy's formula, which also gives inf + inf = inf)."""
    difference = f.sub(x, y)
    gap = f.minimum(difference, f.neg(difference))  # -|x - y|, without math.absf
    correction = log1p_unit_of(f, exp(gap))
    if log_scale != 1.0:
        correction = f.mul(correction, f.const(log_scale))
    value = f.add(f.maximum(x, y), correction)
    return f.where(x, "oeq", y, f.add(x, f.const(tie_offset)), value)


def sigmoid_of(f: Scalars, x: SSAValue) -> SSAValue:
    e = f.exp(f.neg(f.abs(x)))
    r = f.div(f.const(1.0), f.add(f.const(1.0), e))
    return f.where(x, "oge", f.const(0.0), r, f.mul(e, r))


def sign_of(f: Scalars, x: SSAValue) -> SSAValue:
    zero = f.const(0.0)
    value = f.where(x, "oeq", zero, zero, x)  # +0 for +-0, NaN stays
    value = f.where(x, "olt", zero, f.const(-1.0), value)
    return f.where(x, "ogt", zero, f.const(1.0), value)


def mod_of(f: Scalars, x: SSAValue, y: SSAValue) -> SSAValue:
    r = f.emit(llvm.FRemOp(x, y)).results[0]  # fmod: exact, the sign of x
    zero = f.const(0.0)
    other_sign = f.differ(f.cmp(y, "olt", zero), f.cmp(r, "olt", zero))
    value = f.select(f.both(other_sign, f.cmp(r, "one", zero)), f.add(r, y), r)
    return f.where(r, "oeq", zero, f.copysign(zero, y), value)


def floor_divide_of(f: Scalars, x: SSAValue, y: SSAValue) -> SSAValue:
    """numpy's ``npy_divmod`` quotient, step by step (its ``if (mod)`` and ``if (div)``
    are true for NaN: ``une 0``)."""
    r = f.emit(llvm.FRemOp(x, y)).results[0]
    zero, one = f.const(0.0), f.const(1.0)
    quotient = f.div(f.sub(x, r), y)
    moved = f.both(f.cmp(r, "une", zero), f.differ(f.cmp(y, "olt", zero), f.cmp(r, "olt", zero)))
    quotient = f.select(moved, f.sub(quotient, one), quotient)
    floor = f.math(math.FloorOp, quotient)
    floor = f.where(f.sub(quotient, floor), "ogt", f.const(0.5), f.add(floor, one), floor)
    ratio = f.div(x, y)
    value = f.where(quotient, "une", zero, floor, f.copysign(zero, ratio))
    return f.where(y, "oeq", zero, ratio, value)


# --------------------------------------------------------------- the rows


def _unary(build: Callable[[Scalars, SSAValue], SSAValue]) -> ScalarLowering:
    return lambda op, args, emit: [build(Scalars(emit, args[0].type), args[0])]


def _binary(build: Callable[[Scalars, SSAValue, SSAValue], SSAValue]) -> ScalarLowering:
    return lambda op, args, emit: [build(Scalars(emit, args[0].type), args[0], args[1])]


def _math(op_class: type[Operation]) -> ScalarLowering:
    """One ``math`` op of the operands' type (``math.atan2``, ``math.floor``, ...)."""
    return lambda op, args, emit: [Scalars(emit, args[0].type).math(op_class, *args)]


def _times(build: Callable[[Scalars, SSAValue], SSAValue], factor: float) -> ScalarLowering:
    return _unary(lambda f, x: f.mul(build(f, x), f.const(factor)))


def _in_f64(build: Callable[[Scalars, SSAValue, SSAValue], SSAValue]) -> ScalarLowering:
    """A binary row computed in f64 for f32 operands (``arith.extf``, ``arith.truncf``):
    for formulas whose f32 rounding errors add up past a few ulps.

    The f64 formula must avoid the ``math`` ops that become un-suffixed LLVM intrinsics
    (``absf``, ``sqrt``, ``copysign``, ``floor``, ...; ``exp`` and ``log`` are expanded
    first): xDSL's llvmlite translation declares ``@llvm.fabs`` once per module, so an
    f64 and an f32 use in one kernel clash (``Type of #1 arg mismatch``)."""

    def lower(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
        narrow = args[0].type
        if narrow == f64:
            return [build(Scalars(emit, f64), *args)]
        wide = [emit(arith.ExtFOp(a, f64)).results[0] for a in args]
        value = build(Scalars(emit, f64), *wide)
        return emit(arith.TruncFOp(value, narrow)).results

    return lower


def _logaddexp(f: Scalars, x: SSAValue, y: SSAValue) -> SSAValue:
    return _logaddexp_of(f, x, y, f.exp, 1.0, LN2)


def _logaddexp2(f: Scalars, x: SSAValue, y: SSAValue) -> SSAValue:
    return _logaddexp_of(f, x, y, lambda v: exp2_of(f, v), 1.0 / LN2, 1.0)


MATH_LOWERINGS: dict[type[TensorOp], ScalarLowering] = {
    ops.Log1p: _unary(log1p_of),
    ops.Expm1: _unary(lambda f, x: expm1_parts(f, x)[0]),
    ops.Log2: _times(lambda f, x: f.log(x), 1.0 / LN2),
    ops.Log10: _times(lambda f, x: f.log(x), 1.0 / pymath.log(10.0)),
    ops.Exp2: _unary(exp2_of),
    ops.Tan: _unary(lambda f, x: f.div(f.math(math.SinOp, x), f.math(math.CosOp, x))),
    ops.Arcsin: _math(math.AsinOp),
    ops.Arccos: _math(math.AcosOp),
    ops.Arctan: _math(math.AtanOp),
    ops.Sinh: _unary(sinh_of),
    ops.Cosh: _unary(cosh_of),
    ops.Arcsinh: _unary(arcsinh_of),
    ops.Arccosh: _unary(arccosh_of),
    ops.Arctanh: _unary(arctanh_of),
    ops.Arctan2: _math(math.Atan2Op),
    ops.Hypot: _binary(hypot_of),
    ops.Logaddexp: _in_f64(_logaddexp),
    ops.Logaddexp2: _in_f64(_logaddexp2),
    ops.Power: _math(math.PowFOp),
    ops.Sign: _unary(sign_of),
    ops.Floor: _math(math.FloorOp),
    ops.Ceil: _math(math.CeilOp),
    ops.Round: _math(math.RoundEvenOp),
    ops.Trunc: _math(math.TruncOp),
    ops.Abs: _math(math.AbsFOp),
    ops.Minimum: _binary(lambda f, x, y: f.minimum(x, y)),
    ops.Fmax: lambda op, args, emit: emit(arith.MaxnumfOp(args[0], args[1])).results,
    ops.Fmin: lambda op, args, emit: emit(arith.MinnumfOp(args[0], args[1])).results,
    ops.Mod: _binary(mod_of),
    ops.FloorDivide: _binary(floor_divide_of),
    ops.Sigmoid: _unary(sigmoid_of),
    ops.Relu: _unary(lambda f, x: f.maximum(x, f.const(0.0))),
    ops.Erf: _math(math.ErfOp),
}
"""Primitive class -> builder of its arith/math equivalent on real scalars."""


__all__ = [
    "MATH_LOWERINGS",
    "arccosh_of",
    "arcsinh_of",
    "arctanh_of",
    "cosh_of",
    "exp2_of",
    "expm1_parts",
    "floor_divide_of",
    "hypot_of",
    "log1p_of",
    "mod_of",
    "sigmoid_of",
    "sign_of",
    "sinh_of",
]

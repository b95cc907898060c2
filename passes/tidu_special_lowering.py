"""Lowering rows of the ``scipy.special`` primitives (``ops.special``) on real scalars:
``SPECIAL_LOWERINGS``, merged into ``tidu_scalar_lowering.SCALAR_LOWERINGS``.

Straight-line formulas of ``arith`` and ``math.exp/log/sin/cos/erf`` (the first four
expanded into polynomials by ``expand-math-polynomials``, ``erf`` a libm call), computed
in f64 (f32 operands are extended, then rounded), every case computed and chosen by
selects. ``a`` is ``x`` for ``x >= 0`` and ``1 - x`` below (the reflection), ``r =
x - rint(x)`` (exact), ``N = 10``:

========  ===============================================================================
op        formula
========  ===============================================================================
gammaln   the Taylor series ``T(e)`` of ``log Gamma(2 + e)`` (``zeta(k) - 1`` from scipy)
          moved by the recurrence: ``T(x - m) + log prod_{k=1}^{m-2} (x - k)`` (``m =
          rint(x)``, up to 13), ``T(x - 1) - log1p(x - 1)`` below 3/2, ``T(x) - log(x) -
          log1p(x)`` below 1/2; Stirling's series from 13 on; below 0 ``log(pi /
          |sin(pi r)|) - gammaln(a)``. The zeros at 1 and 2 are exact
digamma   the Taylor series at its zero 1.4616... (``polygamma(k, x0) / k!`` from scipy)
          on [1, 2), moved by ``psi(x) = psi(x - n) + sum_{k<=n} 1/(x - k)`` (to 13) and
          ``psi(x + 1) - 1/x`` below 1; ``log x - 1/(2x) - sum_k B_2k / (2k x^2k)`` from
          13 on; below 0 ``digamma(a) - pi cos(pi r) / sin(pi r)``
trigamma  ``1/z + 1/(2z^2) + sum_k B_2k / z^(2k+1)`` plus ``sum_{k<N} 1/(a + k)^2``;
          below 0 ``pi^2 / sin(pi r)^2 - trigamma(a)``
erfc      Numerical Recipes' form ``t exp(-x^2 + P(4t - 2))``, ``t = 2 / (2 + |x|)``, ``P``
          its 28-term Chebyshev series of ``log(erfcx(x) / t)``; ``-x^2`` split exactly
          (``fma``) and applied as its own ``exp``; ``2 - erfc(-x)`` for ``x < 0``;
          ``1 - erf(x)`` for ``|x| < 1/2``
erfinv    Winitzki's approximation (relative error 2e-3), then three Halley steps on
          ``erf(y) - x``; for ``|x| > 1/2`` the residual is ``(1 - |x|) - erfc(y)`` (exact
          ``1 - |x|``), so the tail keeps its relative accuracy; +-inf at +-1, NaN beyond
========  ===============================================================================

Coefficients taken from scipy are computed once, at first use (``functools.cache``).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from functools import cache

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import f64
from xdsl.ir import Operation, SSAValue

from tidu_compile import ops
from tidu_compile.ops import TensorOp

from .scalar_emit import Emit, Scalars
from .tidu_math_lowering import log1p_of

ScalarLowering = Callable[[Operation, Sequence[SSAValue], Emit], Sequence[SSAValue]]

#: The recurrence shifts arguments below this many steps up to it.
SHIFT = 10

#: Stirling's series of ``log Gamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2)``:
#: ``B_2k / (2k (2k - 1) z^(2k - 1))``, k = 1..10.
STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
            -3617 / 122400, 43867 / 244188, -174611 / 125400)  # fmt: skip
#: ``B_2k / (2k)``, k = 1..9 (digamma's series in ``z^-2k``).
DIGAMMA = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12,
           -3617 / 8160, 43867 / 14364)  # fmt: skip
#: ``B_2k``, k = 1..10 (trigamma's series in ``z^-(2k + 1)``).
TRIGAMMA = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
            43867 / 798, -174611 / 330)  # fmt: skip

#: Past this, erfc is 0 in f64 (erfc(27.3) is below the least subnormal).
ERFC_ZERO = 28.0

#: The double next to digamma's positive zero 1.46163214496836234126...
DIGAMMA_ZERO = 1.4616321449683622
#: Taylor terms kept around ``DIGAMMA_ZERO`` (used on [1, 2]) and around 2 for
#: ``gammaln`` (used on [1/2, 5/2), on ``x + 1`` below 3/2).
TAYLOR_TERMS = 42


@cache
def digamma_taylor() -> tuple[float, ...]:
    """``psi^(k)(x0) / k!`` at ``x0 = DIGAMMA_ZERO``, k = 0..TAYLOR_TERMS (scipy's)."""
    import scipy.special  # at first use: a quarter of a compile worker's start

    return tuple(float(scipy.special.polygamma(k, DIGAMMA_ZERO) / pymath.factorial(k))
                 for k in range(TAYLOR_TERMS + 1))  # fmt: skip


@cache
def gammaln_taylor() -> tuple[float, ...]:
    """``log Gamma(2 + e) = (1 - gamma) e + sum_k (-1)^k (zeta(k) - 1) / k e^k``: the
    coefficients of ``e^0..e^TAYLOR_TERMS`` (``scipy.special.zetac`` is ``zeta - 1``)."""
    import scipy.special

    tail = [(-1) ** k * float(scipy.special.zetac(k)) / k for k in range(2, TAYLOR_TERMS + 1)]
    return (0.0, 1.0 - float(np.euler_gamma), *tail)


def _in_f64(build: Callable[[Scalars, SSAValue], SSAValue]) -> ScalarLowering:
    """A unary row computed in f64 (f32 operands extended, the result rounded)."""

    def lower(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
        narrow = args[0].type
        if narrow == f64:
            return [build(Scalars(emit, f64), args[0])]
        wide = emit(arith.ExtFOp(args[0], f64)).results[0]
        return emit(arith.TruncFOp(build(Scalars(emit, f64), wide), narrow)).results

    return lower


def _polynomial(f: Scalars, u: SSAValue, coefficients: Sequence[float]) -> SSAValue:
    """``sum_k c_k u^k`` by Horner's rule."""
    total = f.const(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = f.fma(total, u, f.const(c))
    return total


def _reflected(f: Scalars, x: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
    """``(a, small, sin(pi r))``: ``a = x`` or ``1 - x``, whether ``x < 0``, and the
    sine of ``pi`` times ``x``'s distance ``r`` to the nearest integer (exact ``r``)."""
    small = f.cmp(x, "olt", f.const(0.0))
    a = f.select(small, f.sub(f.const(1.0), x), x)
    r = f.sub(x, f.math(math.RoundEvenOp, x))
    return a, small, f.math(math.SinOp, f.mul(f.const(pymath.pi), r))


def _shifted(f: Scalars, a: SSAValue) -> tuple[SSAValue, list[SSAValue], SSAValue]:
    """``(z, [a, a + 1, ..., a + N - 1], shift?)``: ``z = a + N`` where ``a < N``, else
    ``a`` (the terms then unused: each row selects them away)."""
    shift = f.cmp(a, "olt", f.const(float(SHIFT)))
    terms = [a if k == 0 else f.add(a, f.const(float(k))) for k in range(SHIFT)]
    return f.select(shift, f.add(a, f.const(float(SHIFT))), a), terms, shift


#: ``gammaln`` uses Stirling's series from here on, the Taylor series at 2 below.
STIRLING_FROM = 13.0


def _gammaln_nonnegative(f: Scalars, x: SSAValue) -> SSAValue:
    """``log Gamma(x)`` for ``x >= 0``: ``T(e) = log Gamma(2 + e)`` (Taylor, ``|e| <=
    1/2``) moved to ``x`` by the recurrence, Stirling's series from 13 on."""
    one = f.const(1.0)
    m = f.math(math.RoundEvenOp, x)
    e = f.sub(x, m)  # exact: m is the integer nearest to x
    factors = [f.where(m, "oge", f.const(k + 2.0), f.sub(x, f.const(float(k))), one)
               for k in range(1, int(STIRLING_FROM) - 1)]  # fmt: skip
    product = factors[0]
    for factor in factors[1:]:
        product = f.mul(product, factor)
    upward = f.add(_polynomial(f, e, gammaln_taylor()), f.log(product))  # m >= 2
    below_one = f.sub(_polynomial(f, f.sub(x, one), gammaln_taylor()), log1p_of(f, f.sub(x, one)))
    near_zero = f.sub(_polynomial(f, x, gammaln_taylor()), f.add(f.log(x), log1p_of(f, x)))
    inverse = f.div(one, x)
    series = f.mul(inverse, _polynomial(f, f.mul(inverse, inverse), STIRLING))
    stirling = f.add(f.sub(f.mul(f.sub(x, f.const(0.5)), f.log(x)), x),
                     f.add(f.const(0.5 * pymath.log(2 * pymath.pi)), series))  # fmt: skip
    value = f.where(x, "olt", f.const(1.5), below_one, upward)
    value = f.where(x, "olt", f.const(0.5), near_zero, value)
    return f.where(x, "oge", f.const(STIRLING_FROM), stirling, value)


def gammaln_of(f: Scalars, x: SSAValue) -> SSAValue:
    a, small, sine = _reflected(f, x)
    value = _gammaln_nonnegative(f, a)
    reflected = f.sub(f.log(f.div(f.const(pymath.pi), f.abs(sine))), value)
    result = f.select(small, reflected, value)
    infinite = f.cmp(f.abs(x), "oeq", f.const(pymath.inf))  # scipy: inf at +inf, -inf at -inf
    return f.select(infinite, x, result)


def _digamma_nonnegative(f: Scalars, x: SSAValue) -> SSAValue:
    """``digamma(x)`` for ``x >= 0``: the Taylor series at its zero on [1, 2), moved by
    ``psi(x) = psi(x - n) + sum_{k=1}^{n} 1 / (x - k)`` (up to 13; positive terms) and by
    ``psi(x) = psi(x + 1) - 1/x`` below 1; the asymptotic series from 13 on."""
    one = f.const(1.0)
    n = f.math(math.FloorOp, f.sub(x, one))  # x - n in [1, 2) for x >= 1
    base = f.sub(x, f.where(x, "olt", one, f.const(-1.0), n))  # x + 1 below 1
    near_zero = _polynomial(f, f.sub(base, f.const(DIGAMMA_ZERO)), digamma_taylor())
    harmonic = f.const(0.0)
    for k in range(1, int(STIRLING_FROM)):
        term = f.div(one, f.sub(x, f.const(float(k))))
        harmonic = f.add(harmonic, f.where(n, "oge", f.const(float(k)), term, f.const(0.0)))
    upward = f.add(near_zero, harmonic)
    value = f.where(x, "olt", one, f.sub(near_zero, f.div(one, x)), upward)
    inverse = f.div(one, x)
    square = f.mul(inverse, inverse)
    series = f.mul(square, _polynomial(f, square, DIGAMMA))
    asymptotic = f.sub(f.sub(f.log(x), f.mul(f.const(0.5), inverse)), series)
    return f.where(x, "oge", f.const(STIRLING_FROM), asymptotic, value)


def digamma_of(f: Scalars, x: SSAValue) -> SSAValue:
    a, small, sine = _reflected(f, x)
    value = _digamma_nonnegative(f, a)
    r = f.sub(x, f.math(math.RoundEvenOp, x))  # cos(pi r) = sin(pi (1/2 - |r|)): 0 at 1/2
    cosine = f.math(math.SinOp, f.mul(f.const(pymath.pi), f.sub(f.const(0.5), f.abs(r))))
    reflected = f.sub(value, f.div(f.mul(f.const(pymath.pi), cosine), sine))
    at_pole = f.cmp(sine, "oeq", f.const(0.0))  # scipy: NaN at the negative integers
    result = f.select(small, f.select(at_pole, f.const(pymath.nan), reflected), value)
    return f.select(f.cmp(x, "oeq", f.const(-pymath.inf)), f.const(pymath.nan), result)


def trigamma_of(f: Scalars, x: SSAValue) -> SSAValue:
    a, small, sine = _reflected(f, x)
    z, terms, shift = _shifted(f, a)
    squares = f.const(0.0)
    for term in terms:
        inverse_term = f.div(f.const(1.0), term)
        squares = f.fma(inverse_term, inverse_term, squares)
    inverse = f.div(f.const(1.0), z)
    square = f.mul(inverse, inverse)
    series = f.mul(f.mul(square, inverse), _polynomial(f, square, TRIGAMMA))
    psi1_z = f.add(f.add(inverse, f.mul(f.const(0.5), square)), series)
    value = f.add(psi1_z, f.select(shift, squares, f.const(0.0)))
    reflected = f.sub(f.div(f.const(pymath.pi**2), f.mul(sine, sine)), value)
    result = f.select(small, reflected, value)
    # scipy: inf at the poles (0, -1, ...) and at -inf
    return f.select(f.cmp(x, "oeq", f.const(-pymath.inf)), f.const(pymath.inf), result)


#: ``P(u) = log(erfcx(z) / t)``, ``t = 2 / (2 + z)``, ``u = 2t - 1``, as Chebyshev
#: coefficients: Numerical Recipes' (3rd ed., section 6.2, ``Erf::erfccheb``), its first
#: one halved for numpy's convention; they agree with scipy's ``erfcx`` within 7.3e-16 in
#: ``P`` on [1/2, 27], where the row uses them (``tests/passes/test_special_rows.py``).
ERFC_CHEBYSHEV = (
    -0.6513268598908547, 6.4196979235649026e-1, 1.9476473204185836e-2,
    -9.561514786808631e-3, -9.46595344482036e-4, 3.66839497852761e-4, 4.2523324806907e-5,
    -2.0278578112534e-5, -1.624290004647e-6, 1.303655835580e-6, 1.5626441722e-8,
    -8.5238095915e-8, 6.529054439e-9, 5.059343495e-9, -9.91364156e-10, -2.27365122e-10,
    9.6467911e-11, 2.394038e-12, -6.886027e-12, 8.94487e-13, 3.13092e-13, -1.12708e-13,
    3.81e-16, 7.106e-15, -1.523e-15, -9.4e-17, 1.21e-16, -2.8e-17,
)


def _clenshaw(f: Scalars, u: SSAValue, coefficients: Sequence[float]) -> SSAValue:
    """``sum_k c_k T_k(u)`` by Clenshaw's recurrence."""
    two_u = f.add(u, u)
    b1, b2 = f.const(0.0), f.const(0.0)
    for c in reversed(coefficients[1:]):
        b1, b2 = f.sub(f.fma(two_u, b1, f.const(c)), b2), b1
    return f.sub(f.fma(u, b1, f.const(coefficients[0])), b2)


def _erfc_of_magnitude(f: Scalars, a: SSAValue) -> SSAValue:
    """``erfc(a)`` for ``a >= 0`` (see the module docstring)."""
    t = f.div(f.const(2.0), f.add(f.const(2.0), a))
    u = f.sub(f.add(t, t), f.const(1.0))  # (4t - 2) / 2
    p = _clenshaw(f, u, ERFC_CHEBYSHEV)
    square = f.rounded_mul(a, a)
    error = f.fma(a, a, f.neg(square))  # a^2 = square + error exactly
    value = f.mul(f.mul(t, f.exp(f.neg(square))), f.exp(f.sub(p, error)))
    return f.select(f.cmp(a, "ogt", f.const(ERFC_ZERO)), f.const(0.0), value)


def erfc_of(f: Scalars, x: SSAValue) -> SSAValue:
    positive = _erfc_of_magnitude(f, f.abs(x))
    value = f.select(f.cmp(x, "olt", f.const(0.0)), f.sub(f.const(2.0), positive), positive)
    central = f.cmp(f.abs(x), "olt", f.const(0.5))  # 1 - erf(x) in (0.47, 1.53): exact enough
    return f.select(central, f.sub(f.const(1.0), f.math(math.ErfOp, x)), value)


#: Winitzki's constant of his approximation of ``erfinv``.
WINITZKI = 0.147


def erfinv_of(f: Scalars, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    one = f.const(1.0)
    complement = f.sub(one, a)  # exact for a >= 1/2
    log_term = f.log(f.mul(complement, f.add(one, a)))  # log(1 - x^2)
    half = f.add(f.const(2.0 / (pymath.pi * WINITZKI)), f.mul(f.const(0.5), log_term))
    y = f.sqrt(f.sub(f.sqrt(f.sub(f.mul(half, half), f.div(log_term, f.const(WINITZKI)))),
                     half))  # fmt: skip
    tail = f.cmp(a, "ogt", f.const(0.5))
    for _ in range(3):  # Halley: y - g / (g' + y g), g = erf(y) - a, g' = 2/sqrt(pi) e^-y^2
        residual = f.select(tail, f.sub(complement, _erfc_of_magnitude(f, y)),
                            f.sub(f.math(math.ErfOp, y), a))  # fmt: skip
        slope = f.mul(f.const(2.0 / pymath.sqrt(pymath.pi)), f.exp(f.neg(f.mul(y, y))))
        y = f.sub(y, f.div(residual, f.fma(y, residual, slope)))
    edge = f.cmp(a, "oge", one)
    beyond = f.select(f.cmp(a, "oeq", one), f.const(pymath.inf), f.const(pymath.nan))
    value = f.copysign(f.select(edge, beyond, y), x)
    return f.select(f.cmp(a, "oeq", f.const(0.0)), f.const(0.0), value)  # scipy: +0 at -0


SPECIAL_LOWERINGS: dict[type[TensorOp], ScalarLowering] = {
    ops.Gammaln: _in_f64(gammaln_of),
    ops.Digamma: _in_f64(digamma_of),
    ops.Trigamma: _in_f64(trigamma_of),
    ops.Erfc: _in_f64(erfc_of),
    ops.Erfinv: _in_f64(erfinv_of),
}
"""Primitive class -> builder of its arith/math formula on real scalars."""


__all__ = [
    "DIGAMMA_ZERO", "ERFC_CHEBYSHEV", "SPECIAL_LOWERINGS", "digamma_of", "digamma_taylor",
    "erfc_of", "erfinv_of", "gammaln_of", "gammaln_taylor", "trigamma_of",
]  # fmt: skip

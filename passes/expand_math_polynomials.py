"""``expand-math-polynomials``: exp, log, tanh, sin, cos as straight-line arithmetic.

Rewrites ``math.exp``, ``math.log``, ``math.tanh``, ``math.sin`` and ``math.cos`` on
scalar ``f32``/``f64`` into ``arith`` ops (float arithmetic, compares, selects,
bitcasts, integer ops on the bit patterns, constants) and ``math.fma``. No branch,
call, memory access or ``fptosi`` (poison on NaN) is emitted, so LLVM's loop
vectorizer turns a kernel loop into SIMD code with no libm calls left. Math ops on
other types (vectors, f16, ...) and other math ops are left alone.

Common tricks (``Emitter`` in ``math_polynomials.py``):
  * rounding to an integer without ``fptosi``: ``k = fma(v, c, 1.5*2^52)``,
    ``n = k - 1.5*2^52``, integer ``n = bits(k) - bits(1.5*2^52)`` (f32: ``2^23``);
  * ``2^n`` by shifting ``n + bias`` into the exponent field;
  * error-free sums (``two_sum``) and products (``fma(a, b, -RN(a*b))``), so
    reduced arguments are carried as ``hi + lo`` where one double is not enough;
  * polynomials by Horner's rule with ``math.fma``.
The lowering gives every ``arith`` float op the ``contract`` flag; the algorithms
below stay correct whether LLVM fuses a multiply-add or not, and products that must
stay rounded are ``fma(a, b, -0.0)``.

Per function (``c`` = coefficient tables of ``math_polynomials``; f32 uses the same
steps with its own constants and lower degrees):
  * exp: clamp x to [exp_lo, exp_hi] with ordered compares (NaN passes); n =
    round(x/ln2); r = x - n*ln2_hi (exact) - n*ln2_lo as hi + lo; exp(r) = (1 + r) +
    (r^2 Q(r) + lo (1 + r) + error of 1 + r); times 2^(n>>1) * 2^(n - (n>>1)), so
    overflow to inf and correctly rounded subnormals need no special case.
    Q: degree 10 (f64), 4 (f32).
  * log: subnormals scaled by 2^(mant+2) (select); the bits give x = 2^k m with m in
    [sqrt2/2, sqrt2); f = m - 1, s = f/(2+f), z = s^2, R = z L(z) with 2 atanh(s) = 2s
    + s R; log x = k ln2_hi + (f - (f^2/2 - (s (f^2/2 + R) + k ln2_lo))). Selects give
    log(0) = -inf, log(x<0) = log(NaN) = NaN, log(inf) = inf. L: degree 6 / 2.
  * tanh: on a = |x|: a < 0.625: a + a z P(z) (z = a^2, P degree 10 / 4); else
    1 - 2/(exp(2a) + 1) with a clamped to tanh_big (20 / 10) where tanh rounds to 1,
    exp(2a) from exp's core; the sign of x is OR-ed in (tanh(-0) = -0, tanh(-inf) = -1).
  * sin, cos: q = round(x 2/pi) by the shifter, corrected by the rounding of
    x*(2/pi)_lo so |r| <= pi/4 everywhere; r = x - q pi/2 with pi/2 in three pieces:
    x - q*P1 is exact (fma), q*P2 is subtracted error-free, giving r = hi + lo.
    sin(r) = hi + (hi z S(z) + lo (1 - z/2)), cos(r) = (1 - z/2) + (z^2 C(z) - lo hi
    + rounding errors of z/2 and of 1 - z/2), z = hi^2; S, C: degree 5 / 2. Both are
    computed; q&1 selects one, (q&2) << (bits-2) XOR-ed into the bits flips the sign
    (cos uses q+1). sin(+-0) = +-0 by a select. Beyond |x| > trig_limit
    (1.5*2^51 ~ 3.4e15 for f64, 1.5*2^22 = 6291456 for f32), where the shifter
    rounding no longer works, and for inf/NaN, the result is NaN (no slow path).

Before::

    %e = math.exp %x : f64

After (abridged; 45 ops)::

    %hi = arith.constant 7.100000e+02 : f64
    %0 = arith.cmpf ogt, %x, %hi : f64
    %1 = arith.select %0, %hi, %x : f64
    ...
    %sh = arith.constant 6.755399441055744e+15 : f64
    %k = math.fma %2, %log2e, %sh : f64
    %n = arith.subf %k, %sh : f64
    %kb = arith.bitcast %k : f64 to i64
    %ni = arith.subi %kb, %shb : i64
    %rh = math.fma %n, %mln2hi, %2 : f64
    ...
    %p = arith.addf %s, %tail : f64
    %n1 = arith.shrsi %ni, %c1 : i64
    ...
    %e1 = arith.mulf %p, %f1 : f64
    %e = arith.mulf %e1, %f2 : f64
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import math
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from .math_polynomials import TANH_SMALL, Emitter, format_of

Value = SSAValue


def _exp_core(e: Emitter, x: Value) -> tuple[Value, Value, Value]:
    """``(s, tail, n)`` with ``exp(x) ~ (s + tail) * 2^n``, n an integer.

    ``RN(s + tail)`` is within ~0.5 ulp of ``exp(x - n ln2)``; ``|tail| < ulp(s)``.
    Needs ``|x| < 2^(mant-1) ln2``; no special values.
    """
    fmt = e.fmt
    n, n_int = e.round_to_int(x, e.f(fmt.log2e))
    r_hi = e.fma(n, e.f(-fmt.ln2[0]), x)  # exact: see the module docstring
    r = e.fma(n, e.f(-fmt.ln2[1]), r_hi)
    s, s_err = e.fast_two_sum(e.f(1.0), r)  # 1 + r exactly, |r| < 1
    r2 = e.mul(r, r)
    return s, e.fma(r2, e.poly(r, fmt.exp_q), s_err), n_int


def emit_exp(e: Emitter, x: Value) -> Value:
    fmt = e.fmt
    hi, lo = e.f(fmt.exp_hi), e.f(fmt.exp_lo)
    x = e.select(e.cmp("ogt", x, hi), hi, x)  # ordered: NaN is kept
    x = e.select(e.cmp("olt", x, lo), lo, x)
    s, tail, n = _exp_core(e, x)
    p = e.add(s, tail)
    n1 = e.ashr(n, 1)
    n2 = e.isub(n, n1)
    # Two factors, each a normal power of two; only the last product rounds.
    return e.mul(e.mul(p, e.pow2(n1)), e.pow2(n2))


def emit_log(e: Emitter, x: Value) -> Value:
    fmt = e.fmt
    # Subnormals (and any x below the least normal: 0, negatives) scaled to normal.
    shift = fmt.mant + 2
    tiny = e.cmp("olt", x, e.f(fmt.min_normal))
    xs = e.select(tiny, e.mul(x, e.f(2.0**shift)), x)
    k_adj = e.select(tiny, e.i(-shift), e.i(0))
    # Add (1.0 - sqrt2/2) in the bits: the exponent field becomes k + bias with m in
    # [sqrt2/2, sqrt2); put the mantissa back on sqrt2/2's exponent to get m.
    one_bits = fmt.bias << fmt.mant
    hx = e.iadd(e.bits(xs), e.i(one_bits - fmt.sqrt_half_bits))
    k = e.iadd(e.isub(e.ashr(hx, fmt.mant), e.i(fmt.bias)), k_adj)
    m = e.from_bits(e.iadd(e.iand(hx, e.i(fmt.mant_mask)), e.i(fmt.sqrt_half_bits)))
    f = e.sub(m, e.f(1.0))  # exact
    # k as a float without sitofp: bits(shifter) + k is the float shifter + k.
    shifter = e.f(fmt.shifter)
    dk = e.sub(e.from_bits(e.iadd(e.bits(shifter), k)), shifter)
    s = e.div(f, e.add(e.f(2.0), f))
    z = e.mul(s, s)
    r = e.mul(z, e.poly(z, fmt.log_l))
    hfsq = e.mul(e.f(0.5), e.mul(f, f))
    inner = e.fma(s, e.add(hfsq, r), e.mul(dk, e.f(fmt.ln2[1])))
    result = e.fma(dk, e.f(fmt.ln2[0]), e.sub(f, e.sub(hfsq, inner)))
    inf = e.f(float("inf"))
    result = e.select(e.cmp("oeq", x, inf), inf, result)
    result = e.select(e.cmp("oeq", x, e.f(0.0)), e.f(float("-inf")), result)
    return e.select(e.cmp("ult", x, e.f(0.0)), e.f(float("nan")), result)


def emit_tanh(e: Emitter, x: Value) -> Value:
    fmt = e.fmt
    a = e.abs(x)
    big = e.f(fmt.tanh_big)
    a_big = e.select(e.cmp("ogt", a, big), big, a)  # NaN is kept
    y = e.add(a_big, a_big)
    n, n_int = e.round_to_int(y, e.f(fmt.log2e))
    r_hi = e.fma(n, e.f(-fmt.ln2[0]), y)
    r = e.fma(n, e.f(-fmt.ln2[1]), r_hi)
    u = e.mul(e.mul(r, r), e.poly(r, fmt.exp_q))
    scale = e.pow2(n_int)
    one, two = e.f(1.0), e.f(2.0)
    # t = expm1(2a) = (2^n - 1) + 2^n r + 2^n u = t_hi + t_lo (products exact,
    # |2^n - 1| >= |2^n r| unless both are 0, |t1| >= |2^n u|).
    t1, t1_err = e.fast_two_sum(e.sub(scale, one), e.mul(scale, r))
    t_hi, t2_err = e.fast_two_sum(t1, e.mul(scale, u))
    t_lo = e.add(t1_err, t2_err)
    # den = t + 2 = den_hi + den_lo
    den_hi, den_err = e.two_sum(t_hi, two)
    den_lo = e.add(den_err, t_lo)
    # q = t / den: q0 = t_hi * RN(1/den_hi), then one correction step with the
    # exact residual t_hi - q0 den_hi and the low parts.
    rcp = e.div(one, den_hi)
    q0 = e.mul(t_hi, rcp)
    resid = e.add(e.fma(e.neg(q0), den_hi, t_hi), t_lo)
    magnitude = e.fma(e.fma(e.neg(q0), den_lo, resid), rcp, q0)
    sign = e.iand(e.bits(x), e.i(fmt.sign_mask))
    return e.from_bits(e.ior(e.bits(magnitude), sign))


def _sin_cos(e: Emitter, x: Value, cos: bool) -> Value:
    fmt = e.fmt
    c_hi, c_lo = (e.f(c) for c in fmt.two_over_pi)
    # q = round(x * 2/pi): the shifter rounds x * c_hi; the rounding of the exact
    # x * 2/pi - q0 (|.| < 0.5 + |x c_lo|) fixes q0 by -1, 0 or +1.
    q0, q0_int = e.round_to_int(x, c_hi)
    frac = e.fma(x, c_lo, e.fma(x, c_hi, e.neg(q0)))
    q1, q1_int = e.round_to_int(frac, e.f(1.0))
    q = e.add(q0, q1)
    q_int = e.iadd(q0_int, q1_int)
    # r = x - q pi/2 = hi + lo.
    p1, p2, p3 = fmt.pio2
    r1 = e.fma(q, e.f(-p1), x)  # exact: P1 has the full precision, |r1| < 2
    t = e.mul_exact_round(q, e.f(p2))
    t_err = e.fma(q, e.f(p2), e.neg(t))  # q*P2 = t + t_err exactly
    # Exact although |r1| may be below |t|: r1 is a multiple of ulp(t).
    hi, s_err = e.fast_two_sum(r1, e.neg(t))
    lo = e.fma(q, e.f(-p3), e.sub(s_err, t_err))  # |lo| << |hi|, not normalized
    z = e.mul(hi, hi)
    # w = 1 - hi^2/2 rounded once, w_err its rounding error (1 - w is exact).
    minus_half_hi = e.mul(hi, e.f(-0.5))
    one = e.f(1.0)
    w = e.fma(minus_half_hi, hi, one)
    w_err = e.fma(minus_half_hi, hi, e.sub(one, w))
    # sin(hi + lo) = hi + hi z S(z) + lo (1 - z/2)
    sin_r = e.add(hi, e.fma(e.mul(hi, z), e.poly(z, fmt.sin_s), e.mul(lo, w)))
    # cos(hi + lo) = w + w_err + z^2 C(z) - hi lo
    lo_cos = e.fma(e.neg(hi), lo, w_err)
    cos_r = e.add(w, e.fma(e.mul(z, z), e.poly(z, fmt.cos_c), lo_cos))
    # Quadrant: cos(x) = sin(x + pi/2) is quadrant q + 1.
    odd = e.icmp("ne", e.iand(q_int, e.i(1)), e.i(0))
    if cos:
        value = e.select(odd, sin_r, cos_r)
        q_int = e.iadd(q_int, e.i(1))
    else:
        value = e.select(odd, cos_r, sin_r)
    sign = e.shl(e.iand(q_int, e.i(2)), fmt.bits - 2)
    result = e.from_bits(e.ixor(e.bits(value), sign))
    if not cos:
        result = e.select(e.cmp("oeq", x, e.f(0.0)), x, result)  # sin(-0) = -0
    in_range = e.cmp("ole", e.abs(x), e.f(fmt.trig_limit))  # false for inf and NaN
    return e.select(in_range, result, e.f(float("nan")))


def emit_sin(e: Emitter, x: Value) -> Value:
    return _sin_cos(e, x, cos=False)


def emit_cos(e: Emitter, x: Value) -> Value:
    return _sin_cos(e, x, cos=True)


EXPANSIONS: dict[type[Operation], Callable[[Emitter, Value], Value]] = {
    math.ExpOp: emit_exp,
    math.LogOp: emit_log,
    math.TanhOp: emit_tanh,
    math.SinOp: emit_sin,
    math.CosOp: emit_cos,
}
"""Math op class -> emitter; the float format comes from the op's result type."""


class ExpandMathPolynomial(RewritePattern):
    """Replace one expandable math op on a scalar f32/f64 by its expansion."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        emit = EXPANSIONS.get(type(op))
        if emit is None:
            return
        fmt = format_of(op.results[0].type)
        if fmt is None:
            return  # vectors, f16, ...: left for convert-math-to-llvm
        value = emit(Emitter(rewriter, fmt), op.operands[0])
        rewriter.replace(op, [], [value])


@dataclass(frozen=True)
class ExpandMathPolynomialsPass(ModulePass):
    """Expand scalar f32/f64 ``math.exp/log/tanh/sin/cos`` into arith + ``math.fma``."""

    name = "expand-math-polynomials"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ExpandMathPolynomial(), apply_recursively=False).rewrite_module(op)

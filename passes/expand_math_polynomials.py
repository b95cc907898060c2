"""``expand-math-polynomials``: exp, log, tanh, sin, cos as straight-line arithmetic.

Rewrites ``math.exp``, ``math.log``, ``math.tanh``, ``math.sin`` and ``math.cos`` on
scalar ``f32``/``f64`` into ``arith`` ops (float arithmetic, compares, selects,
bitcasts, integer ops on the bit patterns, constants) and ``math.fma``. No branch,
call, memory access or ``fptosi`` (poison on NaN) is emitted, so LLVM's loop
vectorizer turns a kernel loop into 512-bit SIMD code with no libm/libmvec call
left. Math ops on other types (vectors, f16, ...) and other math ops are left alone.
The compile path runs it right after ``tidu-lower-to-loops``.

Accuracy (max error in ulps of the correctly rounded result, f64 and f32 alike;
measured on 12M points per range against long double / f64 references, asserted
below 1 ulp by tests/mathpoly): exp 0.83, log 0.85, tanh 0.91, sin and cos 0.75 (for
every |x| up to the limit below). Edge values are exact: exp overflows to inf and
underflows through correctly rounded subnormals at the right thresholds, exp(+-inf)
= inf / 0, log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, tanh(+-inf) = +-1,
tanh(-0) = sin(-0) = -0, NaN in gives NaN out.

Common tricks (``Emitter`` in ``math_polynomials.py``):
  * rounding to an integer without ``fptosi``: ``k = fma(v, c, 1.5*2^52)``,
    ``n = k - 1.5*2^52``, integer ``n = bits(k) - bits(1.5*2^52)`` (f32: ``2^23``);
  * ``2^n`` by shifting ``n + bias`` into the exponent field;
  * error-free sums (Knuth's ``two_sum``, Dekker's ``fast_two_sum``) and products
    (``fma(a, b, -RN(a*b))``), so intermediate values are carried as ``hi + lo``
    where one float is not enough for a sub-ulp result;
  * polynomials by Horner's rule with ``math.fma``; coefficients fitted by
    tests/mathpoly/fit_coefficients.py (see ``math_polynomials``).
The lowering gives every ``arith`` float op the ``contract`` flag; the algorithms
stay correct whether LLVM fuses a multiply-add or not, and the one product that must
stay rounded is ``fma(a, b, -0.0)``.

Per function (constants and degrees per format in ``math_polynomials``):
  * exp: clamp x to [exp_lo, exp_hi] (f64 [-746, 710], f32 [-104, 89]) with ordered
    compares (NaN passes); n = round(x/ln2); r = x - n ln2_hi (exact) - n ln2_lo;
    exp(r) = s + (r^2 Q(r) + s_err) with s + s_err = 1 + r exactly; times
    2^(n>>1) * 2^(n - (n>>1)), so overflow to inf and correctly rounded subnormals
    need no special case. Q: degree 9 (f64), 4 (f32).
  * log: subnormals scaled by 2^(mant+2) (select); the bits give x = 2^k m with m in
    [sqrt2/2, sqrt2); f = m - 1, s = f/(2+f), z = s^2, R = z L(z) with 2 atanh(s) =
    2s + s R; log x = k ln2_hi + (f - (f^2/2 - (s (f^2/2 + R) + k ln2_lo))). Selects
    give log(0) = -inf, log(x<0) = log(NaN) = NaN, log(inf) = inf. L: degree 6 / 2.
  * tanh: a = |x| clamped to tanh_big (20 / 10; tanh rounds to 1 there, NaN passes);
    t = expm1(2a) = (2^n - 1) + 2^n r_hi + 2^n (r_lo + r^2 Q(r)) (exp's reduction and
    polynomial) as t + t_err; tanh a = t / (t + 2) with t + 2 as den + den_err, the
    quotient q0 = t * RN(1/den) corrected once by the exact residual t - q0 den: one
    division, no branch; the sign of x is OR-ed in (tanh(-0) = -0, tanh(-inf) = -1).
  * sin, cos: q = round(x 2/pi) by the shifter, corrected by the rounding of the
    exact x (2/pi)_hi - q0 + x (2/pi)_lo, so |r| <= pi/4 for every x; r = x - q pi/2
    with pi/2 in three pieces: x - q P1 is exact (fma), q P2 is subtracted
    error-free, giving r = hi + lo. sin(r) = hi + (hi z S(z) + lo w), cos(r) = w +
    (z^2 C(z) + w_err - hi lo), z = hi^2, w = RN(1 - hi^2/2), w_err its error.
    S, C: degree 5 / 2. Both are computed; q&1 selects one, (q&2) << (bits-2)
    XOR-ed into the bits flips the sign (cos uses q+1); sin(+-0) = +-0 by a select.
    Above |x| > trig_limit (f64 1.5*2^51 ~ 3.4e15, f32 1.5*2^22 = 6291456, just
    below where the shifter stops rounding) and for inf/NaN the result is NaN: a
    select, no slow path here; the LLVM backend calls the outlined functions through a
    guard that gives those arguments libm's value (``backend/trig_guard.py``).

Before::

    %e = math.exp %x : f64

After (abridged; 56 ops, 21 of them constants)::

    %0 = arith.constant 7.100000e+02 : f64
    %1 = arith.constant -7.460000e+02 : f64
    %2 = arith.cmpf ogt, %x, %0 : f64
    %3 = arith.select %2, %0, %x : f64
    %4 = arith.cmpf olt, %3, %1 : f64
    %5 = arith.select %4, %1, %3 : f64
    %6 = arith.constant 1.4426950408889634 : f64
    %7 = arith.constant 0x4338000000000000 : f64
    %8 = math.fma %5, %6, %7 : f64
    %9 = arith.subf %8, %7 : f64
    %10 = arith.bitcast %8 : f64 to i64
    %11 = arith.constant 4843621399236968448 : i64
    %12 = arith.subi %10, %11 : i64
    %13 = arith.constant -0.69314718055994529 : f64
    %14 = math.fma %9, %13, %5 : f64
    ...
    %40 = math.fma %38, %16, %39 : f64
    %41 = math.fma %21, %40, %20 : f64
    %42 = arith.addf %18, %41 : f64
    %43 = arith.constant 1 : i64
    %44 = arith.shrsi %12, %43 : i64
    %45 = arith.subi %12, %44 : i64
    ...
    %50 = arith.bitcast %49 : i64 to f64
    %51 = arith.mulf %42, %50 : f64
    ...
    %55 = arith.mulf %51, %54 : f64
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func, math, scf
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from .math_polynomials import Emitter, float_bits, format_of

Value = SSAValue


def _reduce_ln2(e: Emitter, x: Value) -> tuple[Value, Value, Value]:
    """``(n, r_hi, n_int)``: ``x = n ln2 + r``, ``r_hi = x - n*ln2_hi`` (exact).

    ``r = r_hi - n*ln2_lo``, |r| <= ln2/2 (+ a few ulps). Needs ``|x| < 2^(mant-1) ln2``.
    ``r_hi`` is exact: ``n*ln2_hi`` is exact inside the fma, x and n*ln2_hi are
    multiples of ulp(x)/2 and the difference is below 0.5.
    """
    n, n_int = e.round_to_int(x, e.f(e.fmt.log2e))
    return n, e.fma(n, e.f(-e.fmt.ln2[0]), x), n_int


def emit_exp(e: Emitter, x: Value) -> Value:
    fmt = e.fmt
    hi, lo = e.f(fmt.exp_hi), e.f(fmt.exp_lo)
    x = e.select(e.cmp("ogt", x, hi), hi, x)  # ordered: NaN is kept
    x = e.select(e.cmp("olt", x, lo), lo, x)
    n, r_hi, n_int = _reduce_ln2(e, x)
    r = e.fma(n, e.f(-fmt.ln2[1]), r_hi)
    s, s_err = e.fast_two_sum(e.f(1.0), r)  # 1 + r = s + s_err exactly
    p = e.add(s, e.fma(e.mul(r, r), e.poly(r, fmt.exp_q), s_err))
    n1 = e.ashr(n_int, 1)
    n2 = e.isub(n_int, n1)
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
    hx = e.iadd(e.bits(xs), e.i(float_bits(1.0, fmt) - fmt.sqrt_half_bits))
    k = e.iadd(e.isub(e.ashr(hx, fmt.mant), e.i(fmt.bias)), k_adj)
    m = e.from_bits(e.iadd(e.iand(hx, e.i(fmt.mant_mask)), e.i(fmt.sqrt_half_bits)))
    f = e.sub(m, e.f(1.0))  # exact
    # k as a float without sitofp: bits(shifter) + k are the bits of shifter + k.
    shifter = e.f(fmt.shifter)
    dk = e.sub(e.from_bits(e.iadd(k, e.i(float_bits(fmt.shifter, fmt)))), shifter)
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
    y = e.add(a_big := e.select(e.cmp("ogt", a, big), big, a), a_big)  # NaN is kept
    n, r_hi, n_int = _reduce_ln2(e, y)
    r_lo = e.mul(n, e.f(-fmt.ln2[1]))
    r = e.add(r_hi, r_lo)
    u = e.mul(e.mul(r, r), e.poly(r, fmt.exp_q))  # expm1(r) ~ r + u
    scale = e.pow2(n_int)
    one, two = e.f(1.0), e.f(2.0)
    # t = expm1(2a) = (2^n - 1) + 2^n r_hi + 2^n (r_lo + u) = t + t_err: the products
    # by 2^n are exact; |2^n - 1| >= |2^n r_hi| unless n = 0, where 2^n - 1 = 0.
    t1, t1_err = e.fast_two_sum(e.sub(scale, one), e.mul(scale, r_hi))
    t, t_err = e.fast_two_sum(t1, e.fma(scale, e.add(u, r_lo), t1_err))
    # tanh(a) = t / (t + 2), t + 2 = den + den_err.
    den, den_err = e.two_sum(t, two)
    den_err = e.add(den_err, t_err)
    # q0 = t RN(1/den), corrected once with the exact residual t - q0 den.
    rcp = e.div(one, den)
    q0 = e.mul(t, rcp)
    resid = e.fma(e.neg(q0), den_err, e.add(e.fma(e.neg(q0), den, t), t_err))
    magnitude = e.fma(resid, rcp, q0)
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
    # r = x - q pi/2 = hi + lo, pi/2 = P1 + P2 + P3.
    p1, p2, p3 = fmt.pio2
    r1 = e.fma(q, e.f(-p1), x)  # exact: multiples of ulp(x)/2 or 2^-52, |r1| < 2
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
    """Replace one expandable math op on a scalar f32/f64 by its expansion.

    Constants go to the start of the op's block, shared by every expansion there.
    """

    def __init__(self, only_in_loops: bool = False) -> None:
        self.only_in_loops = only_in_loops
        # id(block) -> (block, format width) -> constants; the block is kept alive.
        self._consts: dict[tuple[int, int], tuple[Block, dict[tuple[str, object], Value]]] = {}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        emit = EXPANSIONS.get(type(op))
        if emit is None:
            return
        if self.only_in_loops and not isinstance(op.parent_op(), scf.ForOp):
            return  # straight-line code does not vectorize: the libm call is smaller
        fmt = format_of(op.results[0].type)
        block = op.parent_block()
        if fmt is None or block is None:
            return  # vectors, f16, ...: left for convert-math-to-llvm
        _, consts = self._consts.setdefault((id(block), fmt.bits), (block, {}))
        emitter = Emitter(rewriter, fmt, consts, InsertPoint.at_start(block))
        rewriter.replace(op, [], [emit(emitter, op.operands[0])])


MATH_FUNCTION_PREFIX = "tidu_math_"
"""Functions made by ``outline``: ``@tidu_math_<function>_<type>`` (``tidu_math_exp_f64``);
the LLVM backend gives them ``alwaysinline``."""

MATH_FUNCTION_ATTR = "tidu.math"
"""Unit attribute on the functions made by ``outline``."""


def math_function(kind: type[Operation], value_type: Attribute) -> func.FuncOp:
    """``func.func private @tidu_math_<fn>_<type>(%x) -> T``: the expansion of ``kind``
    on one ``value_type`` scalar, for ``outline``::

        func.func private @tidu_math_exp_f64(%x: f64) -> f64 attributes {tidu.math} {
          %0 = arith.constant 7.100000e+02 : f64
          ... (the expansion above)
          func.return %55 : f64
        }
    """
    fmt = format_of(value_type)
    assert fmt is not None
    block = Block(arg_types=[value_type])
    block.args[0].name_hint = "x"
    builder = Builder(InsertPoint.at_end(block))
    result = EXPANSIONS[kind](Emitter(builder, fmt), block.args[0])
    builder.insert(func.ReturnOp(result))
    name = f"{MATH_FUNCTION_PREFIX}{kind.name.removeprefix('math.')}_{value_type}"
    function = func.FuncOp(name, ([value_type], [value_type]), Region(block), "private")
    function.attributes[MATH_FUNCTION_ATTR] = UnitAttr()
    return function


def _outline(module: ModuleOp, only_in_loops: bool) -> None:
    """Replace every expandable math op by a ``func.call`` of its ``math_function``,
    added to ``module`` once per function and type."""
    made: dict[tuple[type[Operation], Attribute], func.FuncOp] = {}
    for op in list(module.walk()):
        if type(op) not in EXPANSIONS or format_of(op.results[0].type) is None:
            continue
        if only_in_loops and not isinstance(op.parent_op(), scf.ForOp):
            continue
        key = (type(op), op.results[0].type)
        if key not in made:
            made[key] = math_function(*key)
        call = func.CallOp(made[key].sym_name.data, [op.operands[0]], [op.results[0].type])
        Rewriter.replace_op(op, call)
    for function in made.values():
        module.body.block.add_op(function)


@dataclass(frozen=True)
class ExpandMathPolynomialsPass(ModulePass):
    """Expand scalar f32/f64 ``math.exp/log/tanh/sin/cos`` into arith + ``math.fma``."""

    name = "expand-math-polynomials"

    only_in_loops: bool = False
    """Expand only ops directly inside an ``scf.for`` body (where LLVM vectorizes the
    expansion); a 0-d kernel's math stays a libm call, which compiles much faster."""

    outline: bool = False
    """Expand each function once per type, as ``@tidu_math_<fn>_<type>``
    (``math_function``), and call it: the module then holds one expansion per function
    and type however many calls there are (a 200-op chain has 100 ``tanh``), which the
    LLVM backend inlines (``alwaysinline``) before vectorizing."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.outline:
            _outline(op, self.only_in_loops)
            return
        pattern = ExpandMathPolynomial(self.only_in_loops)
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)

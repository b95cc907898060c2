"""Constants and an op emitter for ``expand-math-polynomials``.

``FloatFormat`` holds, per float type (``F64``, ``F32``), every constant the
expansions use: polynomial coefficients, split constants (ln 2, pi/2, 2/pi as sums
of format-precision pieces), clamps and bit-pattern constants. ``Emitter`` inserts
``arith``/``math`` ops through an xDSL ``Builder`` and caches constants, so an
expansion reads like the formula it computes.

Where the numbers come from (all reproducible with
``.venv/bin/python tests/mathpoly/fit_coefficients.py``):

* polynomial coefficients: near-minimax fits in mpmath at 256 bits (Lawson's
  iteratively reweighted least squares on Chebyshev-distributed points, weighted so
  the error is the relative error of the final result), then rounded to the format
  one coefficient at a time, lowest degree first, refitting the others each time;
* split constants: ``c0 = RN(c)``, ``c1 = RN(c - c0)``, ... computed in mpmath;
* thresholds: see the comment at each one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint


def _hex(*values: str) -> tuple[float, ...]:
    return tuple(float.fromhex(v) for v in values)


# ---------------------------------------------------------------- coefficients
# Printed by tests/mathpoly/fit_coefficients.py, lowest degree first. The "error" is
# the polynomial's maximum error as a relative error of the final result, in units
# of the format's epsilon (2^-52, 2^-23), after rounding the coefficients.
# exp(r) = 1 + r + r^2 Q(r), |r| <= ln2/2 (error f64 0.017, f32 0.026)
EXP_F64 = _hex('0x1.000000000000ap-1', '0x1.555555555550cp-3', '0x1.55555555507a8p-5', '0x1.1111111124811p-7', '0x1.6c16c18436f42p-10', '0x1.a01a01379ccf0p-13', '0x1.a0199a1197d9bp-16', '0x1.71df0ded19049p-19', '0x1.28ad5bd2b9fbfp-22', '0x1.ad9d8fd319668p-26')  # noqa: E501
EXP_F32 = _hex('0x1.fffffc0000000p-2', '0x1.5554920000000p-3', '0x1.5558ae0000000p-5', '0x1.1239800000000p-7', '0x1.6a4f720000000p-10')  # noqa: E501
# log(1+f) = 2s + s z L(z), s = f/(2+f), z = s^2 <= 0.0295 (error f64 0.0056, f32 0.0068)
LOG_F64 = _hex('0x1.5555555555592p-1', '0x1.999999997fefap-2', '0x1.24924941e44ecp-2', '0x1.c71c521113c75p-3', '0x1.74663dbc5684bp-3', '0x1.39a1d0a8fa8dap-3', '0x1.2f04cb0b02330p-3')  # noqa: E501
LOG_F32 = _hex('0x1.55557a0000000p-1', '0x1.995ed40000000p-2', '0x1.31e0da0000000p-2')
# sin(r) = r + r z S(z), cos(r) = 1 - z/2 + z^2 C(z), z = r^2 <= (pi/4)^2
# (error: sin f64 0.017, f32 0.033; cos f64 0.0003, f32 0.001)
SIN_F64 = _hex('-0x1.5555555555548p-3', '0x1.111111110f742p-7', '-0x1.a01a019becdb6p-13', '0x1.71de355954cb5p-19', '-0x1.ae5e4f5708b17p-26', '0x1.5d8c939e168d8p-33')  # noqa: E501
SIN_F32 = _hex('-0x1.5555460000000p-3', '0x1.1107780000000p-7', '-0x1.9954000000000p-13')
COS_F64 = _hex('0x1.555555555554bp-5', '-0x1.6c16c16c15014p-10', '0x1.a01a019c8ef82p-16', '-0x1.27e4f7f16493cp-22', '0x1.1ee9dba98f676p-29', '-0x1.8fa66df872492p-37')  # noqa: E501
COS_F32 = _hex('0x1.55554a0000000p-5', '-0x1.6c0c2a0000000p-10', '0x1.99e90e0000000p-16')

# ---------------------------------------------------------------- split constants
# c = c0 + c1 + c2 with c0 = RN(c), c1 = RN(c - c0), c2 = RN(c - c0 - c1) (mpmath).
LN2_F64 = _hex('0x1.62e42fefa39efp-1', '0x1.abc9e3b39803fp-56')
LN2_F32 = _hex('0x1.62e4300000000p-1', '-0x1.05c6100000000p-29')
PIO2_F64 = _hex('0x1.921fb54442d18p+0', '0x1.1a62633145c07p-54', '-0x1.f1976b7ed8fbcp-110')
PIO2_F32 = _hex('0x1.921fb60000000p+0', '-0x1.777a5c0000000p-25', '-0x1.ee59da0000000p-50')
TWO_OVER_PI_F64 = _hex('0x1.45f306dc9c883p-1', '-0x1.6b01ec5417056p-55')
TWO_OVER_PI_F32 = _hex('0x1.45f3060000000p-1', '0x1.b939100000000p-26')
LOG2E_F64 = float.fromhex('0x1.71547652b82fep+0')
LOG2E_F32 = float.fromhex('0x1.7154760000000p+0')


@dataclass(frozen=True)
class FloatFormat:
    """One float type and the constants of its expansions."""

    float_type: AnyFloat
    int_type: IntegerType
    bits: int  # 64 / 32
    mant: int  # explicit mantissa bits: 52 / 23
    bias: int  # 1023 / 127
    exp_q: tuple[float, ...]
    log_l: tuple[float, ...]
    sin_s: tuple[float, ...]
    cos_c: tuple[float, ...]
    ln2: tuple[float, ...]
    pio2: tuple[float, ...]
    two_over_pi: tuple[float, ...]
    log2e: float
    exp_hi: float  # exp(exp_hi) overflows (2^n * p with n = max exponent + 1)
    exp_lo: float  # exp(exp_lo) rounds to +0, and 2^(n/2) stays normal
    sqrt_half_bits: int  # bits of RN(sqrt(2)/2): log's mantissa lands in [sqrt2/2, sqrt2)
    tanh_big: float  # tanh(x) rounds to 1 for x >= tanh_big
    trig_limit: float  # sin/cos are NaN above: the shifter rounding needs |x 2/pi| < 2^(mant-1)

    @property
    def shifter(self) -> float:
        """``1.5 * 2^mant``: ``(v + shifter) - shifter`` rounds |v| < 2^(mant-1) to an integer."""
        return 1.5 * 2.0**self.mant

    @property
    def sign_mask(self) -> int:
        return -(1 << (self.bits - 1))  # the sign bit, as a signed integer

    @property
    def mant_mask(self) -> int:
        return (1 << self.mant) - 1

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)


F64 = FloatFormat(
    float_type=f64, int_type=i64, bits=64, mant=52, bias=1023,
    exp_q=EXP_F64, log_l=LOG_F64, sin_s=SIN_F64, cos_c=COS_F64,
    ln2=LN2_F64, pio2=PIO2_F64, two_over_pi=TWO_OVER_PI_F64, log2e=LOG2E_F64,
    # exp(710) > 2^1024; e^-746 < 2^-1075 (half the least subnormal) rounds to 0.
    exp_hi=710.0, exp_lo=-746.0,
    sqrt_half_bits=0x3FE6A09E667F3BCD,
    # 1 - tanh(20) = 2e^-40 ~ 8.5e-18 < 2^-54: tanh(20) rounds to 1.
    tanh_big=20.0,
    trig_limit=1.5 * 2.0**51,  # ~3.4e15 < 2^51 pi/2
)

F32 = FloatFormat(
    float_type=f32, int_type=i32, bits=32, mant=23, bias=127,
    exp_q=EXP_F32, log_l=LOG_F32, sin_s=SIN_F32, cos_c=COS_F32,
    ln2=LN2_F32, pio2=PIO2_F32, two_over_pi=TWO_OVER_PI_F32, log2e=LOG2E_F32,
    # exp(89) > 2^128; e^-104 ~ 6.8e-46 < 2^-150 rounds to 0.
    exp_hi=89.0, exp_lo=-104.0,
    sqrt_half_bits=0x3F3504F3,
    # 1 - tanh(10) = 2e^-20 ~ 4.1e-9 < 2^-25.
    tanh_big=10.0,
    trig_limit=1.5 * 2.0**22,  # 6291456 < 2^22 pi/2
)

FORMATS: dict[type[AnyFloat], FloatFormat] = {Float64Type: F64, Float32Type: F32}
"""The float types the pass expands; anything else (f16, vectors) is left alone."""


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class Emitter:
    """Insert ``arith``/``math`` scalar ops of one float format through a ``Builder``.

    Float ops take and return values of ``fmt.float_type``; integer ops work on the
    same-width integer (``fmt.int_type``) holding bit patterns. Constants are created
    once per ``consts`` dict; with ``const_point`` (e.g. the start of the block) they
    are inserted there, so several expansions in one block can share them.
    """

    def __init__(self, builder: Builder, fmt: FloatFormat,
                 consts: dict[tuple[str, object], SSAValue] | None = None,
                 const_point: InsertPoint | None = None) -> None:
        self.builder = builder
        self.fmt = fmt
        self._consts = {} if consts is None else consts
        self._const_point = const_point

    def _op(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    def _const(self, op: arith.ConstantOp) -> SSAValue:
        self.builder.insert(op, self._const_point)
        return op.result

    # constants
    def f(self, value: float) -> SSAValue:
        key = ("f", float(value).hex())
        if key not in self._consts:
            attr = FloatAttr(value, self.fmt.float_type)
            self._consts[key] = self._const(arith.ConstantOp(attr, self.fmt.float_type))
        return self._consts[key]

    def i(self, value: int) -> SSAValue:
        value = _signed(value, self.fmt.bits)
        key = ("i", value)
        if key not in self._consts:
            attr = IntegerAttr(value, self.fmt.int_type)
            self._consts[key] = self._const(arith.ConstantOp(attr, self.fmt.int_type))
        return self._consts[key]

    # float arithmetic
    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.AddfOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.SubfOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.MulfOp(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.DivfOp(a, b))

    def neg(self, a: SSAValue) -> SSAValue:
        return self._op(arith.NegfOp(a))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """``a * b + c`` with one rounding (``math.fma`` -> ``llvm.fma``)."""
        return self._op(math.FmaOp(a, b, c))

    def mul_exact_round(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """``RN(a * b)`` that LLVM will not contract into a neighbouring add.

        The lowering gives every ``arith.mulf`` the ``contract`` flag; error-free
        transformations (``p = RN(a*b)``, ``e = fma(a, b, -p)``) need ``p`` itself,
        so it is ``fma(a, b, -0.0)`` (which LLVM folds to a flagless ``fmul``).
        """
        return self.fma(a, b, self.f(-0.0))

    def poly(self, x: SSAValue, coeffs: tuple[float, ...]) -> SSAValue:
        """``c0 + c1 x + ... + cn x^n`` by Horner's rule with fused multiply-adds."""
        acc = self.f(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.f(c))
        return acc

    # comparisons and selection
    def cmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.CmpfOp(a, b, predicate))

    def icmp(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.CmpiOp(a, b, predicate))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        assert cond.type == i1
        return self._op(arith.SelectOp(cond, a, b))

    # bit patterns
    def bits(self, x: SSAValue) -> SSAValue:
        return self._op(arith.BitcastOp(x, self.fmt.int_type))

    def from_bits(self, n: SSAValue) -> SSAValue:
        return self._op(arith.BitcastOp(n, self.fmt.float_type))

    def iadd(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.AddiOp(a, b))

    def isub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.SubiOp(a, b))

    def iand(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.AndIOp(a, b))

    def ior(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.OrIOp(a, b))

    def ixor(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._op(arith.XOrIOp(a, b))

    def shl(self, a: SSAValue, amount: int) -> SSAValue:
        return self._op(arith.ShLIOp(a, self.i(amount)))

    def ashr(self, a: SSAValue, amount: int) -> SSAValue:
        return self._op(arith.ShRSIOp(a, self.i(amount)))

    # helpers built from the above
    def abs(self, x: SSAValue) -> SSAValue:
        return self.from_bits(self.iand(self.bits(x), self.i(~self.fmt.sign_mask)))

    def pow2(self, n: SSAValue) -> SSAValue:
        """``2^n`` for an integer ``n`` in the normal exponent range."""
        biased = self.iadd(n, self.i(self.fmt.bias))
        return self.from_bits(self.shl(biased, self.fmt.mant))

    def round_to_int(self, v: SSAValue, scale: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``n = round(v * scale)`` as a float and as an integer, without ``fptosi``.

        ``k = fma(v, scale, shifter)`` lands in ``[2^mant, 2^(mant+1))`` whose ulp is
        1, so the addition rounds; its low mantissa bits are ``n`` (two's
        complement). Valid while ``|v * scale| < 2^(mant-1)``.
        """
        shifter = self.f(self.fmt.shifter)
        k = self.fma(v, scale, shifter)
        n = self.sub(k, shifter)
        n_int = self.isub(self.bits(k), self.i(float_bits(self.fmt.shifter, self.fmt)))
        return n, n_int

    def two_sum(self, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(s, e)`` with ``s = RN(a + b)`` and ``s + e = a + b`` exactly (Knuth)."""
        s = self.add(a, b)
        bb = self.sub(s, a)
        e = self.add(self.sub(a, self.sub(s, bb)), self.sub(b, bb))
        return s, e

    def fast_two_sum(self, a: SSAValue, b: SSAValue) -> tuple[SSAValue, SSAValue]:
        """``(s, e)`` as ``two_sum``, for ``|a| >= |b|`` (Dekker)."""
        s = self.add(a, b)
        return s, self.add(self.sub(a, s), b)


def float_bits(value: float, fmt: FloatFormat) -> int:
    """The bit pattern of ``value`` in ``fmt``, as a signed integer."""
    if fmt.bits == 64:
        return int.from_bytes(struct.pack("<d", value), "little", signed=True)
    return int.from_bytes(struct.pack("<f", value), "little", signed=True)


def format_of(type_: object) -> FloatFormat | None:
    """The ``FloatFormat`` of a scalar f32/f64 type, else ``None``."""
    return FORMATS.get(type(type_))  # type: ignore[arg-type]


__all__ = ["F32", "F64", "FORMATS", "Emitter", "FloatFormat", "float_bits", "format_of"]

"""Lowering rows of integer and bool scalars in a kernel body: ``INTEGER_LOWERINGS``.

``tidu_scalar_lowering`` takes a row from ``INTEGER_LOWERINGS`` when the op's key
operand is an integer (i8, i16, i32, i64: numpy's signed integers, so signed arith ops)
and from ``BOOL_LOWERINGS`` when it is i1 (numpy's bool); an op without a row there does
not fuse, and runs as a numpy library call. Every result
is numpy's, bit for bit: integer arithmetic wraps (two's complement), nothing passes
through floating point.

============  ====================================  ==============================
op            integers                              i1
============  ====================================  ==============================
add, sub      ``addi``, ``subi``                    ``ori`` (numpy's bool ``+``)
mul           ``muli``                              ``andi``
neg           ``0 - x``                             (numpy has none)
maximum       ``maxsi`` (also fmax)                 ``ori``
minimum       ``minsi`` (also fmin)                 ``andi``
abs           ``x < 0 ? 0 - x : x`` (INT_MIN stays)  ``x``
sign          -1, 0, 1 by selects                   (numpy has none)
floor, ceil,  ``x``                                 ``x``
trunc
compare       ``cmpi`` slt, sle, sgt, sge, eq, ne   ult, ule, ugt, uge, eq, ne
floor_divide  ``q = divsi(x, d)``, ``d = y`` unless y is 0 or -1 (then 1: no trap);
              ``q - 1`` where the remainder is nonzero and its sign is not y's;
              ``0 - x`` where y = -1 (INT_MIN // -1 wraps to INT_MIN), 0 where y = 0
mod           ``r = remsi(x, d)``; ``r + y`` where r is nonzero and its sign is not
              y's; 0 where y is 0 or -1 (numpy's ``x % 0 == 0``)
pow           square-and-multiply with ``muli`` (a non-negative integer exponent)
============  ====================================  ==============================

    %q = tidu.floor_divide %x, %y : i64   ->   %d = arith.select %bad, %c1, %y : i64
                                               %q0 = arith.divsi %x, %d : i64  ...
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidu_compile.dialects import tidu_elementwise as ew
from xdsl.dialects import arith
from xdsl.dialects.builtin import i1
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_compile import ops
from tidu_compile.ops import TensorOp

from .scalar_emit import Emit, constant

ScalarLowering = Callable[[Operation, Sequence[SSAValue], Emit], Sequence[SSAValue]]

SIGNED_PREDICATES = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
"""tidu.compare direction -> arith.cmpi predicate on integers."""

BOOL_PREDICATES = {"lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge", "eq": "eq", "ne": "ne"}
"""tidu.compare direction -> arith.cmpi predicate on i1 (False < True)."""


class Integers:
    """Emit ``arith`` ops on scalars of one integer type (as ``scalar_emit.Scalars``)."""

    def __init__(self, emit: Emit, integer_type: Attribute) -> None:
        self.emit = emit
        self.type = integer_type

    def _one(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    def const(self, value: int) -> SSAValue:
        return constant(self.emit, value, self.type)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._one(arith.SubiOp(a, b))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._one(arith.AddiOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._one(arith.MuliOp(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """C's quotient, towards zero (``b`` must not be 0, nor -1 with ``a`` INT_MIN)."""
        return self._one(arith.DivSIOp(a, b))

    def rem(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """C's remainder, the sign of ``a`` (the same conditions on ``b``)."""
        return self._one(arith.RemSIOp(a, b))

    def cmp(self, a: SSAValue, predicate: str, b: SSAValue) -> SSAValue:
        return self._one(arith.CmpiOp(a, b, predicate))

    def select(self, condition: SSAValue, then: SSAValue, otherwise: SSAValue) -> SSAValue:
        return self._one(arith.SelectOp(condition, then, otherwise))

    def both(self, p: SSAValue, q: SSAValue) -> SSAValue:
        return self._one(arith.AndIOp(p, q))

    def either(self, p: SSAValue, q: SSAValue) -> SSAValue:
        return self._one(arith.OrIOp(p, q))

    def differ(self, p: SSAValue, q: SSAValue) -> SSAValue:
        return self._one(arith.XOrIOp(p, q))


def _safe_divisor(f: Integers, y: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
    """``(d, y == 0, y == -1)``: ``d`` is ``y``, or 1 where ``y`` is 0 or -1 (``divsi``
    and ``remsi`` trap or are undefined there)."""
    zero, minus_one = f.const(0), f.const(-1)
    is_zero, is_minus_one = f.cmp(y, "eq", zero), f.cmp(y, "eq", minus_one)
    return f.select(f.either(is_zero, is_minus_one), f.const(1), y), is_zero, is_minus_one


def _off_sign(f: Integers, r: SSAValue, y: SSAValue) -> SSAValue:
    """``r != 0`` and the sign of ``r`` is not the sign of ``y``: the C remainder must
    move to numpy's (the sign of the divisor)."""
    zero = f.const(0)
    other_sign = f.differ(f.cmp(r, "slt", zero), f.cmp(y, "slt", zero))
    return f.both(f.cmp(r, "ne", zero), other_sign)


def floor_divide_of(f: Integers, x: SSAValue, y: SSAValue) -> SSAValue:
    d, is_zero, is_minus_one = _safe_divisor(f, y)
    q = f.div(x, d)
    r = f.sub(x, f.mul(q, d))
    q = f.select(_off_sign(f, r, y), f.sub(q, f.const(1)), q)
    q = f.select(is_minus_one, f.sub(f.const(0), x), q)
    return f.select(is_zero, f.const(0), q)


def mod_of(f: Integers, x: SSAValue, y: SSAValue) -> SSAValue:
    d, is_zero, is_minus_one = _safe_divisor(f, y)
    r = f.rem(x, d)
    r = f.select(_off_sign(f, r, y), f.add(r, y), r)
    return f.select(f.either(is_zero, is_minus_one), f.const(0), r)


def power_of(f: Integers, x: SSAValue, n: int) -> SSAValue:
    """``x ** n`` for ``n >= 0`` by square-and-multiply (wrapping, as numpy's loop)."""
    result = f.const(1)
    square = x
    while n:
        if n & 1:
            result = f.mul(result, square)
        n >>= 1
        if n:
            square = f.mul(square, square)
    return result


def sign_of(f: Integers, x: SSAValue) -> SSAValue:
    zero = f.const(0)
    negative = f.select(f.cmp(x, "slt", zero), f.const(-1), zero)
    return f.select(f.cmp(x, "sgt", zero), f.const(1), negative)


def abs_of(f: Integers, x: SSAValue) -> SSAValue:
    return f.select(f.cmp(x, "slt", f.const(0)), f.sub(f.const(0), x), x)


def _row(build: Callable[..., SSAValue]) -> ScalarLowering:
    """The row of ``build(f, *args)`` on the integer type of the operands."""
    return lambda op, args, emit: [build(Integers(emit, args[0].type), *args)]


def _binary(op_class: type[Operation]) -> ScalarLowering:
    """One ``arith`` op of the operands' type (``addi``, ``maxsi``, ``ori``...)."""
    return lambda op, args, emit: emit(op_class.create(
        operands=list(args), result_types=[args[0].type])).results


def _compare(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, ew.CompareOp)
    table = BOOL_PREDICATES if args[0].type == i1 else SIGNED_PREDICATES
    return emit(arith.CmpiOp(args[0], args[1], table[op.direction.data])).results


def _pow(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, ew.PowOp)
    return [power_of(Integers(emit, args[0].type), args[0], int(op.parameter))]


def _identity(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    return [args[0]]


INTEGER_LOWERINGS: dict[type[TensorOp], ScalarLowering] = {
    ops.Add: _binary(arith.AddiOp),
    ops.Sub: _binary(arith.SubiOp),
    ops.Mul: _binary(arith.MuliOp),
    ops.Neg: _row(lambda f, x: f.sub(f.const(0), x)),
    ops.Maximum: _binary(arith.MaxSIOp),
    ops.Minimum: _binary(arith.MinSIOp),
    ops.Fmax: _binary(arith.MaxSIOp),
    ops.Fmin: _binary(arith.MinSIOp),
    ops.Abs: _row(abs_of),
    ops.Sign: _row(sign_of),
    ops.Floor: _identity,
    ops.Ceil: _identity,
    ops.Trunc: _identity,
    ops.FloorDivide: _row(floor_divide_of),
    ops.Mod: _row(mod_of),
    ops.Compare: _compare,
    ops.Pow: _pow,
}
"""Primitive class -> builder of its arith equivalent on integer scalars."""

BOOL_LOWERINGS: dict[type[TensorOp], ScalarLowering] = {
    ops.Add: _binary(arith.OrIOp),
    ops.Mul: _binary(arith.AndIOp),
    ops.Maximum: _binary(arith.OrIOp),
    ops.Minimum: _binary(arith.AndIOp),
    ops.Fmax: _binary(arith.OrIOp),
    ops.Fmin: _binary(arith.AndIOp),
    ops.Abs: _identity,
    ops.Floor: _identity,
    ops.Ceil: _identity,
    ops.Trunc: _identity,
    ops.Compare: _compare,
}
"""Primitive class -> builder of its arith equivalent on i1 scalars (numpy's bool
loops). The ops of every element type (select, convert, full_like, constant) share
their rows with the real ones (``tidu_scalar_lowering.TYPE_GENERIC``)."""


__all__ = [
    "BOOL_LOWERINGS",
    "BOOL_PREDICATES",
    "INTEGER_LOWERINGS",
    "SIGNED_PREDICATES",
    "Integers",
    "abs_of",
    "floor_divide_of",
    "mod_of",
    "power_of",
    "sign_of",
]

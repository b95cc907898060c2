"""Building blocks of the scalar lowering rows (``tidu_scalar_lowering``,
``tidu_math_lowering``, ``tidu_complex_lowering``).

A row receives an ``emit`` callback that inserts one op at the current position of a
kernel's loop body and returns it. ``Scalars`` wraps it for one float type, one
method per op, so a formula reads as one::

    f = Scalars(emit, x.type)
    y = f.mul(f.const(0.5), f.add(u, f.div(f.const(1.0), u)))   # (u + 1/u) / 2

emits ``arith.constant``, ``arith.divf``, ``arith.addf``, ``arith.mulf`` and returns
the value of the last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

Emit = Callable[[Operation], Operation]
"""Insert an op at the current position of the loop body and return it."""


def constant(emit: Emit, value: float | int, type_: Attribute) -> SSAValue:
    """An ``arith.constant`` of a float, integer or i1 type (an integer ``value`` is
    exact: pass ``int`` values beyond 2**53)."""
    if isinstance(type_, IntegerType):
        return emit(arith.ConstantOp(IntegerAttr(int(value), type_))).results[0]
    assert isinstance(type_, AnyFloat)
    return emit(arith.ConstantOp(FloatAttr(value, type_))).results[0]


def select_if(
    emit: Emit, a: SSAValue, predicate: str, b: SSAValue, then: SSAValue, otherwise: SSAValue
) -> SSAValue:
    """``then if a <predicate> b else otherwise`` (an ``arith.cmpf`` and a select)."""
    condition = emit(arith.CmpfOp(a, b, predicate)).results[0]
    return emit(arith.SelectOp(condition, then, otherwise)).results[0]


@dataclass(frozen=True)
class Scalars:
    """Emit ``arith``/``math`` ops on scalars of the float type ``float_type``."""

    emit: Emit
    float_type: Attribute

    def _one(self, op: Operation) -> SSAValue:
        return self.emit(op).results[0]

    @property
    def bits(self) -> int:
        assert isinstance(self.float_type, AnyFloat)
        return self.float_type.bitwidth

    def const(self, value: float) -> SSAValue:
        return constant(self.emit, value, self.float_type)

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._one(arith.AddfOp(a, b))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._one(arith.SubfOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._one(arith.MulfOp(a, b))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._one(arith.DivfOp(a, b))

    def neg(self, a: SSAValue) -> SSAValue:
        return self._one(arith.NegfOp(a))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """``a * b + c`` rounded once."""
        return self._one(math.FmaOp(a, b, c))

    def rounded_mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """``a * b`` that stays rounded: ``fma(a, b, -0.0)``. The lowering marks
        ``arith.mulf`` ``contract``, which lets LLVM fuse it into a later add unrounded;
        an error-free product ``fma(a, b, -p)`` needs the rounded ``p``."""
        return self.fma(a, b, self.const(-0.0))

    def maximum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """NaN-propagating maximum."""
        return self._one(arith.MaximumfOp(a, b))

    def minimum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """NaN-propagating minimum."""
        return self._one(arith.MinimumfOp(a, b))

    def math(self, op_class: type[Operation], *args: SSAValue) -> SSAValue:
        """A ``math`` op of the same type as its operands (``math.exp``, ``math.atan2``)."""
        return self._one(op_class.create(operands=list(args), result_types=[self.float_type]))

    def exp(self, a: SSAValue) -> SSAValue:
        return self._one(math.ExpOp(a))

    def log(self, a: SSAValue) -> SSAValue:
        return self._one(math.LogOp(a))

    def sqrt(self, a: SSAValue) -> SSAValue:
        return self._one(math.SqrtOp(a))

    def abs(self, a: SSAValue) -> SSAValue:
        return self._one(math.AbsFOp(a))

    def copysign(self, magnitude: SSAValue, sign: SSAValue) -> SSAValue:
        return self._one(math.CopySignOp(magnitude, sign))

    def cmp(self, a: SSAValue, predicate: str, b: SSAValue) -> SSAValue:
        """``a <predicate> b`` as i1 (``arith.cmpf``: ``olt``, ``oeq``, ``une``, ``uno``...)."""
        return self._one(arith.CmpfOp(a, b, predicate))

    def select(self, condition: SSAValue, then: SSAValue, otherwise: SSAValue) -> SSAValue:
        return self._one(arith.SelectOp(condition, then, otherwise))

    def where(
        self, a: SSAValue, predicate: str, b: SSAValue, then: SSAValue, otherwise: SSAValue
    ) -> SSAValue:
        """``then if a <predicate> b else otherwise``."""
        return select_if(self.emit, a, predicate, b, then, otherwise)

    def both(self, p: SSAValue, q: SSAValue) -> SSAValue:
        """``p and q`` of two i1 values."""
        return self._one(arith.AndIOp(p, q))

    def differ(self, p: SSAValue, q: SSAValue) -> SSAValue:
        """``p != q`` of two i1 values."""
        return self._one(arith.XOrIOp(p, q))


__all__ = ["Emit", "Scalars", "constant", "select_if"]

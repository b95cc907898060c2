"""The scalar half of ``tidu-lower-to-loops``: one table from tidu op to arith/math.

Inside a ``tidu.kernel`` body the tidu ops compute on element scalars (f32, f64,
i1, i8..i64). ``SCALAR_LOWERINGS`` maps each primitive class (the op table's key, see
``tidu_compile.ops``) to a builder that receives the dialect op, its operands already
lowered, and an ``emit`` callback that inserts one standard op at the current position
and returns it; the builder returns the lowered results. This row is all the compiler
needs of a new elementwise op: ``tidu-fuse-elementwise`` admits exactly the ops with a
row for their types (``is_fusible``); ``tidu-lower-to-loops`` raises ``LoweringError``
for a tidu op without one (complex scalars have their own table,
``tidu_complex_lowering``). The rows of the math functions (log1p, sinh, hypot, mod, ...)
are in ``tidu_math_lowering``, merged here; an op whose key operand is an integer or i1
takes its row from ``tidu_integer_lowering`` (``INTEGER_LOWERINGS``, ``BOOL_LOWERINGS``)
or, for the ops of every element type, ``TYPE_GENERIC`` (select, convert, full_like,
constant).

    %p = tidu.mul %a, %b : f64          %p = arith.mulf %a, %b : f64
    %e = tidu.exp %p : f64        ->    %e = math.exp %p : f64
    %s = tidu.pow %e, 2.0 : f64         %s = arith.mulf %e, %e : f64
    %c = tidu.scale %s, 3.0 : f64       %k = arith.constant 3.0 : f64
                                        %c = arith.mulf %s, %k : f64

``pow`` special cases: exponent 0 -> 1, 1 -> x, 0.5 -> sqrt, -0.5 -> 1/sqrt,
integers up to ``MAX_INTEGER_EXPONENT`` in magnitude by square-and-multiply (a
negative one as 1/x^n), anything else ``math.powf``. ``compare`` follows numpy: ordered
predicates, except ``ne`` (``une``: NaN != NaN is true).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidu_compile.dialects import tidu_constant
from tidu_compile.dialects import tidu_elementwise as ew
from tidu_compile.dialects.tidu import primitive_class
from tidu_compile.dialects.tidu_base import element_type, is_integer_element
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, IntegerType, i1
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_compile import ops
from tidu_compile.ops import TensorOp

from .scalar_emit import Emit, constant
from .tidu_integer_lowering import BOOL_LOWERINGS, INTEGER_LOWERINGS
from .tidu_math_lowering import MATH_LOWERINGS
from .tidu_special_lowering import SPECIAL_LOWERINGS

ScalarLowering = Callable[[Operation, Sequence[SSAValue], Emit], Sequence[SSAValue]]

MAX_INTEGER_EXPONENT = 16
"""``pow`` by an integer exponent up to this magnitude is lowered to multiplications."""

COMPARE_PREDICATES: dict[str, str] = {
    "lt": "olt",
    "le": "ole",
    "gt": "ogt",
    "ge": "oge",
    "eq": "oeq",
    "ne": "une",
}
"""tidu.compare direction -> arith.cmpf predicate (numpy semantics on NaN)."""


def _binary(op_class: type[arith.FloatingPointLikeBinaryOperation]) -> ScalarLowering:
    # ``create``: what the constructor builds (no fastmath flags), a third of the time
    return lambda op, args, emit: emit(op_class.create(
        operands=[args[0], args[1]], result_types=[args[0].type])).results


def _unary_math(op_class: type[Operation]) -> ScalarLowering:
    return lambda op, args, emit: emit(op_class.create(
        operands=[args[0]], result_types=[args[0].type])).results


def _identity(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    return [args[0]]


def _neg(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    return emit(arith.NegfOp.create(operands=[args[0]], result_types=[args[0].type])).results


def _compare(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, ew.CompareOp)
    predicate = COMPARE_PREDICATES[op.direction.data]
    return emit(arith.CmpfOp(args[0], args[1], predicate)).results


def _select(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    return emit(arith.SelectOp(args[0], args[1], args[2])).results


def _imag(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    return [constant(emit, 0.0, args[0].type)]


def _multiply_power(x: SSAValue, n: int, emit: Emit) -> SSAValue:
    """x**n for n >= 1 by square-and-multiply."""
    result: SSAValue | None = None
    square = x
    while True:
        if n & 1:
            result = square if result is None else emit(arith.MulfOp(result, square)).results[0]
        n >>= 1
        if not n:
            assert result is not None
            return result
        square = emit(arith.MulfOp(square, square)).results[0]


def _pow(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, ew.PowOp)
    x, exponent = args[0], op.parameter
    if exponent == 0:
        return [constant(emit, 1.0, x.type)]
    if exponent in (0.5, -0.5):
        root = emit(math.SqrtOp(x)).results[0]
        if exponent > 0:
            return [root]
        return emit(arith.DivfOp(constant(emit, 1.0, x.type), root)).results
    if exponent.is_integer() and abs(exponent) <= MAX_INTEGER_EXPONENT:
        power = _multiply_power(x, int(abs(exponent)), emit)
        if exponent > 0:
            return [power]
        return emit(arith.DivfOp(constant(emit, 1.0, x.type), power)).results
    return emit(math.PowFOp(x, constant(emit, exponent, x.type))).results


def _scale(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, ew.ScaleOp)
    return emit(arith.MulfOp(args[0], constant(emit, op.value.real, args[0].type))).results


def _shift(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, ew.ShiftOp)
    return emit(arith.AddfOp(args[0], constant(emit, op.parameter, args[0].type))).results


def _full_like(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, ew.FullLikeOp)
    return [constant(emit, op.value.real, op.result.type)]


def _constant(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    assert isinstance(op, tidu_constant.ConstantOp)
    return [constant(emit, op.value.real, op.result.type)]


def _convert(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    """numpy's ``astype``: i1 is 0 or 1 (zero-extended), integers are sign-extended or
    truncated (wrapping), to a float rounded (``sitofp``), from a float towards zero
    (``_float_to_integer``)."""
    source, target = args[0].type, op.results[0].type
    if source == target:
        return [args[0]]
    if isinstance(target, IntegerType) and isinstance(source, AnyFloat):
        return [_float_to_integer(args[0], target, emit)]
    if isinstance(target, IntegerType):
        return emit(_to_integer(source, target)(args[0], target)).results
    assert isinstance(target, AnyFloat)
    if source == i1:
        return emit(arith.UIToFPOp(args[0], target)).results
    if isinstance(source, IntegerType):
        return emit(arith.SIToFPOp(args[0], target)).results
    assert isinstance(source, AnyFloat)
    if target.bitwidth > source.bitwidth:
        return emit(arith.ExtFOp(args[0], target)).results
    return emit(arith.TruncFOp(args[0], target)).results


def _float_to_integer(x: SSAValue, target: IntegerType, emit: Emit) -> SSAValue:
    """``x`` towards zero as numpy's C cast on x86-64 gives it: through i32 for i8 and i16
    (then wrapped), and the most negative value where ``x`` is NaN or out of range
    (numpy warns there: C leaves it undefined, x86's ``cvttsd2si`` gives that value)."""
    wide = target if target.bitwidth >= 32 else IntegerType(32)
    half = float(2 ** (wide.bitwidth - 1))
    value = emit(arith.FPToSIOp(x, wide)).results[0]
    low = emit(arith.CmpfOp(x, constant(emit, -half, x.type), "oge")).results[0]
    high = emit(arith.CmpfOp(x, constant(emit, half, x.type), "olt")).results[0]
    inside = emit(arith.AndIOp(low, high)).results[0]
    lowest = constant(emit, -(2 ** (wide.bitwidth - 1)), wide)
    value = emit(arith.SelectOp(inside, value, lowest)).results[0]
    return value if wide == target else emit(arith.TruncIOp(value, target)).results[0]


def _to_integer(
    source: Attribute, target: IntegerType
) -> type[arith.ExtUIOp | arith.ExtSIOp | arith.TruncIOp]:
    """The ``arith`` cast from the integer or i1 ``source`` to the integer ``target``."""
    assert isinstance(source, IntegerType)
    if source == i1:
        return arith.ExtUIOp
    if source.bitwidth < target.bitwidth:
        return arith.ExtSIOp
    return arith.TruncIOp


def _sincos(op: Operation, args: Sequence[SSAValue], emit: Emit) -> Sequence[SSAValue]:
    return [emit(math.SinOp(args[0])).results[0], emit(math.CosOp(args[0])).results[0]]


SCALAR_LOWERINGS: dict[type[TensorOp], ScalarLowering] = {
    ops.Add: _binary(arith.AddfOp),
    ops.Sub: _binary(arith.SubfOp),
    ops.Mul: _binary(arith.MulfOp),
    ops.Div: _binary(arith.DivfOp),
    ops.Maximum: _binary(arith.MaximumfOp),
    ops.Compare: _compare,
    ops.Select: _select,
    ops.Neg: _neg,
    ops.Exp: _unary_math(math.ExpOp),
    ops.Log: _unary_math(math.LogOp),
    ops.Sin: _unary_math(math.SinOp),
    ops.Cos: _unary_math(math.CosOp),
    ops.Tanh: _unary_math(math.TanhOp),
    ops.Sqrt: _unary_math(math.SqrtOp),
    ops.SinCos: _sincos,
    ops.Conj: _identity,
    ops.StopGradient: _identity,
    ops.Real: _identity,
    ops.Imag: _imag,
    ops.Pow: _pow,
    ops.Scale: _scale,
    ops.Shift: _shift,
    ops.FullLike: _full_like,
    ops.Constant: _constant,
    ops.Convert: _convert,
    **MATH_LOWERINGS,
    **SPECIAL_LOWERINGS,
}
"""Primitive class -> builder of its dialect op's arith/math equivalent on real scalars:
the one lowering row an elementwise op needs (the math functions' rows are in
``tidu_math_lowering``, scipy.special's in ``tidu_special_lowering``, the integer and
i1 ones in ``tidu_integer_lowering``)."""

TYPE_GENERIC: dict[type[TensorOp], ScalarLowering] = {
    ops.Select: _select,
    ops.FullLike: _full_like,
    ops.Constant: _constant,
    ops.Convert: _convert,
}
"""The rows of the ops of every element type, which the integer and i1 tables share."""

_EXACT_LOWERINGS = {**INTEGER_LOWERINGS, **TYPE_GENERIC}
_BOOL_LOWERINGS = {**BOOL_LOWERINGS, **TYPE_GENERIC}


def _key_element(op: Operation) -> Attribute:
    """The element type that picks the row: the key operand's (``tidu.select``: its
    values; ``tidu.convert``: its source), or the result's for ops without operands."""
    if not op.operands:
        return element_type(op.results[0].type)
    return element_type(op.operands[getattr(op, "KEY_OPERAND", 0)].type)


def scalar_lowering(op: Operation) -> ScalarLowering | None:
    """The rule lowering ``op`` on real, integer or i1 scalars inside a kernel, or None."""
    primitive = primitive_class(type(op))
    if primitive is None:
        return None
    key = _key_element(op)
    if is_integer_element(key):
        return _EXACT_LOWERINGS.get(primitive)
    if key == i1:
        return _BOOL_LOWERINGS.get(primitive)
    return SCALAR_LOWERINGS.get(primitive)


__all__ = [
    "COMPARE_PREDICATES",
    "MAX_INTEGER_EXPONENT",
    "SCALAR_LOWERINGS",
    "TYPE_GENERIC",
    "Emit",
    "ScalarLowering",
    "constant",
    "scalar_lowering",
]

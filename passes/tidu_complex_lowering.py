"""Complex scalars in ``tidu-lower-to-loops``: one table from tidu op to arith/math on pairs.

A complex<fN> element is a pair ``(re, im)`` of fN values in the loop body; a real or
i1 value is a 1-tuple. ``COMPLEX_LOWERINGS`` maps each op class to a builder that
receives the op, its lowered operands as such tuples and the ``emit`` callback, and
returns one tuple per result. It is used for every op with a complex operand or
result; ops with real types only go through ``SCALAR_LOWERINGS``.
``tidu-fuse-elementwise`` lets an op on complex values into a kernel only when its
class has a row here (``has_complex_lowering``).

    %m = tidu.mul %a, %b : complex<f64>       %0 = arith.mulf %ar, %br : f64
                                              %1 = arith.mulf %ai, %bi : f64
                                      ->      %mr = arith.subf %0, %1 : f64
                                              %2 = arith.mulf %ar, %bi : f64
                                              %3 = arith.mulf %ai, %br : f64
                                              %mi = arith.addf %2, %3 : f64

Formulas: textbook multiplication (as numpy), Smith's algorithm for division,
``exp(a + bi) = e^a (cos b + i sin b)`` with C99's special cases (``_exp``), sinh and
cosh from the real parts' sinh, cosh, sin and cos; compare eq is "both parts equal", ne
its negation (NaN parts compare unequal). Infinite and NaN parts may differ from numpy's
special cases in mul, div, sinh and cosh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidu_compile.dialects import tidu_constant
from tidu_compile.dialects import tidu_elementwise as ew
from tidu_compile.dialects.tidu import primitive_class
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import AnyFloat, ComplexType, i1
from xdsl.ir import Attribute, Operation, SSAValue

from tidu_compile import ops
from tidu_compile.ops import TensorOp

from .scalar_emit import Emit, Scalars, constant
from .tidu_math_lowering import cosh_of, sinh_of

Scalar = tuple[SSAValue, ...]
"""A lowered element: ``(value,)`` for a real or i1 value, ``(re, im)`` for a complex one."""

ComplexLowering = Callable[[Operation, Sequence[Scalar], Emit], Sequence[Scalar]]


def _part_type(type_: Attribute) -> Attribute:
    return type_.element_type if isinstance(type_, ComplexType) else type_


def _add(emit: Emit, a: SSAValue, b: SSAValue) -> SSAValue:
    return emit(arith.AddfOp(a, b)).results[0]


def _sub(emit: Emit, a: SSAValue, b: SSAValue) -> SSAValue:
    return emit(arith.SubfOp(a, b)).results[0]


def _mul(emit: Emit, a: SSAValue, b: SSAValue) -> SSAValue:
    return emit(arith.MulfOp(a, b)).results[0]


def _div(emit: Emit, a: SSAValue, b: SSAValue) -> SSAValue:
    return emit(arith.DivfOp(a, b)).results[0]


def _select(emit: Emit, mask: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
    return emit(arith.SelectOp(mask, a, b)).results[0]


def complex_mul(emit: Emit, x: Scalar, y: Scalar) -> Scalar:
    (a, b), (c, d) = x, y
    return (_sub(emit, _mul(emit, a, c), _mul(emit, b, d)),
            _add(emit, _mul(emit, a, d), _mul(emit, b, c)))


def complex_div(emit: Emit, x: Scalar, y: Scalar) -> Scalar:
    """Smith's algorithm, both branches computed and one selected (no control flow)."""
    (a, b), (c, d) = x, y
    c_abs, d_abs = emit(math.AbsFOp(c)).results[0], emit(math.AbsFOp(d)).results[0]
    wide = emit(arith.CmpfOp(c_abs, d_abs, "oge")).results[0]
    # |c| >= |d|: r = d/c, den = c + d r, re = (a + b r)/den, im = (b - a r)/den
    r1 = _div(emit, d, c)
    den1 = _add(emit, c, _mul(emit, d, r1))
    re1 = _div(emit, _add(emit, a, _mul(emit, b, r1)), den1)
    im1 = _div(emit, _sub(emit, b, _mul(emit, a, r1)), den1)
    # |c| < |d|: r = c/d, den = c r + d, re = (a r + b)/den, im = (b r - a)/den
    r2 = _div(emit, c, d)
    den2 = _add(emit, _mul(emit, c, r2), d)
    re2 = _div(emit, _add(emit, _mul(emit, a, r2), b), den2)
    im2 = _div(emit, _sub(emit, _mul(emit, b, r2), a), den2)
    return _select(emit, wide, re1, re2), _select(emit, wide, im1, im2)


def _componentwise(build: Callable[[Emit, SSAValue, SSAValue], SSAValue]) -> ComplexLowering:
    return lambda op, args, emit: [tuple(
        build(emit, p, q) for p, q in zip(args[0], args[1], strict=True))]


def _neg(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    return [tuple(emit(arith.NegfOp(part)).results[0] for part in args[0])]


def _conj(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    re, im = args[0]
    return [(re, emit(arith.NegfOp(im)).results[0])]


def _real(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    return [(args[0][0],)]


def _imag(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    return [(args[0][1],)]


def _to_complex(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    assert isinstance(op, ew.ToComplexOp)
    (x,) = args[0]
    zero = constant(emit, 0.0, x.type)
    return [(zero, x) if op.is_imaginary else (x, zero)]


def _literal(emit: Emit, value: complex, type_: Attribute) -> Scalar:
    part = _part_type(type_)
    return constant(emit, value.real, part), constant(emit, value.imag, part)


def scale_by(emit: Emit, x: Scalar, factor: Scalar) -> Scalar:
    """``x`` times a real factor ``(k,)`` (both parts scaled) or a complex ``(re, im)``."""
    if len(factor) == 1:
        return tuple(_mul(emit, part, factor[0]) for part in x)
    return complex_mul(emit, x, factor)


def _scale(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    assert isinstance(op, ew.ScaleOp)
    factor = op.value
    if factor.imag == 0:
        return [scale_by(emit, args[0], (constant(emit, factor.real, args[0][0].type),))]
    return [scale_by(emit, args[0], _literal(emit, factor, op.result.type))]


def _shift(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    assert isinstance(op, ew.ShiftOp)
    re, im = args[0]
    return [(_add(emit, re, constant(emit, op.parameter, re.type)), im)]


def _full_like(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    assert isinstance(op, ew.FullLikeOp | tidu_constant.ConstantOp)
    return [_literal(emit, op.value, op.result.type)]


def _select_op(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    (mask,), on_true, on_false = args
    return [tuple(_select(emit, mask, p, q) for p, q in zip(on_true, on_false, strict=True))]


def _compare(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    assert isinstance(op, ew.CompareOp)
    equal = op.direction.data == "eq"
    predicate = "oeq" if equal else "une"
    re, im = (emit(arith.CmpfOp(p, q, predicate)).results[0]
              for p, q in zip(args[0], args[1], strict=True))
    joined = arith.AndIOp(re, im) if equal else arith.OrIOp(re, im)
    return [(emit(joined).results[0],)]


def _cast(emit: Emit, value: SSAValue, target: Attribute) -> SSAValue:
    source = value.type
    if source == target:
        return value
    assert isinstance(target, AnyFloat)
    if source == i1:
        return emit(arith.UIToFPOp(value, target)).results[0]
    assert isinstance(source, AnyFloat)
    if target.bitwidth > source.bitwidth:
        return emit(arith.ExtFOp(value, target)).results[0]
    return emit(arith.TruncFOp(value, target)).results[0]


def _convert(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    target = _part_type(op.results[0].type)
    parts = [_cast(emit, part, target) for part in args[0]]
    if len(parts) == 1:
        parts.append(constant(emit, 0.0, target))
    return [tuple(parts)]


def _exp(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
    """``e^a (cos b + i sin b)``, with C99's (and numpy's) special cases where the
    product would give a NaN: ``b == 0`` keeps ``b`` as the imaginary part (``e^inf *
    sin 0``), and for a non-finite ``b`` an ``a`` of ``-inf`` gives 0 and one of ``+inf``
    gives ``(inf, nan)`` (``0 * cos(nan)``, ``inf * cos(inf)``)."""
    re, im = args[0]
    f = Scalars(emit, re.type)
    scale = f.exp(re)
    real = f.mul(scale, emit(math.CosOp(im)).results[0])
    imag = f.mul(scale, emit(math.SinOp(im)).results[0])
    infinity, zero = f.const(float("inf")), f.const(0.0)
    endless = f.cmp(f.abs(im), "uge", infinity)  # b is infinite or NaN
    to_zero = f.both(endless, f.cmp(re, "oeq", f.neg(infinity)))
    real = f.select(to_zero, zero, f.select(f.both(endless, f.cmp(re, "oeq", infinity)),
                                            infinity, real))  # fmt: skip
    imag = f.select(to_zero, zero, f.select(f.cmp(im, "oeq", zero), im, imag))
    return [(real, imag)]


def _hyperbolic(sinh_like: bool) -> ComplexLowering:
    """``sinh(a + bi) = sinh a cos b + i cosh a sin b``,
    ``cosh(a + bi) = cosh a cos b + i sinh a sin b`` (the real rows' sinh and cosh)."""

    def lower(op: Operation, args: Sequence[Scalar], emit: Emit) -> Sequence[Scalar]:
        a, b = args[0]
        f = Scalars(emit, a.type)
        sinh_a, cosh_a = sinh_of(f, a), cosh_of(f, a)
        first, second = (sinh_a, cosh_a) if sinh_like else (cosh_a, sinh_a)
        return [(f.mul(first, emit(math.CosOp(b)).results[0]),
                 f.mul(second, emit(math.SinOp(b)).results[0]))]

    return lower


COMPLEX_LOWERINGS: dict[type[TensorOp], ComplexLowering] = {
    ops.Add: _componentwise(_add),
    ops.Sub: _componentwise(_sub),
    ops.Mul: lambda op, args, emit: [complex_mul(emit, args[0], args[1])],
    ops.Div: lambda op, args, emit: [complex_div(emit, args[0], args[1])],
    ops.Neg: _neg,
    ops.Conj: _conj,
    ops.StopGradient: lambda op, args, emit: [args[0]],
    ops.Real: _real,
    ops.Imag: _imag,
    ops.ToComplex: _to_complex,
    ops.Scale: _scale,
    ops.Shift: _shift,
    ops.FullLike: _full_like,
    ops.Constant: _full_like,
    ops.Select: _select_op,
    ops.Compare: _compare,
    ops.Convert: _convert,
    ops.Exp: _exp,
    ops.Sinh: _hyperbolic(sinh_like=True),
    ops.Cosh: _hyperbolic(sinh_like=False),
}
"""Primitive class -> builder of its dialect op's arith/math equivalent on (re, im) pairs."""


def complex_lowering(op: Operation) -> ComplexLowering | None:
    """The rule lowering ``op`` on complex values inside a kernel, or None."""
    primitive = primitive_class(type(op))
    return None if primitive is None else COMPLEX_LOWERINGS.get(primitive)


def has_complex_lowering(op: Operation) -> bool:
    """Whether an op on complex values can be lowered inside a kernel."""
    return complex_lowering(op) is not None


__all__ = [
    "COMPLEX_LOWERINGS",
    "ComplexLowering",
    "Scalar",
    "complex_div",
    "complex_lowering",
    "complex_mul",
    "has_complex_lowering",
    "scale_by",
]

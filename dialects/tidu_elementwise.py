"""The hand-written elementwise ops of the `tidu` dialect, and their family bases.

Every op here works on static tensors of one shape or, inside a `tidu.kernel` body,
on scalars. The custom syntax is described in `tidu_base`; the short form names the
type of the key operand only:

    %z = tidu.add %x, %y : tensor<4x8xf64>
    %m = tidu.mul %a, %b : f64

An op is written here only when it has syntax, verification, traits or
canonicalization of its own; every other elementwise primitive (`tidu.exp`,
`tidu.sub`, ...) gets a generated op of the families below (`tidu_table`).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import FloatAttr, StringAttr, UnitAttr, f64, i1
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Commutative, Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_base import (
    ElementKind,
    ElementwiseOperation,
    Signature,
    TiduCanonicalization,
    complex_type_of,
    element_type,
    is_complex_element,
    is_integer_element,
    parse_f64_literal,
    parse_scalar_literal,
    print_f64_literal,
    print_scalar_literal,
    real_part_type,
    scalar_properties,
    verify_literal_fits,
    with_element_type,
)

# ---------------------------------------------------------------------------------
# Family bases
# ---------------------------------------------------------------------------------


class BinaryElementwiseOperation(ElementwiseOperation):
    """Base of `(T, T) -> T` ops: a concrete op is a name plus its traits."""

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> None:
        self.init_elementwise_([lhs, rhs])


class UnaryElementwiseOperation(ElementwiseOperation):
    """Base of `T -> T` ops (and of the unary ops with a result type of their own)."""

    operand = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue | Operation) -> None:
        self.init_elementwise_([operand])


class ComplexPartOperation(UnaryElementwiseOperation):
    """Base of `real` and `imag`: complex<fN> -> fN, and fN -> fN."""

    @classmethod
    def signature(cls, key: Attribute) -> Signature | None:
        return [key], [with_element_type(key, real_part_type(element_type(key)))]


class LiteralUnaryOperation(UnaryElementwiseOperation):
    """Base of unary ops with one scalar literal stored as `re` and `im` (f64).

    A real literal has `im` = 0.0 and prints as one number (`2.000000e+00`); a
    complex one prints as a pair (`(1.000000e+00, -2.000000e+00)`). A complex
    literal needs a complex operand.
    """

    re = prop_def(FloatAttr.constr(f64))
    im = prop_def(FloatAttr.constr(f64))

    LITERAL_NAME: ClassVar[str] = "literal"

    def __init__(self, operand: SSAValue | Operation, value: complex | float) -> None:
        self.init_elementwise_([operand], dict(scalar_properties(value)))

    @property
    def value(self) -> complex:
        return complex(self.re.value.data, self.im.value.data)

    def verify_properties_(self) -> None:
        verify_literal_fits(
            self,
            self.LITERAL_NAME,
            element_type(self.operand.type),
            self.re.value.data,
            self.im.value.data,
        )

    def print_suffix_(self, printer: Printer) -> None:
        printer.print_string(", ")
        print_scalar_literal(printer, self.re.value.data, self.im.value.data)

    @classmethod
    def parse_suffix_(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_punctuation(",")
        return parse_scalar_literal(parser)


class FloatParameterUnaryOperation(UnaryElementwiseOperation):
    """Base of unary ops with one f64 parameter, printed after the operand."""

    PARAMETER_NAME: ClassVar[str]

    def __init__(self, operand: SSAValue | Operation, parameter: float) -> None:
        self.init_elementwise_([operand], {self.PARAMETER_NAME: FloatAttr(parameter, f64)})

    @property
    def parameter(self) -> float:
        attr = self.properties[self.PARAMETER_NAME]
        assert isinstance(attr, FloatAttr)
        return attr.value.data

    def print_suffix_(self, printer: Printer) -> None:
        printer.print_string(", ")
        print_f64_literal(printer, self.parameter)

    @classmethod
    def parse_suffix_(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_punctuation(",")
        return {cls.PARAMETER_NAME: FloatAttr(parse_f64_literal(parser), f64)}


# ---------------------------------------------------------------------------------
# Binary arithmetic (the generated ones: sub, div, maximum, ...)
# ---------------------------------------------------------------------------------


@irdl_op_definition
class AddOp(BinaryElementwiseOperation):
    """Elementwise sum: `%z = tidu.add %x, %y : tensor<4x8xf64>`."""

    name = "tidu.add"
    traits = traits_def(Pure(), Commutative(), TiduCanonicalization())
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL


@irdl_op_definition
class MulOp(BinaryElementwiseOperation):
    """Elementwise product: `%z = tidu.mul %x, %y : tensor<4xf32>`."""

    name = "tidu.mul"
    traits = traits_def(Pure(), Commutative(), TiduCanonicalization())
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL


# ---------------------------------------------------------------------------------
# Comparison and selection
# ---------------------------------------------------------------------------------

COMPARE_DIRECTIONS = ("lt", "le", "gt", "ge", "eq", "ne")


@irdl_op_definition
class CompareOp(ElementwiseOperation):
    """Elementwise comparison with an i1 result of the operands' shape.

        %m = tidu.compare lt, %x, %y : tensor<4xf64>

    `direction` is one of lt, le, gt, ge, eq, ne; complex operands allow eq and ne
    only. The short form names the operand type; the result is the i1 tensor (or i1).
    """

    name = "tidu.compare"

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    direction = prop_def(StringAttr)

    traits = traits_def(Pure())
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL

    def __init__(self, direction: str, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        self.init_elementwise_([lhs, rhs], {"direction": StringAttr(direction)})

    @classmethod
    def signature(cls, key: Attribute) -> Signature | None:
        return [key, key], [with_element_type(key, i1)]

    def verify_properties_(self) -> None:
        direction = self.direction.data
        if direction not in COMPARE_DIRECTIONS:
            raise VerifyException(
                f"{self.name} has the direction '{direction}', but it must be one of "
                f"{', '.join(COMPARE_DIRECTIONS)}."
            )
        element = element_type(self.lhs.type)
        if is_complex_element(element) and direction not in ("eq", "ne"):
            raise VerifyException(
                f"{self.name} compares complex values ({element}) with '{direction}', but "
                "complex values can only be compared with eq and ne."
            )

    def print_prefix_(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_identifier_or_string_literal(self.direction.data)
        printer.print_string(",")

    @classmethod
    def parse_prefix_(cls, parser: Parser) -> dict[str, Attribute]:
        direction = parser.parse_identifier_or_str_literal(" (the compare direction)")
        parser.parse_punctuation(",")
        return {"direction": StringAttr(direction)}


@irdl_op_definition
class SelectOp(ElementwiseOperation):
    """`on_true` where `mask` is set, else `on_false`; all of one shape.

        %z = tidu.select %mask, %x, %y : tensor<4xf64>

    The short form names the type of the values; the mask is the i1 tensor (or i1).
    """

    name = "tidu.select"

    mask = operand_def()
    on_true = operand_def()
    on_false = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    KEY_OPERAND: ClassVar[int] = 1
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL

    def __init__(
        self,
        mask: SSAValue | Operation,
        on_true: SSAValue | Operation,
        on_false: SSAValue | Operation,
    ) -> None:
        self.init_elementwise_([mask, on_true, on_false])

    @classmethod
    def signature(cls, key: Attribute) -> Signature | None:
        return [with_element_type(key, i1), key, key], [key]


# ---------------------------------------------------------------------------------
# Unary (the generated ones: exp, log, sin, cos, tanh, sqrt, ...)
# ---------------------------------------------------------------------------------


@irdl_op_definition
class NegOp(UnaryElementwiseOperation):
    """Elementwise negation: `%y = tidu.neg %x : tensor<4xf64>`."""

    name = "tidu.neg"
    traits = traits_def(Pure(), TiduCanonicalization())
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ARITHMETIC


@irdl_op_definition
class ConjOp(UnaryElementwiseOperation):
    """Complex conjugate, the identity on real values.

    %y = tidu.conj %z : tensor<4xcomplex<f64>>
    """

    name = "tidu.conj"
    traits = traits_def(Pure(), TiduCanonicalization())


@irdl_op_definition
class RealOp(ComplexPartOperation):
    """Real part: complex<fN> -> fN, the identity on real values.

    %y = tidu.real %z : tensor<4xcomplex<f64>>      // result: tensor<4xf64>
    """

    name = "tidu.real"


@irdl_op_definition
class ImagOp(ComplexPartOperation):
    """Imaginary part: complex<fN> -> fN; zeros for real values.

    %y = tidu.imag %z : tensor<4xcomplex<f32>>      // result: tensor<4xf32>
    """

    name = "tidu.imag"


@irdl_op_definition
class SinCosOp(ElementwiseOperation):
    """Sine and cosine at once: one operand, two results of its type.

    %s, %c = tidu.sincos %x : tensor<4xf64>
    """

    name = "tidu.sincos"

    operand = operand_def()
    sin = result_def()
    cos = result_def()

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue | Operation) -> None:
        self.init_elementwise_([operand])


# ---------------------------------------------------------------------------------
# Unary ops with parameters
# ---------------------------------------------------------------------------------


@irdl_op_definition
class PowOp(FloatParameterUnaryOperation):
    """`x ** exponent` with a constant f64 `exponent`.

    %y = tidu.pow %x, 2.500000e+00 : tensor<4xf64>
    """

    name = "tidu.pow"
    exponent = prop_def(FloatAttr.constr(f64))
    traits = traits_def(Pure(), TiduCanonicalization())
    PARAMETER_NAME: ClassVar[str] = "exponent"
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL

    def verify_properties_(self) -> None:
        element = element_type(self.operand.type)
        exponent = self.parameter
        if element == i1 or is_integer_element(element) and not (
            exponent.is_integer() and exponent >= 0
        ):
            raise VerifyException(
                f"{self.name} raises {element} values to the power {exponent}, but integer "
                "powers take a non-negative integer exponent (and i1 none)."
            )


@irdl_op_definition
class ShiftOp(FloatParameterUnaryOperation):
    """`x + offset` with a constant f64 `offset` (added to the real part of complex x).

    %y = tidu.shift %x, -1.000000e+00 : tensor<4xf64>
    """

    name = "tidu.shift"
    offset = prop_def(FloatAttr.constr(f64))
    traits = traits_def(Pure(), TiduCanonicalization())
    PARAMETER_NAME: ClassVar[str] = "offset"


@irdl_op_definition
class ScaleOp(LiteralUnaryOperation):
    """`factor * x`; the factor is stored as the f64 properties `re` and `im`.

    %y = tidu.scale %x, 2.000000e+00 : tensor<4xf64>
    %w = tidu.scale %z, (0.000000e+00, 1.000000e+00) : tensor<4xcomplex<f64>>
    """

    name = "tidu.scale"
    traits = traits_def(Pure(), TiduCanonicalization())
    LITERAL_NAME: ClassVar[str] = "factor"


@irdl_op_definition
class FullLikeOp(LiteralUnaryOperation):
    """`value` broadcast to the type of x (x's values are not read).

    The value is stored as the f64 properties `re` and `im`.

        %y = tidu.full_like %x, 0.000000e+00 : tensor<4x8xf64>
    """

    name = "tidu.full_like"
    LITERAL_NAME: ClassVar[str] = "value"
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL


@irdl_op_definition
class ToComplexOp(UnaryElementwiseOperation):
    """fN -> complex<fN>: `x + 0j`, or `i * x` when `imaginary` (a unit property) is set.

    %z = tidu.to_complex %x : tensor<4xf64>             // x + 0j
    %w = tidu.to_complex %x imaginary : tensor<4xf64>   // i * x
    """

    name = "tidu.to_complex"
    imaginary = opt_prop_def(UnitAttr)
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.REAL

    def __init__(self, operand: SSAValue | Operation, imaginary: bool = False) -> None:
        self.init_elementwise_([operand], {"imaginary": UnitAttr() if imaginary else None})

    @property
    def is_imaginary(self) -> bool:
        return self.imaginary is not None

    @classmethod
    def signature(cls, key: Attribute) -> Signature | None:
        return [key], [with_element_type(key, complex_type_of(element_type(key)))]

    def print_suffix_(self, printer: Printer) -> None:
        if self.is_imaginary:
            printer.print_string(" imaginary")

    @classmethod
    def parse_suffix_(cls, parser: Parser) -> dict[str, Attribute]:
        if parser.parse_optional_keyword("imaginary") is not None:
            return {"imaginary": UnitAttr()}
        return {}


@irdl_op_definition
class ConvertOp(UnaryElementwiseOperation):
    """Element type change; the result type carries the new dtype.

        %y = tidu.convert %x : tensor<4xf32> -> tensor<4xf64>

    Allowed: fN -> fM, fN -> complex<fM>, complex<fN> -> complex<fM>, i1 or an integer
    -> float, complex or integer, float -> integer (towards zero, saturating), and any
    type to itself. complex -> real is `tidu.real`; nothing converts to i1 (a compare
    does).
    """

    name = "tidu.convert"
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL

    def __init__(self, operand: SSAValue | Operation, result_type: Attribute) -> None:
        self.init_elementwise_([operand], result_types=[result_type])

    @classmethod
    def signature(cls, key: Attribute) -> Signature | None:
        return None

    def verify_element_types_(self, key: Attribute) -> None:
        source = element_type(key)
        target = element_type(self.result.type)
        if source == target:
            return
        if target == i1:
            raise VerifyException(
                f"{self.name} converts {source} to i1, but only compares produce i1 values."
            )
        if is_complex_element(source) and not is_complex_element(target):
            raise VerifyException(
                f"{self.name} converts {source} to the real type {target}, which drops the "
                "imaginary part; use tidu.real for that."
            )


__all__ = [
    "COMPARE_DIRECTIONS",
    "AddOp",
    "BinaryElementwiseOperation",
    "ComplexPartOperation",
    "CompareOp",
    "ConjOp",
    "ConvertOp",
    "FloatParameterUnaryOperation",
    "FullLikeOp",
    "ImagOp",
    "LiteralUnaryOperation",
    "MulOp",
    "NegOp",
    "PowOp",
    "RealOp",
    "ScaleOp",
    "SelectOp",
    "ShiftOp",
    "SinCosOp",
    "ToComplexOp",
    "UnaryElementwiseOperation",
]

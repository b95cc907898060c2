"""`tidu.constant`: a splat constant tensor, or a scalar inside a kernel body."""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, f64
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure

from .tidu_base import (
    element_type,
    parse_scalar_literal,
    print_scalar_literal,
    scalar_properties,
    verify_literal_fits,
    verify_value_type,
)


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A splat constant, a static tensor or (inside a kernel body) a scalar.

    The value is stored as the f64 properties `re` and `im`; it prints as one number
    when `im` is 0 and as a pair otherwise.

        %c = tidu.constant 1.500000e+00 : tensor<4x8xf64>
        %z = tidu.constant (1.000000e+00, -2.000000e+00) : complex<f64>
    """

    name = "tidu.constant"

    re = prop_def(FloatAttr.constr(f64))
    im = prop_def(FloatAttr.constr(f64))
    result = result_def()

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: complex | float, result_type: Attribute) -> None:
        super().__init__(result_types=[result_type], properties=scalar_properties(value))

    @property
    def value(self) -> complex:
        return complex(self.re.value.data, self.im.value.data)

    def verify_(self) -> None:
        verify_value_type(self, "result", self.result.type, allow_scalar=True)
        element = element_type(self.result.type)
        verify_literal_fits(self, "value", element, self.re.value.data, self.im.value.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_scalar_literal(printer, self.re.value.data, self.im.value.data)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        properties = parse_scalar_literal(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        return cls.create(result_types=[result_type], properties=properties, attributes=attributes)


__all__ = ["ConstantOp"]

"""The scan ops of the `tidu` dialect: cum_sum, cum_prod, linear_scan, argsort.

Each works along one `axis` of operands of one shape, and runs as a library call
between kernels (see `ops.scan`):

    %y = tidu.cum_sum %x, axis = 0 reverse : tensor<8x3xf64> -> tensor<8x3xf64>
    %s = tidu.linear_scan %a, %b, axis = 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x5xf32>
    %p = tidu.argsort %x, axis = 0 : tensor<8x3xf64> -> tensor<8x3xi64>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, TensorType, UnitAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_base import ElementKind, verify_tensor
from .tidu_indexing import parse_operands_and_axis, parse_signature, print_axis_form


class _ScanOperation(IRDLOperation):
    """Operands of one shape, one result of that shape, along `axis`."""

    OPERANDS: ClassVar[int] = 1
    RESULT_KIND: ClassVar[ElementKind] = ElementKind.ALL

    inputs = var_operand_def()
    result = result_def()
    axis = prop_def(IntegerAttr.constr(i64))
    reverse = opt_prop_def(UnitAttr)

    traits = traits_def(Pure())

    def __init__(
        self,
        operands: Sequence[SSAValue | Operation],
        axis: int,
        reverse: bool = False,
        result_type: Attribute | None = None,
    ) -> None:
        source = SSAValue.get(operands[-1]).type
        super().__init__(
            operands=[operands],
            result_types=[result_type or source],
            properties={"axis": IntegerAttr(axis, i64)}
            | ({"reverse": UnitAttr()} if reverse else {}),
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    @property
    def is_reverse(self) -> bool:
        return self.reverse is not None

    def verify_(self) -> None:
        if len(self.inputs) != self.OPERANDS:
            raise VerifyException(
                f"{self.name} takes {self.OPERANDS} operand(s), got {len(self.inputs)}."
            )
        first = verify_tensor(self, "operand 0", self.inputs[0].type, ElementKind.ALL)
        for i, value in enumerate(self.inputs):
            if value.type != first:
                raise VerifyException(f"{self.name} operand {i} must have the type {first}.")
        result = verify_tensor(self, "result", self.result.type, self.RESULT_KIND)
        if result.get_shape() != first.get_shape():
            raise VerifyException(f"{self.name} result must have the shape of its operands.")
        if not 0 <= self.axis_value < len(first.get_shape()):
            raise VerifyException(
                f"{self.name} has axis {self.axis_value}, out of range for {first}."
            )

    def print(self, printer: Printer) -> None:
        suffix = " reverse" if self.is_reverse else ""
        print_axis_form(printer, self, self.inputs, self.axis_value, suffix)

    @classmethod
    def parse(cls, parser: Parser) -> _ScanOperation:
        position = parser.pos
        unresolved, axis = parse_operands_and_axis(parser, cls.name)
        properties: dict[str, Attribute] = {"axis": IntegerAttr(axis, i64)}
        if parser.parse_optional_keyword("reverse") is not None:
            properties["reverse"] = UnitAttr()
        attributes, types, target = parse_signature(parser)
        operands = parser.resolve_operands(unresolved, types, position)
        return cls.create(operands=operands, result_types=[target], properties=properties,
                          attributes=attributes)  # fmt: skip


@irdl_op_definition
class CumSumOp(_ScanOperation):
    """Cumulative sum along `axis` (from the end with `reverse`).

    %y = tidu.cum_sum %x, axis = 0 reverse : tensor<8xf64> -> tensor<8xf64>
    """

    name = "tidu.cum_sum"


@irdl_op_definition
class CumProdOp(_ScanOperation):
    """Cumulative product along `axis`.

    %y = tidu.cum_prod %x, axis = 1 : tensor<2x8xf64> -> tensor<2x8xf64>
    """

    name = "tidu.cum_prod"


@irdl_op_definition
class LinearScanOp(_ScanOperation):
    """`y_i = a_i * y_{i-1} + b_i` along `axis` (`y_i = a_i * y_{i+1} + b_i` with
    `reverse`); operands `a`, `b`.

    %y = tidu.linear_scan %a, %b, axis = 0 : tensor<8xf64>, tensor<8xf64> -> tensor<8xf64>
    """

    name = "tidu.linear_scan"
    OPERANDS: ClassVar[int] = 2


@irdl_op_definition
class ArgsortOp(_ScanOperation):
    """The stable sorting permutation along `axis`, as i64.

    %p = tidu.argsort %x, axis = 0 : tensor<8xf64> -> tensor<8xi64>
    """

    name = "tidu.argsort"
    RESULT_KIND: ClassVar[ElementKind] = ElementKind.INDEX

    def __init__(self, operand: SSAValue | Operation, axis: int) -> None:
        shape = SSAValue.get(operand).type.get_shape()  # type: ignore[attr-defined]
        super().__init__([operand], axis, result_type=TensorType(i64, shape))


__all__ = ["ArgsortOp", "CumProdOp", "CumSumOp", "LinearScanOp"]

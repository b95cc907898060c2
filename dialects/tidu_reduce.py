"""The reductions of the `tidu` dialect: reduce_sum, reduce_max, reduce_min, reduce_prod
(fused into kernels as results combined over the reduced dimensions), and argmax, argmin
(integer results, run as library calls between kernels).

    %s = tidu.reduce_sum %x, axes = [0] : tensor<4x8xf64> -> tensor<8xf64>
    %m = tidu.reduce_max %x, axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
    %i = tidu.argmax %x, axis = 1 : tensor<4x8xf64> -> tensor<4xi64>

A reduction's `COMBINER` names how its elements combine, which a `tidu.kernel` result
map records (`KernelOp.result_combiner`): `add`, `max`, `min` or `mul`, each with its
identity (0, -inf, +inf, 1; on i1, max is `or` from false and min `and` from true).
Max and min follow numpy: a NaN anywhere in a slice makes its result NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_base import ElementKind, array_values, i64_array, verify_tensor
from .tidu_indexing import parse_signature, print_axis_form
from .tidu_shape import ShapeOperation, listed, verify_axes_in_range, verify_result_shape

COMBINERS = ("add", "max", "min", "mul")
"""How the elements of a reduction combine (the kernel result map's combiner)."""


class ReduceOperation(ShapeOperation):
    """Base of the reductions over `axes` (sorted, unique), which the result drops; a
    concrete op names its `COMBINER` and the element types it takes."""

    axes = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure())
    COMBINER: ClassVar[str] = "add"
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ARITHMETIC

    assembly_format = (
        "$operand `,` `axes` `=` $axes attr-dict `:` type($operand) `->` type($result)"
    )

    def __init__(self, operand: SSAValue | Operation, axes: Sequence[int]) -> None:
        source = SSAValue.get(operand).type
        assert isinstance(source, TensorType)
        shape = [size for dim, size in enumerate(source.get_shape()) if dim not in set(axes)]
        self.init_shape_(operand, shape, {"axes": i64_array(axes)})

    def verify_(self) -> None:
        source, target = self.verify_types_()
        axes = array_values(self.axes)
        shape = source.get_shape()
        verify_axes_in_range(self, "axes", axes, len(shape), "operand")
        if any(a >= b for a, b in zip(axes, axes[1:], strict=False)):
            raise VerifyException(
                f"{self.name} has axes {listed(axes)}, which must be sorted and unique."
            )
        expected = tuple(size for dim, size in enumerate(shape) if dim not in axes)
        verify_result_shape(self, target, expected, f"reduces {source} over axes {listed(axes)}")


@irdl_op_definition
class ReduceSumOp(ReduceOperation):
    """Sum over `axes` (sorted, unique); the result drops those dimensions.

    %y = tidu.reduce_sum %x, axes = [0] : tensor<4x8xf64> -> tensor<8xf64>
    """

    name = "tidu.reduce_sum"
    COMBINER: ClassVar[str] = "add"


@irdl_op_definition
class ReduceMaxOp(ReduceOperation):
    """Maximum over `axes` (NaN-propagating; `any` on i1).

    %y = tidu.reduce_max %x, axes = [1] : tensor<4x8xf64> -> tensor<4xf64>
    """

    name = "tidu.reduce_max"
    COMBINER: ClassVar[str] = "max"
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ORDERED


@irdl_op_definition
class ReduceMinOp(ReduceOperation):
    """Minimum over `axes` (NaN-propagating; `all` on i1).

    %y = tidu.reduce_min %x, axes = [1] : tensor<4x8xf64> -> tensor<4xf64>
    """

    name = "tidu.reduce_min"
    COMBINER: ClassVar[str] = "min"
    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ORDERED


@irdl_op_definition
class ReduceProdOp(ReduceOperation):
    """Product over `axes`.

    %y = tidu.reduce_prod %x, axes = [0, 1] : tensor<4x8xf64> -> tensor<f64>
    """

    name = "tidu.reduce_prod"
    COMBINER: ClassVar[str] = "mul"


class ArgExtremumOperation(IRDLOperation):
    """The i64 index of the first extremum along `axis`, which the result drops."""

    operand = operand_def()
    result = result_def()
    axis = prop_def(IntegerAttr.constr(i64))

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue | Operation, axis: int) -> None:
        source = SSAValue.get(operand).type
        assert isinstance(source, TensorType)
        shape = [size for dim, size in enumerate(source.get_shape()) if dim != axis]
        super().__init__(
            operands=[operand],
            result_types=[TensorType(i64, shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        source = verify_tensor(self, "operand", self.operand.type, ElementKind.ALL)
        element = source.element_type
        assert isinstance(element, Attribute)
        if not (ElementKind.ORDERED.accepts(element) or ElementKind.INDEX.accepts(element)):
            raise VerifyException(
                f"{self.name} operand has element type {element}, but it must be ordered "
                "(f32, f64, i1, i32 or i64)."
            )
        result = verify_tensor(self, "result", self.result.type, ElementKind.INDEX)
        shape = source.get_shape()
        verify_axes_in_range(self, "axis", [self.axis_value], len(shape), "operand")
        expected = tuple(s for d, s in enumerate(shape) if d != self.axis_value)
        if result.get_shape() != expected or result.element_type != i64:
            raise VerifyException(
                f"{self.name} of {source} along axis {self.axis_value} gives "
                f"tensor<{'x'.join(map(str, expected))}{'x' if expected else ''}i64>, "
                f"but the result is {result}."
            )

    def print(self, printer: Printer) -> None:
        print_axis_form(printer, self, [self.operand], self.axis_value)

    @classmethod
    def parse(cls, parser: Parser) -> ArgExtremumOperation:
        position = parser.pos
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("axis")
        parser.parse_punctuation("=")
        axis = parser.parse_integer(allow_boolean=False)
        attributes, types, result = parse_signature(parser)
        (value,) = parser.resolve_operands([operand], types, position)
        op = cls.create(operands=[value], result_types=[result],
                        properties={"axis": IntegerAttr(axis, i64)})  # fmt: skip
        op.attributes |= attributes
        return op


@irdl_op_definition
class ArgmaxOp(ArgExtremumOperation):
    """The index of the first maximum (or NaN) along `axis`.

    %i = tidu.argmax %x, axis = 1 : tensor<4x8xf64> -> tensor<4xi64>
    """

    name = "tidu.argmax"


@irdl_op_definition
class ArgminOp(ArgExtremumOperation):
    """The index of the first minimum (or NaN) along `axis`.

    %i = tidu.argmin %x, axis = 0 : tensor<4x8xf64> -> tensor<8xi64>
    """

    name = "tidu.argmin"


__all__ = [
    "COMBINERS",
    "ArgExtremumOperation",
    "ArgmaxOp",
    "ArgminOp",
    "ReduceMaxOp",
    "ReduceMinOp",
    "ReduceOperation",
    "ReduceProdOp",
    "ReduceSumOp",
]

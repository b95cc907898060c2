"""The indexing and joining ops of the `tidu` dialect: slice, pad, concatenate, gather,
scatter_add.

Like the shape ops they take and return ranked tensors with static shapes and keep
the element type. `slice` and `pad` share one index map per dimension: element `i`
of the small array is element `start + step * i` of the big one (`step` may be
negative); the small array's sizes are its type's.

    %y = tidu.slice %x, start = [1], step = [2] : tensor<7xf64> -> tensor<3xf64>
    %z = tidu.pad %y, start = [1], step = [2], value = 0.000000e+00
           : tensor<3xf64> -> tensor<7xf64>
    %c = tidu.concatenate %a, %b, axis = 0 : tensor<2x3xf64>, tensor<4x3xf64> -> tensor<6x3xf64>

`gather` and `scatter_add` take integer (i32, i64) index tensors after the data:

    %g = tidu.gather %x[%i], axis = 0 : tensor<8x3xf64>, tensor<5xi64> -> tensor<5x3xf64>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, TensorType, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_base import (
    ElementKind,
    array_values,
    i64_array,
    parse_scalar_literal,
    print_scalar_literal,
    scalar_properties,
    verify_literal_fits,
    verify_same_element_type,
    verify_tensor,
)


def _listed(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _tensor(value: SSAValue | Operation) -> TensorType:
    type_ = SSAValue.get(value).type
    if not isinstance(type_, TensorType):
        raise ValueError(f"expected a value of tensor type, got {type_}")
    return type_


def verify_window(
    op: IRDLOperation,
    start: Sequence[int],
    step: Sequence[int],
    small: Sequence[int],
    big: Sequence[int],
) -> None:
    """Every element `start + step * i` of the small shape lies inside the big shape."""
    if not len(start) == len(step) == len(small) == len(big):
        raise VerifyException(
            f"{op.name} has start {_listed(start)} and step {_listed(step)} for shapes "
            f"{_listed(small)} and {_listed(big)}; it needs one entry per dimension."
        )
    for dim, (first, stride, count, size) in enumerate(zip(start, step, small, big, strict=True)):
        if stride == 0:
            raise VerifyException(f"{op.name} has step 0 in dimension {dim}.")
        last = first + stride * (count - 1)
        if count and not (0 <= first < size and 0 <= last < size):
            raise VerifyException(
                f"{op.name} maps dimension {dim} to indices {first}..{last} (step {stride}), "
                f"which leave 0..{size - 1}."
            )


def print_signature(
    printer: Printer, operand_types: Sequence[Attribute], result: Attribute
) -> None:
    """`` : operand types -> result type``."""
    printer.print_string(" : ")
    printer.print_list(operand_types, printer.print_attribute)
    printer.print_string(" -> ")
    printer.print_attribute(result)


def _print_axis_form(printer: Printer, op: IRDLOperation, operands: Sequence[SSAValue],
                     axis: int) -> None:  # fmt: skip
    """`` %a, %b, axis = 1 {attrs} : types -> type``, the form of ``tidu.concatenate``
    (the structural ops along an axis print the same, from their fields)."""
    printer.print_string(" ")
    printer.print_list(operands, printer.print_operand)
    printer.print_string(f", axis = {axis}")
    printer.print_op_attributes(op.attributes)
    print_signature(printer, [v.type for v in operands], op.results[0].type)


def parse_signature(
    parser: Parser,
) -> tuple[dict[str, Attribute], list[Attribute], Attribute]:
    """An optional attribute dictionary, then ``: operand types -> result type``."""
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    types: list[Attribute] = parser.parse_comma_separated_list(
        parser.Delimiter.NONE, parser.parse_type
    )
    parser.parse_punctuation("->")
    target: Attribute = parser.parse_type()
    return attributes, types, target


def _parse_operands_and_axis(parser: Parser, name: str) -> tuple[list[UnresolvedOperand], int]:
    """``%a, %b, ..., axis = N``: the operands and the axis."""
    unresolved = [parser.parse_unresolved_operand()]
    while parser.parse_optional_punctuation(",") is not None:
        if parser.parse_optional_keyword("axis") is not None:
            break
        unresolved.append(parser.parse_unresolved_operand())
    else:
        parser.raise_error(f"{name} expects `, axis = N` after its operands")
    parser.parse_punctuation("=")
    return unresolved, parser.parse_integer(allow_boolean=False)


def _print_window(printer: Printer, start: Sequence[int], step: Sequence[int]) -> None:
    printer.print_string(f", start = {_listed(start)}, step = {_listed(step)}")


def _parse_window(parser: Parser) -> tuple[list[int], list[int]]:
    values = []
    for keyword in ("start", "step"):
        parser.parse_punctuation(",")
        parser.parse_keyword(keyword)
        parser.parse_punctuation("=")
        values.append(
            parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
        )
    return values[0], values[1]


class _WindowOperation(IRDLOperation):
    """`slice` and `pad`: one operand, one result, `start` and `step` per dimension."""

    operand = operand_def()
    result = result_def()
    start = prop_def(DenseArrayBase.constr(i64))
    step = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure())

    def small_and_big(self) -> tuple[TensorType, TensorType]:
        raise NotImplementedError

    def verify_(self) -> None:
        source = verify_tensor(self, "operand", self.operand.type, ElementKind.ALL)
        target = verify_tensor(self, "result", self.result.type, ElementKind.ALL)
        verify_same_element_type(self, "result", target, "the operand", source)
        small, big = self.small_and_big()
        verify_window(
            self,
            array_values(self.start),
            array_values(self.step),
            small.get_shape(),
            big.get_shape(),
        )

    def print_extra_(self, printer: Printer) -> None:
        """Hook: what follows the window (pad's value)."""

    @classmethod
    def parse_extra_(cls, parser: Parser) -> dict[str, Attribute]:
        return {}

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        _print_window(printer, array_values(self.start), array_values(self.step))
        self.print_extra_(printer)
        printer.print_op_attributes(self.attributes)
        print_signature(printer, [self.operand.type], self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        position = parser.pos
        unresolved = parser.parse_unresolved_operand()
        start, step = _parse_window(parser)
        properties: dict[str, Attribute] = {"start": i64_array(start), "step": i64_array(step)}
        properties |= cls.parse_extra_(parser)
        attributes, types, target = parse_signature(parser)
        operands = parser.resolve_operands([unresolved], types, position)
        return cls.create(operands=operands, result_types=[target], properties=properties,
                          attributes=attributes)  # fmt: skip


@irdl_op_definition
class SliceOp(_WindowOperation):
    """A strided window of the operand: `y[i] = x[start + step * i]` per dimension.

    %y = tidu.slice %x, start = [6], step = [-2] : tensor<7xf64> -> tensor<4xf64>
    """

    name = "tidu.slice"

    def __init__(
        self,
        operand: SSAValue | Operation,
        start: Sequence[int],
        step: Sequence[int],
        shape: Sequence[int],
    ) -> None:
        source = _tensor(operand)
        super().__init__(
            operands=[operand],
            result_types=[TensorType(source.element_type, shape)],
            properties={"start": i64_array(start), "step": i64_array(step)},
        )

    def small_and_big(self) -> tuple[TensorType, TensorType]:
        return self.result.type, self.operand.type  # type: ignore[return-value]

@irdl_op_definition
class PadOp(_WindowOperation):
    """Embed the operand in a tensor of `value`: `y[start + step * i] = x[i]`.

    The value is stored as the f64 properties `re` and `im` (printed as one number
    when `im` is 0).

        %y = tidu.pad %x, start = [1], step = [1], value = 0.000000e+00
               : tensor<6xf64> -> tensor<8xf64>
    """

    name = "tidu.pad"

    re = prop_def(FloatAttr.constr(f64))
    im = prop_def(FloatAttr.constr(f64))

    def __init__(
        self,
        operand: SSAValue | Operation,
        start: Sequence[int],
        step: Sequence[int],
        shape: Sequence[int],
        value: complex | float = 0.0,
    ) -> None:
        source = _tensor(operand)
        properties: dict[str, Attribute] = {"start": i64_array(start), "step": i64_array(step)}
        super().__init__(
            operands=[operand],
            result_types=[TensorType(source.element_type, shape)],
            properties=properties | scalar_properties(value),
        )

    @property
    def value(self) -> complex:
        return complex(self.re.value.data, self.im.value.data)

    def small_and_big(self) -> tuple[TensorType, TensorType]:
        return self.operand.type, self.result.type  # type: ignore[return-value]

    def verify_(self) -> None:
        super().verify_()
        element = self.result.type.element_type  # type: ignore[attr-defined]
        verify_literal_fits(self, "value", element, self.re.value.data, self.im.value.data)

    def print_extra_(self, printer: Printer) -> None:
        printer.print_string(", value = ")
        print_scalar_literal(printer, self.re.value.data, self.im.value.data)

    @classmethod
    def parse_extra_(cls, parser: Parser) -> dict[str, Attribute]:
        parser.parse_punctuation(",")
        parser.parse_keyword("value")
        parser.parse_punctuation("=")
        return parse_scalar_literal(parser)


@irdl_op_definition
class ConcatenateOp(IRDLOperation):
    """Join the operands along `axis`; every other dimension is equal.

    %c = tidu.concatenate %a, %b, axis = 0 : tensor<2xf64>, tensor<3xf64> -> tensor<5xf64>
    """

    name = "tidu.concatenate"

    inputs = var_operand_def()
    result = result_def()
    axis = prop_def(IntegerAttr.constr(i64))

    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue | Operation], axis: int) -> None:
        types = [_tensor(v) for v in inputs]
        shape = list(types[0].get_shape())
        shape[axis] = sum(t.get_shape()[axis] for t in types)
        super().__init__(
            operands=[inputs],
            result_types=[TensorType(types[0].element_type, shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def offsets(self) -> tuple[int, ...]:
        """Where each operand starts along the axis."""
        starts, position = [], 0
        for value in self.inputs:
            starts.append(position)
            position += value.type.get_shape()[self.axis_value]  # type: ignore[attr-defined]
        return tuple(starts)

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException(f"{self.name} needs at least one operand.")
        target = verify_tensor(self, "result", self.result.type, ElementKind.ALL)
        shape = target.get_shape()
        axis = self.axis_value
        if not 0 <= axis < len(shape):
            raise VerifyException(
                f"{self.name} has axis {axis}, which is out of range for the result {target}."
            )
        total = 0
        for index, value in enumerate(self.inputs):
            source = verify_tensor(self, f"operand {index}", value.type, ElementKind.ALL)
            verify_same_element_type(self, f"operand {index}", source, "the result", target)
            piece = source.get_shape()
            if len(piece) != len(shape) or any(
                a != b for d, (a, b) in enumerate(zip(piece, shape, strict=False)) if d != axis
            ):
                raise VerifyException(
                    f"{self.name} operand {index} ({source}) must match the result {target} "
                    f"in every dimension but {axis}."
                )
            total += piece[axis]
        if total != shape[axis]:
            raise VerifyException(
                f"{self.name} joins {total} elements along axis {axis}, but the result {target} "
                f"has {shape[axis]}."
            )

    def print(self, printer: Printer) -> None:
        _print_axis_form(printer, self, self.inputs, self.axis_value)

    @classmethod
    def parse(cls, parser: Parser) -> ConcatenateOp:
        position = parser.pos
        unresolved, axis = _parse_operands_and_axis(parser, cls.name)
        attributes, types, target = parse_signature(parser)
        operands = parser.resolve_operands(unresolved, types, position)
        return cls.create(operands=operands, result_types=[target],
                          properties={"axis": IntegerAttr(axis, i64)},
                          attributes=attributes)  # fmt: skip


class _IndexedOperation(IRDLOperation):
    """`gather` and `scatter_add`: data, then integer index tensors of one shape that
    index dimensions `axis ..` of the big tensor; in the small one those dimensions are
    the index shape."""

    data = operand_def()
    indices = var_operand_def()
    result = result_def()
    axis = prop_def(IntegerAttr.constr(i64))

    traits = traits_def(Pure())

    @property
    def axis_value(self) -> int:
        return self.axis.value.data

    def small_and_big(self) -> tuple[TensorType, TensorType]:
        raise NotImplementedError

    @staticmethod
    def small_shape(big: Sequence[int], axis: int, count: int, index: Sequence[int]) -> list[int]:
        return [*big[:axis], *index, *big[axis + count :]]

    def verify_(self) -> None:
        data = verify_tensor(self, "data", self.data.type, ElementKind.ALL)
        result = verify_tensor(self, "result", self.result.type, ElementKind.ALL)
        verify_same_element_type(self, "result", result, "the data", data)
        if not self.indices:
            raise VerifyException(f"{self.name} needs at least one index operand.")
        index_shape = None
        for i, value in enumerate(self.indices):
            index = verify_tensor(self, f"index operand {i}", value.type, ElementKind.INDEX)
            if index_shape is None:
                index_shape = index.get_shape()
            elif index.get_shape() != index_shape:
                raise VerifyException(
                    f"{self.name} index operand {i} ({index}) must have the shape of index "
                    f"operand 0, {_listed(index_shape)}."
                )
        assert index_shape is not None
        small, big = self.small_and_big()
        axis, count = self.axis_value, len(self.indices)
        rank = len(big.get_shape())
        if not 0 <= axis <= rank - count:
            raise VerifyException(
                f"{self.name} indexes {count} dimensions from axis {axis} of {big}, which has "
                f"{rank}."
            )
        expected = self.small_shape(big.get_shape(), axis, count, index_shape)
        if list(small.get_shape()) != expected:
            raise VerifyException(
                f"{self.name} needs the indexed tensor to have the shape {_listed(expected)}, "
                f"but it is {small}."
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.data)
        with printer.in_square_brackets():
            printer.print_list(self.indices, printer.print_operand)
        printer.print_string(f", axis = {self.axis_value}")
        printer.print_op_attributes(self.attributes)
        print_signature(printer, self.operand_types, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> _IndexedOperation:
        position = parser.pos
        data = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(",")
        parser.parse_keyword("axis")
        parser.parse_punctuation("=")
        axis = parser.parse_integer(allow_boolean=False)
        attributes, types, target = parse_signature(parser)
        operands = parser.resolve_operands([data, *indices], types, position)
        return cls.create(operands=operands, result_types=[target],
                          properties={"axis": IntegerAttr(axis, i64)},
                          attributes=attributes)  # fmt: skip


@irdl_op_definition
class GatherOp(_IndexedOperation):
    """Elements at integer positions: `y[p, b, q] = x[p, i0[b], ..., q]` (negative
    indices count from the end; the kernel clamps any index into the dimension).

        %y = tidu.gather %x[%i], axis = 1 : tensor<3x8xf64>, tensor<5xi64> -> tensor<3x5xf64>
    """

    name = "tidu.gather"

    def __init__(
        self, data: SSAValue | Operation, indices: Sequence[SSAValue | Operation], axis: int
    ) -> None:
        big = _tensor(data)
        index = _tensor(indices[0]).get_shape()
        shape = self.small_shape(big.get_shape(), axis, len(indices), index)
        super().__init__(
            operands=[data, indices],
            result_types=[TensorType(big.element_type, shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    def small_and_big(self) -> tuple[TensorType, TensorType]:
        return self.result.type, self.data.type  # type: ignore[return-value]


@irdl_op_definition
class ScatterAddOp(_IndexedOperation):
    """Sum updates into zeros at integer positions: `y[p, i0[b], ..., q] += u[p, b, q]`
    (repeated positions add up); the result type gives the big shape.

        %y = tidu.scatter_add %u[%i], axis = 1 : tensor<3x5xf64>, tensor<5xi64> -> tensor<3x8xf64>
    """

    name = "tidu.scatter_add"

    def __init__(
        self,
        updates: SSAValue | Operation,
        indices: Sequence[SSAValue | Operation],
        axis: int,
        shape: Sequence[int],
    ) -> None:
        super().__init__(
            operands=[updates, indices],
            result_types=[TensorType(_tensor(updates).element_type, shape)],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    def small_and_big(self) -> tuple[TensorType, TensorType]:
        return self.data.type, self.result.type  # type: ignore[return-value]


__all__ = [
    "ConcatenateOp", "GatherOp", "PadOp", "ScatterAddOp", "SliceOp", "parse_signature",
    "print_signature", "verify_window",
]  # fmt: skip

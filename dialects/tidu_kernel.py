"""The structural ops of the fused-kernel pipeline: `tidu.kernel` and `tidu.yield`.

A kernel is a fused loop nest over its `domain` (the iteration sizes). Its body computes on element
scalars with the elementwise tidu ops:

    %r:2 = tidu.kernel ins(%x, %y : tensor<8xf64>, tensor<8xf64>) domain [8]
             maps [[0], [0]] -> [[0], []] {
    ^bb0(%a: f64, %b: f64):
      %m = tidu.mul %a, %b : f64
      tidu.yield %m, %m : f64, f64
    } : tensor<8xf64>, tensor<f64>

(The op prints on one line up to the region; it is wrapped here for width.)

`operand_maps[i][k]` is the iteration dimension that indexes dimension k of operand
i, or -1 for a size-1 dimension read at index 0 (broadcast). `result_maps[j][k]` is
the iteration dimension that indexes dimension k of result j; the iteration
dimensions missing from a result's map are summed over (a reduction).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerType, TensorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_base import (
    ElementKind,
    array_values,
    element_type,
    i64_array,
    verify_tensor,
)


def _listed(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A fused loop nest; see the module docstring for the maps and an example.

    Custom form:
        tidu.kernel ins(operands : types) domain [sizes] maps [operand maps] ->
            [result maps] (attributes {...})? { body } : result types
    """

    name = "tidu.kernel"

    inputs = var_operand_def()
    outputs = var_result_def()
    domain = prop_def(DenseArrayBase.constr(i64))
    operand_maps = prop_def(ArrayAttr.constr(DenseArrayBase.constr(i64)))
    result_maps = prop_def(ArrayAttr.constr(DenseArrayBase.constr(i64)))
    body = region_def()

    traits = traits_def(Pure(), IsolatedFromAbove())

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        domain: Sequence[int],
        operand_maps: Sequence[Sequence[int]],
        result_maps: Sequence[Sequence[int]],
        body: Region | None = None,
    ) -> None:
        """Without `body`, the body is one empty block with the element arguments."""
        if body is None:
            arg_types = [element_type(SSAValue.get(value).type) for value in inputs]
            body = Region(Block(arg_types=arg_types))
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={
                "domain": i64_array(domain),
                "operand_maps": ArrayAttr([i64_array(m) for m in operand_maps]),
                "result_maps": ArrayAttr([i64_array(m) for m in result_maps]),
            },
            regions=[body],
        )

    # -- accessors -------------------------------------------------------------

    def operand_map(self, index: int) -> tuple[int, ...]:
        return array_values(self.operand_maps.data[index])

    def result_map(self, index: int) -> tuple[int, ...]:
        return array_values(self.result_maps.data[index])

    def reduced_dims(self, index: int) -> tuple[int, ...]:
        """The iteration dimensions summed over for result `index`."""
        kept = set(self.result_map(index))
        return tuple(d for d in range(len(self.domain)) if d not in kept)

    # -- verification ----------------------------------------------------------

    def verify_(self) -> None:
        domain = array_values(self.domain)
        if any(size < 0 for size in domain):
            raise VerifyException(
                f"{self.name} has the domain {_listed(domain)}, but sizes must not "
                "be negative."
            )
        for what, maps, values in (
            ("operand", self.operand_maps, self.inputs),
            ("result", self.result_maps, self.outputs),
        ):
            if len(maps) != len(values):
                raise VerifyException(
                    f"{self.name} has {len(maps)} {what}_maps for {len(values)} {what}s; it "
                    f"needs one map per {what}."
                )
        if not self.outputs:
            raise VerifyException(f"{self.name} must have at least one result.")
        for index, value in enumerate(self.inputs):
            tensor = verify_tensor(self, f"operand {index}", value.type, ElementKind.ANY)
            self._verify_map("operand", index, tensor, domain)
        for index, value in enumerate(self.outputs):
            tensor = verify_tensor(self, f"result {index}", value.type, ElementKind.ANY)
            self._verify_map("result", index, tensor, domain)
            self._verify_reduction(index, tensor)
        self._verify_body()

    def _verify_map(
        self, what: str, index: int, tensor: TensorType, domain: tuple[int, ...]
    ) -> None:
        """The map of operand or result ``index``: per dimension of ``tensor``, a distinct
        iteration dimension of the same size (or, for an operand, -1: a size-1 dimension
        read at index 0)."""
        mapping = self.operand_map(index) if what == "operand" else self.result_map(index)
        shape = tensor.get_shape()
        if len(mapping) != len(shape):
            raise VerifyException(
                f"{self.name} {what} {index} ({tensor}) has the map {_listed(mapping)}, but "
                f"it needs one entry per {what} dimension ({len(shape)})."
            )
        seen: set[int] = set()
        for dim, (size, it) in enumerate(zip(shape, mapping, strict=True)):
            if it == -1 and what == "operand":
                if size != 1:
                    raise VerifyException(
                        f"{self.name} operand {index} ({tensor}) maps dimension {dim} to -1 "
                        f"(broadcast), but only a dimension of size 1 can, and it has {size}."
                    )
                continue
            if not 0 <= it < len(domain):
                raise VerifyException(
                    f"{self.name} {what} {index} maps dimension {dim} to iteration dimension "
                    f"{it}, which is out of range for the domain {_listed(domain)}."
                )
            if it in seen:
                raise VerifyException(
                    f"{self.name} {what} {index} has the map {_listed(mapping)}, which uses "
                    f"iteration dimension {it} twice."
                )
            seen.add(it)
            if size != domain[it]:
                raise VerifyException(
                    f"{self.name} {what} {index} ({tensor}) maps dimension {dim} of size "
                    f"{size} to iteration dimension {it} of size {domain[it]}; the sizes must "
                    "be equal."
                )

    def _verify_reduction(self, index: int, tensor: TensorType) -> None:
        """A result summed over some iteration dimensions has a numeric element type."""
        reduced = self.reduced_dims(index)
        element = tensor.element_type
        assert isinstance(element, Attribute)
        if reduced and not ElementKind.NUMERIC.accepts(element):
            raise VerifyException(
                f"{self.name} result {index} sums over iteration dimensions {_listed(reduced)}, "
                f"but its element type {element} cannot be summed."
            )

    def _verify_body(self) -> None:
        blocks = list(self.body.blocks)
        if len(blocks) != 1:
            raise VerifyException(
                f"{self.name} must have a body of exactly one block, but it has {len(blocks)}."
            )
        block = blocks[0]
        expected_args = [element_type(v.type) for v in self.inputs]
        if list(block.arg_types) != expected_args:
            raise VerifyException(
                f"{self.name} body arguments must be the element types of the operands "
                f"({', '.join(map(str, expected_args)) or 'none'}), but they are "
                f"({', '.join(map(str, block.arg_types)) or 'none'})."
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException(f"{self.name} body must end with tidu.yield.")
        expected_yield = [element_type(v.type) for v in self.outputs]
        yielded = list(terminator.values.types)
        if yielded != expected_yield:
            raise VerifyException(
                f"{self.name} body must yield the element types of the results "
                f"({', '.join(map(str, expected_yield))}), but it yields "
                f"({', '.join(map(str, yielded)) or 'nothing'})."
            )

    # -- custom syntax ---------------------------------------------------------

    def print(self, printer: Printer) -> None:
        printer.print_string(" ins(")
        if self.inputs:
            printer.print_list(self.inputs, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list(self.inputs.types, printer.print_attribute)
        printer.print_string(") domain ")
        _print_ints(printer, array_values(self.domain))
        printer.print_string(" maps ")
        _print_maps(printer, self.operand_maps)
        printer.print_string(" -> ")
        _print_maps(printer, self.result_maps)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)
        if self.outputs:
            printer.print_string(" : ")
            printer.print_list(self.outputs.types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        parser.parse_keyword("ins")
        parser.parse_punctuation("(")
        position = parser.pos
        unresolved: list[UnresolvedOperand] = []
        types: list[Attribute] = []
        if parser.parse_optional_punctuation(")") is None:
            unresolved = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
        inputs = parser.resolve_operands(unresolved, types, position)
        parser.parse_keyword("domain")
        domain = _parse_ints(parser)
        parser.parse_keyword("maps")
        operand_maps = _parse_maps(parser)
        parser.parse_punctuation("->")
        result_maps = _parse_maps(parser)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation(":") is not None:
            result_types = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_type
            )
        op = cls.create(
            operands=inputs,
            result_types=result_types,
            properties={
                "domain": i64_array(domain),
                "operand_maps": ArrayAttr([i64_array(m) for m in operand_maps]),
                "result_maps": ArrayAttr([i64_array(m) for m in result_maps]),
            },
            regions=[body],
        )
        if attributes is not None:
            op.attributes |= attributes.data
        return op


def _print_ints(printer: Printer, values: Sequence[int]) -> None:
    with printer.in_square_brackets():
        printer.print_list(values, lambda v: printer.print_string(str(v)))


def _print_maps(printer: Printer, maps: ArrayAttr[DenseArrayBase[IntegerType]]) -> None:
    with printer.in_square_brackets():
        printer.print_list(maps.data, lambda m: _print_ints(printer, array_values(m)))


def _parse_ints(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
    )


def _parse_maps(parser: Parser) -> list[list[int]]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_ints(parser))


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of a `tidu.kernel` body: one element scalar per kernel result.

    tidu.yield %m, %s : f64, f64
    """

    name = "tidu.yield"

    values = var_operand_def()

    traits = traits_def(Pure(), IsTerminator())

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue | Operation) -> None:
        super().__init__(operands=[values])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and not isinstance(parent, KernelOp):
            raise VerifyException(
                f"{self.name} terminates the body of a tidu.kernel, but its parent is "
                f"{parent.name}."
            )


__all__ = ["KernelOp", "YieldOp"]

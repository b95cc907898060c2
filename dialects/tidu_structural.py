"""The structural ops of the `tidu` dialect, made from their primitives' fields.

A structural primitive (a scan, a reduction, a layout op) declares its parameters once,
as the fields of its dataclass (`ops.ir_fields`). Its dialect op is made from them by
`structural`: the name `tidu.<mnemonic>`, one property per property field, and one
syntax for all of them: the operands, each valued property as `, keyword = value`, the
flags that are set, then the types (several results in parentheses, `-> (R0, R1)`: the
linear-algebra family, `tidu_linalg`):

    %y = tidu.cum_sum %x, axis = 0 reverse : tensor<8x3xf64> -> tensor<8x3xf64>
    %s = tidu.linear_scan %a, %b, axis = 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x5xf32>
    %r = tidu.reduce_sum %x, axes = [0] : tensor<4x8xf64> -> tensor<8xf64>
    %t = tidu.reshape %x : tensor<4x8xf64> -> tensor<32xf64>

`of_primitive` and `to_primitive` are the import and export between a primitive and
its op (what `compiler.to_tidu` calls). A family class (`AlongAxisOperation`,
`ReduceOperation`, `ArgExtremumOperation`, ...) adds what its ops share: the operand and
result definitions, builders and the verifier; `tidu_table` makes an op of every
structural primitive on its family's class, or on `TypeRuleOperation`, which verifies
by the primitive's own type rule, when it has none. A hand-written structural op (its
own builder, verifier or canonicalization) is a class decorated with `structural`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Self, TypeVar, cast

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, SSAValue
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

from tidu_compile.ops import TensorOp
from tidu_compile.ops.base import TensorType as OpType
from tidu_compile.ops.ir_fields import IrField, Kind, from_ir, ir_fields

from .tidu_base import (
    DTYPE_ELEMENT_TYPES,
    ElementKind,
    array_values,
    i64_array,
    verify_tensor,
    verify_value_type,
)
from .tidu_indexing import print_signature

Value = int | tuple[int, ...] | bool

_PROPERTY_DEFS: dict[Kind, Callable[[], Any]] = {
    Kind.INT: lambda: prop_def(IntegerAttr.constr(i64)),
    Kind.INTS: lambda: prop_def(DenseArrayBase.constr(i64)),
    Kind.FLAG: lambda: opt_prop_def(UnitAttr),
}


def _encoded(kind: Kind, value: Value) -> Attribute | None:
    """The property of a field value (``None``: a flag that is not set)."""
    if kind is Kind.INT:
        return IntegerAttr(cast(int, value), i64)
    if kind is Kind.INTS:
        return i64_array(cast(tuple[int, ...], value))
    return UnitAttr() if value else None


def _decoded(kind: Kind, attribute: Attribute | None) -> Value:
    if kind is Kind.INT:
        return cast(IntegerAttr, attribute).value.data
    if kind is Kind.INTS:
        return tuple(array_values(cast(DenseArrayBase[IntegerType], attribute)))
    return attribute is not None


def _printed(kind: Kind, value: Value) -> str:
    if kind is Kind.INTS:
        return "[" + ", ".join(str(v) for v in cast(tuple[int, ...], value)) + "]"
    return str(value)


def _parsed(kind: Kind, parser: Parser) -> Attribute:
    if kind is Kind.INT:
        return IntegerAttr(parser.parse_integer(allow_boolean=False), i64)
    values = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
    )
    return i64_array(values)


def op_type(type_: Attribute) -> OpType:
    """The primitive-level type (shape, dtype name) of a tidu tensor type."""
    tensor = cast(TensorType, type_)
    element = tensor.element_type
    dtype = next(name for name, known in DTYPE_ELEMENT_TYPES.items() if known == element)
    return OpType(tuple(tensor.get_shape()), dtype)


class StructuralOperation(IRDLOperation):
    """Base of the ops made from a structural primitive's fields (module docstring)."""

    #: The primitive the op computes, and its fields as the op holds them.
    PRIMITIVE: ClassVar[type[TensorOp]]
    FIELDS: ClassVar[tuple[IrField, ...]]

    @classmethod
    def family_constants(cls, primitive: type[TensorOp]) -> dict[str, Any]:
        """The class constants a family derives from the primitive (``COMBINER``...)."""
        return {}

    @classmethod
    def of_primitive(
        cls, primitive: TensorOp, operands: Sequence[SSAValue], result_types: Sequence[Attribute]
    ) -> Self:
        """The op computing ``primitive`` on ``operands`` (its import row)."""
        properties = {}
        for field in cls.FIELDS:
            if field.kind is not None:
                encoded = _encoded(field.kind, getattr(primitive, field.name))
                if encoded is not None:
                    properties[field.name] = encoded
        return cls.create(
            operands=list(operands), result_types=list(result_types), properties=properties
        )

    def to_primitive(self) -> TensorOp:
        """The primitive this op computes (its export row)."""
        values = {f.name: _decoded(f.kind, self.properties.get(f.name))
                  for f in self.FIELDS if f.kind is not None}  # fmt: skip
        shapes = [cast(TensorType, v.type).get_shape() for v in self.operands]
        result = cast(TensorType, self.results[0].type).get_shape()
        return cast(TensorOp, from_ir(self.PRIMITIVE, values, shapes, result))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        for field in self.FIELDS:
            if field.kind in (Kind.INT, Kind.INTS):
                value = _decoded(field.kind, self.properties.get(field.name))
                printer.print_string(f", {field.keyword} = {_printed(field.kind, value)}")
        for field in self.FIELDS:
            if field.kind is Kind.FLAG and field.name in self.properties:
                printer.print_string(f" {field.keyword}")
        printer.print_op_attributes(self.attributes)
        if len(self.results) == 1:
            print_signature(printer, [v.type for v in self.operands], self.results[0].type)
            return
        printer.print_string(" : ")  # several results (the linalg family): ``-> (R0, R1)``
        printer.print_list([v.type for v in self.operands], printer.print_attribute)
        printer.print_string(" -> (")
        printer.print_list([r.type for r in self.results], printer.print_attribute)
        printer.print_string(")")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        position = parser.pos
        valued = [f for f in cls.FIELDS if f.kind in (Kind.INT, Kind.INTS)]
        unresolved = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(",") is not None:
            if valued and parser.parse_optional_keyword(valued[0].keyword) is not None:
                break
            unresolved.append(parser.parse_unresolved_operand())
        else:
            if valued:
                parser.raise_error(f"{cls.name} expects `, {valued[0].keyword} = ...` after "
                                   "its operands")  # fmt: skip
        properties: dict[str, Attribute] = {}
        for index, field in enumerate(valued):
            assert field.kind is not None
            if index:
                parser.parse_punctuation(",")
                parser.parse_keyword(field.keyword)
            parser.parse_punctuation("=")
            properties[field.name] = _parsed(field.kind, parser)
        for field in cls.FIELDS:
            if field.kind is Kind.FLAG and parser.parse_optional_keyword(field.keyword):
                properties[field.name] = UnitAttr()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation("->")
        if parser.parse_optional_punctuation("(") is not None:
            results = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
        else:
            results = [parser.parse_type()]
        operands = parser.resolve_operands(unresolved, types, position)
        return cls.create(operands=operands, result_types=results, properties=properties,
                          attributes=attributes)  # fmt: skip


class TypeRuleOperation(StructuralOperation):
    """A structural op of no family: its operands and one result, verified by its
    primitive's own checks (the fields' invariants, then ``infer_types``)."""

    inputs = var_operand_def()
    result = result_def()

    traits = traits_def(Pure())

    def verify_(self) -> None:
        if self.PRIMITIVE.kernel_mask and not isinstance(self.result.type, TensorType):
            self._verify_scalar()
            return
        for i, value in enumerate(self.inputs):
            verify_tensor(self, f"operand {i}", value.type, ElementKind.ALL)
        verify_tensor(self, "result", self.result.type, ElementKind.ALL)
        try:
            primitive = self.to_primitive()
            (expected,) = primitive.infer_types(*(op_type(v.type) for v in self.inputs))
        except (ValueError, TypeError) as error:
            raise VerifyException(f"{self.name}: {error}") from error
        if op_type(self.result.type) != expected:
            raise VerifyException(
                f"{self.name} gives {expected} by the type rule of {primitive!r}, but the "
                f"result is {self.result.type}."
            )


    def _verify_scalar(self) -> None:
        """A mask op in a ``tidu.kernel`` body: one scalar operand, a result of its type."""
        parent = self.parent_op()
        if parent is None or parent.name != "tidu.kernel":
            raise VerifyException(f"{self.name} on scalars must be in a tidu.kernel body.")
        if len(self.inputs) != 1 or self.inputs[0].type != self.result.type:
            raise VerifyException(f"{self.name} in a kernel body takes one scalar and gives "
                                  "one of its type.")  # fmt: skip
        verify_value_type(self, "result", self.result.type, allow_scalar=True)


Op = TypeVar("Op", bound=type[StructuralOperation])


def _syntax(primitive: type[TensorOp], fields: Sequence[IrField]) -> str:
    """The op's form, ``%y = tidu.cum_sum %x0, axis = N [reverse] : T0 -> R``."""
    operands = [f"%x{i}" for i in range(primitive.input_count)]
    valued = "".join(f", {f.keyword} = {'N' if f.kind is Kind.INT else '[N, ...]'}"
                     for f in fields if f.kind in (Kind.INT, Kind.INTS))  # fmt: skip
    flags = "".join(f" [{f.keyword}]" for f in fields if f.kind is Kind.FLAG)
    types = ", ".join(f"T{i}" for i in range(primitive.input_count))
    return f"%y = tidu.{primitive.mnemonic} {', '.join(operands)}{valued}{flags} : {types} -> R"


def structural(primitive: type[TensorOp]) -> Callable[[Op], Op]:
    """Make the decorated class the dialect op of ``primitive``: its name, a property
    per property field, its family's constants; then ``irdl_op_definition``."""

    def make(op: Op) -> Op:
        fields = ir_fields(primitive)
        constants = {"PRIMITIVE": primitive, "FIELDS": fields, **op.family_constants(primitive)}
        op.name = f"tidu.{primitive.mnemonic}"
        annotations = dict(op.__dict__.get("__annotations__", {}))
        for name, value in constants.items():
            setattr(op, name, value)
            annotations[name] = "ClassVar"  # a constant, as irdl_op_definition asks
        op.__annotations__ = annotations
        for field in fields:
            if field.kind is not None:
                setattr(op, field.name, _PROPERTY_DEFS[field.kind]())
        irdl_op_definition(op)  # completes the class in place
        return op

    return make


def structural_op(
    primitive: type[TensorOp], family: type[StructuralOperation]
) -> type[StructuralOperation]:
    """The generated dialect op of ``primitive`` on its family's class: as if written
    ``@structural(primitive) class <Name>Op(family)`` with the primitive's summary and the
    op's form as its docstring."""
    summary = (primitive.__doc__ or primitive.__name__).strip().split("\n\n")[0]
    form = _syntax(primitive, ir_fields(primitive))
    namespace = {
        "__doc__": f"{summary}\n\n    {form}\n",
        "__module__": __name__,
        "__qualname__": f"{primitive.__name__}Op",
        "__annotations__": {},
    }
    return structural(primitive)(type(f"{primitive.__name__}Op", (family,), namespace))


__all__ = [
    "StructuralOperation", "TypeRuleOperation", "op_type", "structural", "structural_op",
]  # fmt: skip

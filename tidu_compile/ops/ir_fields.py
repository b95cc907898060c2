"""How a structural primitive's fields appear in its ``tidu`` dialect op.

A structural primitive (a scan, a reduction, a layout op) is declared once: the frozen
dataclass of its block. Its dialect op, the op's syntax and the import and export
between the two are made from the fields (``dialects/tidu_structural.py``). A field is
a property of the dialect op, of the kind its annotation says, unless it is the shape
of one of the op's types::

    @primitive
    class CumProd(AlongAxis):
        axis: int                                    # the property   axis = 1
        shape: tuple[int, ...] = shape_of_result()   # the result type's shape

    %y = tidu.cum_prod %x, axis = 1 : tensor<2x8xf64> -> tensor<2x8xf64>

=====================  ============================  ===================================
annotation             property                      printed
=====================  ============================  ===================================
``int``                ``i64``                       ``axis = 1``
``tuple[int, ...]``    ``array<i64>``                ``axes = [0, 2]``
``bool = False``       ``unit``, present when True   ``reverse`` (after the others)
=====================  ============================  ===================================

``printed_as("dims")`` prints a property under a keyword other than its field name
(``BroadcastInDim.broadcast_dimensions``). Any other annotation is an error naming the
field when the dialect op is made: such an op is written by hand in the dialect.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from enum import Enum
from functools import cache
from typing import Any

__all__ = [
    "IrField", "Kind", "Source", "from_ir", "ir_fields", "printed_as", "shape_of_operand",
    "shape_of_result",
]  # fmt: skip


class Source(Enum):
    """Where the dialect op keeps a field."""

    PROPERTY = "property"
    RESULT_SHAPE = "result shape"
    OPERAND_SHAPE = "operand shape"


class Kind(Enum):
    """The kind of a property (from the field's annotation)."""

    INT = "int"
    INTS = "tuple[int, ...]"
    FLAG = "bool"


_KINDS: dict[Any, Kind] = {
    "int": Kind.INT, int: Kind.INT,
    "bool": Kind.FLAG, bool: Kind.FLAG,
    "tuple[int, ...]": Kind.INTS, tuple[int, ...]: Kind.INTS,
}  # fmt: skip

#: The metadata key of the field specifiers below.
_TIDU = "tidu"


@dataclasses.dataclass(frozen=True)
class IrField:
    """One field of a primitive as its dialect op holds it."""

    name: str
    source: Source
    #: The property's kind (``None`` for a shape).
    kind: Kind | None = None
    #: The word printed before a property's value (a flag: the word itself).
    keyword: str = ""
    #: The operand whose shape an ``OPERAND_SHAPE`` field is.
    operand: int = 0


def shape_of_result() -> Any:
    """A field that is the shape of the dialect op's result type."""
    return dataclasses.field(metadata={_TIDU: (Source.RESULT_SHAPE, 0)})


def shape_of_operand(index: int = 0) -> Any:
    """A field that is the shape of the type of the dialect op's operand ``index``."""
    return dataclasses.field(metadata={_TIDU: (Source.OPERAND_SHAPE, index)})


def printed_as(keyword: str) -> Any:
    """A property printed as ``keyword = value`` rather than under its field name."""
    return dataclasses.field(metadata={_TIDU: (Source.PROPERTY, keyword)})


@cache
def ir_fields(primitive: type) -> tuple[IrField, ...]:
    """The fields of ``primitive`` (a dataclass) as its dialect op holds them, in order;
    ``TypeError`` naming the field the dialect cannot hold."""
    found = []
    for field in dataclasses.fields(primitive):
        source, detail = field.metadata.get(_TIDU, (Source.PROPERTY, field.name))
        if source is not Source.PROPERTY:
            found.append(IrField(field.name, source, operand=detail))
            continue
        kind = _KINDS.get(field.type)
        if kind is None:
            raise TypeError(
                f"{primitive.__name__}.{field.name}: a {field.type} field has no property "
                "kind (int, tuple[int, ...], bool); write the dialect op by hand"
            )
        if kind is Kind.FLAG and field.default is not False:
            raise TypeError(f"{primitive.__name__}.{field.name}: a flag must default to False")
        found.append(IrField(field.name, source, kind, detail))
    return tuple(found)


def shape_fields(primitive: type) -> tuple[str, ...]:
    """The names of ``primitive``'s fields that are shapes of its operands or result
    (declared with ``shape_of_result()`` or ``shape_of_operand()``)."""
    return tuple(
        field.name for field in dataclasses.fields(primitive)
        if field.metadata.get(_TIDU, (Source.PROPERTY,))[0] is not Source.PROPERTY
    )  # fmt: skip


def from_ir(
    primitive: type,
    properties: Mapping[str, int | tuple[int, ...] | bool],
    operand_shapes: Sequence[tuple[int, ...]],
    result_shape: tuple[int, ...],
) -> Any:
    """The primitive instance of a dialect op's properties and types."""
    values: dict[str, Any] = {}
    for f in ir_fields(primitive):
        if f.source is Source.PROPERTY:
            values[f.name] = properties[f.name]
        elif f.source is Source.RESULT_SHAPE:
            values[f.name] = tuple(result_shape)
        else:
            values[f.name] = tuple(operand_shapes[f.operand])
    return primitive(**values)

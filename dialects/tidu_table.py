"""The `tidu` dialect's op list, derived from the primitive op table (`ops.OP_TABLE`).

Every primitive `P` with mnemonic `m` has exactly one dialect op named `tidu.m`:

* the hand-written op of that name when there is one (`HAND_WRITTEN_OPS`): an op with
  syntax, verification, traits or canonicalization of its own (`tidu.add`,
  `tidu.compare`, `tidu.pow`, `tidu.dot_general`, `tidu.broadcast_in_dim`, ...);
* otherwise, for an elementwise primitive without parameters, an op generated here
  from the primitive: a subclass of the unary or binary elementwise family with the
  primitive's name, element kind (``element_kind`` of its dtypes) and commutativity, and
  a docstring made from the primitive's. For ``ops.Exp`` that is, as if written::

      @irdl_op_definition
      class ExpOp(UnaryElementwiseOperation):
          \"\"\"``exp(x)``; ``dy = dx * y``.

          %y = tidu.exp %x : tensor<4xf64>
          \"\"\"

          name = "tidu.exp"

* otherwise, for a structural primitive, the op made from its fields
  (`tidu_structural`) on its family's class (`FAMILIES`, by the primitive's base
  class): for ``ops.CumSum``, as if written::

      @structural(ops.CumSum)
      class CumSumOp(AlongAxisOperation):
          \"\"\"Cumulative sum along ``axis`` (from the end when ``reverse``).

          %y = tidu.cum_sum %x0, axis = N [reverse] : T0 -> R
          \"\"\"

A primitive with none is an error at import, naming it: nothing is left without an op.
`op_class(P)` and `primitive_class(op)` map between the two sides; passes key their
tables by primitive class (`SCALAR_LOWERINGS[ops.Exp]`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import ClassVar

from xdsl.irdl import IRDLOperation, irdl_op_definition, traits_def
from xdsl.traits import Commutative, Pure

from tidu_compile import ops
from tidu_compile.ops import OP_TABLE, Elementwise, TensorOp

from .tidu_base import ElementKind, element_kind
from .tidu_constant import ConstantOp
from .tidu_control import CondOp, ScanOp, WhileLoopOp
from .tidu_elementwise import (
    AddOp,
    BinaryElementwiseOperation,
    CompareOp,
    ConjOp,
    ConvertOp,
    FullLikeOp,
    ImagOp,
    MulOp,
    NegOp,
    PowOp,
    RealOp,
    ScaleOp,
    SelectOp,
    ShiftOp,
    SinCosOp,
    ToComplexOp,
    UnaryElementwiseOperation,
)
from .tidu_indexing import ConcatenateOp, GatherOp, PadOp, ScatterAddOp, SliceOp
from .tidu_linalg import LinalgOperation
from .tidu_reduce import ArgExtremumOperation, ReduceOperation
from .tidu_scan import AlongAxisOperation
from .tidu_shape import BroadcastInDimOp, DotGeneralOp, ReshapeOp, TransposeOp
from .tidu_structural import StructuralOperation, TypeRuleOperation, structural_op

HAND_WRITTEN_OPS: tuple[type[IRDLOperation], ...] = (
    # elementwise with syntax, traits or canonicalization of their own
    AddOp, MulOp, NegOp, ConjOp, RealOp, ImagOp, SinCosOp, CompareOp, SelectOp,
    PowOp, ScaleOp, ShiftOp, FullLikeOp, ToComplexOp, ConvertOp, ConstantOp,
    # shape: structural with builders and canonicalization; dot_general
    BroadcastInDimOp, ReshapeOp, TransposeOp, DotGeneralOp,
    # indexing and joining
    SliceOp, PadOp, ConcatenateOp, GatherOp, ScatterAddOp,
    # control flow: traced bodies, run as library steps
    ScanOp, CondOp, WhileLoopOp,
)  # fmt: skip

FAMILIES: dict[type[TensorOp], type[StructuralOperation]] = {
    ops.AlongAxis: AlongAxisOperation,  # scans and argsort (library calls)
    ops.Reduction: ReduceOperation,  # fused into kernels by their combiner
    ops.ArgExtremum: ArgExtremumOperation,  # argmax, argmin (library calls)
    ops.LinalgOp: LinalgOperation,  # solves and factorisations (LAPACK library calls)
}
"""Primitive family -> the class its structural ops are made on (else `TypeRuleOperation`)."""


def _generated_op(primitive: type[TensorOp]) -> type[IRDLOperation]:
    """The dialect op of a parameterless elementwise primitive (see the module docstring)."""
    base: type[IRDLOperation]
    if primitive.input_count == 1:
        base, example = UnaryElementwiseOperation, "%y = tidu.{m} %x : tensor<4xf64>"
    else:
        base, example = BinaryElementwiseOperation, "%z = tidu.{m} %x, %y : tensor<4xf64>"
    summary = (primitive.__doc__ or primitive.__name__).strip().splitlines()[0]
    kind = element_kind(primitive.allowed_dtypes)  # type: ignore[attr-defined]
    traits = [Pure(), Commutative()] if primitive.commutative else [Pure()]
    namespace = {
        "name": f"tidu.{primitive.mnemonic}",
        "__doc__": f"{summary}\n\n    {example.format(m=primitive.mnemonic)}\n",
        "__module__": __name__,
        "__qualname__": f"{primitive.__name__}Op",
        "__annotations__": {"ELEMENT_KIND": ClassVar[ElementKind]},
        "ELEMENT_KIND": kind,
        "traits": traits_def(*traits),
    }
    return irdl_op_definition(type(f"{primitive.__name__}Op", (base,), namespace))


def _generatable(primitive: type[TensorOp]) -> bool:
    return (
        issubclass(primitive, Elementwise)
        and primitive.input_count in (1, 2)
        and not dataclasses.fields(primitive)  # type: ignore[arg-type]
    )


def family_of(primitive: type[TensorOp]) -> type[StructuralOperation]:
    """The class a structural primitive's op is made on: its nearest family's."""
    for base in primitive.__mro__:
        if base in FAMILIES:
            return FAMILIES[base]
    return TypeRuleOperation


def derive_ops(
    hand_written: Iterable[type[IRDLOperation]],
) -> tuple[
    dict[type[TensorOp], type[IRDLOperation]],
    tuple[type[IRDLOperation], ...],
    tuple[type[IRDLOperation], ...],
]:
    """Every primitive's dialect op, the elementwise ops generated for it and the
    structural ones made from fields (see the docstring)."""
    by_name = {op.name: op for op in hand_written}
    op_of: dict[type[TensorOp], type[IRDLOperation]] = {}
    generated: list[type[IRDLOperation]] = []
    made: list[type[IRDLOperation]] = []
    for mnemonic, primitive in OP_TABLE.items():
        op = by_name.get(f"tidu.{mnemonic}")
        if op is None and _generatable(primitive):
            op = _generated_op(primitive)
            generated.append(op)
        elif op is None:
            if issubclass(primitive, Elementwise):
                raise TypeError(
                    f"primitive {primitive.__name__} has no tidu.{mnemonic} op: write one in "
                    "the dialect (an elementwise op with parameters)"
                )
            op = structural_op(primitive, family_of(primitive))
            made.append(op)
        op_of[primitive] = op
    return op_of, tuple(generated), tuple(made)


OP_OF_PRIMITIVE, GENERATED_OPS, STRUCTURAL_OPS = derive_ops(HAND_WRITTEN_OPS)
"""Primitive class -> its dialect op class; the elementwise ops generated from the op
table; the structural ops made from their primitives' fields."""

PRIMITIVE_OF_OP: dict[type[IRDLOperation], type[TensorOp]] = {
    op: primitive for primitive, op in OP_OF_PRIMITIVE.items()
}
"""Dialect op class -> the primitive class it computes (the kernel and fusion ops have none)."""


def op_class(primitive: type[TensorOp]) -> type[IRDLOperation]:
    """The dialect op of a primitive class (`op_class(ops.Exp)` is `tidu.exp`'s class)."""
    try:
        return OP_OF_PRIMITIVE[primitive]
    except KeyError:
        raise KeyError(f"primitive {primitive.__name__} is not in the op table") from None


def primitive_class(op: type[IRDLOperation]) -> type[TensorOp] | None:
    """The primitive class a dialect op computes, or None (kernel, yield, other dialects)."""
    return PRIMITIVE_OF_OP.get(op)


__all__ = [
    "FAMILIES", "GENERATED_OPS", "HAND_WRITTEN_OPS", "OP_OF_PRIMITIVE", "PRIMITIVE_OF_OP",
    "STRUCTURAL_OPS", "derive_ops", "family_of", "op_class", "primitive_class",
]  # fmt: skip

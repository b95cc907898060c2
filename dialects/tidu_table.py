"""The `tidu` dialect's op list, derived from the primitive op table (`ops.OP_TABLE`).

Every primitive `P` with mnemonic `m` has exactly one dialect op named `tidu.m`:

* the hand-written op of that name when there is one: an op with syntax, verification,
  traits or canonicalization of its own (`tidu.add`, `tidu.compare`, `tidu.pow`,
  `tidu.broadcast_in_dim`, ...);
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

A primitive with neither is an error at import, naming it: nothing is left without an op.
`op_class(P)` and `primitive_class(op)` map between the two sides; passes key their
tables by primitive class (`SCALAR_LOWERINGS[ops.Exp]`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import ClassVar

from xdsl.irdl import IRDLOperation, irdl_op_definition, traits_def
from xdsl.traits import Commutative, Pure

from tidu_compile.ops import COMPLEX_DTYPES, OP_TABLE, Elementwise, TensorOp
from tidu_compile.ops.base import INTEGER_DTYPES

from .tidu_base import ElementKind
from .tidu_elementwise import BinaryElementwiseOperation, UnaryElementwiseOperation


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


def element_kind(dtypes: Sequence[str]) -> ElementKind:
    """The element kind of an op whose primitive allows ``dtypes``: real only, ordered
    (reals, integers, bool), numeric (reals and complex), arithmetic (numeric and
    integers) or all of them (and bool)."""
    integers = any(d in INTEGER_DTYPES for d in dtypes)
    complex_ = any(d in COMPLEX_DTYPES for d in dtypes)
    if integers and complex_:
        return ElementKind.ALL if "bool" in dtypes else ElementKind.ARITHMETIC
    if integers:
        return ElementKind.ORDERED
    return ElementKind.NUMERIC if complex_ else ElementKind.REAL


def _generatable(primitive: type[TensorOp]) -> bool:
    return (
        issubclass(primitive, Elementwise)
        and primitive.input_count in (1, 2)
        and not dataclasses.fields(primitive)  # type: ignore[arg-type]
    )


def derive_ops(
    hand_written: Iterable[type[IRDLOperation]],
) -> tuple[dict[type[TensorOp], type[IRDLOperation]], tuple[type[IRDLOperation], ...]]:
    """Every primitive's dialect op, and the ops generated for it (see the docstring)."""
    by_name = {op.name: op for op in hand_written}
    op_of: dict[type[TensorOp], type[IRDLOperation]] = {}
    generated: list[type[IRDLOperation]] = []
    for mnemonic, primitive in OP_TABLE.items():
        op = by_name.get(f"tidu.{mnemonic}")
        if op is None:
            if not _generatable(primitive):
                raise TypeError(
                    f"primitive {primitive.__name__} has no tidu.{mnemonic} op: write one in "
                    "the dialect (it has parameters or is not elementwise)"
                )
            op = _generated_op(primitive)
            generated.append(op)
        op_of[primitive] = op
    return op_of, tuple(generated)


__all__ = ["derive_ops"]

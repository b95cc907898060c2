"""``convert-index-to-i64``: retype every ``index`` to ``i64`` in one walk.

LLVM has no ``index`` type, and xDSL's ``convert-ptr-to-llvm`` already hard-codes
64-bit addresses, so ``index`` becomes ``i64`` (x86-64/aarch64 hosts only).

One walk, no recursive ``TypeConversionPattern`` (that rebuilt type constraints
per op and cost ~10 ms a kernel): block arguments and op results are retyped in
place, and properties holding ``index`` (``arith.constant`` values, function
signatures) are rebuilt. ``arith.index_cast`` turns into what it means on
``i64``: nothing (``i64 <-> index``), ``arith.extsi`` or ``arith.trunci``.

Preconditions: no ``memref``/``affine``/``tensor``/``vector`` ops left (their
indices must stay ``index``): run it after ``convert-memref-to-ptr``. It runs
before ``convert-arith-to-llvm`` so that every pass in between leaves valid IR.

Before::

    func.func @f(%n: index) -> i32 {
      %c8 = arith.constant 8 : index
      %b = arith.muli %n, %c8 : index
      %w = arith.index_cast %b : index to i32
      func.return %w : i32
    }

After::

    func.func @f(%n: i64) -> i32 {
      %c8 = arith.constant 8 : i64
      %b = arith.muli %n, %c8 : i64
      %w = arith.trunci %b : i64 to i32
      func.return %w : i32
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from .errors import LoweringError
from .lowering_utils import map_types_in_attr, retype_in_place

_NEEDS_INDEX = ("memref.", "affine.", "tensor.", "vector.")


def convert_type(typ: Attribute) -> Attribute:
    """``typ`` with every ``index`` replaced by ``i64`` (same object if none)."""
    if isinstance(typ, IndexType):
        return i64
    if isinstance(typ, VectorType) and isinstance(typ.element_type, IndexType):
        return VectorType(i64, typ.get_shape())
    return typ


def _convert_attr(attr: Attribute) -> Attribute:
    """Rebuild the attribute kinds that can carry ``index``; same object if none."""
    if isinstance(attr, IntegerAttr) and isinstance(attr.type, IndexType):
        return IntegerAttr(attr.value.data, i64)
    return map_types_in_attr(attr, convert_type)


def _lower_index_cast(op: arith.IndexCastOp) -> None:
    """``index_cast`` on i64 is a no-op, a sign extension or a truncation."""
    source = op.input
    src_t = convert_type(source.type)
    dst_t = convert_type(op.result.type)
    assert isinstance(src_t, IntegerType) and isinstance(dst_t, IntegerType)
    if src_t.width.data == dst_t.width.data:
        op.result.replace_all_uses_with(source)
        Rewriter.erase_op(op)
        return
    new_op: Operation
    if src_t.width.data < dst_t.width.data:
        new_op = arith.ExtSIOp(source, dst_t)
    else:
        new_op = arith.TruncIOp(source, dst_t)
    Rewriter.replace_op(op, new_op)


@dataclass(frozen=True)
class ConvertIndexToI64Pass(ModulePass):
    """Replace ``index`` by ``i64`` in values, block arguments and signatures."""

    name = "convert-index-to-i64"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in list(op.walk()):
            if inner.name.startswith(_NEEDS_INDEX):
                raise LoweringError(
                    ConvertIndexToI64Pass.name,
                    inner.name, "needs index operands: lower it to pointers first"
                )
            if isinstance(inner, arith.IndexCastOp):
                _lower_index_cast(inner)
            else:
                retype_in_place(inner, convert_type, _convert_attr)

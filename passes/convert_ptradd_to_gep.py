"""``convert-ptradd-to-gep``: byte offsets on pointers as ``getelementptr inbounds i8``.

xDSL's ``convert-ptr-to-llvm`` turns ``ptr_xdsl.ptradd`` into ``ptrtoint`` /
``add`` / ``inttoptr``. LLVM cannot reason about addresses made that way, and
loop vectorization fails completely; a GEP restores ``<8 x double>`` loops.

Preconditions: run after ``convert-memref-to-ptr`` and ``convert-ptr-type-offsets``
and before ``convert-ptr-to-llvm``, which later rewrites ``!ptr_xdsl.ptr`` to
``!llvm.ptr`` (the casts below then become identities that
``reconcile-unrealized-casts`` removes). ``inbounds`` is sound because memref
accesses stay inside their allocation. An ``index`` offset gets an
``arith.index_cast`` to ``i64`` (a no-op once ``convert-index-to-i64`` ran);
integer offsets wider than 64 bits are rejected.

Before::

    %q = ptr_xdsl.ptradd %p, %off : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr

After::

    %0 = builtin.unrealized_conversion_cast %p : !ptr_xdsl.ptr to !llvm.ptr
    %1 = arith.index_cast %off : index to i64
    %2 = llvm.getelementptr inbounds %0[%1] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %q = builtin.unrealized_conversion_cast %2 : !llvm.ptr to !ptr_xdsl.ptr
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, ptr
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from .errors import LoweringError
from .lowering_utils import rewrite_each_op


class PtrAddToGEP(RewritePattern):
    """``ptr_xdsl.ptradd`` -> ``llvm.getelementptr inbounds i8`` between casts."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ptr.PtrAddOp, rewriter: PatternRewriter, /) -> None:
        new_ops: list[Operation] = []
        offset: SSAValue = op.offset
        if isinstance(offset.type, IndexType):
            cast = arith.IndexCastOp(offset, i64)
            new_ops.append(cast)
            offset = cast.result
        elif not isinstance(offset.type, IntegerType) or offset.type.width.data > 64:
            raise LoweringError(
                ConvertPtrAddToGEPPass.name,
                op.name, f"offset of type {offset.type}: expected index or <= i64"
            )
        # ``create``: what ``UnrealizedConversionCastOp.get`` and
        # ``GEPOp.from_mixed_indices(base, [offset], i8, inbounds=True)`` build, a third
        # of the time (every load and store of every kernel has its GEP)
        base = UnrealizedConversionCastOp.create(operands=[op.addr], result_types=[_LLVM_PTR])
        gep = llvm.GEPOp.create(operands=[base.results[0], offset], result_types=[_LLVM_PTR],
                                properties=dict(_BYTE_GEP))  # fmt: skip
        back = UnrealizedConversionCastOp.create(operands=[gep.result], result_types=[_PTR])
        rewriter.replace(op, [*new_ops, base, gep, back])


_LLVM_PTR = llvm.LLVMPointerType()
_PTR = ptr.PtrType()
#: The properties of ``getelementptr inbounds i8, %base[%offset]``.
_BYTE_GEP = {
    "rawConstantIndices": DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL]),
    "elem_type": i8,
    "noWrapFlags": IntegerAttr(0, 32),
    "inbounds": UnitAttr(),
}


@dataclass(frozen=True)
class ConvertPtrAddToGEPPass(ModulePass):
    """Rewrite every ``ptr_xdsl.ptradd`` as an ``inbounds`` byte GEP."""

    name = "convert-ptradd-to-gep"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_each_op(op, PtrAddToGEP())
        for inner in op.walk():
            if isinstance(inner, ptr.PtrAddOp):
                raise LoweringError(ConvertPtrAddToGEPPass.name, inner.name, "left over")

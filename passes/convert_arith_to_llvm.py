"""``convert-arith-to-llvm``: lower ``arith`` ops 1:1 to the ``llvm`` dialect.

xDSL 0.74 has no such pass (MLIR's lives in C++); this one is table-driven: each
pattern family below owns a dict from source op type to target op (or builder).

Preconditions:
  * no ``index`` types left (run ``convert-index-to-i64`` first): the ``llvm``
    ops only take signless integers, and ``arith.index_cast`` has no LLVM meaning;
  * scalars or 1-D vectors only (``llvm.fcmp`` is scalar in xDSL, so vector
    ``cmpf``/``maximumf``/``minimumf`` are rejected).

Option ``contract`` (default ``True``): every float add/sub/mul/div gets the
``contract`` fastmath flag, so LLVM may fuse ``a * b + c`` into one FMA (one
rounding instead of two). Flags already on an ``arith`` op are always kept.

Semantics worth knowing:
  * ``maximumf``/``minimumf`` propagate NaN and order ``-0 < +0``; LLVM's
    ``maxnum`` does neither, so they become ``fcmp`` + ``select`` (+ a bitwise
    AND/OR to settle ``max(+0, -0)``);
  * ``fptosi``/``fptoui`` become ``llvm.fptosi.sat``/``fptoui.sat`` intrinsic
    calls (xDSL's llvm dialect has no ``fptosi``): equal in range, saturating out
    of range where ``arith`` leaves poison;
  * ``uitofp`` from fewer than 64 bits is ``zext`` to i64 then ``sitofp``; from
    i64 it is an error, as are ``floordivsi``, ``ceildivsi``/``ceildivui`` and the
    extended multiplies.

Before::

    %s = arith.addf %a, %b : f64
    %c = arith.cmpf olt, %s, %a : f64
    %m = arith.select %c, %s, %a : f64

After::

    %s = llvm.fadd %a, %b {fastmathFlags = #llvm.fastmath<contract>} : f64
    %c = llvm.fcmp "olt" %s, %a : f64
    %m = llvm.select %c, %s, %a : i1, f64
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)

from .errors import LoweringError
from .lowering_utils import (
    check_no_leftover,
    element_type,
    has_index_type,
    intrinsic_suffix,
    llvm_fastmath,
    rewrite_each_op,
    same_width_int,
)

_FLOAT_BINARY: dict[type[Operation], type[llvm.AbstractFloatArithOp]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}

_INT_BINARY_OVERFLOW: dict[type[Operation], type[llvm.ArithmeticBinOpOverflow]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.ShLIOp: llvm.ShlOp,
}

_INT_BINARY: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
    arith.DivUIOp: llvm.UDivOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.RemUIOp: llvm.URemOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShRUIOp: llvm.LShrOp,
    arith.ShRSIOp: llvm.AShrOp,
}

# Integer min/max: the icmp predicate that selects the left operand.
_INT_MINMAX: dict[type[Operation], str] = {
    arith.MaxSIOp: "sgt",
    arith.MinSIOp: "slt",
    arith.MaxUIOp: "ugt",
    arith.MinUIOp: "ult",
}

_CASTS: dict[type[Operation], Callable[[SSAValue, Attribute], Operation]] = {
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.BitcastOp: llvm.BitcastOp,
}

# float -> int through the saturating intrinsics.
_SAT_CASTS: dict[type[Operation], str] = {
    arith.FPToSIOp: "llvm.fptosi.sat",
    arith.FPToUIOp: "llvm.fptoui.sat",
}

_UNSUPPORTED: dict[type[Operation], str] = {
    arith.FloorDivSIOp: "no floordivsi rule; expand it before lowering",
    arith.CeilDivSIOp: "no ceildivsi rule; expand it before lowering",
    arith.CeilDivUIOp: "no ceildivui rule; expand it before lowering",
    arith.AddUIExtendedOp: "extended arithmetic is not supported",
    arith.MulUIExtendedOp: "extended arithmetic is not supported",
    arith.MulSIExtendedOp: "extended arithmetic is not supported",
    arith.IndexCastOp: "index types must be gone: run convert-index-to-i64 first",
}


def _reject_index(op: Operation) -> None:
    if has_index_type(op):
        raise LoweringError(
            ConvertArithToLLVMPass.name,
            op.name, "index-typed value: run convert-index-to-i64 first"
        )


class FloatBinaryToLLVM(RewritePattern):
    """``arith.addf/subf/mulf/divf`` -> ``llvm.fadd/fsub/fmul/fdiv`` with fastmath flags."""

    def __init__(self, contract: bool) -> None:
        self.contract = contract

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        target = _FLOAT_BINARY.get(type(op))
        if target is None:
            return
        assert isinstance(op, arith.FloatingPointLikeBinaryOperation)
        flags = llvm_fastmath(op.fastmath, contract=self.contract)
        # ``create``: the op as its constructor builds it, a third of the time
        rewriter.replace(op, target.create(operands=[op.lhs, op.rhs],
                                           result_types=[op.result.type],
                                           properties={"fastmathFlags": flags}))  # fmt: skip


@functools.lru_cache(maxsize=64)
def _overflow_property(flags: Attribute) -> IntegerAttr:
    """The ``overflowFlags`` property of an ``llvm`` op for ``arith``'s overflow flags
    (what the op's constructor makes of an ``OverflowAttr``; cached: the index
    arithmetic of every kernel asks for one of a few)."""
    overflow = llvm.OverflowAttr([llvm.OverflowFlag(f.value) for f in flags.data])  # type: ignore[attr-defined]
    return IntegerAttr(overflow.to_int(), 32)


class IntBinaryToLLVM(RewritePattern):
    """Integer arithmetic, logic and shifts, keeping ``nsw``/``nuw`` flags."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (with_overflow := _INT_BINARY_OVERFLOW.get(type(op))) is not None:
            assert isinstance(op, arith.SignlessIntegerBinaryOperationWithOverflow)
            _reject_index(op)
            rewriter.replace(op, with_overflow.create(
                operands=[op.lhs, op.rhs], result_types=[op.result.type],
                properties={"overflowFlags": _overflow_property(op.overflow_flags)}))
        elif (plain := _INT_BINARY.get(type(op))) is not None:
            assert isinstance(op, arith.SignlessIntegerBinaryOperation)
            _reject_index(op)
            rewriter.replace(op, plain(op.lhs, op.rhs))
        elif (pred := _INT_MINMAX.get(type(op))) is not None:
            assert isinstance(op, arith.SignlessIntegerBinaryOperation)
            _reject_index(op)
            predicate = IntegerAttr(llvm.ICmpPredicateFlag(pred).to_int(), i64)
            cmp = llvm.ICmpOp(op.lhs, op.rhs, predicate)
            rewriter.replace(op, [cmp, llvm.SelectOp(cmp, op.lhs, op.rhs)])


class NegfToLLVM(RewritePattern):
    """``arith.negf`` -> ``llvm.fneg`` (flags kept)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, arith.NegfOp):
            rewriter.replace(op, llvm.FNegOp.create(
                operands=[op.operand], result_types=[op.result.type],
                properties={"fastmathFlags": llvm_fastmath(op.fastmath)}))


class ConstantToLLVM(RewritePattern):
    """``arith.constant`` -> ``llvm.mlir.constant`` (scalars and dense vectors)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, arith.ConstantOp):
            return
        _reject_index(op)
        value = op.value
        if not isinstance(value, IntegerAttr | FloatAttr | DenseIntOrFPElementsAttr):
            raise LoweringError(
                ConvertArithToLLVMPass.name, op.name, f"unsupported constant {value}"
            )
        rewriter.replace(op, llvm.ConstantOp.create(properties={"value": value},
                                                    result_types=[op.result.type]))


class CompareToLLVM(RewritePattern):
    """``arith.cmpi`` -> ``llvm.icmp``, ``arith.cmpf`` -> ``llvm.fcmp``.

    The predicate numbers of arith and llvm line up one to one; ``cmpf false``
    and ``cmpf true`` fold to ``i1`` constants (llvmlite cannot print them).
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, arith.CmpiOp):
            _reject_index(op)
            predicate = IntegerAttr(op.predicate.value.data, i64)
            rewriter.replace(op, llvm.ICmpOp(op.lhs, op.rhs, predicate))
        elif isinstance(op, arith.CmpfOp):
            pred = op.predicate.value.data
            if not isinstance(op.lhs.type, AnyFloat):
                raise LoweringError(
                    ConvertArithToLLVMPass.name, op.name, "vector cmpf is not supported"
                )
            if pred in (0, 15):  # false, true
                rewriter.replace(op, llvm.ConstantOp(IntegerAttr(pred == 15, i1), i1))
                return
            rewriter.replace(op, llvm.FCmpOp(op.lhs, op.rhs, IntegerAttr(pred, i64)))


class SelectToLLVM(RewritePattern):
    """``arith.select`` -> ``llvm.select`` (scalar condition)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, arith.SelectOp):
            _reject_index(op)
            if op.cond.type != i1:
                raise LoweringError(
                    ConvertArithToLLVMPass.name, op.name, "vector conditions are not supported"
                )
            rewriter.replace(op, llvm.SelectOp(op.cond, op.lhs, op.rhs))


class CastToLLVM(RewritePattern):
    """Casts: ``sitofp``, ``ext*``/``trunc*``, ``bitcast``, ``fpto*i``, ``uitofp``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        build = _CASTS.get(type(op))
        sat = _SAT_CASTS.get(type(op))
        if build is None and sat is None and not isinstance(op, arith.UIToFPOp):
            return
        _reject_index(op)
        (source,) = op.operands
        (result,) = op.results
        if build is not None:
            rewriter.replace(op, build(source, result.type))
        elif sat is not None:
            name = f"{sat}.{intrinsic_suffix(result.type)}.{intrinsic_suffix(source.type)}"
            rewriter.replace(op, llvm.CallIntrinsicOp(name, [source], [result.type]))
        else:
            width = element_type(source.type)
            assert isinstance(width, IntegerType)
            if width.width.data >= 64:
                raise LoweringError(
                    ConvertArithToLLVMPass.name,
                    op.name, "uitofp from 64 bits or more has no llvm rule"
                )
            wide = llvm.ZExtOp(source, i64)
            rewriter.replace(op, [wide, llvm.SIToFPOp(wide.res, result.type)])


def _float_extremum(lhs: SSAValue, rhs: SSAValue, is_max: bool) -> list[Operation]:
    """NaN-propagating max/min with ``-0 < +0``, from compares and selects.

    Equal operands differ at most in the sign of a zero, so their bits are
    AND-ed (max: ``+0`` wins) or OR-ed (min: ``-0`` wins).
    """
    as_int = same_width_int(lhs.type)
    pick = llvm.FCmpOp(lhs, rhs, "ogt" if is_max else "olt")
    chosen = llvm.SelectOp(pick, lhs, rhs)
    lhs_bits = llvm.BitcastOp(lhs, as_int)
    rhs_bits = llvm.BitcastOp(rhs, as_int)
    merge = llvm.AndOp if is_max else llvm.OrOp
    merged_bits = merge(lhs_bits.result, rhs_bits.result)
    merged = llvm.BitcastOp(merged_bits.res, lhs.type)
    equal = llvm.FCmpOp(lhs, rhs, "oeq")
    ordered = llvm.SelectOp(equal, merged, chosen)
    unordered = llvm.FCmpOp(lhs, rhs, "uno")
    nan = llvm.FAddOp(lhs, rhs)  # a NaN whenever either operand is one
    result = llvm.SelectOp(unordered, nan, ordered)
    return [pick, chosen, lhs_bits, rhs_bits, merged_bits, merged, equal, ordered,
            unordered, nan, result]


_FLOAT_MINMAX: dict[type[Operation], Callable[[SSAValue, SSAValue], list[Operation]]] = {
    arith.MaximumfOp: lambda a, b: _float_extremum(a, b, is_max=True),
    arith.MinimumfOp: lambda a, b: _float_extremum(a, b, is_max=False),
    arith.MaxnumfOp: lambda a, b: [_intrinsic("llvm.maxnum", a, b)],
    arith.MinnumfOp: lambda a, b: [_intrinsic("llvm.minnum", a, b)],
}


def _intrinsic(base: str, a: SSAValue, b: SSAValue) -> Operation:
    """``base.<suffix>(a, b)`` as ``llvm.call_intrinsic`` (suffixed: an un-suffixed
    ``llvm.intr.maxnum`` is declared once per module by xDSL's translation, so f32 and f64
    uses in one kernel would clash)."""
    return llvm.CallIntrinsicOp(f"{base}.{intrinsic_suffix(a.type)}", [a, b], [a.type])


class FloatMinMaxToLLVM(RewritePattern):
    """``maximumf``/``minimumf`` (NaN-propagating) and ``maxnumf``/``minnumf``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        build = _FLOAT_MINMAX.get(type(op))
        if build is None:
            return
        assert isinstance(op, arith.FloatingPointLikeBinaryOperation)
        if isinstance(op, arith.MaximumfOp | arith.MinimumfOp) and not isinstance(
            op.lhs.type, AnyFloat
        ):
            raise LoweringError(
                ConvertArithToLLVMPass.name, op.name, "vector operands are not supported"
            )
        rewriter.replace(op, build(op.lhs, op.rhs))


class RejectUnsupported(RewritePattern):
    """Ops with no rule: raise with the reason instead of the generic leftover error."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if (reason := _UNSUPPORTED.get(type(op))) is not None:
            raise LoweringError(ConvertArithToLLVMPass.name, op.name, reason)


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ModulePass):
    """Lower every ``arith`` op to ``llvm``; a leftover ``arith`` op is an error."""

    name = "convert-arith-to-llvm"

    contract: bool = True
    """Add the ``contract`` fastmath flag to every float add/sub/mul/div."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [
            FloatBinaryToLLVM(self.contract),
            IntBinaryToLLVM(),
            NegfToLLVM(),
            ConstantToLLVM(),
            CompareToLLVM(),
            SelectToLLVM(),
            CastToLLVM(),
            FloatMinMaxToLLVM(),
            RejectUnsupported(),
        ]
        rewrite_each_op(op, GreedyRewritePatternApplier(patterns, dce_enabled=False))
        check_no_leftover(op, ("arith.",), self.name)

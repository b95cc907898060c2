"""``convert-math-to-llvm``: lower ``math`` ops to LLVM intrinsics or libm calls.

Two tables, one per target form:
  * ``_INTRINSIC``: LLVM intrinsics, as ``llvm.call_intrinsic`` with the overload
    suffix in the name (``"llvm.exp.f64"``, ``"llvm.tanh.f32"``, ``"llvm.ctlz.i32"``),
    also for those xDSL has an ``llvm.intr.*`` op for: its translation declares them
    without the suffix, once per module, so f32 and f64 uses in one kernel would clash;
  * ``_LIBM``: functions LLVM has no intrinsic for (``expm1``, ``log1p``, ``cbrt``,
    ``erf``, ...), as ``llvm.call`` to a libm declaration the pass adds to the module
    (``expm1`` for f64, ``expm1f`` for f32, scalars only).

Preconditions: scalar or 1-D vector float types (libm calls: scalar f32/f64).
Fastmath flags on ``math`` ops are dropped: LLVM intrinsics in xDSL keep none
(``call_intrinsic`` with flags is rejected by the llvmlite translation).
``math.ipowi`` has no rule and raises.

Before::

    %e = math.exp %x : f64
    %t = math.tanh %e : f64
    %m = math.expm1 %t : f64

After::

    llvm.func @expm1(f64) -> f64
    ...
    %e = llvm.call_intrinsic "llvm.exp.f64"(%x) : (f64) -> f64
    %t = llvm.call_intrinsic "llvm.tanh.f64"(%e) : (f64) -> f64
    %m = llvm.call @expm1(%t) : (f64) -> f64
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import (
    AnyFloat,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    Region,
    i1,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from .errors import LoweringError
from .lowering_utils import check_no_leftover, intrinsic_suffix, rewrite_each_op

# Overloaded LLVM intrinsics called by name; the suffix comes from the result type.
# Every float intrinsic goes this way, even those xDSL has an ``llvm.intr.*`` op for:
# xDSL's translation declares those un-suffixed, once per module, so one kernel could
# not use the f32 and the f64 variant of one function.
_INTRINSIC: dict[type[Operation], str] = {
    math.AbsFOp: "llvm.fabs",
    math.CeilOp: "llvm.ceil",
    math.FloorOp: "llvm.floor",
    math.SqrtOp: "llvm.sqrt",
    math.ExpOp: "llvm.exp",
    math.Exp2Op: "llvm.exp2",
    math.LogOp: "llvm.log",
    math.Log2Op: "llvm.log2",
    math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos",
    math.PowFOp: "llvm.pow",
    math.CopySignOp: "llvm.copysign",
    math.FmaOp: "llvm.fma",
    math.TanhOp: "llvm.tanh",
    math.TanOp: "llvm.tan",
    math.SinhOp: "llvm.sinh",
    math.CoshOp: "llvm.cosh",
    math.AsinOp: "llvm.asin",
    math.AcosOp: "llvm.acos",
    math.AtanOp: "llvm.atan",
    math.Atan2Op: "llvm.atan2",
    math.Log10Op: "llvm.log10",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
    math.TruncOp: "llvm.trunc",
    math.CtPopOp: "llvm.ctpop",
}

# Integer intrinsics with a trailing `i1 false` (zero/INT_MIN is not poison).
_INTRINSIC_WITH_FALSE_FLAG: dict[type[Operation], str] = {
    math.CountLeadingZerosOp: "llvm.ctlz",
    math.CountTrailingZerosOp: "llvm.cttz",
    math.AbsIOp: "llvm.abs",
}

_LIBM: dict[type[Operation], str] = {
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
    math.CbrtOp: "cbrt",
    math.ErfOp: "erf",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
}

_LIBM_SUFFIX: dict[type[Attribute], str] = {Float64Type: "", Float32Type: "f"}


class IntrinsicMathToLLVM(RewritePattern):
    """Ops lowered to ``llvm.call_intrinsic "llvm.<name>.<suffix>"``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        result_type = op.results[0].type if op.results else None
        if (base := _INTRINSIC.get(type(op))) is not None:
            assert result_type is not None
            name = f"{base}.{intrinsic_suffix(result_type)}"
            rewriter.replace(op, llvm.CallIntrinsicOp(name, list(op.operands), [result_type]))
        elif (base := _INTRINSIC_WITH_FALSE_FLAG.get(type(op))) is not None:
            assert result_type is not None
            flag = llvm.ConstantOp(IntegerAttr(0, i1), i1)
            name = f"{base}.{intrinsic_suffix(result_type)}"
            call = llvm.CallIntrinsicOp(name, [op.operands[0], flag.result], [result_type])
            rewriter.replace(op, [flag, call])
        elif isinstance(op, math.FPowIOp):
            suffix = f"{intrinsic_suffix(op.lhs.type)}.{intrinsic_suffix(op.rhs.type)}"
            call = llvm.CallIntrinsicOp(f"llvm.powi.{suffix}", [op.lhs, op.rhs], [op.lhs.type])
            rewriter.replace(op, call)
        elif isinstance(op, math.RsqrtOp):
            typ = op.result.type
            if not isinstance(typ, AnyFloat):
                raise LoweringError(
                    ConvertMathToLLVMPass.name, op.name, f"no rule for {typ} operands"
                )
            one = llvm.ConstantOp(FloatAttr(1.0, typ), typ)
            root = llvm.CallIntrinsicOp(f"llvm.sqrt.{intrinsic_suffix(typ)}", [op.operand], [typ])
            rewriter.replace(op, [one, root, llvm.FDivOp(one.result, root.results[0])])


class LibmMathToLLVM(RewritePattern):
    """Ops with no LLVM intrinsic: ``llvm.call @expm1`` and friends.

    The declarations needed are collected in ``needed`` and added by the pass.
    """

    def __init__(self) -> None:
        self.needed: dict[str, Attribute] = {}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        base = _LIBM.get(type(op))
        if base is None:
            return
        typ = op.results[0].type
        suffix = _LIBM_SUFFIX.get(type(typ))
        if suffix is None:
            raise LoweringError(
                ConvertMathToLLVMPass.name, op.name, f"libm has no scalar {typ} variant"
            )
        symbol = base + suffix
        self.needed[symbol] = typ
        rewriter.replace(op, llvm.CallOp(symbol, op.operands[0], return_type=typ))


def _declare_libm(module: ModuleOp, needed: dict[str, Attribute]) -> None:
    existing = {
        o.sym_name.data: o for o in module.ops if isinstance(o, llvm.FuncOp)
    }
    for symbol, typ in needed.items():
        fn_type = llvm.LLVMFunctionType([typ], typ)
        if symbol in existing:
            if existing[symbol].function_type != fn_type:
                raise LoweringError(
                    ConvertMathToLLVMPass.name,
                    f"llvm.func @{symbol}", f"clashes with libm's {fn_type}"
                )
            continue
        decl = llvm.FuncOp(
            symbol, fn_type, linkage=llvm.LinkageAttr("external"), body=Region([])
        )
        Rewriter.insert_op(decl, InsertPoint.at_start(module.body.block))


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ModulePass):
    """Lower every ``math`` op to ``llvm``; a leftover ``math`` op is an error."""

    name = "convert-math-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        libm = LibmMathToLLVM()
        rewrite_each_op(
            op, GreedyRewritePatternApplier([IntrinsicMathToLLVM(), libm], dce_enabled=False)
        )
        _declare_libm(op, libm.needed)
        check_no_leftover(op, ("math.",), self.name)

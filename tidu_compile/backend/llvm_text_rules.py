"""The ``arith`` and ``math`` rows of the direct LLVM IR emitter (``backend.llvm_text``).

Each row turns one op of the ``kernels`` stage into LLVM instructions, exactly as the
``llvm`` stage's passes lower it and xDSL's ``convert_module`` prints the result
(``passes/convert_arith_to_llvm.py``, ``passes/convert_math_to_llvm.py``,
``convert-index-to-i64``: their docstrings give the semantics; this module only
writes them as text)::

    %s = arith.addf %a, %b : f64            %".7" = fadd contract double %".5", %".6"
    %m = arith.maximumf %s, %a : f64   ==>   %".8" = fcmp ogt double %".7", %".5"  ...
    %e = math.exp %m : f64                   %".19" = call double @"llvm.exp.f64"(double ...)

A row is ``rule(emitter, op)``: it reads its operands with ``emitter.value``, writes
instructions with ``emitter.emit`` and binds the op's result with ``emitter.bind``.
``RULES`` maps op types to rows; an op without a row fails in the emitter, naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import AnyFloat, Float32Type, Float64Type, IntegerType
from xdsl.ir import Attribute, SSAValue

from tidu_compile.passes.errors import LoweringError

__all__ = ["RULES", "FunctionEmitter", "Rule"]


class FunctionEmitter(Protocol):
    """What a row sees of ``llvm_text.FunctionEmitter``."""

    contract: bool

    def value(self, value: SSAValue) -> str: ...
    def type_of(self, value: SSAValue) -> str: ...
    def suffix(self, typ: Attribute) -> str: ...
    def bind(self, value: SSAValue, operand: str) -> None: ...
    def emit(self, instruction: str) -> str: ...
    def constant(self, attr: Attribute, typ: Attribute) -> str: ...
    def constant_float(self, number: float, typ: Attribute) -> str: ...
    def call_intrinsic(self, name: str, operands: list[SSAValue], result: Attribute,
                       extra: Sequence[str] = ()) -> str: ...  # fmt: skip
    def call_libm(self, name: str, operand: SSAValue, result: Attribute) -> str: ...


Rule = Callable[[FunctionEmitter, Any], None]

_STAGE = "llvm-ir"

_FLOAT_BINARY: dict[type, str] = {arith.AddfOp: "fadd", arith.SubfOp: "fsub", arith.MulfOp: "fmul",
                 arith.DivfOp: "fdiv"}  # fmt: skip
_INT_BINARY: dict[type, str] = {arith.AddiOp: "add", arith.SubiOp: "sub", arith.MuliOp: "mul",
               arith.ShLIOp: "shl", arith.DivUIOp: "udiv", arith.DivSIOp: "sdiv",
               arith.RemUIOp: "urem", arith.RemSIOp: "srem", arith.AndIOp: "and",
               arith.OrIOp: "or", arith.XOrIOp: "xor", arith.ShRUIOp: "lshr",
               arith.ShRSIOp: "ashr"}  # fmt: skip
_INT_MINMAX: dict[type, str] = {arith.MaxSIOp: "sgt", arith.MinSIOp: "slt", arith.MaxUIOp: "ugt",
               arith.MinUIOp: "ult"}  # fmt: skip
_CASTS: dict[type, str] = {arith.SIToFPOp: "sitofp", arith.ExtFOp: "fpext",
                           arith.TruncFOp: "fptrunc", arith.ExtSIOp: "sext",
                           arith.ExtUIOp: "zext", arith.TruncIOp: "trunc",
                           arith.BitcastOp: "bitcast"}  # fmt: skip
_SATURATING: dict[type, str] = {arith.FPToSIOp: "llvm.fptosi.sat",
                                arith.FPToUIOp: "llvm.fptoui.sat"}  # fmt: skip
_ICMP = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_FCMP = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
         "ult", "ule", "une", "uno", "true")  # fmt: skip
_FASTMATH = ("reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")

_INTRINSIC: dict[type, str] = {
    math.AbsFOp: "llvm.fabs", math.CeilOp: "llvm.ceil", math.FloorOp: "llvm.floor",
    math.SqrtOp: "llvm.sqrt", math.ExpOp: "llvm.exp", math.Exp2Op: "llvm.exp2",
    math.LogOp: "llvm.log", math.Log2Op: "llvm.log2", math.SinOp: "llvm.sin",
    math.CosOp: "llvm.cos", math.PowFOp: "llvm.pow", math.CopySignOp: "llvm.copysign",
    math.FmaOp: "llvm.fma", math.TanhOp: "llvm.tanh", math.TanOp: "llvm.tan",
    math.SinhOp: "llvm.sinh", math.CoshOp: "llvm.cosh", math.AsinOp: "llvm.asin",
    math.AcosOp: "llvm.acos", math.AtanOp: "llvm.atan", math.Atan2Op: "llvm.atan2",
    math.Log10Op: "llvm.log10", math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven", math.TruncOp: "llvm.trunc", math.CtPopOp: "llvm.ctpop",
}  # fmt: skip
_INTRINSIC_WITH_FALSE_FLAG: dict[type, str] = {math.CountLeadingZerosOp: "llvm.ctlz",
                              math.CountTrailingZerosOp: "llvm.cttz",
                              math.AbsIOp: "llvm.abs"}  # fmt: skip
_LIBM: dict[type, str] = {math.ExpM1Op: "expm1", math.Log1pOp: "log1p", math.CbrtOp: "cbrt",
         math.ErfOp: "erf", math.AsinhOp: "asinh", math.AcoshOp: "acosh",
         math.AtanhOp: "atanh"}  # fmt: skip


def _flags(op: Any, contract: bool) -> str:
    """The fastmath flags of a float op as LLVM prints them (``"contract "``, or "")."""
    chosen = {flag.value for flag in op.fastmath.data} if op.fastmath is not None else set()
    if contract:
        chosen.add("contract")
    return "".join(f"{flag} " for flag in _FASTMATH if flag in chosen)


def _float_binary(e: FunctionEmitter, op: Any) -> None:
    t = e.type_of(op.result)
    e.bind(op.result, e.emit(f"{_FLOAT_BINARY[type(op)]} {_flags(op, e.contract)}{t} "
                             f"{e.value(op.lhs)}, {e.value(op.rhs)}"))  # fmt: skip


def _int_binary(e: FunctionEmitter, op: Any) -> None:
    flags = ""
    if isinstance(op, arith.SignlessIntegerBinaryOperationWithOverflow):
        flags = "".join(f"{f.value} " for f in op.overflow_flags.data)
    t = e.type_of(op.result)
    e.bind(op.result, e.emit(f"{_INT_BINARY[type(op)]} {flags}{t} {e.value(op.lhs)}, "
                             f"{e.value(op.rhs)}"))  # fmt: skip


def _int_minmax(e: FunctionEmitter, op: Any) -> None:
    t, a, b = e.type_of(op.result), e.value(op.lhs), e.value(op.rhs)
    pick = e.emit(f"icmp {_INT_MINMAX[type(op)]} {t} {a}, {b}")
    e.bind(op.result, e.emit(f"select  i1 {pick}, {t} {a}, {t} {b}"))


def _negf(e: FunctionEmitter, op: Any) -> None:
    e.bind(op.result, e.emit(f"fneg {_flags(op, False)}{e.type_of(op.result)} "
                             f"{e.value(op.operand)}"))  # fmt: skip


def _constant(e: FunctionEmitter, op: Any) -> None:
    e.bind(op.result, e.constant(op.value, op.result.type))


def _cmpi(e: FunctionEmitter, op: Any) -> None:
    t = e.type_of(op.lhs)
    e.bind(op.result, e.emit(f"icmp {_ICMP[op.predicate.value.data]} {t} {e.value(op.lhs)}, "
                             f"{e.value(op.rhs)}"))  # fmt: skip


def _cmpf(e: FunctionEmitter, op: Any) -> None:
    predicate = op.predicate.value.data
    if not isinstance(op.lhs.type, AnyFloat):
        raise LoweringError(_STAGE, op.name, "vector cmpf is not supported")
    if predicate in (0, 15):  # false, true: an i1 constant
        e.bind(op.result, "1" if predicate == 15 else "0")
        return
    e.bind(op.result, e.emit(f"fcmp {_FCMP[predicate]} {e.type_of(op.lhs)} "
                             f"{e.value(op.lhs)}, {e.value(op.rhs)}"))  # fmt: skip


def _select(e: FunctionEmitter, op: Any) -> None:
    if e.type_of(op.cond) != "i1":
        raise LoweringError(_STAGE, op.name, "vector conditions are not supported")
    t = e.type_of(op.result)
    e.bind(op.result, e.emit(f"select  i1 {e.value(op.cond)}, {t} {e.value(op.lhs)}, "
                             f"{t} {e.value(op.rhs)}"))  # fmt: skip


def _cast(e: FunctionEmitter, op: Any) -> None:
    (source,), (result,) = op.operands, op.results
    e.bind(result, e.emit(f"{_CASTS[type(op)]} {e.type_of(source)} {e.value(source)} to "
                          f"{e.type_of(result)}"))  # fmt: skip


def _saturating(e: FunctionEmitter, op: Any) -> None:
    (source,), (result,) = op.operands, op.results
    name = f"{_SATURATING[type(op)]}.{e.suffix(result.type)}.{e.suffix(source.type)}"
    e.bind(result, e.call_intrinsic(name, [source], result.type))


def _uitofp(e: FunctionEmitter, op: Any) -> None:
    source = op.input
    width = source.type.width.data if isinstance(source.type, IntegerType) else 64
    if width >= 64:
        raise LoweringError(_STAGE, op.name, "uitofp from 64 bits or more has no llvm rule")
    wide = e.emit(f"zext {e.type_of(source)} {e.value(source)} to i64")
    e.bind(op.result, e.emit(f"sitofp i64 {wide} to {e.type_of(op.result)}"))


def _index_cast(e: FunctionEmitter, op: Any) -> None:
    """``index`` is ``i64``: a no-op, or a sign extension or truncation of the other side."""
    source, result = op.input, op.result
    source_type, result_type = e.type_of(source), e.type_of(result)
    if source_type == result_type:
        e.bind(result, e.value(source))
        return
    widen = int(source_type[1:]) < int(result_type[1:])
    e.bind(result, e.emit(f"{'sext' if widen else 'trunc'} {source_type} {e.value(source)} "
                          f"to {result_type}"))  # fmt: skip


def _float_extremum(e: FunctionEmitter, op: Any) -> None:
    """NaN-propagating max/min with ``-0 < +0`` (``convert_arith_to_llvm._float_extremum``)."""
    if not isinstance(op.lhs.type, AnyFloat):
        raise LoweringError(_STAGE, op.name, "vector operands are not supported")
    is_max = isinstance(op, arith.MaximumfOp)
    t, a, b = e.type_of(op.result), e.value(op.lhs), e.value(op.rhs)
    bits = f"i{op.lhs.type.bitwidth}"
    pick = e.emit(f"fcmp {'ogt' if is_max else 'olt'} {t} {a}, {b}")
    chosen = e.emit(f"select  i1 {pick}, {t} {a}, {t} {b}")
    a_bits = e.emit(f"bitcast {t} {a} to {bits}")
    b_bits = e.emit(f"bitcast {t} {b} to {bits}")
    merged_bits = e.emit(f"{'and' if is_max else 'or'} {bits} {a_bits}, {b_bits}")
    merged = e.emit(f"bitcast {bits} {merged_bits} to {t}")
    equal = e.emit(f"fcmp oeq {t} {a}, {b}")
    ordered = e.emit(f"select  i1 {equal}, {t} {merged}, {t} {chosen}")
    unordered = e.emit(f"fcmp uno {t} {a}, {b}")
    nan = e.emit(f"fadd {t} {a}, {b}")
    e.bind(op.result, e.emit(f"select  i1 {unordered}, {t} {nan}, {t} {ordered}"))


def _float_num(e: FunctionEmitter, op: Any) -> None:
    base = "llvm.maxnum" if isinstance(op, arith.MaxnumfOp) else "llvm.minnum"
    name = f"{base}.{e.suffix(op.result.type)}"
    e.bind(op.result, e.call_intrinsic(name, [op.lhs, op.rhs], op.result.type))


def _frem(e: FunctionEmitter, op: Any) -> None:
    t = e.type_of(op.res)
    flags = "".join(f"{f.value} " for f in op.fastmathFlags.data)
    e.bind(op.res, e.emit(f"frem {flags}{t} {e.value(op.lhs)}, {e.value(op.rhs)}"))


def _intrinsic(e: FunctionEmitter, op: Any) -> None:
    result = op.results[0]
    name = f"{_INTRINSIC[type(op)]}.{e.suffix(result.type)}"
    e.bind(result, e.call_intrinsic(name, list(op.operands), result.type))


def _intrinsic_false_flag(e: FunctionEmitter, op: Any) -> None:
    result = op.results[0]
    name = f"{_INTRINSIC_WITH_FALSE_FLAG[type(op)]}.{e.suffix(result.type)}"
    e.bind(result, e.call_intrinsic(name, [op.operands[0]], result.type, extra=["i1 0"]))


def _fpowi(e: FunctionEmitter, op: Any) -> None:
    name = f"llvm.powi.{e.suffix(op.lhs.type)}.{e.suffix(op.rhs.type)}"
    e.bind(op.result, e.call_intrinsic(name, [op.lhs, op.rhs], op.lhs.type))


def _rsqrt(e: FunctionEmitter, op: Any) -> None:
    typ = op.result.type
    if not isinstance(typ, AnyFloat):
        raise LoweringError(_STAGE, op.name, f"no rule for {typ} operands")
    root = e.call_intrinsic(f"llvm.sqrt.{e.suffix(typ)}", [op.operand], typ)
    e.bind(op.result, e.emit(f"fdiv {e.type_of(op.result)} {e.constant_float(1.0, typ)}, "
                             f"{root}"))  # fmt: skip


def _libm(e: FunctionEmitter, op: Any) -> None:
    result = op.results[0]
    suffix = {Float64Type: "", Float32Type: "f"}.get(type(result.type))
    if suffix is None:
        raise LoweringError(_STAGE, op.name, f"libm has no scalar {result.type} variant")
    e.bind(result, e.call_libm(_LIBM[type(op)] + suffix, op.operands[0], result.type))


def _unsupported(reason: str) -> Rule:
    def reject(e: FunctionEmitter, op: Any) -> None:
        raise LoweringError(_STAGE, op.name, reason)

    return reject


RULES: dict[type, Rule] = {
    **dict.fromkeys(_FLOAT_BINARY, _float_binary),
    **dict.fromkeys(_INT_BINARY, _int_binary),
    **dict.fromkeys(_INT_MINMAX, _int_minmax),
    **dict.fromkeys(_CASTS, _cast),
    **dict.fromkeys(_SATURATING, _saturating),
    **dict.fromkeys(_INTRINSIC, _intrinsic),
    **dict.fromkeys(_INTRINSIC_WITH_FALSE_FLAG, _intrinsic_false_flag),
    **dict.fromkeys(_LIBM, _libm),
    arith.NegfOp: _negf, arith.ConstantOp: _constant, arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf, arith.SelectOp: _select, arith.UIToFPOp: _uitofp,
    arith.IndexCastOp: _index_cast,
    arith.MaximumfOp: _float_extremum, arith.MinimumfOp: _float_extremum,
    arith.MaxnumfOp: _float_num, arith.MinnumfOp: _float_num,
    llvm.FRemOp: _frem, math.FPowIOp: _fpowi, math.RsqrtOp: _rsqrt,
    arith.FloorDivSIOp: _unsupported("no floordivsi rule; expand it before lowering"),
    arith.CeilDivSIOp: _unsupported("no ceildivsi rule; expand it before lowering"),
    arith.CeilDivUIOp: _unsupported("no ceildivui rule; expand it before lowering"),
}  # fmt: skip
"""Op type -> its row."""

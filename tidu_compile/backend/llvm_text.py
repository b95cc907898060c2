"""LLVM IR text straight from the ``kernels`` stage: the executor's way to ``llvm-ir``.

The ``llvm`` stage lowers the kernel functions (func, scf, memref, arith, math and the
``ptr_xdsl`` accesses of the LAPACK kernels) to xDSL's ``llvm`` dialect in eleven passes,
and xDSL's ``convert_module`` prints that as LLVM IR through llvmlite's builder: 45% of a
small node's compile, and 3 of the 8.6 s of a 1,223-op GRU step (7,485 kernel ops,
Intel Xeon). ``emit_module`` writes the same LLVM IR in one walk, an op at a time, as
text: the same instructions in the same order, the same blocks, the same
declarations, only the numbers of the ``%".N"`` names may differ
(``tests/backend/test_llvm_text.py`` holds it to that on every kernel of the op table).
The ``llvm`` stage stays the inspectable view of what is emitted (``tidu-compile dump
--stage llvm``)::

    func.func @k(%x: memref<?x4xf64> {llvm.noalias}, %lo: index, %hi: index) {
      scf.for %i = %lo to %hi step %c1 {            define void @"k"(ptr noalias %".1", ...)
        %v = memref.load %x[%i, %c2] ...      ==>   {
                                                    .5:
                                                      br label %".6"
                                                    .6:
                                                      %".9" = phi  i64 [%".2", %".5"], ...
                                                      %".10" = icmp slt i64 %".9", %".3"
                                                      br i1 %".10", label %".7", label %".8"
                                                    .7:
                                                      %".12" = mul i64 %".9", 4
                                                      %".13" = add i64 %".12", 2
                                                      %".14" = mul i64 %".13", 8
                                                      %".15" = getelementptr inbounds i8, ...

The block layout is that of the ``llvm`` stage's ``tidu-convert-scf-to-cf``: ``scf.for``
is entry -> condition (the induction variable and the carried values as phis) -> body
-> back to the condition, then the continuation; ``scf.if`` is then, else, a join block
holding its results (when it has any), the continuation; ``scf.while`` is the
``before`` region, the ``after`` region, the continuation. The rows of the ``arith`` and
``math`` ops are ``backend.llvm_text_rules``. An op without a row raises
``LoweringError`` naming it and the stage.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from typing import Any

from llvmlite import ir
from xdsl.dialects import func, memref, ptr, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
)
from xdsl.dialects.llvm import LLVMPointerType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tidu_compile.passes.errors import LoweringError

from .llvm_text_rules import RULES

__all__ = ["FunctionEmitter", "emit_module"]

_STAGE = "llvm-ir"
_FLOATS: dict[type[Attribute], str] = {Float64Type: "double", Float32Type: "float",
                                       Float16Type: "half", BFloat16Type: "bfloat"}  # fmt: skip
_POINTERS = (MemRefType, ptr.PtrType, LLVMPointerType)
_IR_TYPES: dict[str, ir.Type] = {"double": ir.DoubleType(), "float": ir.FloatType(),
                                 "half": ir.HalfType()}  # fmt: skip


@functools.lru_cache(maxsize=256)
def _llvm_type(typ: Attribute) -> str:
    if (name := _FLOATS.get(type(typ))) is not None:
        return name
    if isinstance(typ, IntegerType):
        return f"i{typ.width.data}"
    if isinstance(typ, IndexType):
        return "i64"
    if isinstance(typ, _POINTERS):
        return "ptr"
    raise LoweringError(_STAGE, str(typ), "no LLVM type for it")


@functools.lru_cache(maxsize=4096)
def _literal(ir_type: str, value: int | float, bits: bytes) -> str:
    """A constant as llvmlite prints it (``bits``: the value's bytes, so that ``0.0`` and
    ``-0.0`` or two NaNs are cached apart)."""
    typ = _IR_TYPES.get(ir_type) or ir.IntType(int(ir_type[1:]))
    return str(ir.Constant(typ, value).get_reference())


class ModuleEmitter:
    """The text of one module: its functions in order, then the intrinsics they call."""

    def __init__(self, module: ModuleOp, *, contract: bool = True) -> None:
        self.module = module
        self.contract = contract
        self.intrinsics: dict[str, str] = {}  # name -> its declaration, in order of use
        self.libm: dict[str, str] = {}  # name -> its declaration, in order of use

    def declare_intrinsic(self, name: str, result: str, arguments: list[str]) -> None:
        if name not in self.intrinsics:
            parameters = ", ".join(f'{t} %".{i}"' for i, t in enumerate(arguments, 1))
            self.intrinsics[name] = f'declare {result} @"{name}"({parameters})'

    def text(self, triple: str, data_layout: str) -> str:
        functions = []
        for op in self.module.ops:
            if not isinstance(op, func.FuncOp):
                raise LoweringError(_STAGE, op.name, "only func.func at the module level")
            functions.append(FunctionEmitter(self, op).text())
        # convert_module's order: every llvm.func (convert-math-to-llvm inserts each libm
        # declaration at the module's start, so the last needed comes first), then the
        # intrinsics it declares as their calls are met
        globals_ = [*reversed(self.libm.values()), *functions, *self.intrinsics.values()]
        header = ['; ModuleID = ""', f'target triple = "{triple}"',
                  f'target datalayout = "{data_layout}"', ""]  # fmt: skip
        return "\n".join(header + [f"{g}\n" for g in globals_])


class FunctionEmitter:
    """One ``func.func`` as an LLVM function: ``text()``. The rows of
    ``llvm_text_rules`` call ``value``, ``type_of``, ``emit``, ``bind`` and the
    ``call_*`` helpers."""

    def __init__(self, module: ModuleEmitter, op: func.FuncOp) -> None:
        self.module = module
        self.op = op
        self.contract = module.contract
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.counter = 0
        self.block = ""  # the label of the block being written
        #: label -> its phis, (line index, name, type), and the values branches pass them
        self.phis: dict[str, list[tuple[int, str, str]]] = {}
        self.incoming: dict[str, list[tuple[list[str], str]]] = {}  # (values, predecessor)
        self.dead: set[Operation] = set()

    # ---------------------------------------------------------------- for the rows

    def fresh(self) -> str:
        self.counter += 1
        return f".{self.counter}"

    def value(self, value: SSAValue) -> str:
        try:
            return self.names[value]
        except KeyError:
            where, what = self.op.sym_name.data, f"a value used before it is defined: {value}"
            raise LoweringError(_STAGE, where, what) from None

    def type_of(self, value: SSAValue) -> str:
        return _llvm_type(value.type)

    def suffix(self, typ: Attribute) -> str:
        """LLVM's overload suffix of a scalar type (``f64``, ``i32``)."""
        name = _llvm_type(typ)
        return name if name.startswith("i") else f"f{typ.bitwidth}"  # type: ignore[attr-defined]

    def bind(self, value: SSAValue, operand: str) -> None:
        self.names[value] = operand

    def emit(self, instruction: str) -> str:
        """Write ``instruction`` as the definition of a new value; its name."""
        name = f'%"{self.fresh()}"'
        self.lines.append(f"  {name} = {instruction}")
        return name

    def emit_void(self, instruction: str) -> None:
        self.counter += 1  # llvmlite numbers unnamed instructions too
        self.lines.append(f"  {instruction}")

    def constant(self, attr: Attribute, typ: Attribute) -> str:
        ir_type = _llvm_type(typ)
        if isinstance(attr, FloatAttr):
            number: int | float = float(attr.value.data)
            return _literal(ir_type, number, struct.pack("<d", number))
        if isinstance(attr, IntegerAttr):
            number = int(attr.value.data)
            return _literal(ir_type, number, number.to_bytes(16, "little", signed=True))
        raise LoweringError(_STAGE, "arith.constant", f"unsupported constant {attr}")

    def constant_float(self, number: float, typ: Attribute) -> str:
        return _literal(_llvm_type(typ), number, struct.pack("<d", number))

    def call_intrinsic(self, name: str, operands: list[SSAValue], result: Attribute,
                       extra: Sequence[str] = ()) -> str:  # fmt: skip
        """``call <result> @"<name>"(...)``, the intrinsic declared once per module;
        ``extra``: typed constant arguments after the operands (``"i1 0"``)."""
        types = [self.type_of(o) for o in operands] + [e.split(" ", 1)[0] for e in extra]
        result_type = _llvm_type(result)
        self.module.declare_intrinsic(name, result_type, types)
        arguments = [f"{self.type_of(o)} {self.value(o)}" for o in operands] + list(extra)
        return self.emit(f'call {result_type} @"{name}"({", ".join(arguments)})')

    def call_libm(self, name: str, operand: SSAValue, result: Attribute) -> str:
        typ = _llvm_type(result)
        self.module.libm.setdefault(name, f'declare {typ} @"{name}"({typ} %".1")')
        return self.emit(f'call ccc {typ} @"{name}"({typ} {self.value(operand)})')

    # ---------------------------------------------------------------- blocks

    def start_block(self, label: str, arguments: tuple[SSAValue, ...] = ()) -> None:
        """Begin the block ``label``; its ``arguments`` become phis, filled by branches."""
        names = self.start_block_of_types(label, [self.type_of(a) for a in arguments])
        for argument, name in zip(arguments, names, strict=True):
            self.names[argument] = name

    def start_block_of_types(self, label: str, types: list[str]) -> list[str]:
        """Begin the block ``label`` with a phi of each of ``types``; their names."""
        self.block = label
        self.lines.append(f"{label}:")
        names = []
        for typ in types:
            names.append(f'%"{self.fresh()}"')
            self.phis.setdefault(label, []).append((len(self.lines), names[-1], typ))
            self.lines.append("")
        return names

    def branch(self, target: str, values: list[str]) -> None:
        """``br label %target``, passing ``values`` to the target's phis."""
        self.add_incoming(target, values)
        self.emit_void(f'br label %"{target}"')

    def add_incoming(self, target: str, values: list[str]) -> None:
        """An edge from the current block to ``target``, passing ``values`` to its phis."""
        self.incoming.setdefault(target, []).append((values, self.block))

    def label(self) -> str:
        return self.fresh()

    # ---------------------------------------------------------------- ops

    def emit_ops(self, block: Block, until: type[Operation] | None = None) -> Operation | None:
        """Every op of ``block``; the terminator of type ``until`` is returned instead."""
        for op in block.ops:
            if until is not None and isinstance(op, until):
                return op
            self.emit_op(op)
        return None

    def emit_op(self, op: Operation) -> None:
        if op in self.dead:
            return
        rule = _STRUCTURE.get(type(op))
        if rule is not None:
            rule(self, op)
            return
        row = RULES.get(type(op))
        if row is None:
            raise LoweringError(_STAGE, op.name, "no rule in the LLVM IR emitter")
        row(self, op)

    def address(self, base: SSAValue, indices: tuple[SSAValue, ...] | list[SSAValue],
                typ: MemRefType[Any]) -> str:  # fmt: skip
        """The address of ``base[indices]``: xDSL's ``convert-memref-to-ptr`` arithmetic
        (the dot product of the indices with the static strides, times the element size)."""
        if not isinstance(typ.layout, NoneAttr):
            raise LoweringError(_STAGE, "memref access", f"layout {typ.layout} is not supported")
        shape = typ.get_shape()
        if any(extent < 0 for extent in shape[1:]):
            raise LoweringError(_STAGE, "memref access", f"{typ}: only dimension 0 may be dynamic")
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        pointer, head = self.value(base), None
        for index, stride in zip(indices, strides, strict=True):
            increment = self.value(index)
            if stride != 1:
                increment = self.emit(f"mul i64 {increment}, {stride}")
            head = increment if head is None else self.emit(f"add i64 {head}, {increment}")
        if head is None:
            return pointer
        size = typ.element_type.size  # type: ignore[attr-defined]
        offset = self.emit(f"mul i64 {head}, {size}")
        return self.emit(f"getelementptr inbounds i8, ptr {pointer}, i64 {offset}")

    def text(self) -> str:
        op = self.op
        inputs = list(op.function_type.inputs)
        outputs = list(op.function_type.outputs)
        if len(outputs) > 1:
            raise LoweringError(_STAGE, f"func.func @{op.sym_name.data}",
                                "more than one result is not supported")  # fmt: skip
        result = _llvm_type(outputs[0]) if outputs else "void"
        body = op.body.blocks.first
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        parameters = []
        for i, typ in enumerate(inputs, 1):
            ir_type = _llvm_type(typ)
            noalias = body is not None and ir_type == "ptr"
            parameters.append(f'{ir_type}{" noalias" if noalias else ""} %".{i}"')
        name = op.sym_name.data
        if body is None:
            return f'declare {result} @"{name}"({", ".join(parameters)})'
        if len(op.body.blocks) != 1:
            raise LoweringError(_STAGE, f"func.func @{name}", "a body of several blocks")
        self.dead = _dead_ops(body)
        self.counter = len(inputs)
        for i, argument in enumerate(body.args, 1):
            self.names[argument] = f'%".{i}"'
        self.start_block(self.label())
        self.emit_ops(body)
        for label, phis in self.phis.items():
            incoming = self.incoming.get(label, [])
            for position, (index, phi, phi_type) in enumerate(phis):
                edges = ", ".join(f'[{values[position]}, %"{block}"]' for values, block in incoming)
                self.lines[index] = f"  {phi} = phi  {phi_type} {edges}"
        linkage = "internal " if private else ""
        header = f'define {linkage}{result} @"{name}"({", ".join(parameters)})'
        return "\n".join([header, "{", *self.lines, "}"])


# ------------------------------------------------------------------ structure and memory


def _dead_ops(body: Block) -> set[Operation]:
    """The side-effect-free ops of ``body`` whose results nothing live reads: what the
    ``llvm`` stage's ``convert-memref-to-ptr-fast`` erases (its closing ``region_dce``), as
    a dead ``memref.load`` of an imaginary part no one reads. Structured ops, calls and
    terminators are kept (a use is always later in the walk than its definition)."""
    dead: set[Operation] = set()
    for op in reversed(list(body.walk())):
        if type(op) in _PURE and all(use.operation in dead for result in op.results
                                     for use in result.uses):  # fmt: skip
            dead.add(op)
    return dead


def _for(e: FunctionEmitter, op: scf.ForOp) -> None:
    condition, body, end = e.label(), e.label(), e.label()
    e.branch(condition, [e.value(op.lb), *(e.value(a) for a in op.iter_args)])
    block = op.body.block
    e.start_block(condition, tuple(block.args))
    iv = e.value(block.args[0])
    test = e.emit(f"icmp slt {e.type_of(block.args[0])} {iv}, {e.value(op.ub)}")
    e.emit_void(f'br i1 {test}, label %"{body}", label %"{end}"')
    e.start_block(body)
    yielded = e.emit_ops(block, scf.YieldOp)
    assert yielded is not None
    stepped = e.emit(f"add {e.type_of(block.args[0])} {iv}, {e.value(op.step)}")
    e.branch(condition, [stepped, *(e.value(v) for v in yielded.operands)])
    e.start_block(end)
    for result, carried in zip(op.results, block.args[1:], strict=True):
        e.bind(result, e.value(carried))


def _if(e: FunctionEmitter, op: scf.IfOp) -> None:
    then = e.label()
    join = e.label() if op.results else None
    rest = e.label()
    has_else = op.false_region.blocks.first is not None
    otherwise = e.label() if has_else else (join or rest)
    target = join or rest
    e.emit_void(f'br i1 {e.value(op.cond)}, label %"{then}", label %"{otherwise}"')
    regions = [(then, op.true_region)] + ([(otherwise, op.false_region)] if has_else else [])
    for label, region in regions:
        e.start_block(label)
        yielded = e.emit_ops(region.block, scf.YieldOp)
        e.branch(target, [e.value(v) for v in yielded.operands] if yielded else [])
    if join is not None:
        names = e.start_block_of_types(join, [e.type_of(r) for r in op.results])
        for result, name in zip(op.results, names, strict=True):
            e.bind(result, name)
        e.branch(rest, [])
    e.start_block(rest)


def _while(e: FunctionEmitter, op: scf.WhileOp) -> None:
    before, after, rest = e.label(), e.label(), e.label()
    e.branch(before, [e.value(a) for a in op.arguments])
    e.start_block(before, tuple(op.before_region.block.args))
    condition = e.emit_ops(op.before_region.block, scf.ConditionOp)
    assert isinstance(condition, scf.ConditionOp)
    forwarded = [e.value(a) for a in condition.args]
    e.add_incoming(after, forwarded)
    e.emit_void(f'br i1 {e.value(condition.condition)}, label %"{after}", label %"{rest}"')
    after_block = op.after_region.block
    e.start_block(after, tuple(after_block.args))
    yielded = e.emit_ops(after_block, scf.YieldOp)
    assert yielded is not None
    e.branch(before, [e.value(v) for v in yielded.operands])
    e.start_block(rest)
    for result, value in zip(op.results, forwarded, strict=True):
        e.bind(result, value)


def _load(e: FunctionEmitter, op: memref.LoadOp) -> None:
    address = e.address(op.memref, op.indices, op.memref.type)  # type: ignore[arg-type]
    e.bind(op.res, e.emit(f"load {e.type_of(op.res)}, ptr {address}"))


def _store(e: FunctionEmitter, op: memref.StoreOp) -> None:
    address = e.address(op.memref, op.indices, op.memref.type)  # type: ignore[arg-type]
    e.emit_void(f"store {e.type_of(op.value)} {e.value(op.value)}, ptr {address}")


def _to_ptr(e: FunctionEmitter, op: ptr.ToPtrOp) -> None:
    e.bind(op.res, e.value(op.source))


def _ptradd(e: FunctionEmitter, op: ptr.PtrAddOp) -> None:
    e.bind(op.result, e.emit(f"getelementptr inbounds i8, ptr {e.value(op.addr)}, i64 "
                             f"{e.value(op.offset)}"))  # fmt: skip


def _ptr_load(e: FunctionEmitter, op: ptr.LoadOp) -> None:
    e.bind(op.res, e.emit(f"load {e.type_of(op.res)}, ptr {e.value(op.addr)}"))


def _ptr_store(e: FunctionEmitter, op: ptr.StoreOp) -> None:
    e.emit_void(f"store {e.type_of(op.value)} {e.value(op.value)}, ptr {e.value(op.addr)}")


def _call(e: FunctionEmitter, op: func.CallOp) -> None:
    if len(op.res) > 1:
        raise LoweringError(_STAGE, op.name, "more than one result is not supported")
    arguments = ", ".join(f"{e.type_of(a)} {e.value(a)}" for a in op.arguments)
    callee = op.callee.string_value()
    if op.res:
        result = op.res[0]
        e.bind(result, e.emit(f'call ccc {e.type_of(result)} @"{callee}"({arguments})'))
    else:
        e.emit_void(f'call ccc void @"{callee}"({arguments})')


def _return(e: FunctionEmitter, op: func.ReturnOp) -> None:
    if not op.arguments:
        e.emit_void("ret void")
        return
    (value,) = op.arguments
    e.emit_void(f"ret {e.type_of(value)} {e.value(value)}")


_STRUCTURE: dict[type[Operation], Any] = {
    scf.ForOp: _for, scf.IfOp: _if, scf.WhileOp: _while,
    memref.LoadOp: _load, memref.StoreOp: _store,
    ptr.ToPtrOp: _to_ptr, ptr.PtrAddOp: _ptradd, ptr.LoadOp: _ptr_load, ptr.StoreOp: _ptr_store,
    func.CallOp: _call, func.ReturnOp: _return,
}  # fmt: skip


_PURE = frozenset({*(t for t in RULES if t.__module__.startswith(("xdsl.dialects.arith",
                                                                  "xdsl.dialects.math"))),
                   memref.LoadOp, ptr.LoadOp, ptr.PtrAddOp, ptr.ToPtrOp})  # fmt: skip
"""The ops ``_dead_ops`` may drop: arith, math and reads."""


def emit_module(module: ModuleOp, triple: str, data_layout: str, *, contract: bool = True) -> str:
    """The LLVM IR text of a ``kernels``-stage module (not modified), as the ``llvm``
    stage and ``convert_module`` would print it but for the numbers of local names."""
    return ModuleEmitter(module, contract=contract).text(triple, data_layout)

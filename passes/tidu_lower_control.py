"""``tidu-lower-control``: a ``tidu.scan`` whose body is all kernels becomes ONE kernel.

The body (``ops.Scan.body``) is lowered through the same stages as any program
(``compiler.stages.walk`` from ``program`` to ``loops``, this pass included, so an
inner scan is lowered first); its kernels are inlined, in plan order, into the region
of an ``scf.for`` over the rows, in a kernel function of the module. Per iteration
``t`` (row ``r = t``, or ``length - 1 - t`` when ``reverse``) the body reads the carry
state (the scan's carry results, initialized from the carries it is given), row ``r``
of each ``xs`` (its loads get ``r`` as a leading index) and writes its intermediates
into scratch buffers; then each ``y`` is copied into row ``r`` of its stacked result
and each carry into its state (through scratch when a carry is another's input)::

    %c, %ys = tidu.scan %w, %h0, %xs, op = #tidu.traced<"Scan(... length=5 ...)">
    ==>
    %s = memref.alloc()  ...
    func.call @node_s0(%w, %h0, %xs, %c, %ys, %s) : (...) -> ()
    func.func @node_s0(%in0: memref<3xf64>, %in1: memref<3xf64>, %in2: memref<5x3xf64>,
                       %out0: memref<3xf64>, %out1: memref<5x3xf64>,
                       %scratch0: memref<3xf64>) attributes {tidu.kernel} {
      scf.for %i = ... { copy %in1 -> %out0 }                  ; the initial carry
      scf.for %t = %c0 to %c5 step %c1 {
        scf.for %i = ... { %x = memref.load %in2[%t, %i] ... }  ; the body's kernels
        scf.for %i = ... { copy %scratch0 -> %out1[%t] }        ; ys[t] = y
        scf.for %i = ... { copy %scratch0 -> %out0 }            ; carry = carry'
      }
    }

A library step of the body whose inputs are all loop-invariant (a constant, the
transpose of a weight) is made once, before the call, and passed in; a real float
contraction is a loop nest in the loop (``tidu_loop_contraction``), a transpose or a
reshape a copying loop nest (``tidu_loop_layout``). A scan stays as it was (its node's
plan runs it with ``compiler.native_loop``'s driver) when its body has another library
step (an integer contraction, a gather, a nested loop the body could not lower), a
LAPACK kernel with a status, a complex buffer, or a row buffer used other than by loads
and stores. Its op then gets
``tidu.loop_driver = "<why>"``, which ``tidu-compile dump --stage loops`` shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tidu_compile.dialects.tidu_control import ScanOp
from tidu_compile.dialects.tidu_shape import DotGeneralOp, ReshapeOp, TransposeOp
from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    ComplexType,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from .tidu_loop_contraction import (
    Emit,
    append_to,
    close_loops,
    contraction_loops,
    index_constant,
    loop_nest,
)
from .tidu_loop_layout import layout_loops
from .tidu_lower_to_loops import KERNEL_ATTR, memref_type

__all__ = ["DRIVER_ATTR", "SCAN_BODIES", "NotLowered", "ScanBodies", "TiduLowerControlPass"]

DRIVER_ATTR = "tidu.loop_driver"
"""On a ``tidu.scan`` left for the native driver: why the pass could not take it."""


class NotLowered(Exception):
    """The body of a scan has something an ``scf.for`` kernel cannot hold (the reason)."""


@dataclass(frozen=True)
class _Buffer:
    """A memref of the scan kernel, and whether it is stacked (a body value is its row)."""

    value: SSAValue
    stacked: bool = False

    def at(self, row: SSAValue, indices: Sequence[SSAValue]) -> list[SSAValue]:
        return [row, *indices] if self.stacked else list(indices)


def _copy(emit: Emit, source: _Buffer, target: _Buffer, shape: Sequence[int],
          row: SSAValue) -> None:  # fmt: skip
    """``target = source`` element by element (a stacked buffer at row ``row``)::

    scf.for %i0 = %c0 to %cN step %c1 { %v = memref.load ... memref.store %v, ... }
    """
    if 0 in shape:
        return
    indices, emit, loops = loop_nest(emit, shape)
    load = emit(memref.LoadOp.get(source.value, source.at(row, indices)))
    emit(memref.StoreOp.get(load.results[0], target.value, target.at(row, indices)))
    close_loops(loops)


class ScanBodies(Protocol):
    """What the pass needs of the compiler, which sits above the passes and installs
    itself here (``tidu_compile.compiler.scan_bodies``, imported by the stage table)."""

    def lower(self, scan: Any) -> ModuleOp:
        """The body's ``loops``-stage module (the same stages as any program);
        ``NotLowered`` when it has no program or a kernel with a status."""
        ...

    def kernel_functions(self, module: ModuleOp) -> list[func.FuncOp]: ...

    def node_function(self, module: ModuleOp) -> func.FuncOp: ...

    def primitive_of(self, op: Operation) -> Any: ...


#: The compiler's side of the pass (None until ``compiler.scan_bodies`` is imported).
SCAN_BODIES: ScanBodies | None = None


def _bodies() -> ScanBodies:
    if SCAN_BODIES is None:
        raise NotLowered("no compiler to lower the body (import tidu_compile.compiler)")
    return SCAN_BODIES


def _rows_loaded_and_stored(callee: func.FuncOp, buffers: Sequence[_Buffer]) -> None:
    """``NotLowered`` unless every row argument of ``callee`` is only loaded and stored."""
    for argument, buffer in zip(callee.body.block.args, buffers, strict=False):
        if not buffer.stacked:
            continue
        for use in argument.uses:
            user = use.operation
            if isinstance(user, memref.LoadOp) or (isinstance(user, memref.StoreOp)
                                                   and use.index == 1):  # fmt: skip
                continue
            raise NotLowered(f"a row of the scan is used by {user.name}")


def _inline(emit: Emit, callee: func.FuncOp, arguments: list[SSAValue],
            stacked: set[SSAValue], row: SSAValue) -> None:  # fmt: skip
    """Clone ``callee``'s body with ``arguments`` for its block arguments; each load or
    store of a ``stacked`` buffer gets ``row`` as its first index."""
    if len(callee.body.blocks) != 1:
        raise NotLowered(f"kernel {callee.sym_name.data} has several blocks")
    mapper: dict[SSAValue, SSAValue] = dict(zip(callee.body.block.args, arguments, strict=True))
    cloned = [emit(op.clone(value_mapper=mapper)) for op in callee.body.block.ops
              if not isinstance(op, func.ReturnOp)]  # fmt: skip
    accesses = [inner for op in cloned for inner in op.walk()
                if isinstance(inner, memref.LoadOp | memref.StoreOp) and inner.memref in stacked]
    for op in accesses:
        parent = op.parent_block()
        assert parent is not None
        new: Operation
        if isinstance(op, memref.LoadOp):
            new = memref.LoadOp.get(op.memref, [row, *op.indices])
            parent.insert_op_before(new, op)
            op.results[0].replace_all_uses_with(new.results[0])
        else:
            new = memref.StoreOp.get(op.value, op.memref, [row, *op.indices])
            parent.insert_op_before(new, op)
        parent.erase_op(op)


@dataclass
class ScanKernel:
    """A scan kernel (see the module docstring) and what its call passes after the
    scan's operands and results: scratch buffers (types) and constants (globals)."""

    function: func.FuncOp
    #: inputs: constant globals, and the results of the body's loop-invariant library
    #: steps (``hoisted``, made by the caller from the scan's consts)
    constants: list[memref.GlobalOp | SSAValue] = field(default_factory=list)
    hoisted: list[Operation] = field(default_factory=list)
    body_consts: tuple[SSAValue, ...] = ()  # the body's const arguments, which they read
    scratch: list[MemRefType] = field(default_factory=list)  # outputs
    helpers: list[func.FuncOp] = field(default_factory=list)  # the body's math functions


def scan_kernel(op: ScanOp, scan: Any, name: str) -> ScanKernel:
    """The kernel ``name`` computing ``op`` (``scan``: its ``ops.Scan``); ``NotLowered``
    when the body cannot be one."""
    bodies = _bodies()
    primitive_of = bodies.primitive_of
    body = bodies.lower(scan)
    kernels = {f.sym_name.data: f for f in bodies.kernel_functions(body)}
    node = bodies.node_function(body)
    k, c = scan.consts, scan.carries
    operand_types = [memref_type(v.type) for v in op.operands]
    result_types = [memref_type(r.type) for r in op.results]
    if any(isinstance(t.element_type, ComplexType) for t in [*operand_types, *result_types]):
        raise NotLowered("a complex buffer")
    entry = Block(arg_types=[*operand_types, *result_types])
    ins = [_Buffer(a, stacked=i >= k + c) for i, a in enumerate(entry.args[: len(operand_types)])]
    outs = [_Buffer(a, stacked=j >= c) for j, a in enumerate(entry.args[len(operand_types) :])]
    made = ScanKernel(func.FuncOp(name, ([], []), Region()))
    globals_ = {g.sym_name.data: g for g in body.ops if isinstance(g, memref.GlobalOp)}

    def extra(what: MemRefType | memref.GlobalOp | SSAValue, t: MemRefType) -> _Buffer:
        """An argument after the scan's: inputs (constants) before every output, as
        the plan passes them (``compiler.plan_builder``)."""
        if isinstance(what, MemRefType):  # scratch: an output
            made.scratch.append(what)
            return _Buffer(entry.insert_arg(t, len(entry.args)))
        made.constants.append(what)
        return _Buffer(entry.insert_arg(t, len(operand_types) + len(made.constants) - 1))

    emit_entry = append_to(entry)
    for j in range(c):  # the carry state starts as the given carries
        _copy(emit_entry, ins[k + j], outs[j], result_types[j].get_shape(), entry.args[0])
    loop = Block(arg_types=[IndexType()])
    lower, upper, one = (index_constant(emit_entry, v) for v in (0, scan.length, 1))
    emit_entry(scf.ForOp(lower, upper, one, [], loop))
    entry.add_op(func.ReturnOp())
    emit = append_to(loop)
    row: SSAValue = loop.args[0]
    if scan.reverse:
        last = index_constant(emit, scan.length - 1)
        row = emit(arith.SubiOp(last, loop.args[0])).results[0]
    block = node.body.block
    buffer_of: dict[SSAValue, _Buffer] = {}
    for i, argument in enumerate(block.args):
        buffer_of[argument] = outs[i - k] if k <= i < k + c else ins[i]
    constants: dict[SSAValue, int] = {}
    invariant: set[SSAValue] = set(block.args[:k])  # known before the loop
    made.body_consts = tuple(block.args[:k])
    results: list[_Buffer] = []
    for body_op in block.ops:
        if isinstance(body_op, bufferization.ToBufferOp | bufferization.ToTensorOp):
            buffer_of[body_op.results[0]] = buffer_of[body_op.operands[0]]
        elif isinstance(body_op, memref.AllocOp | memref.GetGlobalOp):
            t = body_op.results[0].type
            assert isinstance(t, MemRefType)
            what = globals_[body_op.name_.string_value()] if isinstance(
                body_op, memref.GetGlobalOp) else t  # fmt: skip
            buffer_of[body_op.results[0]] = extra(what, t)
        elif body_op.dialect_name() == "tidu" and all(v in invariant for v in body_op.operands):
            made.hoisted.append(body_op)  # made once, by the caller
            for result in body_op.results:
                invariant.add(result)
                buffer_of[result] = extra(result, memref_type(result.type))
        elif isinstance(body_op, DotGeneralOp):
            out = memref_type(body_op.results[0].type)
            buffer = buffer_of[body_op.results[0]] = extra(out, out)
            lhs, rhs = (buffer_of[v] for v in body_op.operands)
            stacked = {b.value: b for b in (lhs, rhs)}

            def at(value: SSAValue, indices: list[SSAValue],
                   stacked: dict[SSAValue, _Buffer] = stacked) -> list[SSAValue]:  # fmt: skip
                known = stacked.get(value)
                return known.at(row, indices) if known is not None else list(indices)

            if not contraction_loops(emit, primitive_of(body_op), lhs.value, rhs.value,
                                     buffer.value, at):  # fmt: skip
                raise NotLowered("the body has an integer contraction")
        elif isinstance(body_op, TransposeOp | ReshapeOp):
            out = memref_type(body_op.results[0].type)
            buffer = buffer_of[body_op.results[0]] = extra(out, out)
            source = buffer_of[body_op.operands[0]]

            def at_source(value: SSAValue, indices: list[SSAValue],
                          source: _Buffer = source) -> list[SSAValue]:  # fmt: skip
                return source.at(row, indices) if value is source.value else list(indices)

            layout_loops(emit, primitive_of(body_op), source.value,
                         memref_type(body_op.operands[0].type).get_shape(), buffer.value,
                         at_source)  # fmt: skip
        elif isinstance(body_op, arith.ConstantOp) and isinstance(body_op.result.type, IndexType):
            assert isinstance(body_op.value, IntegerAttr)
            constants[body_op.result] = body_op.value.value.data
        elif isinstance(body_op, func.CallOp):
            callee = kernels[body_op.callee.string_value()]
            buffers = [buffer_of[a] for a in body_op.arguments if a in buffer_of]
            _rows_loaded_and_stored(callee, buffers)
            arguments = [buffer_of[a].value if a in buffer_of
                         else index_constant(emit, constants[a])
                         for a in body_op.arguments]  # fmt: skip
            _inline(emit, callee, arguments, {b.value for b in buffers if b.stacked}, row)
        elif isinstance(body_op, func.ReturnOp):
            results = [buffer_of[v] for v in body_op.operands]
        elif body_op.dialect_name() == "tidu":
            raise NotLowered(f"the body has a library step: {type(primitive_of(body_op)).__name__}")
        else:
            raise NotLowered(f"{body_op.name} in the body")
    for j in range(c, len(results)):  # ys[row] = y
        _copy(emit, results[j], outs[j], result_types[j].get_shape()[1:], row)
    states = {outs[j].value for j in range(c)}
    staged: list[tuple[int, _Buffer]] = []
    for j in range(c):  # a carry read from another's state goes through scratch first
        source = results[j]
        if source.value is outs[j].value:
            continue
        if source.value in states:
            scratch = extra(result_types[j], result_types[j])
            _copy(emit, source, scratch, result_types[j].get_shape(), row)
            source = scratch
        staged.append((j, source))
    for j, source in staged:
        _copy(emit, source, outs[j], result_types[j].get_shape(), row)
    loop.add_op(scf.YieldOp())
    noalias = DictionaryAttr({"llvm.noalias": UnitAttr()})
    types = [a.type for a in entry.args]
    made.function = func.FuncOp(name, (types, []), Region(entry),
                                arg_attrs=ArrayAttr([noalias] * len(types)))  # fmt: skip
    made.function.attributes[KERNEL_ATTR] = UnitAttr()
    made.helpers = [f for f in body.ops if isinstance(f, func.FuncOp)
                    and getattr(f.sym_visibility, "data", None) == "private"]  # fmt: skip
    return made


def _replace(op: ScanOp, made: ScanKernel, module: ModuleOp) -> None:
    """``op`` becomes the buffers and the call of ``made`` (its helpers, constants and
    function added to ``module``)."""
    block = op.parent_block()
    assert block is not None
    name = made.function.sym_name.data
    known = {f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp | memref.GlobalOp)}
    for helper in made.helpers:  # math expansions: one per function and type, same text
        if helper.sym_name.data not in known:
            module.body.block.add_op(helper.clone())
    new_ops: list[Operation] = []
    mapper: dict[SSAValue, SSAValue] = dict(zip(made.body_consts, op.operands, strict=False))
    hoisted = [h.clone(value_mapper=mapper) for h in made.hoisted]  # maps their results too
    for value in op.operands:
        new_ops.append(bufferization.ToBufferOp.create(
            operands=[value], result_types=[memref_type(value.type)],
            properties={"read_only": UnitAttr()}))  # fmt: skip
    for n, what in enumerate(made.constants):
        if isinstance(what, memref.GlobalOp):
            copy = what.clone()
            copy.sym_name = StringAttr(f"{name}_c{n}")
            module.body.block.insert_op_before(copy, next(iter(module.ops)))
            new_ops.append(memref.GetGlobalOp(copy.sym_name.data, what.type))
        else:
            value = mapper[what]
            new_ops.append(bufferization.ToBufferOp.create(
                operands=[value], result_types=[memref_type(value.type)],
                properties={"read_only": UnitAttr()}))  # fmt: skip
    allocs = [memref.AllocOp([], [], memref_type(r.type)) for r in op.results]
    new_ops += allocs
    new_ops += [memref.AllocOp([], [], t) for t in made.scratch]
    arguments = [new.results[0] for new in new_ops]
    call = func.CallOp(name, arguments, [])
    call.attributes["tidu.domain_size"] = IntegerAttr(1, 64)
    tensors = [bufferization.ToTensorOp(a.memref) for a in allocs]
    for new in [*hoisted, *new_ops, call, *tensors]:
        block.insert_op_before(new, op)
    for result, tensor in zip(op.results, tensors, strict=True):
        result.replace_all_uses_with(tensor.tensor)
    block.erase_op(op)
    module.body.block.add_op(made.function)


@dataclass(frozen=True)
class TiduLowerControlPass(ModulePass):
    """Make each ``tidu.scan`` whose body lowers to kernels one ``scf.for`` kernel.

    The call of one scan kernel replaces it (see the module docstring); a scan the pass
    cannot take gets ``DRIVER_ATTR``."""

    name = "tidu-lower-control"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.ops if isinstance(f, func.FuncOp)
                     and KERNEL_ATTR not in f.attributes and f.body.blocks]  # fmt: skip
        for function in functions:
            scans = [s for s in function.body.block.ops if isinstance(s, ScanOp)]
            for n, scan in enumerate(scans):
                try:
                    primitive = _bodies().primitive_of(scan)
                    made = scan_kernel(scan, primitive, f"{function.sym_name.data}_s{n}")
                except NotLowered as why:
                    scan.attributes[DRIVER_ATTR] = StringAttr(str(why))
                    continue
                _replace(scan, made, op)

"""``tidu-lower-control``: a ``tidu.scan``, ``tidu.while_loop`` or ``tidu.cond`` whose
bodies are all kernels becomes ONE kernel (an ``scf.for``, ``scf.while`` or ``scf.if``).

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

A while loop is the carry state and an ``scf.while`` whose condition region holds the
test's kernels and a load of its flag, and whose body region the body's kernels and
the copies of the new carries into the state (``while_kernel``); a cond an ``scf.if``
on its predicate whose branches write the results (``cond_kernel``). The bodies'
steps are emitted by ``tidu_loop_bodies.emit_body``: a library step of a loop body
whose inputs are all loop-invariant (a constant, the transpose of a weight) is made
once, before the call, and passed in (never out of a cond's branch); a real float
contraction is a loop nest in the loop (``tidu_loop_contraction``), a transpose or a
reshape a copying loop nest (``tidu_loop_layout``). A loop or cond stays as it was (a
scan's or while loop's node plan runs it with ``compiler.native_loop``'s driver, a
cond's picks its branch's program) when a body has another library step (an integer
contraction, a gather, a nested loop the body could not lower), a LAPACK kernel with a
status, a complex buffer, or a row buffer used other than by loads and stores. Its op
then gets ``tidu.loop_driver = "<why>"``, which ``tidu-compile dump --stage loops``
shows. The ``llvm`` stage lowers ``scf.while`` with ``tidu-convert-scf-to-cf``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from tidu_compile.dialects.tidu_control import CondOp, ControlFlowOperation, ScanOp, WhileLoopOp
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

from .tidu_loop_bodies import (
    BodyModule,
    Buffer,
    LoopKernel,
    NotLowered,
    copy_buffer,
    emit_body,
    write_carries,
)
from .tidu_loop_contraction import append_to, index_constant
from .tidu_lower_to_loops import KERNEL_ATTR, memref_type

__all__ = ["DRIVER_ATTR", "SCAN_BODIES", "NotLowered", "ScanBodies", "TiduLowerControlPass"]

DRIVER_ATTR = "tidu.loop_driver"
"""On a loop or cond left as a library step (a scan for the native driver): why the
pass could not take it."""


class ScanBodies(Protocol):
    """What the pass needs of the compiler, which sits above the passes and installs
    itself here (``tidu_compile.compiler.scan_bodies``, imported by the stage table)."""

    def lower(self, body: Any) -> ModuleOp:
        """The ``loops``-stage module of ``body`` (an ``ops.Body``: the same stages as any
        program); ``NotLowered`` when it has no program or a kernel with a status."""
        ...

    def kernel_functions(self, module: ModuleOp) -> list[func.FuncOp]: ...

    def node_function(self, module: ModuleOp) -> func.FuncOp: ...

    def primitive_of(self, op: Operation) -> Any: ...


#: The compiler's side of the pass (None until ``compiler.stages`` first lists the passes).
SCAN_BODIES: ScanBodies | None = None


def _bodies() -> ScanBodies:
    if SCAN_BODIES is None:
        raise NotLowered("no compiler to lower the body (import tidu_compile.compiler)")
    return SCAN_BODIES


def _lowered(body: Any) -> BodyModule:
    """``body`` (an ``ops.Body``) at the ``loops`` stage."""
    bodies = _bodies()
    module = bodies.lower(body)
    kernels = {f.sym_name.data: f for f in bodies.kernel_functions(module)}
    return BodyModule(module, bodies.node_function(module), kernels, bodies.primitive_of)


def _start(op: ControlFlowOperation) -> tuple[LoopKernel, list[Buffer], list[Buffer],
                                             list[MemRefType]]:  # fmt: skip
    """The kernel of ``op`` with its entry block: arguments for the op's operands (the
    ins) and results (the outs), and the results' memref types."""
    operand_types = [memref_type(v.type) for v in op.operands]
    result_types = [memref_type(r.type) for r in op.results]
    if any(isinstance(t.element_type, ComplexType) for t in [*operand_types, *result_types]):
        raise NotLowered("a complex buffer")
    entry = Block(arg_types=[*operand_types, *result_types])
    ins = [Buffer(a) for a in entry.args[: len(operand_types)]]
    outs = [Buffer(a) for a in entry.args[len(operand_types) :]]
    return LoopKernel(entry, len(operand_types)), ins, outs, result_types


def _finish(kernel: LoopKernel, name: str) -> func.FuncOp:
    """The kernel function ``name`` of ``kernel``'s entry block (ended with its return)."""
    kernel.entry.add_op(func.ReturnOp())
    noalias = DictionaryAttr({"llvm.noalias": UnitAttr()})
    types = [a.type for a in kernel.entry.args]
    function = func.FuncOp(name, (types, []), Region(kernel.entry),
                           arg_attrs=ArrayAttr([noalias] * len(types)))  # fmt: skip
    function.attributes[KERNEL_ATTR] = UnitAttr()
    return function


def _initial_carries(kernel: LoopKernel, carries: list[Buffer], states: list[Buffer],
                     types: list[MemRefType]) -> None:  # fmt: skip
    """The carry state starts as the given carries."""
    for carry, state, t in zip(carries, states, types, strict=False):
        copy_buffer(append_to(kernel.entry), carry, state, t.get_shape(), None)


def scan_kernel(op: ScanOp, scan: Any, name: str) -> tuple[LoopKernel, func.FuncOp]:
    """The kernel ``name`` computing ``op`` (``scan``: its ``ops.Scan``); ``NotLowered``
    when the body cannot be one."""
    body = _lowered(scan.body)
    k, c = scan.consts, scan.carries
    kernel, ins, outs, result_types = _start(op)
    ins = [Buffer(b.value, stacked=i >= k + c) for i, b in enumerate(ins)]
    outs = [Buffer(b.value, stacked=j >= c) for j, b in enumerate(outs)]
    _initial_carries(kernel, ins[k : k + c], outs[:c], result_types)
    emit_entry = append_to(kernel.entry)
    loop = Block(arg_types=[IndexType()])
    lower, upper, one = (index_constant(emit_entry, v) for v in (0, scan.length, 1))
    emit_entry(scf.ForOp(lower, upper, one, [], loop))
    emit = append_to(loop)
    row: SSAValue = loop.args[0]
    if scan.reverse:
        last = index_constant(emit, scan.length - 1)
        row = emit(arith.SubiOp(last, loop.args[0])).results[0]
    arguments = [*ins[:k], *outs[:c], *ins[k + c :]]  # the body reads the carry state
    results = emit_body(emit, body, arguments, k, 0, kernel, row)
    for j in range(c, len(results)):  # ys[row] = y
        copy_buffer(emit, results[j], outs[j], result_types[j].get_shape()[1:], row)
    write_carries(emit, results[:c], outs[:c], result_types[:c], kernel, row)
    loop.add_op(scf.YieldOp())
    return kernel, _finish(kernel, name)


def while_kernel(op: WhileLoopOp, loop: Any, name: str) -> tuple[LoopKernel, func.FuncOp]:
    """The kernel ``name`` computing ``op`` (``loop``: its ``ops.WhileLoop``): the carry
    state, then an ``scf.while`` whose condition region runs the test's kernels and
    whose body region the body's, writing the new carries into the state::

        func.func @node_w0(%kc..., %kb..., %c0..., %state..., %scratch...) {
          <copy %c0 -> %state>
          scf.while () : () -> () {
            <cond_body's kernels: %state -> %test>
            %go = memref.load %test[] : memref<i1>
            scf.condition(%go)
          } do {
            <body's kernels: %state -> %new>
            <copy %new -> %state>
            scf.yield
          }
        }
    """
    test_body, step_body = _lowered(loop.cond_body), _lowered(loop.body)
    kc, c = loop.cond_consts, loop.carries
    kb = len(loop.body.input_types) - c
    kernel, ins, outs, result_types = _start(op)
    _initial_carries(kernel, ins[kc + kb :], outs, result_types)
    test, step = Block(), Block()
    emit_test = append_to(test)
    (flag,) = emit_body(emit_test, test_body, [*ins[:kc], *outs], kc, 0, kernel, None)
    go = emit_test(memref.LoadOp.get(flag.value, []))
    emit_test(scf.ConditionOp(go.results[0]))
    emit_step = append_to(step)
    new = emit_body(emit_step, step_body, [*ins[kc : kc + kb], *outs], kb, kc, kernel, None)
    write_carries(emit_step, new, outs, result_types, kernel, None)
    step.add_op(scf.YieldOp())
    append_to(kernel.entry)(scf.WhileOp([], [], Region(test), Region(step)))
    return kernel, _finish(kernel, name)


def cond_kernel(op: CondOp, cond: Any, name: str) -> tuple[LoopKernel, func.FuncOp]:
    """The kernel ``name`` computing ``op`` (``cond``: its ``ops.Cond``): an ``scf.if`` on
    the predicate, each branch its body's kernels writing the results::

        func.func @node_c0(%pred: memref<i1>, %x..., %r..., %scratch...) {
          %p = memref.load %pred[] : memref<i1>
          scf.if %p { <true_body's kernels: %x -> %r> } else { <false_body's> }
        }

    Nothing is hoisted out of a branch (a step runs only in its branch), so a branch
    with a library step is ``NotLowered``."""
    branches = _lowered(cond.true_body), _lowered(cond.false_body)
    kernel, ins, outs, result_types = _start(op)
    emit = append_to(kernel.entry)
    predicate = emit(memref.LoadOp.get(ins[0].value, []))
    regions = []
    for branch in branches:
        block = Block()
        emit_branch = append_to(block)
        results = emit_body(emit_branch, branch, ins[1:], 0, 1, kernel, None)
        for result, out, t in zip(results, outs, result_types, strict=True):
            copy_buffer(emit_branch, result, out, t.get_shape(), None)
        block.add_op(scf.YieldOp())
        regions.append(Region(block))
    emit(scf.IfOp(predicate.results[0], [], regions[0], regions[1]))
    return kernel, _finish(kernel, name)


def _replace(op: ControlFlowOperation, kernel: LoopKernel, function: func.FuncOp,
             module: ModuleOp) -> None:  # fmt: skip
    """``op`` becomes the buffers and the call of ``function`` (``kernel``'s helpers and
    constants, and ``function``, added to ``module``)."""
    block = op.parent_block()
    assert block is not None
    name = function.sym_name.data
    known = {f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp | memref.GlobalOp)}
    for helper in kernel.helpers:  # math expansions: one per function and type, same text
        if helper.sym_name.data not in known:
            module.body.block.add_op(helper.clone())
    new_ops: list[Operation] = []
    mapper = {argument: op.operands[i] for argument, i in kernel.const_operands.items()}
    hoisted = [h.clone(value_mapper=mapper) for h in kernel.hoisted]  # maps their results too
    for value in op.operands:
        new_ops.append(bufferization.ToBufferOp.create(
            operands=[value], result_types=[memref_type(value.type)],
            properties={"read_only": UnitAttr()}))  # fmt: skip
    for n, what in enumerate(kernel.constants):
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
    new_ops += [memref.AllocOp([], [], t) for t in kernel.scratch]
    arguments = [new.results[0] for new in new_ops]
    call = func.CallOp(name, arguments, [])
    call.attributes["tidu.domain_size"] = IntegerAttr(1, 64)
    tensors = [bufferization.ToTensorOp(a.memref) for a in allocs]
    for new in [*hoisted, *new_ops, call, *tensors]:
        block.insert_op_before(new, op)
    for result, tensor in zip(op.results, tensors, strict=True):
        result.replace_all_uses_with(tensor.tensor)
    block.erase_op(op)
    module.body.block.add_op(function)


#: Each control-flow op the pass takes: its kernel builder and its kernels' name suffix.
_KERNELS: dict[type[ControlFlowOperation], tuple[Any, str]] = {
    ScanOp: (scan_kernel, "s"),
    WhileLoopOp: (while_kernel, "w"),
    CondOp: (cond_kernel, "c"),
}


@dataclass(frozen=True)
class TiduLowerControlPass(ModulePass):
    """Make each ``tidu.scan``, ``tidu.while_loop``, ``tidu.cond`` of kernels one kernel.

    The kernel is an ``scf.for``, ``scf.while`` or ``scf.if`` over the bodies' kernels.

    The call of the kernel replaces the op (see the module docstring); an op the pass
    cannot take gets ``DRIVER_ATTR``."""

    name = "tidu-lower-control"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.ops if isinstance(f, func.FuncOp)
                     and KERNEL_ATTR not in f.attributes and f.body.blocks]  # fmt: skip
        for function in functions:
            loops = [s for s in function.body.block.ops if type(s) in _KERNELS]
            for n, loop in enumerate(loops):
                build, suffix = _KERNELS[type(loop)]
                try:
                    primitive = _bodies().primitive_of(loop)
                    kernel, made = build(loop, primitive, f"{function.sym_name.data}_{suffix}{n}")
                except NotLowered as why:
                    loop.attributes[DRIVER_ATTR] = StringAttr(str(why))
                    continue
                _replace(loop, kernel, made, op)

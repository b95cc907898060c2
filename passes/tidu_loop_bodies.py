"""A lowered loop body, inlined into the region of the loop kernel that runs it.

``tidu-lower-control`` makes a ``tidu.scan`` or a ``tidu.while_loop`` one kernel
function: the body (and a while loop's condition) is lowered through the stages like
any program, and its node function's steps are emitted, in plan order, into the
loop's region (``emit_body``): a kernel call is inlined (``inline_kernel``; a load or
store of a *stacked* buffer, a scan's ``xs`` or ``ys``, gets the row as its first
index), a float contraction becomes a loop nest (``tidu_loop_contraction``), a transpose
or a reshape a copying loop nest (``tidu_loop_layout``), a step whose inputs are all
loop-invariant is *hoisted* (made once by the caller, before the loop kernel's call,
and passed in), and an intermediate gets a scratch buffer of the kernel. Anything else
(a library step, an op the walk does not know) raises ``NotLowered``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidu_compile.dialects.tidu_shape import DotGeneralOp, ReshapeOp, TransposeOp
from xdsl.dialects import arith, bufferization, func, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from .tidu_loop_contraction import Emit, close_loops, contraction_loops, index_constant, loop_nest
from .tidu_loop_layout import layout_loops
from .tidu_lower_to_loops import memref_type

__all__ = ["Buffer", "LoopKernel", "NotLowered", "copy_buffer", "emit_body", "write_carries"]


class NotLowered(Exception):
    """The body of a loop has something a kernel cannot hold (the reason)."""


@dataclass(frozen=True)
class Buffer:
    """A memref of the loop kernel, and whether it is stacked (a body value is its row)."""

    value: SSAValue
    stacked: bool = False

    def at(self, row: SSAValue | None, indices: Sequence[SSAValue]) -> list[SSAValue]:
        if not self.stacked:
            return list(indices)
        assert row is not None, "a stacked buffer outside a scan"
        return [row, *indices]


def copy_buffer(emit: Emit, source: Buffer, target: Buffer, shape: Sequence[int],
                row: SSAValue | None) -> None:  # fmt: skip
    """``target = source`` element by element (a stacked buffer at row ``row``)::

    scf.for %i0 = %c0 to %cN step %c1 { %v = memref.load ... memref.store %v, ... }
    """
    if 0 in shape:
        return
    indices, emit, loops = loop_nest(emit, shape)
    load = emit(memref.LoadOp.get(source.value, source.at(row, indices)))
    emit(memref.StoreOp.get(load.results[0], target.value, target.at(row, indices)))
    close_loops(loops)


@dataclass
class LoopKernel:
    """A loop kernel being built: its entry block, whose first ``operands`` arguments are
    the loop op's operands and the next its results, and what its call passes after
    them: constants (globals, and the results of ``hoisted`` steps, which read the loop
    op's operands through ``const_operands``) before scratch buffers (outputs)."""

    entry: Block
    operands: int
    constants: list[memref.GlobalOp | SSAValue] = field(default_factory=list)
    hoisted: list[Operation] = field(default_factory=list)
    #: a body's loop-invariant argument -> the index of the loop op's operand it is
    const_operands: dict[SSAValue, int] = field(default_factory=dict)
    scratch: list[MemRefType] = field(default_factory=list)
    helpers: list[func.FuncOp] = field(default_factory=list)  # the bodies' math functions

    def extra(self, what: MemRefType | memref.GlobalOp | SSAValue, t: MemRefType) -> Buffer:
        """An argument after the loop op's: inputs (constants) before every output, as
        the plan passes them (``compiler.plan_builder``)."""
        if isinstance(what, MemRefType):  # scratch: an output
            self.scratch.append(what)
            return Buffer(self.entry.insert_arg(t, len(self.entry.args)))
        self.constants.append(what)
        return Buffer(self.entry.insert_arg(t, self.operands + len(self.constants) - 1))

    def add_helpers(self, body: ModuleOp) -> None:
        known = {h.sym_name.data for h in self.helpers}
        self.helpers += [f for f in body.ops if isinstance(f, func.FuncOp)
                         and getattr(f.sym_visibility, "data", None) == "private"
                         and f.sym_name.data not in known]  # fmt: skip


def _rows_loaded_and_stored(callee: func.FuncOp, buffers: Sequence[Buffer]) -> None:
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


def inline_kernel(emit: Emit, callee: func.FuncOp, arguments: list[SSAValue],
                  stacked: set[SSAValue], row: SSAValue | None) -> None:  # fmt: skip
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
        assert row is not None
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


@dataclass(frozen=True)
class BodyModule:
    """A body lowered to the ``loops`` stage: its node function, kernels and globals, and
    ``primitive_of`` (the compiler's reading of a ``tidu`` op's primitive)."""

    module: ModuleOp
    node: func.FuncOp
    kernels: dict[str, func.FuncOp]
    primitive_of: Callable[[Operation], Any]

    @property
    def globals(self) -> dict[str, memref.GlobalOp]:
        return {g.sym_name.data: g for g in self.module.ops if isinstance(g, memref.GlobalOp)}


def emit_body(emit: Emit, body: BodyModule, arguments: Sequence[Buffer], consts: int,
              first_operand: int, kernel: LoopKernel,
              row: SSAValue | None) -> list[Buffer]:  # fmt: skip
    """Emit ``body``'s node function with ``arguments`` for its arguments (the first
    ``consts`` loop-invariant: the loop op's operands from ``first_operand`` on) into
    ``emit``; the buffers of its results."""
    block = body.node.body.block
    primitive_of = body.primitive_of
    buffer_of: dict[SSAValue, Buffer] = dict(zip(block.args, arguments, strict=True))
    for i, argument in enumerate(block.args[:consts]):
        kernel.const_operands[argument] = first_operand + i
    invariant: set[SSAValue] = set(block.args[:consts])  # known before the loop
    constants: dict[SSAValue, int] = {}
    globals_ = body.globals
    kernel.add_helpers(body.module)
    for body_op in block.ops:
        if isinstance(body_op, bufferization.ToBufferOp | bufferization.ToTensorOp):
            buffer_of[body_op.results[0]] = buffer_of[body_op.operands[0]]
        elif isinstance(body_op, memref.AllocOp | memref.GetGlobalOp):
            t = body_op.results[0].type
            assert isinstance(t, MemRefType)
            what = globals_[body_op.name_.string_value()] if isinstance(
                body_op, memref.GetGlobalOp) else t  # fmt: skip
            buffer_of[body_op.results[0]] = kernel.extra(what, t)
        elif body_op.dialect_name() == "tidu" and all(v in invariant for v in body_op.operands):
            kernel.hoisted.append(body_op)  # made once, by the caller
            for result in body_op.results:
                invariant.add(result)
                buffer_of[result] = kernel.extra(result, memref_type(result.type))
        elif isinstance(body_op, DotGeneralOp):
            out = memref_type(body_op.results[0].type)
            buffer = buffer_of[body_op.results[0]] = kernel.extra(out, out)
            lhs, rhs = (buffer_of[v] for v in body_op.operands)
            stacked = {b.value: b for b in (lhs, rhs)}

            def at(value: SSAValue, indices: list[SSAValue],
                   stacked: dict[SSAValue, Buffer] = stacked) -> list[SSAValue]:  # fmt: skip
                known = stacked.get(value)
                return known.at(row, indices) if known is not None else list(indices)

            if not contraction_loops(emit, primitive_of(body_op), lhs.value, rhs.value,
                                     buffer.value, at):  # fmt: skip
                raise NotLowered("the body has an integer contraction")
        elif isinstance(body_op, TransposeOp | ReshapeOp):
            out = memref_type(body_op.results[0].type)
            buffer = buffer_of[body_op.results[0]] = kernel.extra(out, out)
            source = buffer_of[body_op.operands[0]]

            def at_source(value: SSAValue, indices: list[SSAValue],
                          source: Buffer = source) -> list[SSAValue]:  # fmt: skip
                return source.at(row, indices) if value is source.value else list(indices)

            layout_loops(emit, primitive_of(body_op), source.value,
                         memref_type(body_op.operands[0].type).get_shape(), buffer.value,
                         at_source)  # fmt: skip
        elif isinstance(body_op, arith.ConstantOp) and isinstance(body_op.result.type, IndexType):
            assert isinstance(body_op.value, IntegerAttr)
            constants[body_op.result] = body_op.value.value.data
        elif isinstance(body_op, func.CallOp):
            callee = body.kernels[body_op.callee.string_value()]
            buffers = [buffer_of[a] for a in body_op.arguments if a in buffer_of]
            _rows_loaded_and_stored(callee, buffers)
            call_arguments = [buffer_of[a].value if a in buffer_of
                              else index_constant(emit, constants[a])
                              for a in body_op.arguments]  # fmt: skip
            inline_kernel(emit, callee, call_arguments,
                          {b.value for b in buffers if b.stacked}, row)  # fmt: skip
        elif isinstance(body_op, func.ReturnOp):
            return [buffer_of[v] for v in body_op.operands]
        elif body_op.dialect_name() == "tidu":
            raise NotLowered(f"the body has a library step: {type(primitive_of(body_op)).__name__}")
        else:
            raise NotLowered(f"{body_op.name} in the body")
    raise NotLowered("the body's node function has no return")


def write_carries(emit: Emit, results: Sequence[Buffer], states: Sequence[Buffer],
                  types: Sequence[MemRefType], kernel: LoopKernel,
                  row: SSAValue | None) -> None:  # fmt: skip
    """Copy each new carry ``results[j]`` into its state ``states[j]``; a carry read from
    another's state goes through scratch first (a swap)."""
    state_values = {s.value for s in states}
    staged: list[tuple[int, Buffer]] = []
    for j, (source, state) in enumerate(zip(results, states, strict=True)):
        if source.value is state.value:
            continue
        if source.value in state_values:
            scratch = kernel.extra(types[j], types[j])
            copy_buffer(emit, source, scratch, types[j].get_shape(), row)
            source = scratch
        staged.append((j, source))
    for j, source in staged:
        copy_buffer(emit, source, states[j], types[j].get_shape(), row)

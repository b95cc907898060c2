"""Read the runtime ``Plan`` off the ``loops`` form of ``@node``.

After ``tidu-lower-to-loops`` the node function is a straight-line sequence of::

    %m  = bufferization.to_buffer %t        -> alias of a buffer
    %p  = builtin.unrealized_conversion_cast -> alias (complex memref viewed as (re, im) pairs)
    %o  = memref.alloc()                     -> a fresh output buffer
    %lo = arith.constant 0 : index           -> (a chunked kernel's range: see its call)
    func.call @node_k0(%m, ..., %o)          -> KernelStep (allocated buffers are outputs;
                                                a LAPACK kernel's tidu.status_* too)
    %t2 = bufferization.to_tensor %o         -> alias of a buffer
    %r  = tidu.<op> %a, %b                   -> LibraryStep (numpy between kernels)
    func.return %r, ...                      -> the plan's results

Anything else in ``@node`` is an error naming the op: nothing falls through.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, bufferization, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Operation, SSAValue

from tidu_compile.compiler.plan import KernelStep, LibraryStep, Plan
from tidu_compile.compiler.ssa_program import NodeProgram
from tidu_compile.compiler.to_tidu import UnloweredOpError, dtype_name, op_type, primitive_of
from tidu_compile.dialects import tidu
from tidu_compile.ops.base import TensorType
from tidu_compile.passes.tidu_loop_access import FILL_ATTR
from tidu_compile.passes.tidu_lower_to_loops import KERNEL_ATTR

__all__ = [
    "LIBRARY_BY_DESIGN", "build_plan", "kernel_functions", "node_function",
]  # fmt: skip

#: tidu ops that run as numpy library calls by design (BLAS, layout changes, scans,
#: sorting, argmax and argmin: their primitives' ``library_call``); any other tidu op
#: left outside a kernel is a fallback (the compiler could not lower it). The real
#: cholesky, triangular_solve, solve and slogdet are kernels (``tidu-lower-linalg``:
#: LAPACK from native code) and never reach here; complex ones do, by design.
LIBRARY_BY_DESIGN: tuple[type[Operation], ...] = tuple(
    op for primitive, op in tidu.OP_OF_PRIMITIVE.items() if primitive.library_call
)


def node_function(module: ModuleOp) -> func.FuncOp:
    """The node function: the first public ``func.func`` of the module that is not a
    kernel (the outlined math functions are private)."""
    for op in module.ops:
        if (isinstance(op, func.FuncOp) and KERNEL_ATTR not in op.attributes
                and getattr(op.sym_visibility, "data", None) != "private"):  # fmt: skip
            return op
    raise ValueError("stage loops: the module has no public node function")


def _memref_type(value: SSAValue) -> TensorType:
    t = value.type
    if not isinstance(t, MemRefType):
        raise TypeError(f"stage loops: expected a memref, got {t}")
    return TensorType(tuple(t.get_shape()), dtype_name(t.element_type))


def _int_attribute(op: Operation, name: str, default: int = 0) -> int:
    attribute = op.attributes.get(name)
    return attribute.value.data if isinstance(attribute, IntegerAttr) else default


def _string_attribute(op: Operation, name: str) -> str:
    attribute = op.attributes.get(name)
    return attribute.data if isinstance(attribute, StringAttr) else ""


def _int_list_attribute(op: Operation, name: str) -> list[int]:
    attribute = op.attributes.get(name)
    if not isinstance(attribute, ArrayAttr):
        return []
    return [a.value.data for a in attribute.data if isinstance(a, IntegerAttr)]


def _string_list_attribute(op: Operation, name: str) -> tuple[str, ...]:
    attribute = op.attributes.get(name)
    if not isinstance(attribute, ArrayAttr):
        return ()
    return tuple(a.data for a in attribute.data if isinstance(a, StringAttr))


def _kernel_sizes(module: ModuleOp) -> dict[str, int]:
    """Operations per kernel function (its per-element cost, math functions expanded),
    without the fill of partly written results (``FILL_ATTR``: a cost of the border)
    nor index arithmetic (``arith`` ops of ``index`` values: loop bounds and the
    addresses of slices and pads, which LLVM folds into the addressing)."""
    callees = {op.sym_name.data: _operations(op) for op in module.ops
               if isinstance(op, func.FuncOp) and KERNEL_ATTR not in op.attributes}  # fmt: skip
    return {op.sym_name.data: _operations(op, callees) for op in kernel_functions(module)}


def kernel_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The outlined kernel functions of a ``loops``-stage module (``KERNEL_ATTR``)."""
    return [op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]


def _operations(function: Operation, callees: dict[str, int] | None = None) -> int:
    """The ops of ``function``, a call counting as its callee's ops (``callees``: the
    outlined math functions, inlined by LLVM)."""
    count, stack = 0, [function]
    while stack:
        op = stack.pop()
        if FILL_ATTR in op.attributes:
            continue
        types = [*op.operand_types, *op.result_types]
        index = op.dialect_name() == "arith" and all(isinstance(t, IndexType) for t in types)
        count += not index
        if isinstance(op, func.CallOp) and callees:
            count += callees.get(op.callee.string_value(), 0)
        stack.extend(inner for region in op.regions for block in region.blocks
                     for inner in block.ops)  # fmt: skip
    return count


def _work(domain_size: int, operations: int, buffer_types: list[TensorType]) -> int:
    """A kernel's estimated cost in f64-operation units: elements x operations, scaled by
    the widest element (an f32 vector holds twice the lanes of an f64 one)."""
    itemsize = max((np.dtype(t.dtype).itemsize for t in buffer_types), default=8)
    return domain_size * operations * itemsize // 8


def build_plan(module: ModuleOp, program: NodeProgram) -> Plan:
    """The plan of a module in ``loops`` form, for ``program``."""
    function = node_function(module)
    kernel_sizes = _kernel_sizes(module)
    block = function.body.block
    types: list[TensorType] = [program.types[i] for i in range(program.arg_count)]
    buffer_of: dict[SSAValue, int] = {arg: i for i, arg in enumerate(block.args)}
    fresh: set[int] = set()
    constants: list[tuple[int, tuple[float, ...]]] = []
    steps: list[KernelStep | LibraryStep] = []
    returned: list[int] = []

    def new_buffer(t: TensorType) -> int:
        types.append(t)
        return len(types) - 1

    for op in block.ops:
        if isinstance(
            op, bufferization.ToBufferOp | bufferization.ToTensorOp | UnrealizedConversionCastOp
        ):
            buffer_of[op.results[0]] = buffer_of[op.operands[0]]
        elif isinstance(op, memref.AllocOp):
            index = new_buffer(_memref_type(op.results[0]))
            buffer_of[op.results[0]] = index
            fresh.add(index)
        elif isinstance(op, memref.GetGlobalOp):  # a kernel's %params: a constant buffer
            index = new_buffer(_memref_type(op.results[0]))
            buffer_of[op.results[0]] = index
            constants.append((index, _global_values(module, op.name_.string_value())))
        elif isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
            continue  # the [lo, hi) range of a chunked kernel call, read off its attributes
        elif isinstance(op, func.CallOp):
            buffers = [buffer_of[a] for a in op.arguments if not isinstance(a.type, IndexType)]
            if len(buffers) < len(op.arguments) and _int_attribute(op, "tidu.chunk_extent") < 1:
                raise ValueError(f"stage loops: {op.callee} takes a row range but has no extent")
            outputs = tuple(b for b in buffers if b in fresh)
            inputs = tuple(b for b in buffers if b not in fresh)
            fresh.difference_update(outputs)
            symbol = op.callee.string_value()
            domain_size = _int_attribute(op, "tidu.domain_size")
            steps.append(
                KernelStep(
                    symbol,
                    inputs,
                    outputs,
                    _int_attribute(op, "tidu.chunk_extent"),
                    domain_size,
                    tuple(_int_list_attribute(op, "tidu.partial_outputs")),
                    _work(domain_size, kernel_sizes.get(symbol, 1), [types[b] for b in buffers]),
                    _string_list_attribute(op, "tidu.partial_combiners"),
                    _int_attribute(op, "tidu.status_output", -1),
                    _string_attribute(op, "tidu.status_error"),
                )
            )
        elif isinstance(op, func.ReturnOp):
            returned = [buffer_of[v] for v in op.operands]
        elif op.dialect_name() == "tidu":
            primitive = primitive_of(op)
            outputs = tuple(new_buffer(op_type(r)) for r in op.results)
            for result, index in zip(op.results, outputs, strict=True):
                buffer_of[result] = index
            steps.append(
                LibraryStep(
                    primitive,
                    tuple(buffer_of[v] for v in op.operands),
                    outputs,
                    fallback=not isinstance(op, LIBRARY_BY_DESIGN),
                )
            )
        else:
            raise UnloweredOpError(f"stage loops: {op.name} cannot appear in the node function")
    present = iter(returned)
    results = tuple(None if r is None else next(present) for r in program.results)
    return Plan(program.arg_count, tuple(types), tuple(steps), results, tuple(constants))


def _global_values(module: ModuleOp, name: str) -> tuple[float, ...]:
    """The values of the constant ``memref.global @name`` (a kernel's ``%params``)."""
    for op in module.ops:
        if isinstance(op, memref.GlobalOp) and op.sym_name.data == name:
            initial = op.initial_value
            if isinstance(initial, DenseIntOrFPElementsAttr):
                return tuple(float(v) for v in initial.get_values())
    raise ValueError(f"stage loops: no constant memref.global @{name} in the module")

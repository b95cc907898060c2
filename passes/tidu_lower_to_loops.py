"""``tidu-lower-to-loops``: outline every ``tidu.kernel`` into an scf loop-nest function.

Preconditions: ``tidu-fuse-elementwise`` ran; kernel bodies compute with the ops of
``SCALAR_LOWERINGS`` (f32, f64, i1 scalars) and ``COMPLEX_LOWERINGS`` (complex
scalars); any other op in a kernel body raises ``LoweringError`` naming the op and
this pass.

For each top-level ``func.func @f``, its kernels (in order of appearance, i = 0, 1,
...) become ``func.func @f_k<i>`` (``kernel_symbol``), placed after ``@f`` and marked
with the unit attribute ``tidu.kernel``. Kernel function convention:

  * arguments: one static-shape memref per kernel operand, in operand order, then one
    per kernel result, in result order; no results. A real or i1 tensor<SxT> is
    memref<SxT> (``memref<4x8xf64>``, 0-d ``memref<f64>``, ``memref<4xi1>``: row-major,
    no offset, i1 one byte per element as numpy's bool); a tensor<Sxcomplex<fN>> is
    memref<Sx2xfN>, the same buffer seen as (re, im) pairs. Every argument carries
    ``{llvm.noalias}`` (inputs may repeat, outputs are fresh buffers);
  * body: the outputs of reductions are set to their combiner's identity by a loop
    nest of their own (0 for a sum, -inf for a max...); then one ``scf.for`` nest over
    the domain (index type, the last dimension innermost) loads every operand at its
    mapped indices (``%c0`` for a ``-1`` dimension), computes the body with arith/math
    ops, stores each plain result, and combines each reduced result into its output
    (load, ``arith.addf`` with ``fastmath<reassoc>`` so LLVM may vectorize the sum,
    or ``arith.maximumf``, ... : ``tidu_loop_combine``; store).
  * map entries that are more than a dimension (slices, gathers, pads, scatter-adds:
    ``tidu_access.Index``) become index arithmetic (``tidu_loop_access``): affine ones
    ``arith.muli``/``addi``, ``in<k>`` ones a load of the index operand, wrapped and
    clamped into the dimension; a result written through ``in<k>`` accumulates like a
    reduced one. An operand with a fill is read at index 0 and the fill selected where
    its index leaves it; a result with a fill gets it, before the main nest, where no
    iteration writes.

In ``@f`` each kernel is replaced, in this exact form, by::

    %0 = bufferization.to_buffer %v read_only : tensor<8xf64> to memref<8xf64>
    %1 = bufferization.to_buffer %x read_only : tensor<4x8xf64> to memref<4x8xf64>
    %2 = memref.alloc() : memref<4x8xf64>
    %3 = memref.alloc() : memref<8xf64>
    func.call @f_k0(%0, %1, %2, %3)
      : (memref<8xf64>, memref<4x8xf64>, memref<4x8xf64>, memref<8xf64>) -> ()
    %e = bufferization.to_tensor %2 : memref<4x8xf64> to tensor<4x8xf64>
    %s = bufferization.to_tensor %3 : memref<8xf64> to tensor<8xf64>

i.e. one ``to_buffer`` per distinct operand value (an alias of that tensor's buffer:
a function argument or an earlier result), one ``memref.alloc`` per kernel result
(a new, uninitialized output buffer), the call (run the kernel; operands first, then
outputs), one ``to_tensor`` per result (an alias of the output buffer). A complex
buffer (a ``to_buffer`` or ``alloc`` result) reaches the call through
``builtin.unrealized_conversion_cast %b : memref<Sxcomplex<fN>> to memref<Sx2xfN>``
(an alias: same pointer); ``to_tensor`` reads the complex ``alloc`` itself. Every
other op of ``@f`` (``dot_general``, ``reshape``, ``transpose``, ``constant``,
unfused complex ops: numpy library calls) and the final ``func.return`` stay as they
are.

``extract_kernel_module(module)`` returns a new module holding copies of the kernel
functions only, ready for ``lower_to_llvm_dialect``.

The kernel function of the example above::

    func.func @f_k0(%in0: memref<8xf64> {llvm.noalias}, %in1: memref<4x8xf64> {llvm.noalias},
                    %out0: memref<4x8xf64> {llvm.noalias},
                    %out1: memref<8xf64> {llvm.noalias}) attributes {tidu.kernel} {
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      scf.for %i0 = %c0 to %c8 step %c1 {
        %0 = arith.constant 0.000000e+00 : f64
        memref.store %0, %out1[%i0] : memref<8xf64>
      }
      scf.for %i0_1 = %c0 to %c4 step %c1 {
        scf.for %i1 = %c0 to %c8 step %c1 {
          %v = memref.load %in0[%i1] : memref<8xf64>
          %x = memref.load %in1[%i0_1, %i1] : memref<4x8xf64>
          %p = arith.mulf %x, %v : f64
          %e = math.exp %p : f64
          memref.store %e, %out0[%i0_1, %i1] : memref<4x8xf64>
          %1 = memref.load %out1[%i1] : memref<8xf64>
          %2 = arith.addf %1, %e fastmath<reassoc> : f64
          memref.store %2, %out1[%i1] : memref<8xf64>
        }
      }
      func.return
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import cast

from tidu_compile.dialects.tidu_base import element_type
from tidu_compile.dialects.tidu_kernel import KernelOp, YieldOp
from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    ComplexType,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from .errors import LoweringError
from .tidu_complex_lowering import Scalar, complex_lowering
from .tidu_fusion_access import MASK_OPS
from .tidu_loop_access import (
    fill_result,
    guarded_load,
    index_values,
    triangle_select,
    whole_fill_results,
)
from .tidu_loop_combine import combine, identity
from .tidu_loop_params import (
    PARAMS_NAME,
    factor_parts,
    load_factors,
    params_global,
    params_type,
    runtime_scale,
    scale_ops,
)
from .tidu_scalar_lowering import Emit, constant, scalar_lowering

KERNEL_ATTR = "tidu.kernel"
"""Unit attribute marking the outlined kernel functions."""


def kernel_symbol(func_name: str, index: int) -> str:
    """The symbol of the ``index``-th kernel (in order of appearance) of ``@func_name``."""
    return f"{func_name}_k{index}"


def memref_type(tensor: Attribute) -> MemRefType:
    """The memref with the shape and element type of a static tensor type (the
    buffer of the tensor in ``@f``)."""
    if not isinstance(tensor, TensorType):
        raise LoweringError(TiduLowerToLoopsPass.name, KernelOp.name, f"operand or result type "
                            f"{tensor} is not a tensor")
    return MemRefType(element_type(tensor), tensor.get_shape())


def kernel_memref_type(tensor: Attribute) -> MemRefType:
    """The type of a kernel function argument: ``memref_type``, except that a
    complex<fN> tensor becomes pairs of fN (a trailing dimension of size 2)."""
    buffer = memref_type(tensor)
    element = buffer.element_type
    if isinstance(element, ComplexType):
        return MemRefType(element.element_type, (*buffer.get_shape(), 2))
    return buffer


def kernel_argument(buffer: SSAValue, new_ops: list[Operation]) -> SSAValue:
    """``buffer`` as a kernel function's argument (``kernel_memref_type``): a complex
    buffer as pairs of reals through a cast (an alias) appended to ``new_ops``."""
    assert isinstance(buffer.type, MemRefType)
    pairs = kernel_memref_type(TensorType(buffer.type.element_type, buffer.type.shape))
    if pairs == buffer.type:
        return buffer
    cast = UnrealizedConversionCastOp.get([buffer], [pairs])
    new_ops.append(cast)
    return cast.results[0]


def lower_body_op(op: Operation, args: Sequence[Scalar], emit: Emit) -> list[Scalar]:
    """Lower one op of a kernel body on (re, im) pairs or 1-tuples (see ``Scalar``): by
    its row of ``scalar_lowering`` (real, integer and i1 scalars) or of
    ``complex_lowering``; ``LoweringError`` if there is none."""
    types = (*op.operand_types, *op.result_types)
    if not any(isinstance(t, ComplexType) for t in types):
        scalar_rule = scalar_lowering(op)
        if scalar_rule is None:
            raise LoweringError(TiduLowerToLoopsPass.name, op.name, "no scalar lowering rule "
                                "for this op in a tidu.kernel body")
        results = scalar_rule(op, [a[0] for a in args], emit)
        assert len(results) == len(op.results)
        return [(v,) for v in results]
    rule = complex_lowering(op)
    if rule is None:
        raise LoweringError(TiduLowerToLoopsPass.name, op.name, "no lowering rule for complex "
                            "scalars in a tidu.kernel body")
    return list(rule(op, args, emit))


class _Body:
    """Appends ops to a block, with index constants shared from the function entry."""

    def __init__(self, entry: Block) -> None:
        self.entry = entry
        self.block = entry
        self._indices: dict[int, SSAValue] = {}
        self._last_index: Operation | None = None

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def index(self, value: int) -> SSAValue:
        """An index constant, defined once at the top of the function."""
        if value not in self._indices:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            op.result.name_hint = f"c{value}"
            if self._last_index is not None:
                self.entry.insert_op_after(op, self._last_index)
            elif (first := self.entry.first_op) is not None:
                self.entry.insert_op_before(op, first)
            else:
                self.entry.add_op(op)
            self._last_index = op
            self._indices[value] = op.result
        return self._indices[value]

    def parts(self, indices: Sequence[SSAValue], tensor: Attribute) -> list[list[SSAValue]]:
        """The memref indices of an element: ``[indices]``, or for a complex tensor
        ``[indices + [0], indices + [1]]`` (its real and imaginary part)."""
        if isinstance(element_type(tensor), ComplexType):
            return [[*indices, self.index(0)], [*indices, self.index(1)]]
        return [list(indices)]

    def loop_nest(
        self, shape: Sequence[int], bounds: dict[int, tuple[SSAValue, SSAValue]] | None = None
    ) -> tuple[list[SSAValue], Block]:
        """Open ``scf.for`` loops over ``shape`` (last innermost) at the current block;
        ``bounds`` overrides the range of some dimensions. Returns the induction
        variables and the block the nest returns to."""
        outer, ivs = self.block, list[SSAValue]()
        for dim, size in enumerate(shape):
            body = Block(arg_types=[IndexType()])
            body.args[0].name_hint = f"i{len(ivs)}"
            given = (bounds or {}).get(dim)  # no constant for a bound given as arguments
            lower, upper = given if given is not None else (self.index(0), self.index(size))
            self.emit(scf.ForOp(lower, upper, self.index(1), [], body))
            ivs.append(body.args[0])
            self.block = body
        return ivs, outer

    def close(self, outer: Block) -> None:
        """Terminate every loop body opened since ``outer`` and return to it."""
        block = self.block
        while block is not outer:
            block.add_op(scf.YieldOp())
            parent = block.parent_op()
            assert parent is not None and parent.parent_block() is not None
            block = parent.parent_block()  # type: ignore[assignment]
        self.block = outer


def _tensor_shape(type_: Attribute) -> tuple[int, ...]:
    assert isinstance(type_, TensorType)
    return type_.get_shape()


def _name(scalar: Scalar, source: SSAValue) -> None:
    """Name the lowered values after the tidu value (``%x``, or ``%x_re``/``%x_im``)."""
    if source.name_hint is None:
        return
    suffixes = ("",) if len(scalar) == 1 else ("_re", "_im")
    for value, suffix in zip(scalar, suffixes, strict=True):
        if value.name_hint is None:
            value.name_hint = source.name_hint + suffix


def is_chunked(kernel: KernelOp, chunked: bool) -> bool:
    """Whether the kernel function takes a ``[lo, hi)`` range of domain dimension 0
    (not for an empty domain, nor when a result is filled whole: ``whole_fill_results``)."""
    domain = kernel.domain.get_values()
    return chunked and len(domain) > 0 and domain[0] > 0 and not whole_fill_results(kernel)


def kernel_params(kernel: KernelOp, runtime_scales: bool) -> list[float]:
    """The entries of the kernel's ``%params`` argument (``tidu_loop_params``); empty
    when it has none."""
    if not runtime_scales:
        return []
    return [part for op in scale_ops(kernel) for part in factor_parts(op)]


def build_kernel_function(
    kernel: KernelOp, name: str, chunked: bool = False, runtime_scales: bool = False
) -> func.FuncOp:
    """The loop-nest function of one kernel (see the module docstring)."""
    in_types = [kernel_memref_type(v.type) for v in kernel.inputs]
    params = kernel_params(kernel, runtime_scales)
    param_types = [params_type(len(params))] if params else []
    out_types = [kernel_memref_type(v.type) for v in kernel.outputs]
    chunked = is_chunked(kernel, chunked)
    range_types = [IndexType(), IndexType()] if chunked else []
    entry = Block(arg_types=[*in_types, *param_types, *out_types, *range_types])
    ins = entry.args[: len(in_types)]
    first_out = len(in_types) + len(param_types)
    outs = entry.args[first_out : first_out + len(out_types)]
    for prefix, args in (("in", ins), ("out", outs)):
        for i, arg in enumerate(args):
            arg.name_hint = f"{prefix}{i}"
    body = _Body(entry)
    factors: dict[Operation, Scalar] = {}
    if params:  # loaded once, at the top
        entry.args[len(in_types)].name_hint = PARAMS_NAME
        factors = load_factors(body, entry.args[len(in_types)], scale_ops(kernel))
    domain = kernel.domain.get_values()
    chunk: dict[int, tuple[SSAValue, SSAValue]] = {}
    if chunked:
        entry.args[-2].name_hint, entry.args[-1].name_hint = "lo", "hi"
        chunk[0] = (entry.args[-2], entry.args[-1])

    accumulates = [kernel.accumulates(j) for j in range(len(outs))]
    for j, out in enumerate(outs):
        if accumulates[j]:
            # A chunk starts only the rows of domain dim 0 it owns; an output reduced over
            # dim 0 is a private partial buffer of the chunk and is started whole.
            result_map = list(kernel.result_map(j))
            rows = {result_map.index(0): chunk[0]} if chunk and 0 in result_map else {}
            ivs, outer = body.loop_nest(_tensor_shape(kernel.outputs[j].type), rows)
            parts = body.parts(ivs, kernel.outputs[j].type)
            element = out_types[j].element_type
            start = identity(kernel.result_combiner(j), element, len(parts))
            for indices, number in zip(parts, start, strict=True):
                body.emit(memref.StoreOp.get(constant(body.emit, number, element), out, indices))
            body.close(outer)
        elif kernel.result_fill(j) is not None:  # where no iteration writes: the fill
            fill_result(body, kernel, j, out, chunk.get(0))

    ivs, outer = body.loop_nest(domain, chunk)
    integers: dict[int, SSAValue] = {}

    def read_via(k: int) -> SSAValue:
        """The integer index operand ``k`` holds at this point (loaded once)."""
        if k not in integers:
            shape = _tensor_shape(kernel.inputs[k].type)
            where = index_values(body, kernel.operand_indices(k), ivs, shape, read_via)
            integers[k] = body.emit(memref.LoadOp.get(ins[k], where)).results[0]
        return integers[k]

    kernel_block = kernel.body.block
    values: dict[SSAValue, Scalar] = {}
    for index, arg in enumerate(kernel_block.args):
        if arg.uses:
            tensor = kernel.inputs[index].type
            shape = _tensor_shape(tensor)
            mapping = kernel.operand_indices(index)
            indices = index_values(body, mapping, ivs, shape, read_via)
            fill = kernel.operand_fill(index)
            if fill is None:
                values[arg] = tuple(
                    body.emit(memref.LoadOp.get(ins[index], part)).results[0]
                    for part in body.parts(indices, tensor)
                )
            else:
                values[arg] = guarded_load(body, ins[index], tensor, mapping, indices, shape,
                                           domain, fill)  # fmt: skip
            _name(values[arg], arg)
    for op in kernel_block.ops:
        if isinstance(op, YieldOp):
            break
        if op.regions:
            raise LoweringError(TiduLowerToLoopsPass.name, op.name, "ops with regions cannot be "
                                "lowered in a tidu.kernel body")
        operands = [values[v] for v in op.operands]
        if op in factors:
            lowered = runtime_scale(operands, factors[op], body.emit)
        elif isinstance(op, MASK_OPS):
            offset = cast(IntegerAttr, op.properties["offset"]).value.data
            upper = "upper" in op.properties
            lowered = [triangle_select(body, offset, upper, operands[0], ivs)]
        else:
            lowered = lower_body_op(op, operands, body.emit)
        for result, value in zip(op.results, lowered, strict=True):
            _name(value, result)
            values[result] = value
    terminator = kernel_block.last_op
    assert isinstance(terminator, YieldOp)
    for j, (value, out) in enumerate(zip(terminator.values, outs, strict=True)):
        tensor = kernel.outputs[j].type
        indices = index_values(body, kernel.result_indices(j), ivs, _tensor_shape(tensor),
                               read_via)  # fmt: skip
        parts = body.parts(indices, tensor)
        scalars = values[value]
        if accumulates[j]:
            old = tuple(body.emit(memref.LoadOp.get(out, part)).results[0] for part in parts)
            scalars = combine(body.emit, kernel.result_combiner(j), old, scalars)
        for scalar, part in zip(scalars, parts, strict=True):
            body.emit(memref.StoreOp.get(scalar, out, part))
    body.close(outer)
    body.emit(func.ReturnOp())

    noalias = DictionaryAttr({"llvm.noalias": UnitAttr()})
    plain = DictionaryAttr({})
    buffers = len(in_types) + len(param_types) + len(out_types)
    function = func.FuncOp(
        name,
        ([*in_types, *param_types, *out_types, *range_types], []),
        Region(entry),
        arg_attrs=ArrayAttr([noalias] * buffers + [plain] * len(range_types)),
    )
    function.attributes[KERNEL_ATTR] = UnitAttr()
    return function


def replace_kernel(
    kernel: KernelOp, symbol: str, chunked: bool = False, runtime_scales: bool = False
) -> memref.GlobalOp | None:
    """Replace ``kernel`` in place by to_buffer / alloc / call / to_tensor; with
    ``runtime_scales`` and scale ops in its body, also pass ``%params`` from the global
    ``@<symbol>_params`` it returns (for the caller to add to the module).

    A chunked kernel's call also passes ``%c0, %cN`` (the whole range of domain dim 0)
    and carries ``tidu.chunk_extent`` (N), ``tidu.domain_size`` and
    ``tidu.partial_outputs`` (the outputs reduced over dim 0, which a caller running
    chunks in parallel gives each chunk privately and combines afterwards) and, when
    one of them is not a sum, ``tidu.partial_combiners`` (their combiners: ``max``...).
    """
    block = kernel.parent_block()
    assert block is not None
    buffers: dict[SSAValue, SSAValue] = {}
    new_ops: list[Operation] = []

    for value in kernel.inputs:
        if value not in buffers:
            to_buffer = bufferization.ToBufferOp.create(
                operands=[value],
                result_types=[memref_type(value.type)],
                properties={"read_only": UnitAttr()},
            )
            new_ops.append(to_buffer)
            buffers[value] = kernel_argument(to_buffer.results[0], new_ops)
    params = kernel_params(kernel, runtime_scales)
    constants: list[SSAValue] = []
    table = params_global(f"{symbol}_params", params) if params else None
    if table is not None:
        get = memref.GetGlobalOp(table.sym_name.data, params_type(len(params)))
        new_ops.append(get)
        constants.append(get.memref)
    allocs = [memref.AllocOp([], [], memref_type(v.type)) for v in kernel.outputs]
    outputs = []
    for alloc in allocs:
        new_ops.append(alloc)
        outputs.append(kernel_argument(alloc.memref, new_ops))
    arguments = [buffers[v] for v in kernel.inputs] + constants + outputs
    call_attributes: dict[str, Attribute] = {}
    if is_chunked(kernel, chunked):
        domain = kernel.domain.get_values()
        extent = domain[0]
        bounds = [arith.ConstantOp(IntegerAttr(v, IndexType())) for v in (0, extent)]
        new_ops += bounds
        arguments += [b.result for b in bounds]
        partial = [j for j in range(len(kernel.outputs)) if 0 not in kernel.result_map(j)]
        call_attributes = {
            "tidu.chunk_extent": IntegerAttr(extent, 64),
            "tidu.domain_size": IntegerAttr(prod(domain), 64),
            "tidu.partial_outputs": ArrayAttr([IntegerAttr(j, 64) for j in partial]),
        }
        combiners = [kernel.result_combiner(j) for j in partial]
        if any(c != "add" for c in combiners):
            call_attributes["tidu.partial_combiners"] = ArrayAttr(
                [StringAttr(c) for c in combiners]
            )
    call = func.CallOp(symbol, arguments, [])
    call.attributes.update(call_attributes)
    new_ops.append(call)
    replace_with_call(block, kernel, new_ops, allocs, kernel.outputs)
    return table


def replace_with_call(
    block: Block, old: Operation, new_ops: list[Operation], allocs: list[memref.AllocOp],
    results: Sequence[SSAValue],
) -> None:
    """Put ``new_ops`` (the buffers, ``allocs`` among them, and the call filling them)
    where ``old`` was; ``old``'s ``results`` become the ``allocs`` read as tensors::

        %r = tidu.kernel ...   ->   %b = memref.alloc()  func.call @k(..., %b)
                                    %r = bufferization.to_tensor %b
    """
    tensors = [bufferization.ToTensorOp(a.memref) for a in allocs]
    for op in [*new_ops, *tensors]:
        block.insert_op_before(op, old)
    for result, tensor in zip(results, tensors, strict=True):
        result.replace_all_uses_with(tensor.tensor)
    block.erase_op(old)


def lower_function(
    function: func.FuncOp, chunked: bool = False, runtime_scales: bool = False
) -> tuple[list[func.FuncOp], list[memref.GlobalOp]]:
    """Outline the kernels of one function; returns the new kernel functions and the
    globals of their ``%params`` (``runtime_scales``)."""
    kernels = [op for op in function.body.walk() if isinstance(op, KernelOp)]
    outlined: list[func.FuncOp] = []
    tables: list[memref.GlobalOp] = []
    for index, kernel in enumerate(kernels):
        symbol = kernel_symbol(function.sym_name.data, index)
        outlined.append(build_kernel_function(kernel, symbol, chunked, runtime_scales))
        table = replace_kernel(kernel, symbol, chunked, runtime_scales)
        if table is not None:
            tables.append(table)
    return outlined, tables


def extract_kernel_module(module: ModuleOp, take: bool = False) -> ModuleOp:
    """A new module with copies of the kernel functions and the functions they call
    (``expand-math-polynomials{outline=true}``'s) only, for the LLVM backend, every
    memref argument of a kernel with its leading extent made dynamic (``take``: the
    functions themselves, detached from ``module``, which the caller then drops)::

        func.func @f_k0(%in0: memref<256x8xf64>, %out0: memref<256xf64>, %lo: index, ...)
        ==> func.func @f_k0(%in0: memref<?x8xf64>, %out0: memref<?xf64>, %lo: index, ...)

    A row-major buffer's address arithmetic never reads its leading extent, and a loop
    over it has its bounds as arguments (``[lo, hi)``) or as constants in the body: so
    the leading extents are not part of the code, and two programs differing only there
    compile to the same text (``compiler.kernel_code`` keys object code by it).
    """
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}

    def extracted(function: func.FuncOp) -> func.FuncOp:
        if take:
            function.detach()
            return function
        return function.clone()

    kernels = [extracted(op) for op in functions.values() if KERNEL_ATTR in op.attributes]
    for kernel in kernels:
        _dynamic_leading_extents(kernel)
    called = {call.callee.string_value() for kernel in kernels for call in kernel.walk()
              if isinstance(call, func.CallOp)}  # fmt: skip
    callees = [extracted(functions[name]) for name in sorted(called) if name in functions]
    return ModuleOp([*kernels, *callees])


def _dynamic_leading_extents(function: func.FuncOp) -> None:
    """Retype ``function``'s ranked memref arguments to a dynamic leading extent."""
    block = function.body.block
    for arg in list(block.args):
        arg_type = arg.type
        if isinstance(arg_type, MemRefType) and arg_type.get_shape():
            shape = (DYNAMIC_INDEX, *arg_type.get_shape()[1:])
            Rewriter.replace_value_with_new_type(arg, MemRefType(arg_type.element_type, shape))
    function.function_type = FunctionType.from_lists(list(block.arg_types), [])


@dataclass(frozen=True)
class TiduLowerToLoopsPass(ModulePass):
    """Outline every ``tidu.kernel`` into a loop-nest function and call it."""

    name = "tidu-lower-to-loops"

    chunked: bool = False
    """Give every kernel with a non-empty domain two trailing ``index`` arguments, the
    ``[lo, hi)`` range of domain dimension 0 it computes, so a caller can run chunks on
    several threads (see ``replace_kernel`` for the call's attributes)."""

    runtime_scales: bool = False
    """Read the factors of ``tidu.scale`` at run time from a ``%params`` argument
    (``tidu_loop_params``): kernels that differ only in a factor, such as ``mean``'s
    ``1/n``, are then the same code."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            after: Operation = function
            outlined, tables = lower_function(function, self.chunked, self.runtime_scales)
            for kernel in outlined:
                op.body.block.insert_op_after(kernel, after)
                after = kernel
            for table in reversed(tables):
                op.body.block.insert_op_before(table, function)


__all__ = [
    "KERNEL_ATTR",
    "TiduLowerToLoopsPass",
    "build_kernel_function",
    "extract_kernel_module",
    "kernel_argument",
    "kernel_memref_type",
    "kernel_symbol",
    "lower_function",
    "memref_type",
    "replace_kernel",
]

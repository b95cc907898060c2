"""Helpers for the tidu pass tests: context, pipelines, JIT, and a runner for @node.

``run_node`` executes a module in the form ``tidu-lower-to-loops`` documents: it walks
``@node`` and treats ``bufferization.to_buffer``/``to_tensor`` and the casts of complex
buffers to real pairs (``builtin.unrealized_conversion_cast``) as aliases,
``memref.alloc`` as a new buffer, ``func.call`` as a call of a JIT-compiled kernel and
every other tidu op as a numpy library call. It is the reference for the plan the
compiled executor builds.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tidu_compile.dialects import tidu
from tidu_compile.passes import get_all_passes
from tidu_compile.passes.tidu_lower_to_loops import extract_kernel_module
from xdsl.context import Context
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import (
    ComplexType,
    Float32Type,
    Float64Type,
    ModuleOp,
    TensorType,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.passes import PassPipeline
from xdsl.transforms import get_all_passes as get_xdsl_passes

from tidu_compile.backend.jit import load
from tidu_compile.compiler.stages import lower_to_llvm_dialect, tidu_context, walk


def make_context() -> Context:
    return tidu_context()


def parse_module(ctx: Context, text: str, name: str = "<text>") -> ModuleOp:
    return Parser(ctx, text, name).parse_module()


def run_pipeline(ctx: Context, module: ModuleOp, spec: str) -> ModuleOp:
    """Apply a pass pipeline in ``xdsl-opt -p`` syntax, verifying after every pass."""
    available = {**get_xdsl_passes(), **get_all_passes()}
    PassPipeline.parse_spec(available, spec, lambda p, m, n: m.verify()).apply(ctx, module)
    module.verify()
    return module


_renames = itertools.count()


def compile_kernels(module: ModuleOp) -> dict[str, Callable[..., None]]:
    """JIT the kernel functions of a lowered module; callables by original name.

    Every kernel is compiled under a fresh symbol (the JIT engine is process-wide and
    refuses a symbol twice); the callables take numpy arrays.
    """
    kernels = extract_kernel_module(module)
    suffix = f"_t{next(_renames)}"
    names = []
    for op in kernels.ops:
        assert isinstance(op, func.FuncOp)
        names.append(op.sym_name.data)
        op.sym_name = type(op.sym_name)(op.sym_name.data + suffix)
    lower_to_llvm_dialect(kernels)
    obj = walk(kernels, "llvm", "codegen")
    addresses = load(obj, [n + suffix for n in names])
    calls: dict[str, Callable[..., None]] = {}
    for name in names:
        count = next(
            len(op.function_type.inputs) for op in module.ops
            if isinstance(op, func.FuncOp) and op.sym_name.data == name
        )
        kernel = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * count)(addresses[name + suffix])

        def call(*arrays: np.ndarray, kernel: Any = kernel) -> None:
            assert all(a.flags.c_contiguous for a in arrays)
            kernel(*(a.ctypes.data for a in arrays))

        calls[name] = call
    return calls


_DTYPES: dict[type[Attribute], Any] = {Float32Type: np.float32, Float64Type: np.float64}


def numpy_dtype(type_: Attribute) -> Any:
    element = type_.element_type if isinstance(type_, TensorType | memref.MemRefType) else type_
    if isinstance(element, ComplexType):
        return np.complex64 if isinstance(element.element_type, Float32Type) else np.complex128
    if type(element) in _DTYPES:
        return _DTYPES[type(element)]
    return np.bool_


def c_array(value: Any, dtype: Any = None) -> np.ndarray:
    """A C-contiguous array (``np.ascontiguousarray`` would turn 0-d into 1-d)."""
    return np.array(value, dtype=dtype, order="C", copy=None)


def _broadcast(array: np.ndarray, dims: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    expanded = [1] * len(shape)
    for size, dim in zip(array.shape, dims, strict=True):
        expanded[dim] = size
    return np.broadcast_to(array.reshape(expanded), shape)


_UNARY: dict[type[Operation], Callable[[np.ndarray], np.ndarray]] = {
    tidu.NegOp: np.negative, tidu.ConjOp: np.conj, tidu.RealOp: np.real, tidu.ImagOp: np.imag,
}
_BINARY: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    tidu.AddOp: np.add, tidu.MulOp: np.multiply,
}
for _op in tidu.GENERATED_OPS:  # the ops made from the op table: their numpy function
    _numpy_fn = tidu.PRIMITIVE_OF_OP[_op].numpy_fn  # type: ignore[attr-defined]
    (_UNARY if len(_op.get_irdl_definition().operands) == 1 else _BINARY)[_op] = _numpy_fn
_COMPARE = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
            "eq": np.equal, "ne": np.not_equal}


def evaluate(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """numpy evaluation of one tidu op on tensors (the tests' reference semantics)."""
    result_types: list[Any] = [r.type for r in op.results]  # tensor types
    dtype = numpy_dtype(result_types[0]) if result_types else None
    values: list[Any]
    if type(op) in _UNARY:
        values = [_UNARY[type(op)](args[0])]
    elif type(op) in _BINARY:
        values = [_BINARY[type(op)](args[0], args[1])]
    elif isinstance(op, tidu.CompareOp):
        values = [_COMPARE[op.direction.data](args[0], args[1])]
    elif isinstance(op, tidu.SelectOp):
        values = [np.where(args[0], args[1], args[2])]
    elif isinstance(op, tidu.SinCosOp):
        values = [np.sin(args[0]), np.cos(args[0])]
    elif isinstance(op, tidu.PowOp):
        values = [np.power(args[0], op.parameter)]
    elif isinstance(op, tidu.ScaleOp):
        values = [args[0] * (op.value if op.value.imag else op.value.real)]
    elif isinstance(op, tidu.ShiftOp):
        values = [args[0] + op.parameter]
    elif isinstance(op, tidu.FullLikeOp | tidu.ConstantOp):
        value = op.value if op.value.imag else op.value.real
        values = [np.full(result_types[0].get_shape(), value)]
    elif isinstance(op, tidu.ConvertOp):
        values = [args[0]]
    elif isinstance(op, tidu.ToComplexOp):
        out = np.zeros(args[0].shape, dtype=dtype)
        if op.is_imaginary:
            out.imag = args[0]
        else:
            out.real = args[0]
        values = [out]
    elif isinstance(op, tidu.BroadcastInDimOp):
        shape = result_types[0].get_shape()
        values = [_broadcast(args[0], op.broadcast_dimensions.get_values(), shape)]
    elif isinstance(op, tidu.ReduceSumOp):
        values = [np.sum(args[0], axis=tuple(op.axes.get_values()))]
    elif isinstance(op, tidu.DotGeneralOp):
        lc, rc = op.lhs_contracting.get_values(), op.rhs_contracting.get_values()
        assert not op.lhs_batch.get_values(), "batch dims not needed in these tests"
        values = [np.tensordot(args[0], args[1], axes=(list(lc), list(rc)))]
    elif isinstance(op, tidu.ReshapeOp):
        values = [args[0].reshape(result_types[0].get_shape())]
    elif isinstance(op, tidu.TransposeOp):
        values = [np.transpose(args[0], op.permutation.get_values())]
    else:
        raise NotImplementedError(f"no numpy evaluation of {op.name} in the test runner")
    return [
        c_array(v, numpy_dtype(t))
        for v, t in zip(values, result_types, strict=True)
    ] if dtype is not None else []


def run_reference(module: ModuleOp, args: Sequence[np.ndarray], name: str = "node"
                  ) -> list[np.ndarray]:
    """Evaluate ``@name`` of a tidu module (before any lowering) with numpy."""
    node = next(op for op in module.ops if isinstance(op, func.FuncOp)
                and op.sym_name.data == name)
    env: dict[SSAValue, np.ndarray] = dict(zip(node.body.block.args, args, strict=True))
    for op in node.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.arguments]
        env.update(zip(op.results, evaluate(op, [env[v] for v in op.operands]), strict=True))
    raise AssertionError("@node has no func.return")


def run_node(
    module: ModuleOp, kernels: dict[str, Callable[..., None]], args: Sequence[np.ndarray],
    name: str = "node",
) -> list[np.ndarray]:
    """Execute ``@name`` of a module lowered by ``tidu-lower-to-loops``."""
    node = next(op for op in module.ops if isinstance(op, func.FuncOp)
                and op.sym_name.data == name)
    env: dict[SSAValue, np.ndarray] = dict(
        zip(node.body.block.args, [c_array(a) for a in args], strict=True)
    )
    for op in node.body.block.ops:
        if isinstance(op, bufferization.ToBufferOp | bufferization.ToTensorOp):
            env[op.results[0]] = env[op.operands[0]]
        elif isinstance(op, UnrealizedConversionCastOp):  # complex buffer as real pairs
            source = env[op.operands[0]]
            pairs = source.reshape(-1).view(source.real.dtype)  # 0-d cannot be viewed
            env[op.results[0]] = pairs.reshape((*source.shape, 2))
        elif isinstance(op, memref.AllocOp):
            type_ = op.memref.type
            env[op.memref] = np.empty(type_.get_shape(), dtype=numpy_dtype(type_))
        elif isinstance(op, func.CallOp):
            kernels[op.callee.string_value()](*(env[v] for v in op.arguments))
        elif isinstance(op, func.ReturnOp):
            return [env[v] for v in op.arguments]
        else:
            env.update(zip(op.results, evaluate(op, [env[v] for v in op.operands]),
                           strict=True))
    raise AssertionError("@node has no func.return")

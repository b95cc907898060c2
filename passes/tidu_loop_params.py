"""Scale factors read at run time: ``tidu-lower-to-loops{runtime_scales=true}``.

A factor computed from an extent (``mean``'s ``1/n``) would make a kernel's text, and so
its object code (``compiler.kernel_code``), differ with the batch size. With
``runtime_scales`` every ``tidu.scale`` of a kernel body takes its factor from one more
kernel argument, ``%params: memref<Nxf64>``, after the operands' memrefs, which the node
function passes from a constant global::

    memref.global "private" constant @f_k0_params : memref<1xf64> = dense<3.906250e-03>
    func.func @f(...) {
      %p = memref.get_global @f_k0_params : memref<1xf64>
      func.call @f_k0(%0, %p, %1, %lo, %hi) ...
    }
    func.func @f_k0(%in0: memref<8xf32>, %params: memref<1xf64>, %out0: memref<8xf32>, ...) {
      %k = memref.load %params[%c0] : memref<1xf64>     (once, before the loops)
      %k_1 = arith.truncf %k : f64 to f32               (for f32 values)
      scf.for ... {
        ...
        %y = arith.mulf %x, %k_1 : f32

which computes what the literal ``arith.constant 3.906250e-03 : f32`` does (the f64
factor rounded to the element type, then one multiplication). A complex factor takes two
entries (re, im) and multiplies as a complex number; a real factor of complex values one
entry that scales both parts, as the literal lowering does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tidu_compile.dialects.tidu_elementwise import ScaleOp
from tidu_compile.dialects.tidu_kernel import KernelOp
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    ComplexType,
    DenseIntOrFPElementsAttr,
    Float64Type,
    MemRefType,
    StringAttr,
    UnitAttr,
    f64,
)
from xdsl.ir import Operation, SSAValue

from .tidu_complex_lowering import Scalar, scale_by
from .tidu_scalar_lowering import Emit

__all__ = [
    "PARAMS_NAME", "factor_parts", "load_factors", "params_global", "params_type",
    "runtime_scale", "scale_ops",
]  # fmt: skip

PARAMS_NAME = "params"
"""The name hint of the kernel argument holding the factors."""


def scale_ops(kernel: KernelOp) -> list[ScaleOp]:
    """The ``tidu.scale`` ops of a kernel body, in order."""
    return [op for op in kernel.body.block.ops if isinstance(op, ScaleOp)]


def factor_parts(op: ScaleOp) -> tuple[float, ...]:
    """The entries of ``%params`` one scale op reads: ``(re,)`` or ``(re, im)``."""
    factor = op.value
    return (factor.real,) if factor.imag == 0 else (factor.real, factor.imag)


def params_type(count: int) -> MemRefType[Float64Type]:
    """``memref<countxf64>``: the type of ``%params`` and of its global."""
    return MemRefType(f64, (count,))


def params_global(name: str, values: Sequence[float]) -> memref.GlobalOp:
    """``memref.global "private" constant @name : memref<Nxf64> = dense<values>``."""
    buffer = params_type(len(values))
    return memref.GlobalOp.get(
        StringAttr(name),
        buffer,
        DenseIntOrFPElementsAttr.from_list(buffer, list(values)),
        StringAttr("private"),
        UnitAttr(),
    )


def load_factors(body: Any, params: SSAValue, ops: Sequence[ScaleOp]) -> dict[Operation, Scalar]:
    """Each scale op's factor, loaded from ``params`` where ``body`` stands (the top of
    the kernel function) and rounded to the op's element type."""
    factors: dict[Operation, Scalar] = {}
    index = 0
    for op in ops:
        part = op.result.type
        part = part.element_type if isinstance(part, ComplexType) else part
        values = []
        for _ in factor_parts(op):
            value = body.emit(memref.LoadOp.get(params, [body.index(index)])).results[0]
            if not isinstance(part, Float64Type):
                value = body.emit(arith.TruncFOp(value, part)).results[0]
            values.append(value)
            index += 1
        factors[op] = tuple(values)
    return factors


def runtime_scale(args: Sequence[Scalar], factor: Scalar, emit: Emit) -> list[Scalar]:
    """A ``tidu.scale`` of ``args[0]`` by its loaded ``factor`` (``load_factors``)."""
    x = args[0]
    if len(x) == 1:
        return [(emit(arith.MulfOp(x[0], factor[0])).results[0],)]
    return [scale_by(emit, x, factor)]

"""``tidu-lower-linalg``: the factorisations and solves as LAPACK calls from native code.

Preconditions: the ops are in the node function (``tidu-lower-to-loops`` ran or not).
The real ``tidu.cholesky``, ``tidu.triangular_solve``, ``tidu.solve``, ``tidu.slogdet``,
``tidu.eigh``, ``tidu.qr`` and ``tidu.svd`` of f32/f64 are lowered (``LAPACK_OPS``), and
``tidu.qr`` of complex<f32>/complex<f64> (``COMPLEX_LAPACK_OPS``: ``cgeqrf``/``zgeqrf``
and ``cungqr``/``zungqr``; its buffers are pairs of reals, as in the other kernels); any
other op stays as it is, a library step. A 2-D ``tidu.dot_general`` of a real Cholesky
factor ``L`` (its first operand: lower-triangular, the strict upper triangle zero) and a
matrix ``X``, ``Lᵀ X`` or ``L X`` (no batch), is a kernel calling ``trmm``
(``factor_products``: half a matrix product's work; where ``X`` holds an inf or NaN
the zeros' products with it are not summed in, as a matrix product would).

Each distinct op (primitive and dtype) becomes a kernel function ``@f_lapack<i>``
(``tidu.kernel``, like ``tidu-lower-to-loops``' kernels: operand buffers, then result
buffers, then the workspaces ``%iws`` (i32) and ``%fws`` (the element's part type); row-major,
no results) whose body calls scipy's routine once per matrix of the batch
(``lapack_solves``, ``lapack_decompositions``), and the op is replaced in the same form
as a kernel::

    %l = tidu.cholesky %a : tensor<4x4xf64> -> tensor<4x4xf64>
    ==>
    %0 = bufferization.to_buffer %a read_only : tensor<4x4xf64> to memref<4x4xf64>
    %1 = memref.alloc() : memref<4x4xf64>
    %2 = memref.alloc() : memref<5xi32>
    %3 = memref.alloc() : memref<1xf64>
    func.call @f_lapack0(%0, %1, %2, %3) {tidu.status_error = "cholesky: the matrix is
        not positive definite (LAPACK potrf info {info})", tidu.status_output = 1 : i64}
    %l = bufferization.to_tensor %1 : memref<4x4xf64> to tensor<4x4xf64>

    func.func @f_lapack0(%in0: memref<4x4xf64>, %out0: memref<4x4xf64>,
                         %iws: memref<5xi32>, %fws: memref<1xf64>) attributes {tidu.kernel} {
      ... %out0 = %in0 copied, then
      func.call @tidu_lapack_lp64_dpotrf(%uplo, %n, %out0_ptr, %lda, %info)
      ... the status (word 0 of %iws) = the first nonzero info; the upper triangle zeroed
    }
    func.func private @tidu_lapack_lp64_dpotrf(!ptr_xdsl.ptr, ...)

``tidu.status_output`` names the output holding the status (word 0) and
``tidu.status_error`` the ``numpy.linalg.LinAlgError`` text a nonzero status raises
(``{info}``: the status; ``{diagonal}``: status - 1), the same as the library path's:
the plan checks it after the call (``compiler.plan``), so a matrix that is not
positive definite or singular never passes on as NaN. ``slogdet`` has none (a singular
matrix is sign 0, log|det| -inf, as numpy), nor ``qr`` (only bad arguments fail).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tidu_compile.dialects.tidu_base import array_values
from tidu_compile.dialects.tidu_linalg import LinalgOperation
from tidu_compile.dialects.tidu_shape import DotGeneralOp
from xdsl.context import Context
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import (
    AnyFloat,
    ComplexType,
    Float32Type,
    Float64Type,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from tidu_compile.ops.decompositions import Eigh, Qr, Svd
from tidu_compile.ops.linalg import Cholesky, Slogdet, Solve, TriangularSolve

from .lapack_decompositions import eigh_kernel, qr_kernel, svd_kernel
from .lapack_kernels import I32, Buffers, Emitter, LapackKernel
from .lapack_solves import (
    cholesky_kernel,
    factor_product_kernel,
    slogdet_kernel,
    solve_kernel,
    triangular_solve_kernel,
)
from .tidu_lower_to_loops import (
    KERNEL_ATTR,
    kernel_argument,
    kernel_memref_type,
    memref_type,
    replace_with_call,
)

__all__ = ["COMPLEX_LAPACK_OPS", "LAPACK_OPS", "TiduLowerLinalgPass", "lapack_symbol"]


def lapack_symbol(function_name: str, index: int) -> str:
    """The symbol of the ``index``-th LAPACK kernel of ``@function_name``."""
    return f"{function_name}_lapack{index}"


#: Primitive class -> its kernel (f32 and f64; the routines' s/d prefix by dtype; c/z
#: for the complex ones of ``COMPLEX_LAPACK_OPS``).
LAPACK_OPS: dict[type, Callable[..., LapackKernel]] = {
    Cholesky: cholesky_kernel,
    TriangularSolve: triangular_solve_kernel,
    Solve: solve_kernel,
    Slogdet: slogdet_kernel,
    Eigh: eigh_kernel,
    Qr: qr_kernel,
    Svd: svd_kernel,
}

#: The primitives of ``LAPACK_OPS`` whose kernels take complex matrices too (the c/z
#: routines).
COMPLEX_LAPACK_OPS: tuple[type, ...] = (Qr,)


# ------------------------------------------------------------------ the rewrite


Element = AnyFloat | ComplexType


def _element(op: Operation, primitive: object) -> Element | None:
    """The op's element type when it is f32 or f64 (the routines' types), or complex of
    those for ``COMPLEX_LAPACK_OPS``, else None."""
    t = op.operands[0].type
    if not isinstance(t, TensorType):
        return None
    element = t.element_type
    if isinstance(element, ComplexType) and isinstance(primitive, COMPLEX_LAPACK_OPS):
        return element if isinstance(element.element_type, Float32Type | Float64Type) else None
    return element if isinstance(element, Float32Type | Float64Type) else None


def factor_products(block: Block) -> list[tuple[DotGeneralOp, tuple[int, int, bool]]]:
    """The ``dot_general`` ops of ``block`` that are ``op(L) X`` of a real 2-D Cholesky
    factor ``L`` (``n x n``) and an ``n x k`` ``X``, with ``(n, k, transpose)``."""
    found = []
    for op in block.ops:
        if not isinstance(op, DotGeneralOp) or array_values(op.lhs_batch):
            continue
        owner = op.lhs.owner
        if not (isinstance(owner, LinalgOperation) and isinstance(owner.to_primitive(), Cholesky)
                and _element(owner, owner.to_primitive()) is not None):  # fmt: skip
            continue
        lhs, rhs = op.lhs.type, op.rhs.type
        assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
        contracting = (tuple(array_values(op.lhs_contracting)),
                       tuple(array_values(op.rhs_contracting)))  # fmt: skip
        if len(lhs.get_shape()) == 2 and len(rhs.get_shape()) == 2 and (
                contracting in (((0,), (0,)), ((1,), (0,)))):  # fmt: skip
            n, k = rhs.get_shape()
            found.append((op, (n, k, contracting[0] == (0,))))
    return found


def _scratch_type(kernel: LapackKernel, element: Element) -> MemRefType:
    """``%fws``: ``kernel.scratch`` elements, as parts (pairs for complex ones)."""
    if isinstance(element, ComplexType):
        return MemRefType(element.element_type, [2 * kernel.scratch])
    return MemRefType(element, [kernel.scratch])


def build_lapack_function(
    op: Operation, kernel: LapackKernel, symbol: str, element: Element, module: ModuleOp
) -> func.FuncOp:
    """The kernel function of ``op`` (see the module docstring)."""
    types = [kernel_memref_type(v.type) for v in (*op.operands, *op.results)]
    types += [MemRefType(I32, [kernel.words]), _scratch_type(kernel, element)]
    block = Block(arg_types=types)
    count, results = len(op.operands), len(op.results)
    names = [*(f"in{i}" for i in range(count)), *(f"out{i}" for i in range(results)),
             "iws", "fws"]  # fmt: skip
    for arg, name in zip(block.args, names, strict=True):
        arg.name_hint = name
    e = Emitter(block, element)
    pointers = [e.pointer(arg) for arg in block.args]
    for pointer, name in zip(pointers, names, strict=True):
        pointer.name_hint = f"{name}_ptr"
    buffers = Buffers(pointers[:count], pointers[count:count + results],
                      pointers[-2], pointers[-1])  # fmt: skip
    kernel.body(e, buffers, module)
    block.add_op(func.ReturnOp())
    function = func.FuncOp(symbol, (types, []), Region(block))
    function.attributes[KERNEL_ATTR] = UnitAttr()
    return function


def replace_op(op: Operation, kernel: LapackKernel, symbol: str, element: Element,
               status_error: str) -> None:  # fmt: skip
    """Replace ``op`` in place by to_buffer / alloc / call / to_tensor."""
    block = op.parent_block()
    if block is None:
        raise ValueError(f"tidu-lower-linalg: {op.name} is not in a block")
    new_ops: list[Operation] = []
    buffers: dict[SSAValue, SSAValue] = {}
    for value in op.operands:
        if value not in buffers:
            to_buffer = bufferization.ToBufferOp.create(
                operands=[value], result_types=[memref_type(value.type)],
                properties={"read_only": UnitAttr()},
            )  # fmt: skip
            new_ops.append(to_buffer)
            buffers[value] = kernel_argument(to_buffer.results[0], new_ops)
    allocs = [memref.AllocOp([], [], memref_type(v.type)) for v in op.results]
    workspaces = [memref.AllocOp([], [], MemRefType(I32, [kernel.words])),
                  memref.AllocOp([], [], _scratch_type(kernel, element))]  # fmt: skip
    new_ops += [*allocs, *workspaces]
    outputs = [kernel_argument(a.memref, new_ops) for a in allocs]
    arguments = [buffers[v] for v in op.operands] + outputs + [w.memref for w in workspaces]
    call = func.CallOp(symbol, arguments, [])
    if status_error:
        call.attributes["tidu.status_output"] = IntegerAttr(len(allocs), 64)
        call.attributes["tidu.status_error"] = StringAttr(status_error)
    new_ops.append(call)
    replace_with_call(block, op, new_ops, allocs, op.results)


@dataclass(frozen=True)
class TiduLowerLinalgPass(ModulePass):
    """Lower the real factorisations and solves, and complex QR, to LAPACK kernels."""

    name = "tidu-lower-linalg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]:
            after: Operation = function
            lowered = [(o, element) for o in function.body.block.ops
                       if isinstance(o, LinalgOperation) and type(o.to_primitive()) in LAPACK_OPS
                       and (element := _element(o, o.to_primitive())) is not None]  # fmt: skip
            made: dict[tuple[object, object], tuple[str, LapackKernel]] = {}
            for product, shape in factor_products(function.body.block):
                element = _element(product, None)
                assert element is not None  # the factor's
                if (shape, element) not in made:
                    kernel = factor_product_kernel(*shape)
                    symbol = lapack_symbol(function.sym_name.data, len(made))
                    outlined = build_lapack_function(product, kernel, symbol, element, op)
                    op.body.block.insert_op_after(outlined, after)
                    after = outlined
                    made[shape, element] = symbol, kernel
                replace_op(product, made[shape, element][1], made[shape, element][0], element, "")
            for linalg_op, element in lowered:
                primitive = linalg_op.to_primitive()
                if (primitive, element) not in made:  # one kernel per distinct op
                    kernel = LAPACK_OPS[type(primitive)](primitive)
                    symbol = lapack_symbol(function.sym_name.data, len(made))
                    outlined = build_lapack_function(linalg_op, kernel, symbol, element, op)
                    op.body.block.insert_op_after(outlined, after)
                    after = outlined
                    made[primitive, element] = symbol, kernel
                symbol, kernel = made[primitive, element]
                replace_op(linalg_op, kernel, symbol, element, primitive.status_error)

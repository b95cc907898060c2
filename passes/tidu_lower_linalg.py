"""``tidu-lower-linalg``: the factorisations and solves as LAPACK calls from native code.

Preconditions: the ops are in the node function (``tidu-lower-to-loops`` ran or not:
only the real ``tidu.cholesky``, ``tidu.triangular_solve``, ``tidu.solve``,
``tidu.slogdet`` and ``tidu.eigh`` of f32/f64 are lowered; any other op stays as it
is, a library step).

Each distinct op (primitive and dtype) becomes a kernel function ``@f_lapack<i>``
(``tidu.kernel``, like ``tidu-lower-to-loops``' kernels: operand buffers, then result
buffers, then the workspaces ``%iws`` (i32) and ``%fws`` (the element type), row-major, no results)
whose body calls the routine of scipy's LAPACK once per matrix of the batch
(``lapack_kernels``), and the op is replaced in the same form as a kernel::

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
      ... %l = %in0 copied, then
      func.call @tidu_lapack_lp64_dpotrf(%uplo, %n, %l, %lda, %info)
      ... the status (word 0 of %iws) = the first nonzero info; the upper triangle zeroed
    }
    func.func private @tidu_lapack_lp64_dpotrf(!ptr_xdsl.ptr, ...)

``tidu.status_output`` names the output holding the status (word 0) and
``tidu.status_error`` the ``numpy.linalg.LinAlgError`` text a nonzero status raises
(``{info}``: the status; ``{diagonal}``: status - 1), the same as the library path's:
the plan checks it after the call (``compiler.plan``), so a matrix that is not
positive definite or singular never passes on as NaN.

Layouts: a row-major ``A`` is LAPACK's column-major ``Aᵀ``. So a row-major lower
Cholesky factor is ``potrf('U')`` of the same memory; ``op(A) X = B`` with ``n x k``
row-major ``B`` is ``Xᵀ op(A)ᵀ = Bᵀ``, ``trsm`` from the right; ``solve`` is ``getrf``
of ``Aᵀ`` and ``getrs`` with the transpose flipped on ``B`` copied column-major;
``slogdet`` reads ``det Aᵀ = det A`` off ``getrf``'s diagonal and pivots (a singular
matrix: sign 0, log|det| -inf, as numpy); ``eigh`` is ``syevd('V', 'U')`` of a copy,
its eigenvectors transposed out of column-major order with the op's sign rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from tidu_compile.dialects.tidu_linalg import LinalgOperation
from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, math, memref
from xdsl.dialects.builtin import (
    AnyFloat,
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

from tidu_compile.ops.decompositions import Eigh
from tidu_compile.ops.linalg import Cholesky, Slogdet, Solve, TriangularSolve

from .lapack_kernels import I32, INDEX, Emitter, declare_routine, routine_symbol
from .tidu_lower_to_loops import KERNEL_ATTR, memref_type

__all__ = ["LAPACK_OPS", "TiduLowerLinalgPass", "lapack_symbol"]


def lapack_symbol(function_name: str, index: int) -> str:
    """The symbol of the ``index``-th LAPACK kernel of ``@function_name``."""
    return f"{function_name}_lapack{index}"


@dataclass(frozen=True)
class Buffers:
    """The kernel's pointers: operands, results, the i32 words, the element workspace."""

    inputs: list[SSAValue]
    outputs: list[SSAValue]
    words: SSAValue
    scratch: SSAValue


@dataclass(frozen=True)
class LapackKernel:
    """How one op's kernel is made: its workspace sizes and its body."""

    words: int  # i32 words of %iws (word 0: the status)
    scratch: int  # elements of %fws
    body: Callable[[Emitter, Buffers, ModuleOp], None]


def _matrices(shape: tuple[int, ...]) -> int:
    return prod(shape[:-2])


def _routine(module: ModuleOp, e: Emitter, routine: str, arity: int) -> str:
    symbol = routine_symbol(routine, e.element)
    declare_routine(module, symbol, arity)
    return symbol


# ------------------------------------------------------------------ the kernels


def cholesky_kernel(op: Cholesky) -> LapackKernel:
    """``L = A`` then ``potrf('U', n, L, lda, info)`` per matrix; the strict upper
    triangle (row-major) zeroed, as numpy's factor."""
    n = op.shape[-1]
    size = n * n

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        potrf = _routine(module, e, "potrf", 5)
        w = b.words
        e.store_words(w, {0: 0, 1: n, 2: max(1, n), 3: "U"})
        source, factor = b.inputs[0], b.outputs[0]

        def matrix(e: Emitter, m: SSAValue) -> None:
            base = e.mul(m, e.index(size))
            e.copy(source, factor, base, size)
            e.call(potrf, [e.word(w, 3), e.word(w, 1), e.element_at(factor, base),
                           e.word(w, 2), e.word(w, 4)])  # fmt: skip
            e.keep_first_status(w, 4)

            def row(e: Emitter, i: SSAValue) -> None:
                start = e.plus(base, e.mul(i, e.index(n)))
                e.loop(e.plus(i, e.index(1)), n,
                       lambda e, j: e.store(e.real(0.0), factor, e.plus(start, j)))  # fmt: skip

            e.loop(0, n, row)

        e.each(_matrices(op.shape), matrix)

    return LapackKernel(5, 1, body)


def triangular_solve_kernel(op: TriangularSolve) -> LapackKernel:
    """``X = B`` then ``trsm('R', uplo, op, diag, k, n, 1, A, lda, X, ldb)`` per matrix
    (``Xᵀ op(A)ᵀ = Bᵀ``); an exact zero on a non-unit diagonal is the status (1-based
    index, as ``trtrs``)."""
    n, k = op.b_shape[-2:]
    size_a, size_b = n * n, n * k

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        trsm = _routine(module, e, "trsm", 11)
        w = b.words
        e.store_words(w, {0: 0, 1: "R", 2: "L" if op.upper else "U",
                          3: "T" if op.transpose_a else "N", 4: "U" if op.unit_diagonal else "N",
                          5: k, 6: n, 7: max(1, n), 8: max(1, k)})  # fmt: skip
        e.store(e.real(1.0), b.scratch, e.index(0))
        a, rhs, x = b.inputs[0], b.inputs[1], b.outputs[0]

        def matrix(e: Emitter, m: SSAValue) -> None:
            base_a, base_x = e.mul(m, e.index(size_a)), e.mul(m, e.index(size_b))
            e.copy(rhs, x, base_x, size_b)
            if not op.unit_diagonal:
                e.loop(0, n, lambda e, i: _zero_diagonal_status(e, a, base_a, i, n, w))
            e.call(trsm, [e.word(w, 1), e.word(w, 2), e.word(w, 3), e.word(w, 4),
                          e.word(w, 5), e.word(w, 6), b.scratch, e.element_at(a, base_a),
                          e.word(w, 7), e.element_at(x, base_x), e.word(w, 8)])  # fmt: skip

        e.each(_matrices(op.a_shape), matrix)

    return LapackKernel(9, 1, body)


def _zero_diagonal_status(e: Emitter, a: SSAValue, base: SSAValue, i: SSAValue, n: int,
                          w: SSAValue) -> None:  # fmt: skip
    """``status = i + 1`` where ``A[i, i] == 0`` and no status is set yet."""
    diagonal = e.load(a, e.plus(base, e.mul(i, e.index(n + 1))))
    zero = e.add(arith.CmpfOp(diagonal, e.real(0.0), "oeq"))
    status = e.load_word(w, 0)
    unset = e.add(arith.CmpiOp(status, e.i32(0), "eq"))
    first = e.add(arith.AndIOp(zero, unset))
    position = e.add(arith.AddiOp(e.add(arith.IndexCastOp(i, I32)), e.i32(1)))
    e.store_word(e.add(arith.SelectOp(first, position, status)), w, 0)


def solve_kernel(op: Solve) -> LapackKernel:
    """``LU = A`` (``%fws[0, n²)``), ``getrf``; ``C = B`` column-major (``%fws[n², ...)``),
    ``getrs`` (``'T'`` for ``A X = B``: LAPACK holds ``Aᵀ``), ``X = C`` row-major."""
    n, k = op.b_shape[-2:]
    size_a, size_b = n * n, n * k

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        getrf = _routine(module, e, "getrf", 6)
        getrs = _routine(module, e, "getrs", 9)
        w, lu = b.words, b.scratch
        e.store_words(w, {0: 0, 1: n, 2: k, 3: max(1, n), 4: max(1, n),
                          6: "N" if op.transpose_a else "T"})  # fmt: skip
        a, rhs, x = b.inputs[0], b.inputs[1], b.outputs[0]
        columns = e.element_at(lu, e.index(size_a))

        def matrix(e: Emitter, m: SSAValue) -> None:
            base_a, base_x = e.mul(m, e.index(size_a)), e.mul(m, e.index(size_b))
            e.copy_to(a, base_a, lu, e.index(0), size_a)
            pivots = e.word(w, 7)
            e.call(getrf, [e.word(w, 1), e.word(w, 1), lu, e.word(w, 3), pivots, e.word(w, 5)])
            e.keep_first_status(w, 5)
            e.transpose(rhs, base_x, columns, n, k, to_columns=True)
            e.call(getrs, [e.word(w, 6), e.word(w, 1), e.word(w, 2), lu, e.word(w, 3), pivots,
                           columns, e.word(w, 4), e.word(w, 5)])  # fmt: skip
            e.transpose(x, base_x, columns, n, k, to_columns=False)

        e.each(_matrices(op.a_shape), matrix)

    return LapackKernel(7 + n, size_a + size_b, body)


def slogdet_kernel(op: Slogdet) -> LapackKernel:
    """``LU = A``, ``getrf``; ``sign = Π sign(u_ii) (-1)^(ipiv_i != i)``, ``log|det| =
    Σ log|u_ii|`` (an exact zero pivot: sign 0, -inf, as numpy; no status)."""
    n = op.shape[-1]
    size = n * n

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        getrf = _routine(module, e, "getrf", 6)
        w, lu = b.words, b.scratch
        e.store_words(w, {0: 0, 1: n, 2: max(1, n)})
        a, sign, logdet = b.inputs[0], b.outputs[0], b.outputs[1]

        def matrix(e: Emitter, m: SSAValue) -> None:
            e.copy_to(a, e.mul(m, e.index(size)), lu, e.index(0), size)
            e.call(getrf, [e.word(w, 1), e.word(w, 1), lu, e.word(w, 2), e.word(w, 4),
                           e.word(w, 3)])  # fmt: skip
            e.store(e.real(1.0), sign, m)
            e.store(e.real(0.0), logdet, m)
            e.loop(0, n, lambda e, i: _pivot_factor(e, lu, w, sign, logdet, m, i, n))

        e.each(_matrices(op.shape), matrix)

    return LapackKernel(4 + n, size, body)


def _pivot_factor(e: Emitter, lu: SSAValue, w: SSAValue, sign: SSAValue, logdet: SSAValue,
                  m: SSAValue, i: SSAValue, n: int) -> None:  # fmt: skip
    """``sign[m] *= ±sign(u_ii)``, ``logdet[m] += log|u_ii|``."""
    u = e.load(lu, e.mul(i, e.index(n + 1)))
    one, zero = e.real(1.0), e.real(0.0)
    negative = e.add(arith.CmpfOp(u, zero, "olt"))
    positive = e.add(arith.CmpfOp(u, zero, "ogt"))
    minus_one = e.add(arith.NegfOp(one))
    unit = e.add(arith.SelectOp(positive, one, e.add(arith.SelectOp(negative, minus_one, zero))))
    pivot = e.add(arith.IndexCastOp(e.load_word_at(w, 4, i), INDEX))
    swapped = e.add(arith.CmpiOp(pivot, e.plus(i, e.index(1)), "ne"))
    factor = e.add(arith.SelectOp(swapped, e.add(arith.NegfOp(unit)), unit))
    e.store(e.add(arith.MulfOp(e.load(sign, m), factor)), sign, m)
    magnitude = e.add(math.LogOp(e.add(math.AbsFOp(u))))
    e.store(e.add(arith.AddfOp(e.load(logdet, m), magnitude)), logdet, m)


def eigh_kernel(op: Eigh) -> LapackKernel:
    """``S = A`` (``%fws``), ``syevd('V', 'U', ...)``: ``w`` ascending, the eigenvectors
    as ``S``'s columns (column-major: ``S`` holds ``Vᵀ`` row-major); ``V`` their
    transpose, each column's entry of largest magnitude made positive (the op's sign
    rule); a failure to converge is the status (numpy's error)."""
    n = op.shape[-1]
    size = n * n
    work, iwork = 1 + 6 * n + 2 * size, 3 + 5 * n
    best = size + work  # %fws[best]: the largest magnitude so far; [best + 1]: its entry

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        syevd = _routine(module, e, "syevd", 11)
        w, s = b.words, b.scratch
        e.store_words(w, {0: 0, 1: "V", 2: "U", 3: n, 4: max(1, n), 5: work, 6: iwork})
        a, values, vectors = b.inputs[0], b.outputs[0], b.outputs[1]

        def matrix(e: Emitter, m: SSAValue) -> None:
            base = e.mul(m, e.index(size))
            e.copy_to(a, base, s, e.index(0), size)
            e.call(syevd, [e.word(w, 1), e.word(w, 2), e.word(w, 3), s, e.word(w, 4),
                           e.element_at(values, e.mul(m, e.index(n))),
                           e.element_at(s, e.index(size)), e.word(w, 5), e.word(w, 8),
                           e.word(w, 6), e.word(w, 7)])  # fmt: skip
            e.keep_first_status(w, 7)
            e.loop(0, n, lambda e, j: _positive_column(e, s, vectors, base, j, n, best))

        e.each(_matrices(op.shape), matrix)

    return LapackKernel(8 + iwork, size + work + 2, body)


def _positive_column(e: Emitter, s: SSAValue, vectors: SSAValue, base: SSAValue,
                     j: SSAValue, n: int, best: int) -> None:  # fmt: skip
    """``V[:, j] = ±S[j, :]`` (row-major ``S``), the sign making the first entry of
    largest magnitude positive (0 counts as positive)."""
    e.store(e.real(-1.0), s, e.index(best))
    e.store(e.real(0.0), s, e.index(best + 1))
    column = e.mul(j, e.index(n))

    def track(e: Emitter, i: SSAValue) -> None:
        entry = e.load(s, e.plus(column, i))
        magnitude = e.add(math.AbsFOp(entry))
        larger = e.add(arith.CmpfOp(magnitude, e.load(s, e.index(best)), "ogt"))
        e.store(e.add(arith.SelectOp(larger, magnitude, e.load(s, e.index(best)))), s,
                e.index(best))  # fmt: skip
        e.store(e.add(arith.SelectOp(larger, entry, e.load(s, e.index(best + 1)))), s,
                e.index(best + 1))  # fmt: skip

    e.loop(0, n, track)
    negative = e.add(arith.CmpfOp(e.load(s, e.index(best + 1)), e.real(0.0), "olt"))
    sign = e.add(arith.SelectOp(negative, e.real(-1.0), e.real(1.0)))

    def write(e: Emitter, i: SSAValue) -> None:
        entry = e.load(s, e.plus(column, i))
        e.store(e.add(arith.MulfOp(entry, sign)), vectors,
                e.plus(base, e.plus(e.mul(i, e.index(n)), j)))  # fmt: skip

    e.loop(0, n, write)


#: Primitive class -> its kernel (f32 and f64; the routines' s/d prefix by dtype).
LAPACK_OPS: dict[type, Callable[..., LapackKernel]] = {
    Cholesky: cholesky_kernel,
    TriangularSolve: triangular_solve_kernel,
    Solve: solve_kernel,
    Slogdet: slogdet_kernel,
    Eigh: eigh_kernel,
}


# ------------------------------------------------------------------ the rewrite


def _element(op: Operation) -> AnyFloat | None:
    """The op's element type when it is f32 or f64 (the routines' types), else None."""
    t = op.operands[0].type
    if isinstance(t, TensorType) and isinstance(t.element_type, Float32Type | Float64Type):
        return t.element_type
    return None


def build_lapack_function(
    op: Operation, kernel: LapackKernel, symbol: str, element: AnyFloat, module: ModuleOp
) -> func.FuncOp:
    """The kernel function of ``op`` (see the module docstring)."""
    types = [memref_type(v.type) for v in (*op.operands, *op.results)]
    types += [MemRefType(I32, [kernel.words]), MemRefType(element, [kernel.scratch])]
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


def replace_op(op: Operation, kernel: LapackKernel, symbol: str, element: AnyFloat,
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
            buffers[value] = to_buffer.results[0]
    allocs = [memref.AllocOp([], [], memref_type(v.type)) for v in op.results]
    workspaces = [memref.AllocOp([], [], MemRefType(I32, [kernel.words])),
                  memref.AllocOp([], [], MemRefType(element, [kernel.scratch]))]  # fmt: skip
    new_ops += [*allocs, *workspaces]
    arguments = [buffers[v] for v in op.operands] + [a.memref for a in (*allocs, *workspaces)]
    call = func.CallOp(symbol, arguments, [])
    if status_error:
        call.attributes["tidu.status_output"] = IntegerAttr(len(allocs), 64)
        call.attributes["tidu.status_error"] = StringAttr(status_error)
    new_ops.append(call)
    tensors = [bufferization.ToTensorOp(a.memref) for a in allocs]
    new_ops += tensors
    for new in new_ops:
        block.insert_op_before(new, op)
    for result, tensor in zip(op.results, tensors, strict=True):
        result.replace_all_uses_with(tensor.tensor)
    block.erase_op(op)


@dataclass(frozen=True)
class TiduLowerLinalgPass(ModulePass):
    """Lower real ``cholesky``/``triangular_solve``/``solve``/``slogdet`` to LAPACK kernels."""

    name = "tidu-lower-linalg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]:
            after: Operation = function
            lowered = [(o, element) for o in function.body.block.ops
                       if isinstance(o, LinalgOperation) and type(o.to_primitive()) in LAPACK_OPS
                       and (element := _element(o)) is not None]  # fmt: skip
            made: dict[tuple[object, object], tuple[str, LapackKernel]] = {}
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

"""The LAPACK kernels of the solves: ``cholesky`` (``potrf``), ``triangular_solve``
(``trsm``; ``trsv`` for one right-hand side), ``solve`` (``getrf`` + ``getrs``) and
``slogdet`` (``getrf``); and the product of a Cholesky factor with a matrix (``trmm``).

Each ``*_kernel(op)`` gives the workspace sizes and the body of the op's kernel
(``tidu-lower-linalg`` makes the function and the call). A row-major matrix is
LAPACK's column-major transpose: a row-major lower factor is ``potrf('U')`` of the same
memory; ``op(A) X = B`` with ``n x k`` row-major ``B`` is ``Xᵀ op(A)ᵀ = Bᵀ``, ``trsm``
from the right; ``solve`` is ``getrf`` of ``Aᵀ`` and ``getrs`` with the transpose
flipped, ``B`` copied to column-major order and back; ``slogdet`` reads ``det Aᵀ =
det A`` off ``getrf``'s diagonal and pivots.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from tidu_compile.ops.linalg import Cholesky, Slogdet, Solve, TriangularSolve

from .lapack_kernels import I32, INDEX, Buffers, Emitter, LapackKernel, matrices, routine

__all__ = [
    "SOLVE_BLOCK", "cholesky_kernel", "factor_product_kernel", "slogdet_kernel",
    "solve_blocks", "solve_kernel", "triangular_solve_kernel",
]  # fmt: skip


def cholesky_kernel(op: Cholesky) -> LapackKernel:
    """``L = A`` then ``potrf('U', n, L, lda, info)`` per matrix; the strict upper
    triangle (row-major) zeroed, as numpy's factor."""
    n = op.shape[-1]
    size = n * n

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        potrf = routine(module, e, "potrf", 5)
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

        e.each(matrices(op.shape), matrix)

    return LapackKernel(5, 1, body)


#: The largest diagonal block one ``trsm`` call solves; a larger solve is split in two
#: halves and a ``gemm`` update (``solve_blocks``).
SOLVE_BLOCK = 64


def solve_blocks(n: int, upper: bool) -> list[tuple[int, int, int, int]]:
    """The calls of ``Y M = B`` (``Y := B M⁻¹``, ``M`` of order ``n``, upper or lower
    triangular) as ``(start, size, 0, 0)``: solve columns ``[start, start + size)`` on
    ``M``'s diagonal block there, or ``(out, out_size, into, into_size)`` with
    ``into_size > 0``: ``Y[:, out] -= Y[:, into] M[into, out]`` (a ``gemm``). Recursive
    halving: ``Y₁ M₁₁ = B₁`` first when ``M`` is upper (then ``B₂ -= Y₁ M₁₂``), ``Y₂``
    first when lower; OpenBLAS's ``trsm`` runs at about 40% of its ``gemm`` rate
    (n = 256, one thread), so the updates' half of the work runs faster."""

    def calls(start: int, size: int) -> list[tuple[int, int, int, int]]:
        if size <= SOLVE_BLOCK:
            return [(start, size, 0, 0)]
        half = size // 2
        first, second = (start, half), (start + half, size - half)
        if upper:
            return [*calls(*first), (*second, *first), *calls(*second)]
        return [*calls(*second), (*first, *second), *calls(*first)]

    return calls(0, n)


def triangular_solve_kernel(op: TriangularSolve) -> LapackKernel:
    """``X = B`` then, per matrix, ``Xᵀ op(A)ᵀ = Bᵀ`` from the right with LAPACK's
    column-major ``Aᵀ``: ``trsm('R', uplo, op, diag, k, size, 1, A_jj, n, X_j, k)`` on
    the diagonal blocks of ``solve_blocks`` and ``gemm('N', op, k, size, size', -1, X_i,
    k, A_ij, n, 1, X_j, k)`` between them; or for one right-hand side (``k == 1``, a
    vector in either order) ``trsv(uplo, op', diag, n, A, lda, X, 1)`` with the
    transpose flipped (``op(A) x = b``: 3-6 x faster than ``trsm`` from the right on one
    row, Intel Xeon); an exact zero on a non-unit diagonal is the status (1-based index,
    as ``trtrs``)."""
    n, k = op.b_shape[-2:]
    size_a, size_b = n * n, n * k
    uplo, diagonal = "L" if op.upper else "U", "U" if op.unit_diagonal else "N"
    transpose = "T" if op.transpose_a else "N"
    vector = k == 1
    # M = op(Aᵀ as LAPACK holds it) is upper when uplo 'U' is not transposed
    blocks = [] if vector else solve_blocks(n, (uplo == "U") == (transpose == "N"))
    updates = len(blocks) > 1  # -1.0, gemm's alpha, beside trsm's 1.0 in %fws
    values: list[int | str] = ["R", "N", uplo, transpose, diagonal, n, max(1, k)]
    values += [v for block in blocks for v in block[1::2] if v]  # the blocks' sizes
    slots: dict[int | str, int] = {}
    for value in values:
        slots.setdefault(value, len(slots) + 1)

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        w = b.words

        def word(value: int | str) -> SSAValue:
            return e.word(w, slots[value])

        if vector:
            solve = routine(module, e, "trsv", 8)
            e.store_words(w, {0: 0, 1: uplo, 2: "N" if op.transpose_a else "T", 3: diagonal,
                              4: n, 5: max(1, n), 6: 1})  # fmt: skip
        else:
            solve = routine(module, e, "trsm", 11)
            e.store_words(w, {0: 0, **{slot: value for value, slot in slots.items()}})
            e.store(e.real(1.0), b.scratch, e.index(0))
        if updates:
            update = routine(module, e, "gemm", 13)
            e.store(e.real(-1.0), b.scratch, e.index(1))
        a, rhs, x = b.inputs[0], b.inputs[1], b.outputs[0]
        one = b.scratch

        def matrix(e: Emitter, m: SSAValue) -> None:
            base_a, base_x = e.mul(m, e.index(size_a)), e.mul(m, e.index(size_b))
            e.copy(rhs, x, base_x, size_b)
            if not op.unit_diagonal:
                e.loop(0, n, lambda e, i: _zero_diagonal_status(e, a, base_a, i, n, w))
            if vector:
                e.call(solve, [e.word(w, 1), e.word(w, 2), e.word(w, 3), e.word(w, 4),
                               e.element_at(a, base_a), e.word(w, 5), e.element_at(x, base_x),
                               e.word(w, 6)])  # fmt: skip
                return

            def at(base: SSAValue, buffer: SSAValue, offset: int) -> SSAValue:
                return e.element_at(buffer, e.plus(base, e.index(offset)))

            for out, size, into, into_size in blocks:
                if not into_size:
                    e.call(solve, [word("R"), word(uplo), word(transpose), word(diagonal),
                                   word(max(1, k)), word(size), one, at(base_a, a, out * (n + 1)),
                                   word(n), at(base_x, x, out * k), word(max(1, k))])  # fmt: skip
                    continue
                # M[into, out]: Aᵀ's block there, or for op 'T' the transposed A[out, into]
                block = into + out * n if transpose == "N" else out + into * n
                e.call(update, [word("N"), word(transpose), word(max(1, k)), word(size),
                                word(into_size), e.element_at(one, e.index(1)),
                                at(base_x, x, into * k),
                                word(max(1, k)), at(base_a, a, block), word(n), one,
                                at(base_x, x, out * k), word(max(1, k))])  # fmt: skip

        e.each(matrices(op.a_shape), matrix)

    return LapackKernel(max(9, len(slots) + 1), 2 if updates else 1, body)


def factor_product_kernel(n: int, k: int, transpose: bool) -> LapackKernel:
    """``Y = op(L) X`` for a lower-triangular ``n x n`` ``L`` whose strict upper triangle
    is zero (a Cholesky factor: ``op(L) = Lᵀ`` when ``transpose``) and ``n x k`` ``X``:
    ``Y = X`` then ``trmm('R', 'U', op, 'N', k, n, 1, L, n, Y, k)`` (``Yᵀ = Xᵀ op(L)ᵀ``
    with ``L``'s row-major memory LAPACK's upper-triangular ``Lᵀ``); half a matrix
    product's work, the zeros not read."""

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        trmm = routine(module, e, "trmm", 11)
        w = b.words
        e.store_words(w, {0: 0, 1: "R", 2: "U", 3: "T" if transpose else "N", 4: "N", 5: k,
                          6: n, 7: max(1, n), 8: max(1, k)})  # fmt: skip
        e.store(e.real(1.0), b.scratch, e.index(0))
        factor, rhs, y = b.inputs[0], b.inputs[1], b.outputs[0]
        e.copy(rhs, y, e.index(0), n * k)
        e.call(trmm, [e.word(w, 1), e.word(w, 2), e.word(w, 3), e.word(w, 4), e.word(w, 5),
                      e.word(w, 6), b.scratch, factor, e.word(w, 7), y, e.word(w, 8)])  # fmt: skip

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
        getrf = routine(module, e, "getrf", 6)
        getrs = routine(module, e, "getrs", 9)
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

        e.each(matrices(op.a_shape), matrix)

    return LapackKernel(7 + n, size_a + size_b, body)


def slogdet_kernel(op: Slogdet) -> LapackKernel:
    """``LU = A``, ``getrf``; ``sign = Π sign(u_ii) (-1)^(ipiv_i != i)``, ``log|det| =
    Σ log|u_ii|`` (an exact zero pivot: sign 0, -inf, as numpy; no status)."""
    n = op.shape[-1]
    size = n * n

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        getrf = routine(module, e, "getrf", 6)
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

        e.each(matrices(op.shape), matrix)

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

"""The LAPACK kernels of the decompositions: ``eigh`` (``syevd``), ``qr`` (``geqrf`` +
``orgqr``; complex: ``geqrf`` + ``ungqr``) and ``svd`` (``gesdd``).

Each ``*_kernel(op)`` gives the workspace sizes and the body of the op's kernel
(``tidu-lower-linalg`` makes the function and the call). The input is copied to
column-major order (``eigh``: as it is, the matrix being symmetric), the factors copied
back to row-major; ``eigh`` and ``svd`` apply the ops' sign rule (each eigenvector, each
left singular vector with its right one, has its entry of largest magnitude positive).
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from tidu_compile.ops.decompositions import Eigh, Qr, Svd

from .lapack_kernels import Buffers, Emitter, LapackKernel, matrices, routine

__all__ = ["eigh_kernel", "qr_kernel", "svd_kernel"]


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
        syevd = routine(module, e, "syevd", 11)
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

        e.each(matrices(op.shape), matrix)

    return LapackKernel(8 + iwork, size + work + 2, body)


def _positive_column(e: Emitter, s: SSAValue, vectors: SSAValue, base: SSAValue,
                     j: SSAValue, n: int, best: int) -> None:  # fmt: skip
    """``V[:, j] = ±S[j, :]`` (row-major ``S``), the sign making the first entry of
    largest magnitude positive (0 counts as positive)."""
    column = e.mul(j, e.index(n))
    sign = _largest_entry_sign(e, s, column, n, best)

    def write(e: Emitter, i: SSAValue) -> None:
        entry = e.load(s, e.plus(column, i))
        e.store(e.add(arith.MulfOp(entry, sign)), vectors,
                e.plus(base, e.plus(e.mul(i, e.index(n)), j)))  # fmt: skip

    e.loop(0, n, write)


def qr_kernel(op: Qr) -> LapackKernel:
    """``S = A`` column-major (``%fws``), ``geqrf``, ``R`` = the upper triangle of its
    first ``k`` rows, ``orgqr`` (``ungqr`` for complex ``A``; ``k`` reflectors), ``Q`` =
    its first ``k`` columns, both back to row-major: numpy's ``qr`` (no status: only
    bad arguments fail)."""
    m, n = op.shape[-2:]
    k = min(m, n)
    work = 64 * max(m, n, 1)
    tau = m * n

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        geqrf = routine(module, e, "geqrf", 8)
        orgqr = routine(module, e, "ungqr" if e.parts == 2 else "orgqr", 9)
        w, s = b.words, b.scratch
        e.store_words(w, {0: 0, 1: m, 2: n, 3: k, 4: max(1, m), 5: work})
        a, q, r = b.inputs[0], b.outputs[0], b.outputs[1]
        scalars, reflectors = e.element_at(s, e.index(tau)), e.element_at(s, e.index(tau + k))

        def matrix(e: Emitter, i: SSAValue) -> None:
            e.transpose(a, e.mul(i, e.index(m * n)), s, m, n, to_columns=True)
            e.call(geqrf, [e.word(w, 1), e.word(w, 2), s, e.word(w, 4), scalars, reflectors,
                           e.word(w, 5), e.word(w, 6)])  # fmt: skip
            base_r = e.mul(i, e.index(k * n))

            def row(e: Emitter, p: SSAValue) -> None:
                def column(e: Emitter, c: SSAValue) -> None:
                    above = e.add(arith.CmpiOp(p, c, "ule"))
                    e.move(s, e.plus(p, e.mul(c, e.index(m))), r,
                           e.plus(base_r, e.plus(e.mul(p, e.index(n)), c)), above)  # fmt: skip

                e.loop(0, n, column)

            e.loop(0, k, row)
            e.call(orgqr, [e.word(w, 1), e.word(w, 3), e.word(w, 3), s, e.word(w, 4), scalars,
                           reflectors, e.word(w, 5), e.word(w, 6)])  # fmt: skip
            e.transpose(q, e.mul(i, e.index(m * k)), s, m, k, to_columns=False)

        e.each(matrices(op.shape), matrix)

    return LapackKernel(7, tau + k + work, body)


def svd_kernel(op: Svd) -> LapackKernel:
    """``S = A`` column-major, ``gesdd('S')`` into column-major ``U`` and ``Vᵀ`` in
    ``%fws``, then both back to row-major with each left vector's entry of largest
    magnitude made positive (its right vector flipped with it: the op's sign rule); no
    convergence is the status (numpy's error)."""
    m, n = op.shape[-2:]
    k = min(m, n)
    large = max(m, n)
    work = 3 * k + max(large, 4 * k * k + 4 * k) + 64 * large
    u_at, vt_at = m * n, m * n + m * k
    signs = vt_at + k * n  # k signs, then the two slots of the sign rule
    work_at = signs + k + 2

    def body(e: Emitter, b: Buffers, module: ModuleOp) -> None:
        gesdd = routine(module, e, "gesdd", 14)
        w, s = b.words, b.scratch
        e.store_words(w, {0: 0, 1: "S", 2: m, 3: n, 4: max(1, m), 5: max(1, k), 6: work})
        a, u, values, vt = b.inputs[0], b.outputs[0], b.outputs[1], b.outputs[2]
        left, right = e.element_at(s, e.index(u_at)), e.element_at(s, e.index(vt_at))

        def matrix(e: Emitter, i: SSAValue) -> None:
            e.transpose(a, e.mul(i, e.index(m * n)), s, m, n, to_columns=True)
            e.call(gesdd, [e.word(w, 1), e.word(w, 2), e.word(w, 3), s, e.word(w, 4),
                           e.element_at(values, e.mul(i, e.index(k))), left, e.word(w, 4),
                           right, e.word(w, 5), e.element_at(s, e.index(work_at)),
                           e.word(w, 6), e.word(w, 8), e.word(w, 7)])  # fmt: skip
            e.keep_first_status(w, 7)
            base_u, base_vt = e.mul(i, e.index(m * k)), e.mul(i, e.index(k * n))

            def column(e: Emitter, j: SSAValue) -> None:
                sign = _largest_entry_sign(e, s, e.plus(e.index(u_at), e.mul(j, e.index(m))),
                                           m, signs + k)  # fmt: skip
                e.store(sign, s, e.plus(e.index(signs), j))

            e.loop(0, k, column)

            def u_row(e: Emitter, p: SSAValue) -> None:
                def entry(e: Emitter, j: SSAValue) -> None:
                    value = e.load(s, e.plus(e.index(u_at), e.plus(p, e.mul(j, e.index(m)))))
                    signed = e.add(arith.MulfOp(value, e.load(s, e.plus(e.index(signs), j))))
                    e.store(signed, u, e.plus(base_u, e.plus(e.mul(p, e.index(k)), j)))

                e.loop(0, k, entry)

            def vt_row(e: Emitter, p: SSAValue) -> None:
                sign = e.load(s, e.plus(e.index(signs), p))

                def entry(e: Emitter, c: SSAValue) -> None:
                    value = e.load(s, e.plus(e.index(vt_at), e.plus(p, e.mul(c, e.index(k)))))
                    signed = e.add(arith.MulfOp(value, sign))
                    e.store(signed, vt, e.plus(base_vt, e.plus(e.mul(p, e.index(n)), c)))

                e.loop(0, n, entry)

            e.loop(0, m, u_row)
            e.loop(0, k, vt_row)

        e.each(matrices(op.shape), matrix)

    return LapackKernel(8 + 8 * k, work_at + work, body)


def _largest_entry_sign(e: Emitter, s: SSAValue, start: SSAValue, count: int,
                        slots: int) -> SSAValue:  # fmt: skip
    """-1.0 when the first entry of largest magnitude of ``s[start:start + count]`` is
    negative, else 1.0 (``s[slots]``, ``s[slots + 1]``: the largest magnitude so far and
    its entry)."""
    e.store(e.real(-1.0), s, e.index(slots))
    e.store(e.real(0.0), s, e.index(slots + 1))

    def track(e: Emitter, i: SSAValue) -> None:
        entry = e.load(s, e.plus(start, i))
        magnitude = e.add(math.AbsFOp(entry))
        best = e.load(s, e.index(slots))
        larger = e.add(arith.CmpfOp(magnitude, best, "ogt"))
        e.store(e.add(arith.SelectOp(larger, magnitude, best)), s, e.index(slots))
        kept = e.load(s, e.index(slots + 1))
        e.store(e.add(arith.SelectOp(larger, entry, kept)), s, e.index(slots + 1))

    e.loop(0, count, track)
    negative = e.add(arith.CmpfOp(e.load(s, e.index(slots + 1)), e.real(0.0), "olt"))
    return e.add(arith.SelectOp(negative, e.real(-1.0), e.real(1.0)))

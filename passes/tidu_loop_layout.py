"""A layout change (``ops.Transpose``, ``ops.Reshape``) as a copying loop nest over
memrefs, for the body of a scan kernel (``tidu_lower_control``)::

    // out = transpose(in, permutation): out[i0, i1] = in[i_p^-1...]   (in[j], j[p[d]] = i[d])
    // out = reshape(in): out[i] = in[unflatten(flatten(i, out shape), in shape)]
    scf.for %i0 ... { scf.for %i1 ... { %v = memref.load %in[...]  memref.store %v, %out[...] } }

A reshape's source indices come from the row-major position of the target element by
``divui``/``remui`` by constants (folded by LLVM into multiplies).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue

from .tidu_loop_contraction import Emit, Indices, close_loops, index_constant, loop_nest

__all__ = ["layout_loops"]


def _unflatten(emit: Emit, indices: Sequence[SSAValue], target: Sequence[int],
               source: Sequence[int]) -> list[SSAValue]:  # fmt: skip
    """The indices in ``source`` of the row-major position of ``indices`` in ``target``."""
    flat = index_constant(emit, 0)
    for d, i in enumerate(indices):
        scaled = emit(arith.MuliOp(i, index_constant(emit, prod(target[d + 1 :])))).results[0]
        flat = emit(arith.AddiOp(flat, scaled)).results[0]
    result: list[SSAValue] = []
    for d, extent in enumerate(source):
        quotient = emit(arith.DivUIOp(flat, index_constant(emit, prod(source[d + 1 :])))).results[0]
        result.append(emit(arith.RemUIOp(quotient, index_constant(emit, extent))).results[0])
    return result


def layout_loops(emit: Emit, op: object, source: SSAValue, shape: Sequence[int],
                 out: SSAValue, at: Indices) -> None:  # fmt: skip
    """Emit ``out = op(source)`` for ``op`` an ``ops.Transpose`` or ``ops.Reshape`` of a
    value of ``shape``; ``at(buffer, indices)`` the indices of a buffer (a stacked one:
    the row in front)."""
    out_type = out.type
    assert isinstance(out_type, MemRefType)
    target = out_type.get_shape()
    if 0 in target:
        return
    indices, emit, loops = loop_nest(emit, target)
    permutation = getattr(op, "permutation", None)
    if permutation is not None:
        where: list[SSAValue] = [indices[0]] * len(permutation)
        for d, p in enumerate(permutation):
            where[p] = indices[d]
    else:
        where = _unflatten(emit, indices, target, shape)
    value = emit(memref.LoadOp.get(source, at(source, where))).results[0]
    emit(memref.StoreOp.get(value, out, at(out, indices)))
    close_loops(loops)


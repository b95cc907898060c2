"""A real contraction (``ops.DotGeneral``) as a loop nest over memrefs, for the body of a
scan kernel (``tidu_lower_control``), where a BLAS call between kernels cannot run.

The result's dimensions are the batch ones, then the free ones of ``lhs``, then those of
``rhs`` (JAX's ``dot_general``); per result element the contracted dimensions are summed
into an accumulator carried by the innermost loops::

    // out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n]
    scf.for %b ... { scf.for %m ... { scf.for %n ... {
      %s = scf.for %k = %c0 to %cK step %c1 iter_args(%acc = %zero) -> (f64) {
        %l = memref.load %lhs[%b, %m, %k]  %r = memref.load %rhs[%b, %k, %n]
        %p = arith.mulf %l, %r  %a = arith.addf %acc, %p  scf.yield %a
      }
      memref.store %s, %out[%b, %m, %n]
    } } }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IndexType, IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue

__all__ = [
    "Emit", "Indices", "append_to", "close_loops", "contraction_loops", "index_constant",
    "loop_nest",
]  # fmt: skip

Emit = Callable[[Operation], Operation]


def append_to(block: Block) -> Emit:
    """An ``Emit`` adding ops at the end of ``block``."""

    def emit(op: Operation) -> Operation:
        block.add_op(op)
        return op

    return emit


def index_constant(emit: Emit, value: int) -> SSAValue:
    """``arith.constant value : index``."""
    return emit(arith.ConstantOp(IntegerAttr(value, IndexType()))).results[0]


def _loop(emit: Emit, extent: int, iter_args: list[SSAValue]) -> tuple[scf.ForOp, Block]:
    index = [index_constant(emit, v) for v in (0, extent, 1)]
    body = Block(arg_types=[IndexType(), *(a.type for a in iter_args)])
    loop = scf.ForOp(index[0], index[1], index[2], iter_args, body)
    emit(loop)
    return loop, body


def loop_nest(emit: Emit, shape: Sequence[int]) -> tuple[list[SSAValue], Emit, list[Block]]:
    """``scf.for`` loops over ``shape`` (outermost first): their indices, an ``Emit`` into
    the innermost body, and the bodies, each to end with ``close_loops``."""
    indices: list[SSAValue] = []
    bodies: list[Block] = []
    for extent in shape:
        _, body = _loop(emit, extent, [])
        indices.append(body.args[0])
        bodies.append(body)
        emit = append_to(body)
    return indices, emit, bodies


def close_loops(bodies: Sequence[Block]) -> None:
    """End each body of a ``loop_nest`` with its ``scf.yield``."""
    for body in bodies:
        body.add_op(scf.YieldOp())


Indices = Callable[[SSAValue, list[SSAValue]], list[SSAValue]]


def contraction_loops(emit: Emit, op: object, lhs: SSAValue, rhs: SSAValue, out: SSAValue,
                      at: Indices) -> bool:  # fmt: skip
    """Emit ``out = dot_general(lhs, rhs)`` for ``op`` (an ``ops.DotGeneral``); ``at(buffer,
    indices)`` the indices of a buffer (a stacked one: the row in front). False, and
    nothing emitted, when the element type is not a float (left to the driver)."""
    out_type = out.type
    assert isinstance(out_type, MemRefType)
    element = out_type.element_type
    if not isinstance(element, AnyFloat):
        return False
    lhs_shape, rhs_shape = op.lhs_shape, op.rhs_shape  # type: ignore[attr-defined]
    lhs_batch, rhs_batch = op.lhs_batch, op.rhs_batch  # type: ignore[attr-defined]
    lhs_sum, rhs_sum = op.lhs_contracting, op.rhs_contracting  # type: ignore[attr-defined]
    lhs_free = [d for d in range(len(lhs_shape)) if d not in (*lhs_batch, *lhs_sum)]
    rhs_free = [d for d in range(len(rhs_shape)) if d not in (*rhs_batch, *rhs_sum)]
    lhs_index: dict[int, SSAValue] = {}
    rhs_index: dict[int, SSAValue] = {}
    result: list[SSAValue] = []
    loops: list[Block] = []
    for kind, dims in (("batch", lhs_batch), ("lhs", lhs_free), ("rhs", rhs_free)):
        for n, d in enumerate(dims):
            extent = (rhs_shape if kind == "rhs" else lhs_shape)[d]
            _, body = _loop(emit, extent, [])
            loops.append(body)
            emit = append_to(body)
            i = body.args[0]
            result.append(i)
            if kind == "batch":
                lhs_index[d], rhs_index[rhs_batch[n]] = i, i
            elif kind == "lhs":
                lhs_index[d] = i
            else:
                rhs_index[d] = i
    zero = emit(arith.ConstantOp(FloatAttr(0.0, element))).results[0]
    accumulator: SSAValue = zero
    inner = emit
    sums: list[tuple[scf.ForOp, Block]] = []
    for n, d in enumerate(lhs_sum):
        loop, body = _loop(inner, lhs_shape[d], [accumulator])
        if sums:
            sums[-1][1].add_op(scf.YieldOp(loop.results[0]))
        sums.append((loop, body))
        lhs_index[d], rhs_index[rhs_sum[n]] = body.args[0], body.args[0]
        accumulator, inner = body.args[1], append_to(body)
    lhs_at = at(lhs, [lhs_index[d] for d in range(len(lhs_shape))])
    rhs_at = at(rhs, [rhs_index[d] for d in range(len(rhs_shape))])
    left = inner(memref.LoadOp.get(lhs, lhs_at)).results[0]
    right = inner(memref.LoadOp.get(rhs, rhs_at)).results[0]
    product = inner(arith.MulfOp(left, right)).results[0]
    total: SSAValue = inner(arith.AddfOp(accumulator, product)).results[0]
    if sums:
        sums[-1][1].add_op(scf.YieldOp(total))
        total = sums[0][0].results[0]
    emit(memref.StoreOp.get(total, out, at(out, result)))
    for body in reversed(loops):
        body.add_op(scf.YieldOp())
    return True

"""Small contractions as fusable ops, so a loop body compiles to kernels only.

A ``DotGeneral`` is a numpy (BLAS) call between kernels: fine for one call, but a loop
whose body holds one cannot run natively (each iteration would return to Python). Here
a small real contraction becomes the product of its operands broadcast into one domain,
summed over the contracted dimensions, which ``tidu-fuse-elementwise`` makes one
reduction kernel. ``h @ w`` with ``h: (16,)`` and ``w: (16, 8)`` (domain ``k, n``)::

    v2 = DotGeneral(lhs_contracting=(0,), rhs_contracting=(0,), ...)(v0, v1)
  ==>
    v2 = BroadcastInDim(shape=(16, 8), dims=(0,), ...)(v0)       h[k]    -> (k, n)
    v3 = BroadcastInDim(shape=(16, 8), dims=(0, 1), ...)(v1)     w[k, n] -> (k, n)
    v4 = Mul()(v2, v3)
    v5 = ReduceSum(axes=(0,), ...)(v4)                           sum over k -> (n,)

The domain orders the result's dimensions (batch, lhs free, rhs free) as the result
does and places each contracted dimension where both operands' own dimension orders
still increase in it (a broadcast keeps an operand's dimension order); a contraction
with no such order (it would need a transpose), of another dtype, or with a domain of
more than ``MAX_DOMAIN`` elements is kept.
"""

from __future__ import annotations

import math

from tidu_compile.compiler.ssa_program import Instr, NodeProgram
from tidu_compile.ops.base import TensorType
from tidu_compile.ops.elementwise import Mul
from tidu_compile.ops.structural import BroadcastInDim, DotGeneral, ReduceSum

__all__ = ["MAX_DOMAIN", "contraction_domain", "contractions_as_kernels"]

#: Largest domain (elements of the broadcast product) rewritten: a few hundred
#: microseconds of one thread at most; larger products stay BLAS calls.
MAX_DOMAIN = 1 << 18

_DTYPES = ("float32", "float64")

Dim = tuple[str, int]  # ("b", i) batch i, ("l", j) lhs free j, ("r", k) rhs free k, ("c", m)


def _operand_dims(contracting: tuple[int, ...], batch: tuple[int, ...], rank: int,
                  free: str) -> list[Dim]:  # fmt: skip
    """Each dimension of one operand as a domain dimension."""
    dims: list[Dim] = []
    free_count = 0
    for d in range(rank):
        if d in batch:
            dims.append(("b", batch.index(d)))
        elif d in contracting:
            dims.append(("c", contracting.index(d)))
        else:
            dims.append((free, free_count))
            free_count += 1
    return dims


def contraction_domain(op: DotGeneral) -> list[Dim] | None:
    """The domain's dimensions in order (see the module docstring), or None when no
    order keeps both operands' dimension orders."""
    lhs = _operand_dims(op.lhs_contracting, op.lhs_batch, len(op.lhs_shape), "l")
    rhs = _operand_dims(op.rhs_contracting, op.rhs_batch, len(op.rhs_shape), "r")
    result = sorted({d for d in lhs + rhs if d[0] != "c"}, key=lambda d: ("blr".index(d[0]), d[1]))
    chains = [lhs, rhs, result]
    nodes = list(dict.fromkeys(result + [d for d in lhs + rhs if d[0] == "c"]))
    after: dict[Dim, set[Dim]] = {d: set() for d in nodes}
    for chain in chains:
        for first, second in zip(chain, chain[1:], strict=False):
            after[second].add(first)
    order: list[Dim] = []
    while len(order) < len(nodes):
        ready = [d for d in nodes if d not in order and after[d] <= set(order)]
        if not ready:
            return None
        order.append(ready[0])
    return order


def _size(op: DotGeneral, dim: Dim) -> int:
    kind, i = dim
    if kind == "b":
        return op.lhs_shape[op.lhs_batch[i]]
    if kind == "c":
        return op.lhs_shape[op.lhs_contracting[i]]
    lhs = _operand_dims(op.lhs_contracting, op.lhs_batch, len(op.lhs_shape), "l")
    if kind == "l":
        return op.lhs_shape[lhs.index(dim)]
    rhs = _operand_dims(op.rhs_contracting, op.rhs_batch, len(op.rhs_shape), "r")
    return op.rhs_shape[rhs.index(dim)]


def contractions_as_kernels(program: NodeProgram) -> NodeProgram:
    """``program`` with every small real ``DotGeneral`` written as broadcasts, a
    product and a sum (the module docstring); value ids renumbered in order."""
    types = list(program.types[: program.arg_count])
    renamed = {i: i for i in range(program.arg_count)}
    instrs: list[Instr] = []

    def emit(op: object, inputs: list[int]) -> int:
        (out_type,) = op.infer_types(*(types[i] for i in inputs))  # type: ignore[attr-defined]
        types.append(out_type)
        instrs.append(Instr(op, tuple(inputs), (len(types) - 1,)))
        return len(types) - 1

    for instr in program.instrs:
        inputs = [renamed[i] for i in instr.inputs]
        expanded = _expanded(instr.op, [types[i] for i in inputs])
        if expanded is None:
            outputs = list(range(len(types), len(types) + len(instr.outputs)))
            types.extend(program.types[o] for o in instr.outputs)
            instrs.append(Instr(instr.op, tuple(inputs), tuple(outputs)))
            renamed.update(zip(instr.outputs, outputs, strict=True))
            continue
        lhs_broadcast, rhs_broadcast, reduce = expanded
        product = emit(Mul(), [emit(lhs_broadcast, [inputs[0]]), emit(rhs_broadcast, [inputs[1]])])
        renamed[instr.outputs[0]] = product if reduce is None else emit(reduce, [product])
    results = tuple(None if r is None else renamed[r] for r in program.results)
    return NodeProgram(program.arg_sources, tuple(types), tuple(instrs), results)


def _expanded(
    op: object, operand_types: list[TensorType]
) -> tuple[BroadcastInDim, BroadcastInDim, ReduceSum | None] | None:
    """The broadcasts and the sum that compute the contraction ``op``, or None."""
    if not isinstance(op, DotGeneral):
        return None
    if {t.dtype for t in operand_types} - set(_DTYPES) or len({t.dtype for t in operand_types}) > 1:
        return None
    order = contraction_domain(op)
    if order is None:
        return None
    shape = tuple(_size(op, d) for d in order)
    if math.prod(shape) > MAX_DOMAIN:
        return None
    lhs = _operand_dims(op.lhs_contracting, op.lhs_batch, len(op.lhs_shape), "l")
    rhs = _operand_dims(op.rhs_contracting, op.rhs_batch, len(op.rhs_shape), "r")
    lhs_broadcast = BroadcastInDim(shape, tuple(order.index(d) for d in lhs), op.lhs_shape)
    rhs_broadcast = BroadcastInDim(shape, tuple(order.index(d) for d in rhs), op.rhs_shape)
    axes = tuple(i for i, d in enumerate(order) if d[0] == "c")
    return lhs_broadcast, rhs_broadcast, ReduceSum(axes, shape) if axes else None

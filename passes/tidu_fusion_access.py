"""How the indexing ops of a fused group become kernel maps (``tidu-fuse-elementwise``).

A *view* op reads values made outside its group; it becomes the operand maps of those
values and computes nothing in the kernel body:

=================  ===================================================================
view               kernel operand map(s)
=================  ===================================================================
broadcast_in_dim   its operand: ``[1]`` (``broadcast_map``: -1 for a broadcast size-1 dim)
slice              its operand: ``[0*2+1]`` (``start + step * i`` per dimension)
transpose          its operand: ``[1, 0]`` (operand dimension ``permutation[i]`` is
                   indexed by iteration dimension ``i``)
concatenate        each piece: ``[0-4] fill -0.0``, read where it lies and summed
                   (``x + -0.0 == x`` for every x, so the sum is the piece that is there)
gather             its data: ``[0, in1, 2]`` (the index tensors are inputs too, mapped to
                   the iteration dimensions of the index shape: ``[1]``)
=================  ===================================================================

An *embed* op writes a member value of its group to a result of another shape; it
becomes that result's map:

=================  ===================================================================
embed              kernel result map
=================  ===================================================================
reduce_sum         the kept dimensions (the others are summed over); ``reduce_max``,
reduce_max, ...    ``reduce_min``, ``reduce_prod`` the same, with the combiner ``max``,
                   ``min``, ``mul`` (``embed_combiner``)
pad                ``[0*2+1] fill v`` (``start + step * i``; the rest holds the pad value)
scatter_add        ``[0, in1, 2]``: summed into from zero at the positions of the index
                   tensors (inputs mapped as for a gather)
=================  ===================================================================

A *mask* op computes in the body like an elementwise op, but from the iteration point
as well as from its operand's element:

=================  ===================================================================
mask               kernel body
=================  ===================================================================
triangle_part      ``select(j - i <= offset, x, 0)`` (``>=`` when ``upper``) with
                   ``i, j`` the last two iteration dimensions (its domain is its shape;
                   ``tidu_loop_access.triangle_select``)
=================  ===================================================================

An ``in<k>`` entry names a kernel operand, which the fuser knows only while it builds
the kernel: ``view_inputs`` and ``embed_map`` take a ``position`` callback that gives
(and adds, when new) the operand index of an input.
"""

from __future__ import annotations

from collections.abc import Callable

from tidu_compile.dialects.tidu_access import Index
from tidu_compile.dialects.tidu_base import array_values
from tidu_compile.dialects.tidu_indexing import (
    ConcatenateOp,
    GatherOp,
    PadOp,
    ScatterAddOp,
    SliceOp,
)
from tidu_compile.dialects.tidu_reduce import ReduceOperation
from tidu_compile.dialects.tidu_shape import BroadcastInDimOp, TransposeOp
from tidu_compile.dialects.tidu_table import OP_OF_PRIMITIVE
from xdsl.dialects.builtin import ComplexType, TensorType
from xdsl.ir import Operation, SSAValue

__all__ = [
    "EMBED_OPS",
    "INDEXED_OPS",
    "InputKey",
    "MASK_OPS",
    "Position",
    "VIEW_OPS",
    "broadcast_map",
    "embed_combiner",
    "embed_map",
    "view_inputs",
]

VIEW_OPS = (BroadcastInDimOp, SliceOp, ConcatenateOp, GatherOp, TransposeOp)
"""Ops whose operands must come from outside the group: they become operand maps."""

EMBED_OPS = (ReduceOperation, PadOp, ScatterAddOp)
"""Ops whose results must leave the group: they become result maps."""

MASK_OPS = tuple(op for primitive, op in OP_OF_PRIMITIVE.items() if primitive.kernel_mask)
"""Ops that join a kernel as elementwise ops whose value depends on the iteration point."""

INDEXED_OPS = (GatherOp, ScatterAddOp)
"""Ops with integer index operands (read through ``in<k>`` map entries)."""

InputKey = tuple[SSAValue, tuple[Index, ...], complex | None]
"""A kernel input: the value, its map and its fill (a value read through two maps is
two inputs)."""

Position = Callable[[InputKey], int]
"""The kernel operand index of an input (added to the kernel's inputs when new)."""


def _indexed_map(
    op: GatherOp | ScatterAddOp, rank: int, position: Position
) -> tuple[Index, ...]:
    """The map of the big tensor of a gather or scatter-add in a domain of the small
    shape: the index tensors' entries where they index, the other dimensions plain."""
    axis = op.axis_value
    index_rank = len(_shape(op.indices[0]))
    index_map = tuple(Index(axis + m) for m in range(index_rank))
    vias = [position((index, index_map, None)) for index in op.indices]
    entries = [Index(d) for d in range(axis)] + [Index(via=v) for v in vias]
    entries += [Index(d) for d in range(axis + index_rank, rank)]
    return tuple(entries)


def concatenate_fill(value: SSAValue) -> complex:
    """What a concatenation piece reads outside itself: -0.0 (in both parts of a complex
    value), the identity of ``+``."""
    element = value.type.element_type  # type: ignore[attr-defined]
    return complex(-0.0, -0.0 if isinstance(element, ComplexType) else 0.0)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


def broadcast_map(op: BroadcastInDimOp) -> tuple[int, ...]:
    """The kernel operand map of a broadcast's operand: the result dimension of each
    operand dimension, or -1 where a size-1 dimension is broadcast."""
    target_shape = _shape(op.result)
    return tuple(
        dim if size == target_shape[dim] else -1
        for size, dim in zip(_shape(op.operand), array_values(op.broadcast_dimensions),
                             strict=True)
    )  # fmt: skip


def view_inputs(op: Operation, position: Position) -> list[InputKey]:
    """The kernel inputs a view op reads through maps (a gather's index tensors are
    added through ``position``)."""
    if isinstance(op, BroadcastInDimOp):
        return [(op.operand, tuple(Index(d) for d in broadcast_map(op)), None)]
    if isinstance(op, TransposeOp):
        permutation = array_values(op.permutation)
        entries = [Index()] * len(permutation)
        for dim, source in enumerate(permutation):
            entries[source] = Index(dim)
        return [(op.operand, tuple(entries), None)]
    if isinstance(op, SliceOp):
        steps = zip(array_values(op.start), array_values(op.step), strict=True)
        return [(op.operand, tuple(Index(d, s, t) for d, (s, t) in enumerate(steps)), None)]
    if isinstance(op, ConcatenateOp):
        axis, rank = op.axis_value, len(_shape(op.result))
        return [
            (piece, tuple(Index(d, -offset if d == axis else 0) for d in range(rank)),
             concatenate_fill(piece))
            for piece, offset in zip(op.inputs, op.offsets(), strict=True)
        ]  # fmt: skip
    if isinstance(op, GatherOp):
        return [(op.data, _indexed_map(op, len(_shape(op.result)), position), None)]
    raise TypeError(f"{op.name} is not a view op")


def embed_map(
    op: Operation, rank: int, position: Position
) -> tuple[tuple[Index, ...], complex | None]:
    """The result map (and fill) of an embed op's result in a group of this rank."""
    if isinstance(op, ReduceOperation):
        axes = set(array_values(op.axes))
        return tuple(Index(d) for d in range(rank) if d not in axes), None
    if isinstance(op, PadOp):
        steps = zip(array_values(op.start), array_values(op.step), strict=True)
        return tuple(Index(d, s, t) for d, (s, t) in enumerate(steps)), op.value
    if isinstance(op, ScatterAddOp):
        return _indexed_map(op, rank, position), None
    raise TypeError(f"{op.name} is not an embed op")


def embed_combiner(op: Operation) -> str:
    """How an embed op's result combines what the iterations write: its reduction's
    combiner, else ``add`` (a scatter-add sums; a pad, or a reduction over no axes,
    writes each element once)."""
    if isinstance(op, ReduceOperation) and array_values(op.axes):
        return op.COMBINER
    return "add"

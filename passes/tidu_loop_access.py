"""Index arithmetic of ``tidu-lower-to-loops``: kernel maps (``tidu_access.Index``) to
``arith`` on ``index`` values, guarded reads, and the fill of partly written results.

One dimension's index at the iteration point ``ivs``::

    0*-1+7   ->  %s = arith.muli %i0, %c-1 : index
                 %k = arith.addi %s, %c7 : index
    in2      ->  %v = memref.load %in2[%i0] : memref<4xi64>        (operand 2's own map)
                 %w = arith.index_cast %v : i64 to index
                 %n = arith.cmpi slt, %w, %c0 : index               (negative: + size)
                 %a = arith.addi %w, %c8 : index
                 %u = arith.select %n, %a, %w : index
                 %k = arith.minsi (arith.maxsi %u, %c0), %c7         (clamped into 0..7)

A read with a fill checks, for the dimensions whose index can leave the operand, that
it stays inside; it loads at index 0 where it does not and selects the fill.

A ``tidu.triangle_part`` in a kernel body (a mask op of ``tidu_fusion_access``) selects
its element or zero by the iteration point's last two indices (``triangle_select``)::

    %d = arith.subi %i1, %i0 : index
    %keep = arith.cmpi sle, %d, %c0 : index                (sge when upper; c<offset>)
    %y = arith.select %keep, %x, %zero : f64

A result with a fill gets it where no iteration writes, before the main loop nest: the
complement of the written box (``|stride| == 1`` in every dimension), one slab per
side and dimension, with the result dimension that domain dimension 0 indexes taken
first, so that a chunk (rows ``[lo, hi)`` of domain dimension 0) fills only the slabs
of its own rows, and the chunk with ``lo == 0`` the rows no chunk writes. A result with
another stride is filled whole first (such a kernel is not chunked).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tidu_compile.dialects.tidu_access import Index
from tidu_compile.dialects.tidu_kernel import KernelOp
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, MemRefType, UnitAttr
from xdsl.ir import Attribute, Block, SSAValue

from .tidu_scalar_lowering import constant

__all__ = [
    "FILL_ATTR",
    "fill_result",
    "guarded_load",
    "index_values",
    "needs_guard",
    "triangle_select",
    "whole_fill_results",
]

FILL_ATTR = "tidu.fill"
"""Unit attribute on the top-level ops that fill partly written results: their cost
grows with the border, not the domain, so the plan's work estimate leaves them out."""

Body = Any
"""The ``_Body`` emitter of ``tidu_lower_to_loops`` (``emit``, ``index``, ``loop_nest``,
``close``, ``parts``)."""

ReadVia = Callable[[int], SSAValue]
"""The integer (as ``index``) that kernel operand k holds at the current point."""


def _emit(body: Body, op: Any) -> SSAValue:
    return body.emit(op).results[0]  # type: ignore[no-any-return]


def affine_value(body: Body, entry: Index, ivs: Sequence[SSAValue]) -> SSAValue:
    """``offset + stride * i_dim`` (or the constant ``offset``) as an index value."""
    if entry.dim < 0:
        return body.index(entry.offset)  # type: ignore[no-any-return]
    value = ivs[entry.dim]
    if entry.stride != 1:
        value = _emit(body, arith.MuliOp(value, body.index(entry.stride)))
    if entry.offset:
        value = _emit(body, arith.AddiOp(value, body.index(entry.offset)))
    return value


def via_value(body: Body, raw: SSAValue, size: int) -> SSAValue:
    """An integer read from an index operand as an index into a dimension of ``size``:
    negative ones count from the end (numpy), then clamped into ``0..size-1``."""
    value = _emit(body, arith.IndexCastOp(raw, IndexType()))
    negative = _emit(body, arith.CmpiOp(value, body.index(0), "slt"))
    wrapped = _emit(body, arith.AddiOp(value, body.index(size)))
    value = _emit(body, arith.SelectOp(negative, wrapped, value))
    value = _emit(body, arith.MaxSIOp(value, body.index(0)))
    return _emit(body, arith.MinSIOp(value, body.index(max(size - 1, 0))))


def index_values(
    body: Body,
    indices: Sequence[Index],
    ivs: Sequence[SSAValue],
    shape: Sequence[int],
    read_via: ReadVia,
) -> list[SSAValue]:
    """The index of every dimension of an operand or result at the point ``ivs``."""
    values = []
    for entry, size in zip(indices, shape, strict=True):
        if entry.is_affine:
            values.append(affine_value(body, entry, ivs))
        else:
            values.append(via_value(body, read_via(entry.via), size))
    return values


def needs_guard(entry: Index, size: int, domain: Sequence[int]) -> bool:
    """Whether an affine index can leave ``0..size-1`` somewhere in the domain."""
    if entry.dim >= 0 and domain[entry.dim] == 0:
        return False
    low, high = entry.image(domain[entry.dim] if entry.dim >= 0 else 1)
    return low < 0 or high >= size


def guarded_load(
    body: Body,
    buffer: SSAValue,
    tensor: Attribute,
    indices: Sequence[Index],
    values: Sequence[SSAValue],
    shape: Sequence[int],
    domain: Sequence[int],
    fill: complex,
) -> tuple[SSAValue, ...]:
    """Load an element (its parts, for a complex tensor) or ``fill`` where an index
    leaves the tensor; the load itself reads index 0 there."""
    inside: SSAValue | None = None
    guarded = [needs_guard(entry, size, domain)
               for entry, size in zip(indices, shape, strict=True)]  # fmt: skip
    for k, size in enumerate(shape):
        if guarded[k]:
            low = _emit(body, arith.CmpiOp(values[k], body.index(0), "sge"))
            high = _emit(body, arith.CmpiOp(values[k], body.index(size), "slt"))
            both = _emit(body, arith.AndIOp(low, high))
            inside = both if inside is None else _emit(body, arith.AndIOp(inside, both))
    safe = list(values)
    if inside is not None:  # read index 0 in the dimensions that leave the tensor
        safe = [_emit(body, arith.SelectOp(inside, v, body.index(0))) if guarded[k] else v
                for k, v in enumerate(values)]  # fmt: skip
    loaded = [_emit(body, memref.LoadOp.get(buffer, part)) for part in body.parts(safe, tensor)]
    if inside is None:
        return tuple(loaded)
    fills = (fill.real, fill.imag) if len(loaded) == 2 else (fill.real,)
    return tuple(
        _emit(body, arith.SelectOp(inside, value, constant(body.emit, part, value.type)))
        for value, part in zip(loaded, fills, strict=True)
    )


def triangle_select(body: Body, offset: int, upper: bool, parts: Sequence[SSAValue],
                    ivs: Sequence[SSAValue]) -> tuple[SSAValue, ...]:  # fmt: skip
    """``tril(x, offset)`` (``triu`` when ``upper``) of the element ``parts`` (one, or a
    complex value's two) at the point ``ivs``: the element where ``j - i`` (the last two
    indices) is at most (at least) ``offset``, else zero."""
    difference = _emit(body, arith.SubiOp(ivs[-1], ivs[-2]))
    keep = _emit(body, arith.CmpiOp(difference, body.index(offset), "sge" if upper else "sle"))
    return tuple(_emit(body, arith.SelectOp(keep, part, constant(body.emit, 0.0, part.type)))
                 for part in parts)  # fmt: skip


def _store_fill(body: Body, out: SSAValue, tensor: Attribute, ivs: Sequence[SSAValue],
                fill: complex) -> None:  # fmt: skip
    assert isinstance(out.type, MemRefType)
    element = out.type.element_type
    parts = body.parts(list(ivs), tensor)
    is_complex = len(parts) == 2
    values = (fill.real, fill.imag) if is_complex else (fill.real,)
    for value, part in zip(values, parts, strict=True):
        scalar = constant(body.emit, value, element)
        body.emit(memref.StoreOp.get(scalar, out, part))


def whole_fill_results(kernel: KernelOp) -> list[int]:
    """Results with a fill and a map the slab decomposition does not cover (a stride
    other than 1 or -1): they are filled whole first, and the kernel is not chunked."""
    return [
        j for j in range(len(kernel.outputs))
        if kernel.result_fill(j) is not None
        and any(abs(i.stride) != 1 for i in kernel.result_indices(j) if i.dim >= 0)
    ]  # fmt: skip


def _loop_box(
    body: Body,
    bounds: Sequence[tuple[SSAValue, SSAValue]],
    store: Callable[[list[SSAValue]], None],
) -> None:
    """Loops over a box of index bounds (SSA values), calling ``store`` in the body; the
    outer loop is marked ``FILL_ATTR``."""
    shape = [0] * len(bounds)
    ivs, outer = body.loop_nest(shape, dict(enumerate(bounds)))
    store(ivs)
    body.close(outer)
    if bounds:
        assert outer.last_op is not None
        outer.last_op.attributes[FILL_ATTR] = UnitAttr()


def fill_result(
    body: Body,
    kernel: KernelOp,
    j: int,
    out: SSAValue,
    rows: tuple[SSAValue, SSAValue] | None,
) -> None:
    """Store result ``j``'s fill where no iteration writes (see the module docstring).

    ``rows`` is the chunk's ``[lo, hi)`` of domain dimension 0 (None: the whole domain).
    """
    fill = kernel.result_fill(j)
    assert fill is not None
    tensor = kernel.outputs[j].type
    shape = tensor.get_shape()  # type: ignore[attr-defined]
    indices = kernel.result_indices(j)
    domain = kernel.domain.get_values()

    def store(ivs: list[SSAValue]) -> None:
        _store_fill(body, out, tensor, ivs, fill)

    if j in whole_fill_results(kernel):
        assert rows is None, "a result filled whole is not chunked"
        _loop_box(body, [(body.index(0), body.index(n)) for n in shape], store)
        return
    written = []
    for entry in indices:
        extent = domain[entry.dim]
        low, high = entry.image(extent)
        written.append((low, high + 1) if extent else (0, 0))
    order = sorted(range(len(shape)), key=lambda k: indices[k].dim != 0)  # dim 0's first
    first = order[0] if order and indices[order[0]].dim == 0 else None
    chunk_rows: list[tuple[SSAValue, SSAValue]] = []

    def bound(k: int, before: bool) -> tuple[SSAValue, SSAValue]:
        """The range of dimension k in a slab of a later dimension."""
        if not before:
            return body.index(0), body.index(shape[k])
        if k == first and rows is not None:  # the chunk's own rows
            if not chunk_rows:
                chunk_rows.append(_image_of_rows(body, indices[first], rows))
            return chunk_rows[0]
        return body.index(written[k][0]), body.index(written[k][1])

    for position, k in enumerate(order):
        for side in ((0, written[k][0]), (written[k][1], shape[k])):
            if side[0] >= side[1]:
                continue
            ranges = [bound(m, order.index(m) < position) for m in range(len(shape))]
            ranges[k] = (body.index(side[0]), body.index(side[1]))
            if k == first and rows is not None:  # rows no chunk writes: the first chunk's
                _if_first_chunk(body, rows[0], ranges, store)
            else:
                _loop_box(body, ranges, store)


def _image_of_rows(
    body: Body, entry: Index, rows: tuple[SSAValue, SSAValue]
) -> tuple[SSAValue, SSAValue]:
    """The indices ``offset + stride * i`` for ``i`` in ``[lo, hi)`` (``|stride| == 1``)."""
    lo, hi = rows
    if entry.stride == 1:
        if entry.offset == 0:
            return lo, hi
        return (_emit(body, arith.AddiOp(lo, body.index(entry.offset))),
                _emit(body, arith.AddiOp(hi, body.index(entry.offset))))  # fmt: skip
    start = _emit(body, arith.SubiOp(body.index(entry.offset + 1), hi))
    stop = _emit(body, arith.SubiOp(body.index(entry.offset + 1), lo))
    return start, stop


def _if_first_chunk(
    body: Body,
    lo: SSAValue,
    bounds: Sequence[tuple[SSAValue, SSAValue]],
    store: Callable[[list[SSAValue]], None],
) -> None:
    """``scf.if lo == 0 { loops over bounds }``."""
    test = arith.CmpiOp(lo, body.index(0), "eq")
    condition = _emit(body, test)
    then = Block()
    branch = scf.IfOp(condition, [], [then])
    body.emit(branch)
    for op in (test, branch):
        op.attributes[FILL_ATTR] = UnitAttr()
    outer = body.block
    body.block = then
    _loop_box(body, bounds, store)
    then.add_op(scf.YieldOp())
    body.block = outer

"""``tidu-fuse-elementwise``: group elementwise work into ``tidu.kernel`` loop nests.

Preconditions: each ``func.func`` body is one block of tidu ops on static tensors
(the backward program of one tape node) ending in ``func.return``; ``canonicalize``,
``cse`` and ``dce`` ran first (not required, but they make groups smaller).

What joins a kernel (``fusion_kind``):
  * the elementwise family (``ElementwiseOperation``: arithmetic, math, compare,
    select, pow, scale, shift, full_like, to_complex, convert, real, imag, conj,
    sincos) on tensors, when ``is_fusible`` accepts its types: f32, f64 and i1
    always; complex ones only with the option ``complex_kernels=true`` and when the
    op has a row in ``COMPLEX_LOWERINGS``;
  * views (``broadcast_in_dim``, ``slice``, ``concatenate``, ``transpose``): each
    becomes the operand map(s) of its operand(s), which must come from outside the
    kernel (nothing is materialized; see ``tidu_fusion_access``);
  * mask ops (``triangle_part``: ``tidu_fusion_access.MASK_OPS``) join as elementwise
    ops that read the iteration point;
  * embeds (``reduce_sum``, ``reduce_max``, ``reduce_min``, ``reduce_prod``, ``pad``,
    ``scatter_add``): each becomes a kernel result whose map omits the reduced
    dimensions (combined by the reduction's ``max``, ``min`` or ``mul`` when it is not a
    sum) or places the value in a bigger result (the rest holding the pad value); such
    a value leaves the kernel and feeds nothing inside it.
``dot_general``, ``reshape``, ``constant`` and the ops on complex
values (by default all of them; with ``complex_kernels=true`` those without a complex
lowering: log, sqrt, tanh, sin, cos, pow, sincos) stay where they are
(library calls between kernels). A splat
``tidu.constant`` read by a kernel is copied into its body as a scalar constant, and
a ``full_like`` inside a kernel becomes one (it reads nothing).

The algorithm is greedy, in program order, and never merges two groups:
  1. The domain of an op is the shape it iterates over: its result shape, or the
     operand shape for an embed (``reduce_sum``, ``pad``). Every value inside a group
     (except embedded results) has the group's domain.
  2. A fusible op joins the first group that accepts it, trying the groups of its
     operands' producers (in operand order), then every other group with its domain
     (latest first); if none does, it starts a new group. A group accepts an op when
     the domains are equal and no operand would close a cycle: the kernels and ops
     it reads from (other than the group) must not depend on the group, directly or
     through other kernels and ops (a search in the graph of groups and unfused ops
     built so far, whose dependencies grow as groups do). Embedded values and the
     operands of views must come from outside the group.
  3. Each group becomes one ``tidu.kernel``: its inputs are the outside values it
     reads (a value read through two maps is two inputs), its results are the member
     values used outside the group, in program order. Values used only inside do not
     become results; a group with no result is dead and is erased.
  4. The block is re-emitted in a topological order of kernels and other ops:
     depth-first from each in program order, producers first.

Before::

    %b = tidu.broadcast_in_dim %v, dims = [1] : tensor<8xf64> -> tensor<4x8xf64>
    %p = tidu.mul %x, %b : tensor<4x8xf64>
    %e = tidu.exp %p : tensor<4x8xf64>
    %s = tidu.reduce_sum %e, axes = [0] : tensor<4x8xf64> -> tensor<8xf64>
    func.return %e, %s : tensor<4x8xf64>, tensor<8xf64>

After (the kernel line wrapped)::

    %e, %s = tidu.kernel ins(%v, %x : tensor<8xf64>, tensor<4x8xf64>) domain [4, 8]
               maps [[1], [0, 1]] -> [[0, 1], [1]] {
    ^bb0(%v_1: f64, %x_1: f64):
      %p = tidu.mul %x_1, %v_1 : f64
      %e_1 = tidu.exp %p : f64
      tidu.yield %e_1, %e_1 : f64, f64
    } : tensor<4x8xf64>, tensor<8xf64>
    func.return %e, %s : tensor<4x8xf64>, tensor<8xf64>
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tidu_compile.dialects.tidu_access import Index
from tidu_compile.dialects.tidu_base import element_type
from tidu_compile.dialects.tidu_constant import ConstantOp
from tidu_compile.dialects.tidu_elementwise import AddOp, FullLikeOp
from tidu_compile.dialects.tidu_indexing import ConcatenateOp, ScatterAddOp
from tidu_compile.dialects.tidu_kernel import KernelOp, YieldOp
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import region_dce

from .tidu_fusion_access import (
    EMBED_OPS,
    VIEW_OPS,
    InputKey,
    Position,
    embed_combiner,
    embed_map,
    view_inputs,
)
from .tidu_fusion_groups import (
    FusionKind,
    Group,
    Grouper,
    broadcast_map,
    domain_of,
    fusion_kind,
    is_fusible,
)

# ---------------------------------------------------------------------------------
# Kernel construction
# ---------------------------------------------------------------------------------


def _identity(rank: int) -> tuple[Index, ...]:
    return tuple(Index(d) for d in range(rank))


def _plain_key(value: SSAValue) -> InputKey:
    """The input of a value read element by element (made outside the group)."""
    assert isinstance(value.type, TensorType)
    return value, _identity(len(value.type.get_shape())), None


def _inlined(value: SSAValue) -> bool:
    """A splat constant is copied into the body as a scalar, never read."""
    return isinstance(value.owner, ConstantOp)


def _reads(group: Group, op: Operation, position: Position) -> list[InputKey]:
    """The kernel inputs a member reads (values made outside the group, not inlined;
    index tensors through ``position``)."""
    if isinstance(op, FullLikeOp):
        return []
    if isinstance(op, ConcatenateOp):  # where a piece lies depends on the position
        return view_inputs(op, position)
    if isinstance(op, VIEW_OPS):
        return [key for key in view_inputs(op, position) if not _inlined(key[0])]
    if isinstance(op, ScatterAddOp):  # its index tensors are read through its result map
        embed_map(op, len(group.domain), position)
        return [] if group.makes(op.data) or _inlined(op.data) else [_plain_key(op.data)]
    return [_plain_key(v) for v in op.operands if not group.makes(v) and not _inlined(v)]


def build_kernel(group: Group) -> tuple[KernelOp, list[SSAValue]] | None:
    """The kernel of a group and the member values its results replace (``None``
    when no member value is used outside the group)."""
    keys: list[InputKey] = []

    def position(key: InputKey) -> int:
        if key not in keys:
            keys.append(key)
        return keys.index(key)

    for op in group.members:
        for key in _reads(group, op, position):
            position(key)
    outputs: list[SSAValue] = [
        r for op in group.members for r in op.results
        if any(use.operation not in group.member_set for use in r.uses)
    ]  # fmt: skip
    if not outputs:
        return None
    block = Block(arg_types=[element_type(v.type) for v, _, _ in keys])
    for arg, (value, _, _) in zip(block.args, keys, strict=True):
        arg.name_hint = value.name_hint
    scalars: dict[SSAValue, SSAValue] = {}

    def scalar(value: SSAValue, key: InputKey | None = None) -> SSAValue:
        """The body scalar of ``value`` (read through ``key``, plainly by default)."""
        if value in scalars:
            return scalars[value]
        owner = value.owner
        if isinstance(owner, ConstantOp):
            constant = ConstantOp(owner.value, element_type(value.type))
            constant.result.name_hint = value.name_hint
            block.add_op(constant)
            return constant.result
        return block.args[keys.index(key or _plain_key(value))]

    for op in group.members:
        if isinstance(op, ConcatenateOp):  # the sum of the pieces, each -0.0 off itself
            pieces = [block.args[keys.index(key)] for key in view_inputs(op, position)]
            total = pieces[0]
            for piece in pieces[1:]:
                add = AddOp(total, piece)
                block.add_op(add)
                total = add.result
            scalars[op.results[0]] = total
            continue
        if isinstance(op, VIEW_OPS):
            (key,) = view_inputs(op, position)
            scalars[op.results[0]] = scalar(key[0], key)
            continue
        if isinstance(op, EMBED_OPS):
            scalars[op.results[0]] = scalar(op.operands[0])
            continue
        if isinstance(op, FullLikeOp):
            new: Operation = ConstantOp(op.value, element_type(op.result.type))
        else:
            new = type(op).create(
                operands=[scalar(v) for v in op.operands],
                result_types=[element_type(t) for t in op.result_types],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
        block.add_op(new)
        for result, new_result in zip(op.results, new.results, strict=True):
            new_result.name_hint = result.name_hint
            scalars[result] = new_result
    block.add_op(YieldOp(*[scalars[v] for v in outputs]))
    region = Region(block)
    region_dce(region)  # members whose values nothing reads

    rank = len(group.domain)
    result_maps: list[tuple[Index, ...]] = []
    result_fills: list[complex | None] = []
    result_combiners: list[str] = []
    for value in outputs:
        owner = value.owner
        if isinstance(owner, EMBED_OPS):
            mapping, fill = embed_map(owner, rank, position)
            result_combiners.append(embed_combiner(owner))
        else:
            mapping, fill = _identity(rank), None
            result_combiners.append("add")
        result_maps.append(mapping)
        result_fills.append(fill)
    kernel = KernelOp(
        [v for v, _, _ in keys],
        [v.type for v in outputs],
        group.domain,
        [m for _, m, _ in keys],
        result_maps,
        region,
        operand_fills=[f for _, _, f in keys],
        result_fills=result_fills,
        result_combiners=result_combiners,
    )
    return kernel, outputs


# ---------------------------------------------------------------------------------
# Block rewriting
# ---------------------------------------------------------------------------------


def _topological_units(units: list[list[Operation]]) -> list[list[Operation]]:
    """Units (lists of ops) in an order where every unit follows its producers;
    depth-first from the units in program order (iterative, no recursion limit)."""
    unit_of = {op: i for i, unit in enumerate(units) for op in unit}
    deps: list[list[int]] = []
    for i, unit in enumerate(units):
        found: list[int] = []
        for op in unit:
            for value in op.operands:
                owner = value.owner
                if isinstance(owner, Operation) and owner in unit_of:
                    j = unit_of[owner]
                    if j != i and j not in found:
                        found.append(j)
        deps.append(found)
    order: list[int] = []
    state = [0] * len(units)  # 0 new, 1 on the stack, 2 emitted
    for root in range(len(units)):
        stack = [(root, 0)]
        while stack:
            node, next_dep = stack.pop()
            if state[node] == 2:
                continue
            state[node] = 1
            if next_dep < len(deps[node]):
                stack.append((node, next_dep + 1))
                dep = deps[node][next_dep]
                if state[dep] == 1:
                    raise AssertionError(
                        f"{TiduFuseElementwisePass.name}: the fused groups form a cycle"
                    )
                if state[dep] == 0:
                    stack.append((dep, 0))
                continue
            state[node] = 2
            order.append(node)
    return [units[i] for i in order]


def _outside(group: Group) -> Callable[[Use], bool]:
    return lambda use: use.operation not in group.member_set


def fuse_block(block: Block, complex_kernels: bool = False) -> int:
    """Fuse the fusible ops of one block into kernels; returns how many kernels."""
    terminator = block.last_op
    body = [op for op in block.ops if op is not terminator]
    grouper = Grouper(complex_kernels)
    for op in body:
        grouper.visit(op)
    if not grouper.groups:
        return 0

    units: list[list[Operation]] = []
    seen: set[int] = set()
    for op in body:
        group = grouper.group_of.get(op)
        if group is None:
            units.append([op])
        elif group.index not in seen:
            seen.add(group.index)
            units.append(group.members)
    ordered = _topological_units(units)

    kernels: dict[int, tuple[KernelOp, list[SSAValue]] | None] = {
        g.index: build_kernel(g) for g in grouper.groups
    }

    def place(new: Operation) -> None:
        if terminator is None:
            block.add_op(new)
        else:
            block.insert_op_before(new, terminator)

    for op in body:
        op.detach()
    for unit in ordered:
        group = grouper.group_of.get(unit[0])
        built = kernels[group.index] if group is not None else None
        if built is not None:
            place(built[0])
        for op in unit:  # members stay until their uses are rewired below
            place(op)

    count = 0
    for group in grouper.groups:
        built = kernels[group.index]
        if built is not None:
            kernel, outputs = built
            count += 1
            outside = _outside(group)
            for value, result in zip(outputs, kernel.outputs, strict=True):
                value.replace_uses_with_if(result, outside)
    for group in grouper.groups:
        for op in reversed(group.members):
            block.erase_op(op)
    return count


@dataclass(frozen=True)
class TiduFuseElementwisePass(ModulePass):
    """Group elementwise ops, broadcasts and reductions into ``tidu.kernel`` ops."""

    name = "tidu-fuse-elementwise"

    complex_kernels: bool = False
    """Also fuse ops on complex values that ``tidu-lower-to-loops`` can lower; their
    buffers then reach kernels through casts to real pairs (see that pass)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            for block in function.body.blocks:
                fuse_block(block, self.complex_kernels)


__all__ = [
    "FusionKind",
    "Group",
    "TiduFuseElementwisePass",
    "broadcast_map",
    "build_kernel",
    "domain_of",
    "fuse_block",
    "fusion_kind",
    "is_fusible",
]

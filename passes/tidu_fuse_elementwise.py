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
  * ``broadcast_in_dim``: it becomes the operand map of its operand, which must come
    from outside the kernel (nothing is materialized);
  * ``reduce_sum``: it becomes a kernel result whose map omits the summed dimensions;
    a reduced value leaves the kernel and feeds nothing inside it.
``dot_general``, ``reshape``, ``transpose``, ``constant`` and the ops on complex
values (by default all of them; with ``complex_kernels=true`` those without a complex
lowering: log, sqrt, tanh, sin, cos, pow, sincos) stay where they are
(library calls between kernels). A splat
``tidu.constant`` read by a kernel is copied into its body as a scalar constant, and
a ``full_like`` inside a kernel becomes one (it reads nothing).

The algorithm is greedy, in program order, and never merges two groups:
  1. The domain of an op is the shape it iterates over: its result shape, or the
     operand shape for ``reduce_sum``. Every value inside a group (except reduced
     results) has the group's domain, so the domain is the group's largest
     pre-reduction shape.
  2. A fusible op joins the first group that accepts it, trying the groups of its
     operands' producers (in operand order), then every other group with its domain
     (latest first); if none does, it starts a new group. A group accepts an op when
     the domains are equal and no operand would close a cycle: the kernels and ops
     it reads from (other than the group) must not depend on the group, directly or
     through other kernels and ops (a search in the graph of groups and unfused ops
     built so far, whose dependencies grow as groups do). Reduced values and the
     operand of a broadcast must come from outside the group.
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tidu_compile.dialects.tidu_base import array_values, element_type
from tidu_compile.dialects.tidu_constant import ConstantOp
from tidu_compile.dialects.tidu_elementwise import FullLikeOp
from tidu_compile.dialects.tidu_kernel import KernelOp, YieldOp
from tidu_compile.dialects.tidu_shape import BroadcastInDimOp, ReduceSumOp
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import region_dce

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


def _identity(rank: int) -> tuple[int, ...]:
    return tuple(range(rank))


def _input_key(op: Operation, value: SSAValue) -> tuple[SSAValue, tuple[int, ...]]:
    if isinstance(op, BroadcastInDimOp):
        return value, broadcast_map(op)
    assert isinstance(value.type, TensorType)
    return value, _identity(len(value.type.get_shape()))


def _reads(group: Group, op: Operation) -> list[SSAValue]:
    """Operands of a member that become kernel inputs (not made inside, not inlined)."""
    if isinstance(op, FullLikeOp):
        return []
    return [
        v for v in op.operands if not group.makes(v) and not isinstance(v.owner, ConstantOp)
    ]


def build_kernel(group: Group) -> tuple[KernelOp, list[SSAValue]] | None:
    """The kernel of a group and the member values its results replace (``None``
    when no member value is used outside the group)."""
    keys: list[tuple[SSAValue, tuple[int, ...]]] = []
    for op in group.members:
        for value in _reads(group, op):
            if (key := _input_key(op, value)) not in keys:
                keys.append(key)
    outputs: list[SSAValue] = [
        r for op in group.members for r in op.results
        if any(use.operation not in group.member_set for use in r.uses)
    ]
    if not outputs:
        return None
    block = Block(arg_types=[element_type(v.type) for v, _ in keys])
    for arg, (value, _) in zip(block.args, keys, strict=True):
        arg.name_hint = value.name_hint
    scalars: dict[SSAValue, SSAValue] = {}

    def scalar(op: Operation, value: SSAValue) -> SSAValue:
        if value in scalars:
            return scalars[value]
        owner = value.owner
        if isinstance(owner, ConstantOp):
            constant = ConstantOp(owner.value, element_type(value.type))
            constant.result.name_hint = value.name_hint
            block.add_op(constant)
            scalars[value] = constant.result
            return constant.result
        return block.args[keys.index(_input_key(op, value))]

    for op in group.members:
        if isinstance(op, BroadcastInDimOp | ReduceSumOp):
            scalars[op.results[0]] = scalar(op, op.operands[0])
            continue
        if isinstance(op, FullLikeOp):
            new: Operation = ConstantOp(op.value, element_type(op.result.type))
        else:
            new = type(op).create(
                operands=[scalar(op, v) for v in op.operands],
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
    result_maps: list[Sequence[int]] = []
    for value in outputs:
        owner = value.owner
        if isinstance(owner, ReduceSumOp):
            axes = set(array_values(owner.axes))
            result_maps.append([d for d in range(rank) if d not in axes])
        else:
            result_maps.append(_identity(rank))
    kernel = KernelOp(
        [v for v, _ in keys],
        [v.type for v in outputs],
        group.domain,
        [m for _, m in keys],
        result_maps,
        region,
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

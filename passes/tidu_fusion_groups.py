"""Steps 1 and 2 of ``tidu-fuse-elementwise``: which ops fuse, and into which group.

``is_fusible`` is the one predicate on types (f32, f64, i1, i8..i64, and, when asked for,
complex values of ops with a complex lowering); ``fusion_kind`` says how a fusible
op joins a kernel; ``Grouper`` assigns the fusible ops of one block, in program
order, to ``Group``s, keeping the graph of groups and unfused ops acyclic. See the
pass module for the algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tidu_compile.dialects.tidu_base import (
    ElementwiseOperation,
    element_type,
    is_complex_element,
    is_integer_element,
    is_real_element,
)
from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Operation, OpResult, SSAValue

from .tidu_complex_lowering import has_complex_lowering
from .tidu_fusion_access import EMBED_OPS, INDEXED_OPS, MASK_OPS, VIEW_OPS, broadcast_map
from .tidu_scalar_lowering import scalar_lowering


def is_fusible(op: Operation, complex_kernels: bool = False) -> bool:
    """THE predicate: whether ``op`` may compute inside a kernel. An elementwise op needs
    a lowering row for its element types (``SCALAR_LOWERINGS`` for f32, f64, integers
    and i1;
    ``COMPLEX_LOWERINGS`` for complex values, and only with ``complex_kernels``), so a
    kernel never holds an op that ``tidu-lower-to-loops`` cannot lower; views and embeds
    (broadcasts, slices, concatenations, reductions, pads: ``tidu_fusion_access``) join
    on any of these types (complex ones with ``complex_kernels``)."""
    types = [*op.operand_types, *op.result_types]
    if not types or not all(isinstance(t, TensorType) for t in types):
        return False
    if isinstance(op, INDEXED_OPS):  # integer index tensors: only the data's types count
        types = [op.operands[0].type, op.results[0].type]
    elements = [element_type(t) for t in types]
    if not all(
        is_real_element(e) or e == i1 or is_integer_element(e) or is_complex_element(e)
        for e in elements
    ):
        return False
    if any(is_complex_element(e) for e in elements):
        return complex_kernels and (
            not isinstance(op, ElementwiseOperation) or has_complex_lowering(op)
        )
    return not isinstance(op, ElementwiseOperation) or scalar_lowering(op) is not None


class FusionKind(Enum):
    """``ELEMENTWISE``: computes in the body; ``VIEW``: operand maps of values made
    outside the group (broadcast, slice, concatenate); ``EMBED``: a result map of a
    member value (reduce_sum, pad), whose result leaves the group."""

    ELEMENTWISE = "elementwise"
    VIEW = "view"
    EMBED = "embed"


def fusion_kind(op: Operation, complex_kernels: bool = False) -> FusionKind | None:
    """How ``op`` joins a kernel, or ``None`` when it stays outside kernels."""
    if not is_fusible(op, complex_kernels):
        return None
    if isinstance(op, (ElementwiseOperation, *MASK_OPS)):
        return FusionKind.ELEMENTWISE
    if isinstance(op, VIEW_OPS):
        return FusionKind.VIEW
    if isinstance(op, EMBED_OPS):
        return FusionKind.EMBED
    return None


def domain_of(op: Operation) -> tuple[int, ...]:
    """The iteration shape of a fusible op: the operand shape of an embed (a
    reduction, a pad), else the result shape."""
    value = op.operands[0] if isinstance(op, EMBED_OPS) else op.results[0]
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


KERNEL_ARITY_LIMIT = 1000
"""The most operands a kernel may have, counted from above: every read of a value from
outside (a value read twice counts twice) plus every member (each may be a result).
The runtime calls a kernel with one argument per buffer (and a chunk's two bounds), and
ctypes takes at most 1024; a group that would pass the limit does not take the op."""


@dataclass(eq=False)
class Group:
    """Ops that become one kernel, in program order."""

    index: int
    domain: tuple[int, ...]
    unit: int
    members: list[Operation] = field(default_factory=list)
    member_set: set[Operation] = field(default_factory=set)
    outside_reads: int = 0  # operands of members made outside the group

    def add(self, op: Operation) -> None:
        self.outside_reads += self.reads_from_outside(op)
        self.members.append(op)
        self.member_set.add(op)

    def reads_from_outside(self, op: Operation) -> int:
        return sum(1 for value in op.operands if not self.makes(value))

    def has_room_for(self, op: Operation) -> bool:
        """Whether ``op`` keeps the kernel's operands within ``KERNEL_ARITY_LIMIT``."""
        arity = self.outside_reads + self.reads_from_outside(op) + len(self.members) + 1
        return arity <= KERNEL_ARITY_LIMIT

    def makes(self, value: SSAValue) -> bool:
        return isinstance(value, OpResult) and value.op in self.member_set


class Grouper:
    """Step 2 of the module docstring: assign the fusible ops of one block to groups.

    Every group and every op outside groups is a unit; ``deps[u]`` holds the units
    whose values unit ``u`` reads. The graph stays acyclic: an op joins a group only
    if none of the units it reads from (other than the group) depends on the group.
    """

    def __init__(self, complex_kernels: bool = False) -> None:
        self.complex_kernels = complex_kernels
        self.groups: list[Group] = []
        self.group_of: dict[Operation, Group] = {}
        self.unit_of: dict[Operation, int] = {}
        self.deps: list[set[int]] = []

    def _producer_units(self, op: Operation) -> set[int]:
        return {
            self.unit_of[value.owner] for value in op.operands
            if isinstance(value.owner, Operation) and value.owner in self.unit_of
        }

    def _depends_on(self, starts: set[int], target: int) -> bool:
        """Whether any unit of ``starts`` reaches ``target`` through ``deps``."""
        stack, seen = list(starts), set()
        while stack:
            unit = stack.pop()
            if unit == target:
                return True
            if unit not in seen:
                seen.add(unit)
                stack.extend(self.deps[unit])
        return False

    def accepts(self, group: Group, op: Operation, kind: FusionKind) -> bool:
        if group.domain != domain_of(op) or not group.has_room_for(op):
            return False
        for value in op.operands:
            if group.makes(value):
                assert isinstance(value, OpResult)
                if kind is FusionKind.VIEW or isinstance(value.op, EMBED_OPS):
                    return False
        outside = self._producer_units(op) - {group.unit}
        return not self._depends_on(outside, group.unit)

    def candidates(self, op: Operation) -> list[Group]:
        ordered: list[Group] = []
        for value in op.operands:
            if isinstance(value, OpResult) and value.op in self.group_of:
                group = self.group_of[value.op]
                if group not in ordered:
                    ordered.append(group)
        ordered += [g for g in reversed(self.groups) if g not in ordered]
        return ordered

    def visit(self, op: Operation) -> None:
        producers = self._producer_units(op)
        kind = fusion_kind(op, self.complex_kernels)
        group = None
        if kind is not None:
            group = next((g for g in self.candidates(op) if self.accepts(g, op, kind)), None)
            if group is None:
                group = Group(len(self.groups), domain_of(op), len(self.deps))
                self.groups.append(group)
                self.deps.append(set())
            group.add(op)
            self.group_of[op] = group
            unit = group.unit
        else:
            unit = len(self.deps)
            self.deps.append(set())
        self.unit_of[op] = unit
        self.deps[unit] |= producers - {unit}


__all__ = [
    "KERNEL_ARITY_LIMIT",
    "FusionKind",
    "Group",
    "Grouper",
    "broadcast_map",
    "domain_of",
    "fusion_kind",
    "is_fusible",
]

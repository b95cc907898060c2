"""The VJP and JVP of one recorded node, each as a self-contained recorded graph.

Higher order and forward mode record these graphs on the tape as nodes of their own, so
what they compute can be differentiated again (and compiled like any node). For a node
``G`` with inputs ``in0..ink``:

* ``vjp_graph(G, slots, needed)``: inputs are one cotangent seed per active output slot
  with a tangent, then ``G``'s inputs; outputs are the cotangents of the ``needed``
  inputs that are not structurally zero. For ``G = exp(in0) * in1``::

      vjp(ct0, in0, in1) = (ct0 * conj(in1) * conj(exp(in0)),  ct0 * conj(exp(in0)))

* ``jvp_graph(G, present)``: inputs are ``G``'s inputs, then one tangent per input with
  ``present[i]``; outputs are the tangents of ``G``'s outputs that are not structurally
  zero::

      jvp(in0, in1, t0, t1) = (t0 * exp(in0) * in1 + exp(in0) * t1,)

The residuals a linearization reads (``exp(in0)``) are recomputed from ``G``'s inputs
inside the graph: nothing refers to values of other graphs, so the graph is a function
of its inputs alone, whatever order of derivative ``G`` itself is. Both are memoized by
the node's structure (``RecordedGraph.structure``), never by tape keys.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from tidu_compile.ad import LinearizedGraph, Name, fresh_pass_id, linear_transpose, linearize
from tidu_compile.eager import RecordedGraph
from tidu_compile.graph import (
    GraphBuilder,
    Local,
    ProducedDef,
    ValueKey,
    resolve,
)

__all__ = ["NodeGraph", "jvp_graph", "vjp_graph"]


@dataclass(frozen=True)
class NodeGraph:
    """A derived graph of a node: ``recorded``, and which of ``recorded``'s outputs is
    which: ``results[i]`` is the output index of item ``i`` (None: structurally zero).
    For a VJP graph, ``seeded`` lists the positions in ``slots`` that take a seed input
    (a slot whose output does not depend on the inputs takes none)."""

    recorded: RecordedGraph
    results: tuple[int | None, ...]
    seeded: tuple[int, ...] = ()


def _closed_graph(
    node: RecordedGraph,
    linear: LinearizedGraph,
    extra_inputs: Sequence[tuple[Hashable, int]],
    outputs: Sequence[int | None],
    keep_inputs_first: bool,
) -> NodeGraph:
    """``linear.graph`` with every value it reads from other graphs recomputed from the
    node's inputs. ``extra_inputs`` are ``(raw key, local id)`` of ``linear``'s own inputs
    that become inputs (seeds or tangents); ``outputs`` are local ids of ``linear.graph``.
    The node's inputs come after the extra inputs, or before them with
    ``keep_inputs_first``."""
    graph = linear.graph
    view = resolve([graph])
    builder = GraphBuilder()
    by_key: dict[ValueKey, int] = {}
    by_local: dict[int, int] = {}

    def add_node_inputs() -> None:
        for raw, key in zip(node.input_keys, node.input_value_keys, strict=True):
            by_key[key] = builder.add_input(raw)

    if keep_inputs_first:
        add_node_inputs()
    taken = set(node.input_keys)
    for position, (_, local_id) in enumerate(extra_inputs):
        name = Name(f"d{position}")
        while name in taken:  # a derived graph of a derived graph: ddd0, ...
            name = Name("d" + name.name)
        by_local[local_id] = builder.add_input(name)
    if not keep_inputs_first:
        add_node_inputs()

    def not_computed(key: ValueKey) -> ValueError:
        return ValueError(f"{node!r}: {key!r} is not computed from the node's inputs")

    def add(definition: ProducedDef, ids: list[int]) -> list[int]:
        return builder.add_operation(definition.operation, ids, definition.role)

    def materialize(key: ValueKey) -> int:
        view.compute([key], by_key, add, not_computed)
        return by_key[key]

    def value_of(local_id: int) -> int:
        found = by_local.get(local_id)
        return found if found is not None else materialize(graph.values[local_id].key)

    needed = _needed_locals(graph, outputs)
    for op in graph.operations:
        if needed.isdisjoint(op.outputs):
            continue
        inputs = [value_of(r.id) if isinstance(r, Local) else materialize(r.key)
                  for r in op.inputs]  # fmt: skip
        ids = builder.add_operation(op.operation, inputs, op.role)
        by_local.update(zip(op.outputs, ids, strict=True))
    produced = [None if o is None else value_of(o) for o in outputs]
    present = [p for p in produced if p is not None]
    builder.set_outputs(present)
    results: list[int | None] = []
    count = 0
    for value_id in produced:
        results.append(None if value_id is None else count)
        count += value_id is not None
    return NodeGraph(RecordedGraph.from_graph(builder.build()), tuple(results))


def _needed_locals(graph: Any, outputs: Sequence[int | None]) -> set[int]:
    """Local ids of ``graph`` whose values the ``outputs`` depend on (within ``graph``)."""
    needed = {o for o in outputs if o is not None}
    for op in reversed(graph.operations):
        if needed.intersection(op.outputs):
            needed.update(r.id for r in op.inputs if isinstance(r, Local))
    return needed


#: Derived graphs by (kind, node structure, mask...): bounded, cleared when full.
_MEMO: dict[Hashable, NodeGraph] = {}
_MEMO_LIMIT = 4096


def _memoized(key: Hashable, make: Callable[[], NodeGraph]) -> NodeGraph:
    found = _MEMO.get(key)
    if found is None:
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        found = _MEMO[key] = make()
    return found


def vjp_graph(
    node: RecordedGraph, slots: Sequence[int], needed: Sequence[bool] | None = None
) -> NodeGraph:
    """The VJP of ``node`` for its active output ``slots`` (see the module docstring);
    ``results`` has one entry per node input (None: not needed, or zero)."""
    mask = tuple(needed) if needed is not None else (True,) * len(node.input_keys)

    def make() -> NodeGraph:
        # With respect to the needed inputs only: the others' tangents would reach the
        # residuals (a loop's derivative reads its linear inputs only through them).
        wrt = [raw for raw, keep in zip(node.input_keys, mask, strict=True) if keep]
        outputs = [node.output_keys[s] for s in slots]
        linear = linearize(resolve(node.graph), outputs, wrt, fresh_pass_id())
        transposed = linear_transpose(linear)
        by_input = iter(transposed.tangent_outputs)
        wanted = [next(by_input) if keep else None for keep in mask]
        closed = _closed_graph(node, transposed, transposed.tangent_inputs, wanted, False)
        seeded = tuple(i for i, t in enumerate(linear.tangent_outputs) if t is not None)
        return NodeGraph(closed.recorded, closed.results, seeded)

    return _memoized(("vjp", node.structure, tuple(slots), mask), make)


def jvp_graph(node: RecordedGraph, present: Sequence[bool]) -> NodeGraph:
    """The JVP of ``node`` for tangents of the inputs with ``present[i]`` (see the module
    docstring); ``results`` has one entry per node output."""
    mask = tuple(present)

    def make() -> NodeGraph:
        wrt = [raw for raw, has in zip(node.input_keys, mask, strict=True) if has]
        linear = linearize(resolve(node.graph), node.output_keys, wrt, fresh_pass_id())
        return _closed_graph(node, linear, linear.tangent_inputs, linear.tangent_outputs, True)

    return _memoized(("jvp", node.structure, mask), make)

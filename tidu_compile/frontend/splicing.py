"""What the spliced sweeps of higher order share: graphs inlined into one, the memo of
the structures seen, and the run of the spliced graph as one recorded node.

``frontend.spliced_tangents`` (forward mode) and ``frontend.spliced_cotangents``
(reverse mode with the graph kept) both turn a sweep over tape nodes (one derived graph
per node: ``node_graphs.jvp_graph`` or ``vjp_graph``) into ONE graph: every node's
derived graph is ``inline``-d into a ``GraphBuilder`` with its inputs wired to the
sweep's inputs or to values of the graphs inlined before it. A sweep's *structure* (its
nodes' graph structures and the wiring, by position, never the tape's keys) is its key
in ``SpliceMemo``: the first sweep of a structure runs node by node (a one-off sweep
compiles nothing more), the spliced graph takes over from the second.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from tidu_compile.eager import BackwardExecutor, EagerInput, RecordedGraph, Trace
from tidu_compile.frontend.tensor import CONSTANT_KEY, Tensor, record_node
from tidu_compile.graph import Graph, GraphBuilder, Local, ValueKey

__all__ = [
    "MAX_NODES", "Primals", "Result", "SpliceMemo", "SplicedGraph", "inline", "pick",
    "run_recorded", "set_results",
]  # fmt: skip

#: Sweeps of more nodes run node by node (a graph that large compiles for long).
MAX_NODES = 256

#: Structures a memo remembers (seen once, or their spliced graph); cleared when full.
_MAX_STRUCTURES = 256

#: Where a requested result is: ``("out", i)`` (output ``i`` of the spliced graph),
#: ``("given", i)`` (the sweep's given input ``i`` itself) or None (structurally zero).
Result = tuple[str, int] | None


@dataclass(frozen=True, eq=False)
class SplicedGraph:
    """A structure's spliced graph and where each requested result is in it."""

    graph: RecordedGraph
    results: tuple[Result, ...]


class Primals:
    """The distinct primal values a sweep's nodes read, as inputs of the spliced graph: one
    per tape key, except constants (they all share ``CONSTANT_KEY``: one input each)."""

    def __init__(self) -> None:
        self.inputs: list[EagerInput] = []
        self._index: dict[ValueKey, int] = {}

    def indices(self, node: Trace) -> tuple[int, ...]:
        """The input index of each of ``node``'s inputs (its saved data; a value freed or
        changed in place raises here, as on the per-node path)."""
        saved = node.saved_values
        found = []
        for edge, raw in zip(node.inputs, node.graph.input_value_keys, strict=True):
            index = self._index.get(edge.key)
            if index is None:
                index = len(self.inputs)
                if edge.key != CONSTANT_KEY:
                    self._index[edge.key] = index
                self.inputs.append(
                    EagerInput(edge.key, edge.trace, edge.requires_grad, saved[raw])
                )
            found.append(index)
        return tuple(found)


def inline(builder: GraphBuilder, graph: Graph, arguments: Sequence[int]) -> list[int]:
    """``graph``'s operations appended to ``builder`` with its inputs bound to the local
    ids ``arguments``; the local ids of its outputs."""
    local: dict[int, int] = dict(zip(graph.inputs, arguments, strict=True))
    for operation in graph.operations:
        refs = [local[r.id] for r in operation.inputs if isinstance(r, Local)]
        if len(refs) != len(operation.inputs):
            raise RuntimeError(f"{operation.operation!r}: a derived graph reads another graph")
        produced = builder.add_operation(operation.operation, refs, operation.role)
        local.update(zip(operation.outputs, produced, strict=True))
    return [local[o] for o in graph.outputs]


def set_results(
    builder: GraphBuilder, wanted: Sequence[int | None], given: Sequence[int]
) -> tuple[Result, ...]:
    """Set ``builder``'s outputs to the distinct ``wanted`` local ids that are not among
    the ``given`` inputs' ids; where each wanted value is found."""
    position = {local_id: i for i, local_id in enumerate(given)}
    outputs: list[int] = []
    results: list[Result] = []
    for local_id in wanted:
        if local_id is None:
            results.append(None)
        elif local_id in position:  # a given input itself: nothing computes it
            results.append(("given", position[local_id]))
        else:
            if local_id not in outputs:
                outputs.append(local_id)
            results.append(("out", outputs.index(local_id)))
    builder.set_outputs(outputs)
    return tuple(results)


def pick(results: Sequence[Result], recorded: Sequence[Tensor], given: Sequence[Tensor]
         ) -> list[Tensor | None]:  # fmt: skip
    """The tensors ``set_results``'s ``results`` name."""
    return [None if r is None else recorded[r[1]] if r[0] == "out" else given[r[1]]
            for r in results]  # fmt: skip


class SpliceMemo:
    """Spliced graphs by executor and sweep structure; a structure an executor has seen
    once is only remembered (so a fresh executor runs a sweep as the first one did)."""

    def __init__(self) -> None:
        self._by_executor: weakref.WeakKeyDictionary[object, dict[Hashable, SplicedGraph | None]]
        self._by_executor = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(
        self, executor: BackwardExecutor, key: Hashable, splice: Callable[[], SplicedGraph]
    ) -> SplicedGraph | None:
        """The structure's spliced graph (``splice()`` the second time ``executor`` asks
        for it); None the first time."""
        with self._lock:
            entries = self._by_executor.setdefault(executor, {})
            if key in entries:
                found = entries[key]
                if found is not None:
                    return found
            else:
                if len(entries) >= _MAX_STRUCTURES:
                    entries.clear()
                entries[key] = None
                return None
        spliced = splice()
        with self._lock:
            entries[key] = spliced
        return spliced


def run_recorded(
    executor: BackwardExecutor, graph: RecordedGraph, inputs: Sequence[EagerInput]
) -> list[Tensor]:
    """``graph`` run on ``executor`` (``run_graph``: compiled) for the data of ``inputs``
    and recorded on the tape with them as one node; the spliced runs counted."""
    if not graph.graph.outputs:  # every result given or zero: nothing to run
        return []
    values = executor.run_graph(graph, [i.data for i in inputs])
    recorded = record_node(graph, inputs, [np.asarray(v) for v in values])
    stats = getattr(executor, "stats", None)
    if stats is not None:
        stats.spliced_runs += 1
    return recorded

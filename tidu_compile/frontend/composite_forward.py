"""The forward pass of a traced ``@tc.function``, run by the current executor.

After the first call (the trace, whose eager values are kept), every call of a traced
signature computes what the tape needs: the function's outputs and the values
``_Capture`` retained for the backward (contraction results and their computed operands,
integer results). ``ForwardPlan`` turns the traced graph into one ``RecordedGraph`` with
those values as its outputs (each once, outputs first)::

    traced:   x, y -> v2 = Mul(x, y) ... v8 = ReduceSum(v7)    outputs (v8,)  retained [v8]
    forward:  the same operations                                outputs (v8,)

and runs it with ``executor.run_graph``: on a ``CompiledExecutor`` the graph is lowered,
fused and compiled like a backward program (one native program, cached per structure
and input types in memory and on disk); on the ``ReferenceExecutor`` it is evaluated op
by op with numpy.

Integer index data is checked before any native code runs: for every ``Gather`` and
``ScatterAdd``, the integer operations its index operands come from (reshapes of a
``labels`` argument, say) are evaluated with numpy first and the indices range-checked
with numpy's ``IndexError``. When an index depends on float data (``argmax`` or
``argsort`` of computed values), it cannot be checked before the forward runs: such a
trace replays its forward with numpy, op by op (what ``ReferenceExecutor`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.eager import BackwardExecutor, RecordedGraph
from tidu_compile.graph import Graph, Local, OperationNode
from tidu_compile.ops.indexing import _Indexed

__all__ = ["ForwardPlan", "evaluate_nodes"]


def evaluate_nodes(nodes: Sequence[OperationNode], values: list[Any]) -> None:
    """Evaluate ``nodes`` (in order) with numpy into ``values``, indexed by local id."""
    for node in nodes:
        # A traced graph has no parents: every input ref is Local.
        results = node.operation.evaluate(*(values[r.id] for r in node.inputs))  # type: ignore[union-attr]
        for local_id, result in zip(node.outputs, results, strict=True):
            values[local_id] = np.asarray(result)


def _is_integer(value: Any) -> bool:
    return np.dtype(value.dtype).kind in "iub"


class ForwardPlan:
    """How the calls after the trace compute a traced graph's outputs and retained values.

    ``graph``: the traced graph; ``retained``: the local ids the tape keeps;
    ``traced_values``: the values of the trace's call by local id (their dtypes are
    those of every call: dtypes are part of the trace key).
    """

    def __init__(self, graph: Graph, retained: Sequence[int], traced_values: Sequence[Any]) -> None:
        self.graph = graph
        #: Local ids the forward program returns: the outputs, then the retained values.
        self.ids: tuple[int, ...] = tuple(dict.fromkeys((*graph.outputs, *retained)))
        self.recorded = RecordedGraph.from_graph(
            Graph(graph.values, graph.operations, graph.inputs, self.ids)
        )
        #: The ops that compute index operands (integer-only), and the indexing ops.
        self.index_prelude: tuple[OperationNode, ...] = ()
        self.indexing: tuple[OperationNode, ...] = ()
        #: False when an index depends on float data: the forward then replays with numpy.
        self.checkable = True
        self._plan_index_checks(traced_values)

    def _plan_index_checks(self, traced_values: Sequence[Any]) -> None:
        graph = self.graph
        indexing = [n for n in graph.operations if isinstance(n.operation, _Indexed)]
        pending = [r.id for n in indexing for r in n.inputs[1:] if isinstance(r, Local)]
        needed: set[int] = set()  # operation indices computing index data
        seen: set[int] = set()
        while pending:
            local_id = pending.pop()
            if local_id in seen:
                continue
            seen.add(local_id)
            producer = graph.values[local_id].producer
            if producer is None:
                continue  # an argument or constant input: its data is at hand
            node = graph.operations[producer[0]]
            inputs = [r.id for r in node.inputs if isinstance(r, Local)]
            if not all(_is_integer(traced_values[i]) for i in inputs):
                self.checkable = False  # argmax of computed floats, say
                return
            needed.add(producer[0])
            pending.extend(inputs)
        self.index_prelude = tuple(graph.operations[i] for i in sorted(needed))
        self.indexing = tuple(indexing)

    def check_indices(self, inputs: Sequence[Any]) -> None:
        """numpy's ``IndexError`` for any index of a ``Gather``/``ScatterAdd`` out of range."""
        if not self.indexing:
            return
        values: list[Any] = [None] * len(self.graph.values)
        for local_id, data in zip(self.graph.inputs, inputs, strict=True):
            values[local_id] = data
        evaluate_nodes(self.index_prelude, values)
        for node in self.indexing:
            node.operation.where([values[r.id] for r in node.inputs[1:]])  # type: ignore[attr-defined, union-attr]

    def run(self, executor: BackwardExecutor, inputs: Sequence[Any]) -> list[Any]:
        """The forward values by local id (None for those the tape does not need)."""
        values: list[Any] = [None] * len(self.graph.values)
        if not self.checkable:
            for local_id, data in zip(self.graph.inputs, inputs, strict=True):
                values[local_id] = data
            evaluate_nodes(self.graph.operations, values)
            return values
        self.check_indices(inputs)
        results = executor.run_graph(self.recorded, inputs)
        for local_id, result in zip(self.ids, results, strict=True):
            values[local_id] = np.asarray(result)
        return values

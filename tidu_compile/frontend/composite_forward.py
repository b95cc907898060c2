"""The forward pass of a traced ``@tc.function``, run by the current executor.

Every call of a traced signature (the tracing call too: the eager values of the trace
are not kept, so that every call gives the same values) computes what the tape needs:
the function's outputs and the values ``Capture`` retained for the backward
(contraction results and their computed operands, integer results). ``ForwardPlan``
turns the traced graph into one ``RecordedGraph`` with those values as its outputs
(each once, outputs first)::

    traced:   x, y -> v2 = Mul(x, y) ... v8 = ReduceSum(v7)    outputs (v8,)  retained [v8]
    forward:  the same operations                                outputs (v8,)

and runs it with ``executor.run_graph``: on a ``CompiledExecutor`` the graph is lowered,
fused and compiled like a backward program (one native program, cached per structure
and input types in memory and on disk); on the ``ReferenceExecutor`` it is evaluated op
by op with numpy.

Integer index data is checked before any native code runs: the operations on integer
data of the arguments (reshapes of a ``labels`` argument, say: the *prelude*) are
evaluated with numpy first, their results passed to the program as inputs, and the
indices of every ``Gather`` and ``ScatterAdd`` range-checked with numpy's ``IndexError``.
When an index depends on float data (``argmax`` or ``argsort`` of computed values), it
cannot be checked before the forward runs: such a trace replays its forward with numpy,
op by op (what ``ReferenceExecutor`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.eager import BackwardExecutor, RecordedGraph
from tidu_compile.graph import Graph, GraphBuilder, Local, OperationNode
from tidu_compile.ops.indexing import IndexedOp

__all__ = ["UNBUILT", "ForwardPlan", "copy_operations"]

#: A trace's derived program (``func.value_and_grad``'s, the joint forward's) before its
#: first use builds it.
UNBUILT: Any = object()


def copy_operations(
    builder: GraphBuilder, nodes: Sequence[OperationNode], local: dict[int, int]
) -> None:
    """Add ``nodes`` of a traced graph (no parents: every input ref is Local) to
    ``builder``; ``local`` maps the traced graph's local ids to the builder's, and
    gains the nodes' outputs."""
    for node in nodes:
        outputs = builder.add_operation(
            node.operation, [local[r.id] for r in node.inputs], node.role  # type: ignore[union-attr]
        )
        local.update(zip(node.outputs, outputs, strict=True))


def _evaluate_nodes(nodes: Sequence[OperationNode], values: list[Any]) -> None:
    """Evaluate ``nodes`` (in order) with numpy into ``values``, indexed by local id."""
    for node in nodes:
        # A traced graph has no parents: every input ref is Local.
        results = node.operation.evaluate(*(values[r.id] for r in node.inputs))  # type: ignore[union-attr]
        for local_id, result in zip(node.outputs, results, strict=True):
            values[local_id] = np.asarray(result)


def _is_integer(value: Any) -> bool:
    return np.dtype(value.dtype).kind in "iub"


#: ``check_indices`` keeps the integer arguments and the prelude values of its last call
#: when each totals at most this many bytes (copies: the next call compares with them).
REUSED_BYTES = 1 << 16


def _same_array(kept: np.ndarray, given: Any) -> bool:
    """``given`` has ``kept``'s dtype, shape and values."""
    return (
        isinstance(given, np.ndarray) and given.dtype == kept.dtype
        and given.shape == kept.shape and bool(np.array_equal(given, kept))
    )  # fmt: skip


def _frozen_copy(value: Any) -> np.ndarray:
    copy = np.array(value)  # a copy, never a view of the caller's data
    copy.setflags(write=False)
    return copy


class ForwardPlan:
    """How the calls after the trace compute a traced graph's outputs and retained values.

    ``graph``: the traced graph; ``retained``: the local ids the tape keeps;
    ``traced_values``: the values of the trace's call by local id (their dtypes are
    those of every call: dtypes are part of the trace key).

    The *prelude* (operations on integer data of the arguments only, such as reshapes of
    ``labels``) runs with numpy first; the program (``recorded``) is the rest of the
    graph, taking the arguments and the prelude's values it reads as inputs and returning
    the outputs and retained values it computes (``program_ids``).
    """

    def __init__(self, graph: Graph, retained: Sequence[int], traced_values: Sequence[Any]) -> None:
        self.graph = graph
        needs = tuple(dict.fromkeys((*graph.outputs, *retained)))  # outputs, retained
        known = set(graph.inputs)  # values at hand before the program runs
        prelude: list[OperationNode] = []
        for node in graph.operations:
            reads = [r.id for r in node.inputs if isinstance(r, Local)]
            if all(i in known and _is_integer(traced_values[i]) for i in reads) and all(
                _is_integer(traced_values[o]) for o in node.outputs
            ):
                prelude.append(node)
                known.update(node.outputs)
        self.prelude = tuple(prelude)
        self.indexing = tuple(n for n in graph.operations if isinstance(n.operation, IndexedOp))
        #: False when an index depends on float data (``argmax`` of computed values): it
        #: cannot be checked before the program runs, so the forward replays with numpy.
        self.checkable = all(
            isinstance(r, Local) and r.id in known for n in self.indexing for r in n.inputs[1:]
        )
        #: The integer arguments the prelude and the index checks read, and the last
        #: checked call's copies of them with its prelude values (``check_indices``).
        read = {r.id for n in (*prelude, *self.indexing) for r in n.inputs if isinstance(r, Local)}
        self._integer_inputs = tuple(i for i in graph.inputs
                                     if i in read and _is_integer(traced_values[i]))  # fmt: skip
        self._prelude_outputs = tuple(o for n in prelude for o in n.outputs)
        self._last: tuple[tuple[np.ndarray, ...], tuple[tuple[int, np.ndarray], ...]] | None
        self._last = None
        self.program_ids = tuple(i for i in needs if i not in known)
        self.program_inputs: tuple[int, ...] = ()
        self.recorded: RecordedGraph | None = None
        if self.program_ids and self.checkable:  # else ``run`` replays with numpy
            self._build_program(known)

    def _build_program(self, known: set[int]) -> None:
        graph, in_prelude = self.graph, {id(n) for n in self.prelude}
        rest = [n for n in graph.operations if id(n) not in in_prelude]
        builder = GraphBuilder()
        local: dict[int, int] = {}
        for i in graph.inputs:
            local[i] = builder.add_input(graph.values[i].key.key)  # type: ignore[union-attr]
        reads = (r.id for n in rest for r in n.inputs if isinstance(r, Local))
        computed = [i for i in dict.fromkeys(reads) if i in known and i not in local]
        for j, i in enumerate(computed):
            local[i] = builder.add_input(Name(f"prelude{j}"))
        copy_operations(builder, rest, local)
        builder.set_outputs([local[i] for i in self.program_ids])
        self.program_inputs = (*graph.inputs, *computed)
        self.recorded = RecordedGraph.from_graph(builder.build())

    def check_indices(self, inputs: Sequence[Any]) -> list[Any]:
        """The prelude's values by local id (the others None) for ``inputs``, after every
        index is checked: numpy's ``IndexError`` for one out of range. Only for a
        ``checkable`` plan: then nothing native reads an unchecked index.

        A call whose integer arguments equal the last checked call's (full-batch
        training with fixed labels, a fixed token sequence) reuses that call's prelude
        values: both are kept as copies, when each totals at most ``REUSED_BYTES``."""
        values: list[Any] = [None] * len(self.graph.values)
        for local_id, data in zip(self.graph.inputs, inputs, strict=True):
            values[local_id] = data
        integers = [values[i] for i in self._integer_inputs]
        last = self._last
        if last is not None and all(
            _same_array(a, b) for a, b in zip(last[0], integers, strict=True)
        ):
            for local_id, value in last[1]:
                values[local_id] = value
            return values
        _evaluate_nodes(self.prelude, values)
        for node in self.indexing:
            node.operation.where([values[r.id] for r in node.inputs[1:]])  # type: ignore[attr-defined, union-attr]
        outputs = self._prelude_outputs
        if (
            self._integer_inputs
            and sum(a.nbytes for a in integers) <= REUSED_BYTES
            and sum(values[o].nbytes for o in outputs) <= REUSED_BYTES
        ):
            kept = tuple((o, _frozen_copy(values[o])) for o in outputs)
            self._last = (tuple(_frozen_copy(a) for a in integers), kept)
        return values

    def run(self, executor: BackwardExecutor, inputs: Sequence[Any]) -> list[Any]:
        """The values by local id the tape needs (others may be None), the program run by
        ``executor``; numpy's ``IndexError`` for an index out of range, raised first."""
        if not self.checkable:
            values: list[Any] = [None] * len(self.graph.values)
            for local_id, data in zip(self.graph.inputs, inputs, strict=True):
                values[local_id] = data
            _evaluate_nodes(self.graph.operations, values)
            return values
        values = self.check_indices(inputs)
        if self.recorded is not None:
            results = executor.run_graph(self.recorded, [values[i] for i in self.program_inputs])
            for local_id, result in zip(self.program_ids, results, strict=True):
                values[local_id] = np.asarray(result)
        return values

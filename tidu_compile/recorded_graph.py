"""``RecordedGraph``: a graph as the eager tape records it (``eager``), with its input and
output keys in graph order, as tidu's ``RecordedGraph`` is."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from tidu_compile.ad import LinearizedGraph, fresh_pass_id, linearize
from tidu_compile.graph import Graph, GraphBuilder, Input, Primary, ValueKey, interned, resolve

__all__ = ["RecordedGraph"]


def _raw_key(key: Hashable) -> Hashable:
    return key.key if isinstance(key, Input) else key


class RecordedGraph:
    """A graph as recorded on the tape, with its input and output keys in graph order.

    As in tidu, ``input_keys`` are the *raw* input keys (``Vec<Op::InputKey>``) and
    ``output_keys`` are value keys::

        >>> RecordedGraph.from_primitive(Exp(), ["x"]).input_keys    # doctest: +SKIP
        ['x']

    ``input_value_keys`` are the inputs' value keys (``Input(k)``), under which the tape
    saves the inputs' data.
    """

    __slots__ = (
        "graph", "input_keys", "output_keys", "input_value_keys", "structure", "__weakref__"
    )  # fmt: skip

    def __init__(
        self, graph: Graph, input_keys: Sequence[Hashable], output_keys: Sequence[ValueKey]
    ) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(f"graph: expected a Graph, got {type(graph).__name__}")
        self.graph = graph
        self.input_keys: list[Hashable] = list(input_keys)
        self.output_keys: list[ValueKey] = list(output_keys)
        self.input_value_keys: tuple[ValueKey, ...] = tuple(graph.input_keys())
        expected_inputs = [k.key for k in self.input_value_keys]  # type: ignore[union-attr]
        if self.input_keys != expected_inputs:
            hint = (
                " (value keys Input(k) were given: pass the raw keys k)"
                if self.input_keys == list(self.input_value_keys)
                else ""
            )
            raise ValueError(
                "input_keys: must list the graph's raw input keys in graph order, "
                f"got {self.input_keys!r}, graph has {expected_inputs!r}{hint}"
            )
        if self.output_keys != graph.output_keys():
            raise ValueError(
                "output_keys: must list the graph's output keys in graph order "
                f"({len(graph.outputs)} outputs), got {len(self.output_keys)} keys"
            )
        #: ``(input value keys, output keys)``: hashable, equal for equal structures
        #: (what executors memoize a node's transforms by).
        self.structure: tuple[tuple[ValueKey, ...], tuple[ValueKey, ...]] = (
            self.input_value_keys,
            tuple(self.output_keys),
        )

    @classmethod
    def from_primitive(cls, op: Any, input_keys: Sequence[Hashable]) -> RecordedGraph:
        """A one-operation graph ``op(input_keys...)``; keys may be raw or ``Input(k)``."""
        builder = GraphBuilder()
        ids = [builder.add_input(_raw_key(k)) for k in input_keys]
        outputs = builder.add_operation(op, ids, Primary())
        builder.set_outputs(outputs)
        graph = builder.build()
        return cls(graph, [_raw_key(k) for k in input_keys], graph.output_keys())

    @classmethod
    def from_graph(cls, graph: Graph) -> RecordedGraph:
        """``graph`` recorded with its own inputs and outputs (the usual case); its
        ``structure`` interned (``graph.interned``)."""
        raw = [k.key for k in graph.input_keys() if isinstance(k, Input)]
        recorded = cls(graph, raw, graph.output_keys())
        recorded.structure = interned(recorded.structure)
        return recorded

    def linearize(self, output_slots: Sequence[int], ctx: Any = None) -> LinearizedGraph:
        """JVP graph of the given output slots with respect to every input."""
        for slot in output_slots:
            if not isinstance(slot, int) or not 0 <= slot < len(self.output_keys):
                raise ValueError(
                    f"output_slots: slot {slot!r} out of range for a graph with "
                    f"{len(self.output_keys)} outputs"
                )
        return linearize(
            resolve(self.graph),
            [self.output_keys[s] for s in output_slots],
            self.input_keys,
            fresh_pass_id(),
            ctx,
        )

    def __repr__(self) -> str:
        ops = ", ".join(type(n.operation).__name__ for n in self.graph.operations)
        return f"RecordedGraph([{ops}], {len(self.input_keys)} in, {len(self.output_keys)} out)"

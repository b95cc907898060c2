"""Stage-by-stage views of the backward nodes of a recorded loss (the CLI's ``dump``).

The dump shows what runs. ``backward_nodes`` runs the backward pass itself, on the
reference executor, and records for every tape node what the compiled executor is
handed at that point (the node's graph and active output slots, the cotangents' types,
the saved and retained values, the needed-inputs mask); ``BackwardNode.program()`` then
builds the program from those with ``node_program``, the function the executor compiles
with, and ``stage_text`` walks it through the executor's stage table (a graph stage is
read off the node the same way)::

    >>> for node in backward_nodes(loss):                  # doctest: +SKIP
    ...     print(stage_text(node, "fused"))

Whatever a tape node is (one op, a ``@tc.function`` composite, any graph a recorder
puts on the tape), it reaches the executor through these protocol calls, so it is
dumped the way it is compiled. One exception: a ``@tc.function`` call recording a
scalar loss on a ``CompiledExecutor`` computes the loss's gradient with its forward
(``frontend.joint_forward``: ``func.value_and_grad``'s one program) unless
``joint_forward=False``; its node's backward program, dumped here, runs on the general
path only (a second backward, another executor, ``create_graph``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tidu_compile.ad import LinearizedGraph, PrimitiveGraph
from tidu_compile.compiler.program import (
    NodeProgram,
    needed_mask,
    node_program,
    saved_value_order,
)
from tidu_compile.compiler.stages import GRAPH_STAGES, stage
from tidu_compile.eager import RecordedGraph
from tidu_compile.executors.reference import ReferenceExecutor
from tidu_compile.graph import ValueKey
from tidu_compile.ops.base import TensorType, type_of
from tidu_compile.printing import graph_to_dot, graph_to_text

__all__ = ["BackwardNode", "backward_nodes", "stage_text"]


@dataclass
class BackwardNode:
    """One tape node in backward order, as the executor is handed it."""

    index: int
    recorded: RecordedGraph
    slots: tuple[int, ...]
    linear: LinearizedGraph
    seed_types: tuple[TensorType, ...]
    saved_order: tuple[ValueKey, ...]
    saved_types: tuple[TensorType | None, ...]
    needed: tuple[bool, ...] | None

    def program(self) -> NodeProgram:
        """The program the compiled executor compiles for this node."""
        return node_program(self.recorded, self.linear, self.seed_types, self.saved_order,
                            self.saved_types, self.needed)  # fmt: skip

    def title(self) -> str:
        """``node 3: Pow(exponent=2.0) (active slots [0])``; a node of several ops (a
        composite) lists their names only."""
        operations = [n.operation for n in self.recorded.graph.operations]
        shown = [repr(o) for o in operations] if len(operations) == 1 else [
            type(o).__name__ for o in operations
        ]
        ops = ", ".join(shown)
        needed = "" if self.needed is None else f", needed inputs {list(self.needed)}"
        return f"node {self.index}: {ops} (active slots {list(self.slots)}{needed})"


class _RecordingExecutor(ReferenceExecutor):
    """Computes the backward pass on the reference path and records each node's calls."""

    def __init__(self) -> None:
        self.nodes: list[BackwardNode] = []
        self._node: tuple[RecordedGraph, tuple[int, ...]] | None = None
        self._saved: Mapping[ValueKey, Any] = {}

    def linearize_recorded_graph(
        self, graph: RecordedGraph, output_slots: Sequence[int], ctx: Any
    ) -> LinearizedGraph:
        self._node = (graph, tuple(output_slots))
        return super().linearize_recorded_graph(graph, output_slots, ctx)

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> dict[ValueKey, Any]:
        self._saved = initial_data  # what the compiled executor reads (it adds nothing)
        return super().execute_forward(graph, initial_data)

    def run_transposed_linear_for(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
        needed: Sequence[bool],
    ) -> list[Any]:
        self._record(linear, cotangent_out, needed_mask(linear, needed))
        return ReferenceExecutor.run_transposed_linear(
            self, linear, cotangent_out, external_data, ctx
        )

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any]:
        self._record(linear, cotangent_out, None)
        return super().run_transposed_linear(linear, cotangent_out, external_data, ctx)

    def _record(
        self, linear: LinearizedGraph, cotangent_out: Sequence[Any], needed: tuple[bool, ...] | None
    ) -> None:
        assert self._node is not None, "backward linearizes a node before transposing it"
        recorded, slots = self._node
        seeds = [c for c, t in zip(cotangent_out, linear.tangent_outputs, strict=True)
                 if t is not None]  # fmt: skip
        order = saved_value_order(recorded, self._saved)
        saved = tuple(None if self._saved.get(k) is None else type_of(self._saved[k])
                      for k in order)  # fmt: skip
        seed_types = tuple(type_of(s) for s in seeds)
        node = BackwardNode(len(self.nodes), recorded, slots, linear, seed_types, order, saved,
                            needed)  # fmt: skip
        self.nodes.append(node)


def backward_nodes(loss: Any) -> list[BackwardNode]:
    """The nodes ``backward`` visits from the scalar ``Tensor`` ``loss``, in that order."""
    import tidu_compile as tc

    if not isinstance(loss, tc.Tensor) or not loss.requires_grad:
        raise ValueError("the function's result does not depend on any input")
    recorder = _RecordingExecutor()
    tc.grad(loss, [loss], executor=recorder)  # the whole sweep, whatever the inputs
    return recorder.nodes


def stage_text(node: BackwardNode, stage_name: str, fmt: str = "text") -> str:
    """The IR of ``node`` at ``stage_name`` as text (or Graphviz for the graph stages),
    walked through the executor's stage table (``compiler.stages.walk``).

    A node the compiled executor runs on numpy (a zero-size value) prints as one comment
    saying so.
    """
    from tidu_compile.compiler.program import UnsupportedNode
    from tidu_compile.compiler.stages import RunOptions, walk

    if stage(stage_name).kind == "object":
        raise ValueError(f"stage {stage_name!r} is object code: it has no text")
    if fmt == "dot" and stage_name not in GRAPH_STAGES:
        raise ValueError(f"--format dot draws only the graph stages ({', '.join(GRAPH_STAGES)})")
    if stage_name in GRAPH_STAGES:
        render: Any = graph_to_dot if fmt == "dot" else graph_to_text
        return str(render(walk(node, "node", stage_name), f"{stage_name}_{node.index}"))
    try:
        program = node.program()
    except UnsupportedNode as error:
        return f"// not compiled, the reference executor runs this node: {error}"
    return str(walk(program, "program", stage_name, RunOptions(function=f"node{node.index}")))

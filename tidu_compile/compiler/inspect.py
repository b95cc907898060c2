"""Stage-by-stage views of the backward nodes of a recorded function (the CLI's ``dump``).

>>> loss = f(*tensors)                                   # doctest: +SKIP
>>> for node in backward_nodes(loss):                    # doctest: +SKIP
...     print(stage_text(node, "fused"))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidu_compile.ad import LinearizedGraph, linear_transpose
from tidu_compile.compiler import pipeline
from tidu_compile.compiler.program import NodeProgram, build_program
from tidu_compile.eager import Trace, _reverse_topological
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.ops.base import type_of
from tidu_compile.printing import graph_to_dot, graph_to_text

__all__ = ["BackwardNode", "backward_nodes", "stage_text", "GRAPH_STAGES"]

GRAPH_STAGES = ("graph", "linear", "transposed")


@dataclass
class BackwardNode:
    """One tape node in backward order, with its active output slots."""

    index: int
    trace: Trace
    slots: tuple[int, ...]
    _linear: LinearizedGraph | None = None

    @property
    def linear(self) -> LinearizedGraph:
        if self._linear is None:
            self._linear = self.trace.graph.linearize(self.slots)
        return self._linear

    def program(self) -> NodeProgram:
        recorded, saved = self.trace.graph, self.trace.saved_values
        linear = self.linear
        seed_types = []
        for slot, tangent in zip(self.slots, linear.tangent_outputs, strict=True):
            if tangent is not None:
                output_key = recorded.output_keys[slot]
                if output_key not in saved:
                    raise ValueError(f"node {self.index}: output {slot} was not retained")
                seed_types.append(type_of(saved[output_key]))
        saved_types = {k: type_of(v) for k, v in saved.items()}
        return build_program(recorded, linear, seed_types, saved_types)

    def title(self) -> str:
        ops = ", ".join(repr(n.operation) for n in self.trace.graph.graph.operations)
        return f"node {self.index}: {ops} (active slots {list(self.slots)})"


def backward_nodes(loss: Tensor) -> list[BackwardNode]:
    """The nodes ``backward`` would visit from ``loss``, in that order."""
    if not isinstance(loss, Tensor) or loss._trace is None:
        raise ValueError("the function's result does not depend on any input")
    active = {loss._key}
    nodes: list[BackwardNode] = []
    for trace in _reverse_topological(loss._trace):
        slots = tuple(s for s, k in enumerate(trace.output_keys) if k in active)
        if not slots:
            continue
        nodes.append(BackwardNode(len(nodes), trace, slots))
        active.update(edge.key for edge in trace.inputs if edge.requires_grad)
    return nodes


def stage_text(node: BackwardNode, stage: str, fmt: str = "text") -> str:
    """The IR of ``node`` at ``stage`` as text (or Graphviz for the graph stages)."""
    if stage not in pipeline.STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(pipeline.STAGES)}")
    if fmt == "dot" and stage not in GRAPH_STAGES:
        raise ValueError(f"--format dot draws only the graph stages ({', '.join(GRAPH_STAGES)})")
    if stage in GRAPH_STAGES:
        graph = {
            "graph": lambda: node.trace.graph.graph,
            "linear": lambda: node.linear.graph,
            "transposed": lambda: linear_transpose(node.linear).graph,
        }[stage]()
        render: Any = graph_to_dot if fmt == "dot" else graph_to_text
        return str(render(graph, f"{stage}_{node.index}"))
    module = pipeline.tidu_stage(node.program(), f"node{node.index}")
    if stage == "tidu":
        return str(module)
    module = pipeline.fused_stage(module)
    if stage == "fused":
        return str(module)
    module = pipeline.loops_stage(module)
    if stage == "loops":
        return str(module)
    llvm_module = pipeline.llvm_stage(module)
    if stage == "llvm":
        return str(llvm_module)
    return pipeline.text_stage(llvm_module, stage)

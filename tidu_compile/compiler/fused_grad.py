"""One graph computing a scalar loss and its gradient: forward, then backward at seed 1.

Of a traced graph with one real scalar output (``loss``), ``build_fused`` makes::

    inputs x, y
    forward ops       -> loss                  (the traced graph)
    Constant(1.0)     -> seed
    backward program  -> d loss/dx, d loss/dy  (node_program: its residuals read
                                                from the forward's values)
    outputs (loss, gx, gy)

which an executor runs with ``run_graph``: compiled, fusion puts the forward's ops and
the backward's that read them in one loop nest. ``func.value_and_grad`` of a
``@tc.function`` runs it (``composite_grad``), and so does a recording call of one on a
``CompiledExecutor`` (``frontend.joint_forward``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.compiler.program import infer_value_types, node_program, saved_value_order
from tidu_compile.eager import RecordedGraph
from tidu_compile.frontend.composite_forward import copy_operations
from tidu_compile.graph import GraphBuilder, Primary
from tidu_compile.ops import Constant

__all__ = ["FusedGrad", "build_fused"]


class FusedGrad:
    """A fused program: ``recorded`` returns the loss, then the gradient of every input
    in ``with_gradient`` (recorded-graph input positions); ``None`` inputs have none."""

    def __init__(self, recorded: RecordedGraph, with_gradient: tuple[int, ...]) -> None:
        self.recorded = recorded
        self.with_gradient = with_gradient


def build_fused(
    traced_graph: RecordedGraph,
    input_types: Sequence[Any],
    needed: tuple[bool, ...],
) -> FusedGrad | None:
    """The fused program of ``traced_graph`` (one real scalar output) for inputs of
    ``input_types``, computing the gradients of the inputs with ``needed``; None when
    the loss is not a real scalar or does not depend on the inputs."""
    if len(traced_graph.output_keys) != 1:
        return None
    graph = traced_graph.graph
    types = infer_value_types(traced_graph, input_types)
    out_type = types[graph.outputs[0]]
    if out_type.shape != () or np.dtype(out_type.dtype).kind != "f":
        return None
    linear = traced_graph.linearize([0])
    if linear.tangent_outputs[0] is None:
        return None  # the loss does not depend on the inputs
    # Every forward value is at hand: the backward reads its residuals, not recomputing
    # them (half the ops for the pipeline to import and CSE to merge back).
    order = saved_value_order(traced_graph, [graph.values[i].key for i in types])
    at = {key: graph.local_id(key) for key in order}  # every key of order is the graph's
    saved = [types.get(at[key]) for key in order]  # type: ignore[arg-type]
    program = node_program(traced_graph, linear, [out_type], order, saved,
                           None if all(needed) else needed)  # fmt: skip
    builder = GraphBuilder()
    local: dict[int, int] = {}
    for i in graph.inputs:
        local[i] = builder.add_input(graph.values[i].key.key)  # type: ignore[union-attr]
    copy_operations(builder, graph.operations, local)
    value: dict[int, int] = {}
    for position, source in enumerate(program.arg_sources):
        if source.kind == "seed":
            (value[position],) = builder.add_operation(
                Constant(1.0, (), out_type.dtype), [], Primary()
            )
        else:  # a saved value of the traced graph: an input or a forward value
            value[position] = local[at[order[source.index]]]  # type: ignore[index]
    for instr in program.instrs:
        outputs = builder.add_operation(instr.op, [value[i] for i in instr.inputs], Primary())
        value.update(zip(instr.outputs, outputs, strict=True))
    with_gradient = tuple(i for i, r in enumerate(program.results) if r is not None)
    builder.set_outputs([local[graph.outputs[0]]] +
                        [value[program.results[i]] for i in with_gradient])  # type: ignore[index]
    return FusedGrad(RecordedGraph.from_graph(builder.build()), with_gradient)

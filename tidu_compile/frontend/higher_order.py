"""Reverse mode that records its own work, and forward mode on the tape.

Both walk the tape's nodes and, for each, run a derived graph of the node
(``node_graphs``) with the executor, then record that graph on the tape as a node of
its own (``record_node``), so the results stay differentiable to any order:

* ``backward_recorded`` (``tc.grad(..., create_graph=True)``, ``tidu_compile.func``)
  visits the nodes consumers first, like ``eager.backward``; per node the executor
  computes the input cotangents as usual (compiled), and the node's VJP graph is
  recorded with inputs (seeds, the node's inputs) and those cotangents as outputs.
  Cotangents reaching one value twice are added with a recorded ``add``.
* ``push_tangents`` (forward mode: ``tidu_compile.func.jvp``) visits the nodes
  producers first; per node with an input tangent the executor evaluates the node's
  JVP graph (``run_graph``: compiled), recorded with inputs (the node's inputs, the
  input tangents) and the output tangents as outputs. No reverse pass.

A sweep seen before may run as one graph of all its nodes' VJPs or JVPs, recorded as
one node (``frontend.spliced_cotangents``, ``frontend.spliced_tangents``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tidu_compile.eager import BackwardExecutor, EagerInput, RecordedGraph, Trace, upstream_nodes
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.spliced_cotangents import spliced_cotangents
from tidu_compile.frontend.spliced_tangents import spliced_tangents
from tidu_compile.frontend.tensor import Tensor, eager_input, record_node
from tidu_compile.graph import ValueKey
from tidu_compile.node_graphs import jvp_graph, vjp_graph
from tidu_compile.ops.custom_calls import CustomVJPLinear

__all__ = ["backward_recorded", "push_tangents"]


def _node_inputs(node: Trace) -> list[EagerInput]:
    """The node's inputs as inputs of a derived node: its edges with their saved data."""
    keys = node.graph.input_value_keys
    return [EagerInput(e.key, e.trace, e.requires_grad, node.saved_values[k])
            for e, k in zip(node.inputs, keys, strict=True)]  # fmt: skip


def _record(
    graph: RecordedGraph,
    inputs: list[EagerInput],
    given: dict[int, Tensor],
    outputs: Sequence[np.ndarray],
) -> list[Tensor]:
    """``record_node``, except for a graph without operations: each of its outputs is
    one of its inputs, the tensor ``given[input index]`` itself (nothing to record)."""
    if graph.graph.operations:
        return record_node(graph, inputs, outputs)
    position = {local_id: i for i, local_id in enumerate(graph.graph.inputs)}
    return [given[position[o]] for o in graph.graph.outputs]


def _add(a: Tensor, b: Tensor) -> Tensor:
    return FUNCTIONS["add"](a, b)  # type: ignore[no-any-return]


def backward_recorded(
    roots: Sequence[tuple[Tensor, Tensor]],
    executor: BackwardExecutor,
    wanted: Sequence[ValueKey] | None = None,
) -> dict[ValueKey, Tensor]:
    """Cotangents (recorded tensors) of every tape value reached from the ``(output,
    seed)`` pairs, by tape key; of the ``wanted`` keys at least, when given. With the
    executor's ``splice_sweeps`` and ``wanted``, a sweep seen before runs as one graph
    (``spliced_cotangents``) and gives those keys' only."""
    if wanted is not None and executor.splice_sweeps:
        spliced = spliced_cotangents(roots, wanted, executor)
        if spliced is not None:
            return spliced
    cotangents: dict[ValueKey, Tensor] = {}

    def accumulate(key: ValueKey, ct: Tensor) -> None:
        previous = cotangents.get(key)
        cotangents[key] = ct if previous is None else _add(previous, ct)

    for output, seed in roots:
        accumulate(output._key, seed)
    traces = [output._trace for output, _ in roots if output._trace is not None]
    for node in upstream_nodes(traces):
        incoming = [cotangents.get(k) for k in node.output_keys]
        slots = [s for s, ct in enumerate(incoming) if ct is not None]
        if not slots:
            continue
        needed = node.needed_inputs or (True,) * len(node.inputs)
        linear = executor.linearize_recorded_graph(node.graph, slots, None)
        seeds = [incoming[s] for s in slots]
        if node.precomputed is not None:  # a joint forward's node: what the map reads
            node.saved_values  # noqa: B018 - freed or changed in place: raises first
            node.precomputed.fill(node)
        forward = executor.execute_forward(linear.primitive_graph, node.saved_values)
        values = executor.run_transposed_linear_for(
            linear, [s._data for s in seeds], forward, None, needed  # type: ignore[union-attr]
        )
        vjp = vjp_graph(node.graph, slots, needed)
        seeded: list[Tensor] = [seeds[i] for i in vjp.seeded]  # type: ignore[misc]
        inputs = [eager_input(s) for s in seeded] + _node_inputs(node)
        outputs = [values[i] for i, r in enumerate(vjp.results) if r is not None]
        if any(v is None for v in outputs):
            raise RuntimeError(
                f"executor {type(executor).__name__} returned no cotangent where the VJP "
                f"graph of {node.graph!r} has one"
            )
        recorded = _record(vjp.recorded, inputs, dict(enumerate(seeded)), outputs)
        for edge, result in zip(node.inputs, vjp.results, strict=True):
            if result is not None and edge.requires_grad:
                accumulate(edge.key, recorded[result])
    return cotangents


def push_tangents(
    inputs: Sequence[Tensor],
    tangents: Sequence[Tensor],
    outputs: Sequence[Tensor],
    executor: BackwardExecutor,
) -> list[Tensor | None]:
    """The tangents (recorded tensors) of ``outputs`` for ``tangents`` of ``inputs``;
    None where an output does not depend on the inputs. With the executor's
    ``splice_sweeps``, a sweep seen before runs as one graph (``spliced_tangents``)."""
    if executor.splice_sweeps:
        spliced = spliced_tangents(inputs, tangents, outputs, executor)
        if spliced is not None:
            return spliced
    tangent_of: dict[ValueKey, Tensor] = {x._key: t for x, t in zip(inputs, tangents,
                                                                    strict=True)}  # fmt: skip
    traces = [o._trace for o in outputs if o._trace is not None]
    for node in reversed(upstream_nodes(traces)):
        incoming = [tangent_of.get(e.key) for e in node.inputs]
        present = [t is not None for t in incoming]
        if not any(present):
            continue
        jvp = jvp_graph(node.graph, present)
        for operation in jvp.recorded.graph.operations:  # a custom_vjp: no forward mode
            if isinstance(operation.operation, CustomVJPLinear):
                raise operation.operation.forward_mode_error()
        node_inputs = _node_inputs(node)
        given = [t for t in incoming if t is not None]
        values = executor.run_graph(
            jvp.recorded, [i.data for i in node_inputs] + [t._data for t in given]
        )
        offset = len(node_inputs)
        recorded = _record(
            jvp.recorded,
            node_inputs + [eager_input(t) for t in given],
            {offset + i: t for i, t in enumerate(given)},
            [np.asarray(v) for v in values],
        )
        for key, result in zip(node.output_keys, jvp.results, strict=True):
            if result is not None:
                tangent_of[key] = recorded[result]
    return [tangent_of.get(o._key) for o in outputs]

"""Forward mode over a tape seen before, as ONE graph: the whole-backward capture's
counterpart for ``push_tangents`` (``tidu_compile.func.jvp``, ``hessian``'s HVPs).

``push_tangents`` visits the nodes producers first and, per node, runs its JVP graph
(``node_graphs.jvp_graph``) and records it: a per-op Hessian-vector product of W1 is
some twenty native calls, each reading and writing whole arrays. With an executor's
``splice_sweeps`` (``CompiledExecutor`` unless ``capture=False``) the JVP graphs of
the visited nodes are spliced into one graph instead::

    inputs:  p0..pm  the distinct primal values the nodes read (their inputs' saved data)
             t0..tk  the given tangents
    body:    each node's JVP graph inlined, its tangent inputs wired to ``t_i`` or to the
             tangent outputs of the nodes before it
    outputs: the tangents of the requested outputs (structural zeros left out)

run by ``run_graph`` (compiled once per structure and input types, fused across the node
boundaries by the pipeline: one native call) and recorded as one tape node, so its
tangents stay differentiable. A sweep's *structure* is its nodes' graph structures, which
inputs have tangents, and the wiring of tangents and primals by position, never the
tape's keys. As with ``tc.grad``'s capture, the first sweep of a structure runs node by
node (a one-off ``jvp`` compiles nothing more); the spliced graph takes over from the
second (``stats.spliced_runs`` counts its sweeps; the shared pieces are in
``frontend.splicing``). Results equal the per-node path's up
to the rounding of operations fused across node boundaries.

Sweeps this does not serve (of one node, of more than ``splicing.MAX_NODES``, through a
``custom_vjp`` rule, which has no forward mode) return None: the per-node path runs and
raises the user's errors.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from tidu_compile.ad import Name
from tidu_compile.eager import BackwardExecutor, EagerInput, RecordedGraph, Trace, upstream_nodes
from tidu_compile.frontend import splicing
from tidu_compile.frontend.splicing import (
    Primals,
    SplicedGraph,
    SpliceMemo,
    inline,
    pick,
    run_recorded,
)
from tidu_compile.frontend.tensor import Tensor, eager_input
from tidu_compile.graph import GraphBuilder, ValueKey
from tidu_compile.node_graphs import NodeGraph, jvp_graph
from tidu_compile.ops.custom_calls import CustomVJPLinear

__all__ = ["spliced_tangents"]

#: Where a tangent comes from: ``("given", i)`` or ``("node", position, slot)``.
Source = tuple[str, int] | tuple[str, int, int]


@dataclass(frozen=True, eq=False)
class _Sweep:
    """One call's visited nodes, their JVP graphs and wiring, and its structure key."""

    graphs: tuple[NodeGraph, ...]
    primals: tuple[tuple[int, ...], ...]  # per node input: its distinct primal's index
    tangents: tuple[tuple[Source, ...], ...]  # per present node input: its tangent's source
    outputs: tuple[Source | None, ...]
    primal_inputs: tuple[EagerInput, ...]
    key: Hashable


_MEMO: SpliceMemo = SpliceMemo()


def _sweep(
    inputs: Sequence[Tensor], outputs: Sequence[Tensor], given_count: int
) -> _Sweep | None:
    """The sweep ``push_tangents`` would make, or None when it is not spliced."""
    source: dict[ValueKey, Source] = {x._key: ("given", i) for i, x in enumerate(inputs)}
    traces = [o._trace for o in outputs if o._trace is not None]
    graphs: list[NodeGraph] = []
    primals: list[tuple[int, ...]] = []
    tangents: list[tuple[Source, ...]] = []
    primal_values = Primals()
    key: list[Hashable] = [given_count]
    node: Trace
    for node in reversed(upstream_nodes(traces)):
        incoming = [source.get(e.key) for e in node.inputs]
        present = tuple(s is not None for s in incoming)
        if not any(present):
            continue
        if len(graphs) == splicing.MAX_NODES:
            return None
        jvp = jvp_graph(node.graph, present)
        if any(isinstance(o.operation, CustomVJPLinear) for o in jvp.recorded.graph.operations):
            return None  # no forward mode: the per-node path raises the rule's error
        indices = primal_values.indices(node)
        wiring = tuple(s for s in incoming if s is not None)
        for slot, (out_key, result) in enumerate(zip(node.output_keys, jvp.results,
                                                     strict=True)):  # fmt: skip
            if result is not None:
                source[out_key] = ("node", len(graphs), slot)
        graphs.append(jvp)
        primals.append(indices)
        tangents.append(wiring)
        key.append((node.graph.structure, present, wiring, indices))
    if len(graphs) < 2:
        return None
    results = tuple(source.get(o._key) for o in outputs)
    key.append(results)
    return _Sweep(tuple(graphs), tuple(primals), tuple(tangents), results,
                  tuple(primal_values.inputs), tuple(key))  # fmt: skip


def _splice(sweep: _Sweep, given_count: int) -> SplicedGraph:
    """The sweep's JVP graphs inlined into one graph (see the module docstring)."""
    builder = GraphBuilder()
    primal_ids = [builder.add_input(Name(f"p{i}")) for i in range(len(sweep.primal_inputs))]
    tangent_ids = [builder.add_input(Name(f"t{i}")) for i in range(given_count)]
    node_outputs: list[list[int | None]] = []

    def local_of(source: Source | None) -> int | None:
        if source is None:
            return None
        if source[0] == "given":
            return tangent_ids[source[1]]
        return node_outputs[source[1]][source[2]]  # type: ignore[misc]

    for jvp, primals, wiring in zip(sweep.graphs, sweep.primals, sweep.tangents, strict=True):
        arguments = [primal_ids[p] for p in primals] + [local_of(s) for s in wiring]
        outs = inline(builder, jvp.recorded.graph, arguments)  # type: ignore[arg-type]
        node_outputs.append([None if r is None else outs[r] for r in jvp.results])
    results = splicing.set_results(builder, [local_of(s) for s in sweep.outputs], tangent_ids)
    return SplicedGraph(RecordedGraph.from_graph(builder.build()), results)


def spliced_tangents(
    inputs: Sequence[Tensor],
    tangents: Sequence[Tensor],
    outputs: Sequence[Tensor],
    executor: BackwardExecutor,
) -> list[Tensor | None] | None:
    """``push_tangents``'s result by one spliced graph, or None: the per-node path runs."""
    sweep = _sweep(inputs, outputs, len(tangents))
    if sweep is None:
        return None
    spliced = _MEMO.get(executor, sweep.key, lambda: _splice(sweep, len(tangents)))
    if spliced is None:
        return None
    given = [eager_input(t) for t in tangents]
    recorded = run_recorded(executor, spliced.graph, [*sweep.primal_inputs, *given])
    return pick(spliced.results, recorded, tangents)

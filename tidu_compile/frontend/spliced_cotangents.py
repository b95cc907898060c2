"""Reverse mode with the graph kept, over a tape seen before, as ONE graph: what
``backward_recorded`` (``tc.grad(create_graph=True)``, ``tidu_compile.func.grad``, the
gradient inside ``hessian`` or an HVP) computes node by node, spliced.

``backward_recorded`` visits the nodes consumers first and, per node with a cotangent,
runs its transposed linear graph and records the node's VJP graph
(``node_graphs.vjp_graph``), adding contributions to one value with a recorded ``add``.
With an executor's ``splice_sweeps`` (``CompiledExecutor`` unless ``capture=False``)
and the keys wanted known, the VJP graphs are spliced into one graph instead::

    inputs:  s0..sk  the seeds (the roots' cotangents)
             p0..pm  the distinct primal values the nodes read (their inputs' saved data)
    body:    each node's VJP graph inlined, its seeds wired to the sum (``Add``, in the
             per-node path's order) of the contributions to its outputs so far
    outputs: the cotangents of the wanted keys (those no contribution reaches left out)

run by ``run_graph`` (one native call, fused across node boundaries) and recorded as one
tape node, so the cotangents stay differentiable. The structure key, the first-sight rule
and ``stats.spliced_runs`` are as for ``frontend.spliced_tangents`` (shared pieces in
``frontend.splicing``). A ``custom_vjp`` node's VJP graph holds its rule's traced ops,
so it splices like any. Sweeps of one node or of more than ``splicing.MAX_NODES``
return None: the per-node path runs.
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
from tidu_compile.graph import GraphBuilder, Primary, ValueKey
from tidu_compile.node_graphs import NodeGraph, vjp_graph
from tidu_compile.ops.elementwise import Add

__all__ = ["spliced_cotangents"]

#: A contribution to a cotangent: ``("seed", i)`` or ``("node", position, result)``.
Source = tuple[str, int] | tuple[str, int, int]
#: All contributions to one value, summed in this order.
Sum = tuple[Source, ...]


@dataclass(frozen=True, eq=False)
class _Sweep:
    """One call's visited nodes, their VJP graphs and wiring, and its structure key."""

    graphs: tuple[NodeGraph, ...]
    seeds: tuple[tuple[Sum, ...], ...]  # per node: the sum wired to each seed of its VJP
    primals: tuple[tuple[int, ...], ...]  # per node input: its distinct primal's index
    wanted: tuple[Sum, ...]
    primal_inputs: tuple[EagerInput, ...]
    key: Hashable


_MEMO: SpliceMemo = SpliceMemo()


def _sweep(
    roots: Sequence[tuple[Tensor, Tensor]], wanted: Sequence[ValueKey]
) -> _Sweep | None:
    """The sweep ``backward_recorded`` would make, or None when it is not spliced."""
    contributions: dict[ValueKey, list[Source]] = {}
    for i, (output, _) in enumerate(roots):
        contributions.setdefault(output._key, []).append(("seed", i))
    traces = [output._trace for output, _ in roots if output._trace is not None]
    graphs: list[NodeGraph] = []
    seeds: list[tuple[Sum, ...]] = []
    primals: list[tuple[int, ...]] = []
    primal_values = Primals()
    key: list[Hashable] = [len(roots)]
    node: Trace
    for node in upstream_nodes(traces):
        incoming = [tuple(contributions.get(k, ())) for k in node.output_keys]
        slots = [s for s, sums in enumerate(incoming) if sums]
        if not slots:
            continue
        if len(graphs) == splicing.MAX_NODES:
            return None
        needed = tuple(node.needed_inputs or (True,) * len(node.inputs))
        vjp = vjp_graph(node.graph, slots, needed)  # a custom_vjp's: its rule's ops
        indices = primal_values.indices(node)
        seed_sums = tuple(incoming[slots[i]] for i in vjp.seeded)
        grads = tuple(edge.requires_grad for edge in node.inputs)
        for edge, result in zip(node.inputs, vjp.results, strict=True):
            if result is not None and edge.requires_grad:
                contributions.setdefault(edge.key, []).append(("node", len(graphs), result))
        graphs.append(vjp)
        seeds.append(seed_sums)
        primals.append(indices)
        key.append((node.graph.structure, tuple(slots), needed, grads, seed_sums,
                    indices))  # fmt: skip
    if len(graphs) < 2:
        return None
    sums = tuple(tuple(contributions.get(k, ())) for k in wanted)
    key.append(sums)
    return _Sweep(tuple(graphs), tuple(seeds), tuple(primals), sums, tuple(primal_values.inputs),
                  tuple(key))  # fmt: skip


def _splice(sweep: _Sweep, seed_count: int) -> SplicedGraph:
    """The sweep's VJP graphs inlined into one graph (see the module docstring)."""
    builder = GraphBuilder()
    seed_ids = [builder.add_input(Name(f"s{i}")) for i in range(seed_count)]
    primal_ids = [builder.add_input(Name(f"p{i}")) for i in range(len(sweep.primal_inputs))]
    node_outputs: list[list[int]] = []

    def local_of(source: Source) -> int:
        if source[0] == "seed":
            return seed_ids[source[1]]
        return node_outputs[source[1]][source[2]]  # type: ignore[misc]

    def total(sum_of: Sum) -> int | None:
        ids = [local_of(s) for s in sum_of]
        if not ids:
            return None
        result = ids[0]
        for other in ids[1:]:  # left to right, as the per-node path accumulates
            (result,) = builder.add_operation(Add(), [result, other], Primary())
        return result

    for vjp, seed_sums, primals in zip(sweep.graphs, sweep.seeds, sweep.primals, strict=True):
        arguments = [total(s) for s in seed_sums] + [primal_ids[p] for p in primals]
        node_outputs.append(inline(builder, vjp.recorded.graph, arguments))  # type: ignore[arg-type]
    results = splicing.set_results(builder, [total(s) for s in sweep.wanted], seed_ids)
    return SplicedGraph(RecordedGraph.from_graph(builder.build()), results)


def spliced_cotangents(
    roots: Sequence[tuple[Tensor, Tensor]],
    wanted: Sequence[ValueKey],
    executor: BackwardExecutor,
) -> dict[ValueKey, Tensor] | None:
    """The cotangents of the ``wanted`` keys that some contribution reaches, by one
    spliced graph; None: the per-node path (``backward_recorded``) runs."""
    sweep = _sweep(roots, wanted)
    if sweep is None:
        return None
    spliced = _MEMO.get(executor, sweep.key, lambda: _splice(sweep, len(roots)))
    if spliced is None:
        return None
    seeds = [seed for _, seed in roots]
    given = [eager_input(s) for s in seeds]
    recorded = run_recorded(executor, spliced.graph, [*given, *sweep.primal_inputs])
    found = pick(spliced.results, recorded, seeds)
    return {k: t for k, t in zip(wanted, found, strict=True) if t is not None}

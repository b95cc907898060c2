"""``CompiledExecutor.run_graph``: a whole graph (a ``@tc.function`` forward, forward-mode
tangents, higher-order graphs) as one native plan.

Plans are kept by ``(graph structure, input types)`` in the executor's ``_graph_plans``
(single flight under its lock, bounded by ``memory.max_entries``); the last plan of a
structure is tried first through its generated fast call (``executors.graph_fast``),
which checks every input's shape, strides and dtype. A plan still compiling in the
background runs its program by numpy (``compiler.interpret``); a graph that does not
compile runs on ``reference`` (the graph itself, op by op).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tidu_compile.compiler.interpret import evaluate_program
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.compiler.program import graph_program
from tidu_compile.eager import RecordedGraph
from tidu_compile.executors.node_plans import REFERENCE_ONLY, bound_plan
from tidu_compile.executors.tiered import Submitted
from tidu_compile.ops.base import type_of

__all__ = ["graph_runner", "run_graph"]


def run_graph(
    self: Any, graph: RecordedGraph, inputs: Sequence[Any],
    reference: Callable[[RecordedGraph, Sequence[Any]], list[Any]],
) -> list[Any]:  # fmt: skip
    """``graph``'s outputs for ``inputs`` on the ``CompiledExecutor`` ``self`` (its plan
    tables, lock and stats), ``reference`` when no native plan is ready."""
    if len(inputs) != len(graph.input_keys):
        raise ValueError(
            f"inputs: {graph!r} takes {len(graph.input_keys)} inputs, got {len(inputs)}"
        )
    results = self._graph_fast.run(graph.structure, inputs)  # the last plan, if it fits
    if results is not None:
        self.stats.memory_hits += 1
        return results
    try:
        types = tuple(type_of(v) for v in inputs)
    except (AttributeError, TypeError):  # not arrays: a user's own operand type
        return reference(graph, inputs)
    key = (graph.structure, types)
    plan = self._graph_plans.get(key)
    if plan is None or (type(plan) is Submitted and plan.ready()):
        with self._lock:  # single flight, as for backward plans
            plan = self._graph_plans.get(key)
            if plan is None:
                plan = self._guarded(
                    lambda: bound_plan(self._obtain(graph_program(graph, types)))
                )
                if len(self._graph_plans) >= self.memory.max_entries:
                    self._graph_plans.clear()  # bounded; plans come back from disk
                    self._graph_fast.clear()
                self._graph_plans[key] = plan
            elif type(plan) is Submitted and plan.ready():
                submitted = plan
                plan = self._guarded(lambda: bound_plan(self.tiered.collect(submitted)))
                self._graph_plans[key] = plan
    elif type(plan) is BoundPlan:
        self.stats.memory_hits += 1
    if type(plan) is Submitted:  # compiling in the background: its program, op by op
        self.stats.background_runs += 1
        return evaluate_program(plan.program, inputs)
    if plan is REFERENCE_ONLY:
        self.stats.fallbacks += 1
        return reference(graph, inputs)
    self.stats.fallbacks += plan.plan.fallback_count
    if not plan.plan.fallback_count:
        self._graph_fast.remember(graph.structure, key, plan)
    return plan.run(list(inputs), check=True)

def graph_runner(self: Any, graph: RecordedGraph) -> Callable[[Sequence[Any]], list[Any]]:
    """``run_graph`` for calls that all pass inputs of one set of types (a loop body,
    once per iteration): once the graph's native plan is bound, later calls run it
    directly, without the per-call lookup and argument checks."""
    bound: list[BoundPlan] = []

    def run(inputs: Sequence[Any]) -> list[Any]:
        if bound:
            return bound[0].run(inputs, check=False)
        results = self.run_graph(graph, inputs)
        plan = self._graph_plans.get((graph.structure, tuple(type_of(v) for v in inputs)))
        if type(plan) is BoundPlan and not plan.plan.fallback_count:
            bound.append(plan)
        return results

    return run

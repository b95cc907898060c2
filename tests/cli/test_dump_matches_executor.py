"""``tidu-compile dump`` shows what runs: for every workload of the benchmark (small
sizes, per-op and composite recording) and for losses with higher-order and forward-mode
nodes on the tape, the dumped ``loops`` IR of each backward node is the IR the compiled
executor read its plan from."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tidu_compile.tools.bench.row import Workload
from tidu_compile.tools.bench.tidu_runner import record
from tidu_compile.tools.bench.workloads import (
    GROUPS,
    make_w1,
    make_w2,
    make_w3,
    make_w4,
)
from tidu_compile.tools.bench.workloads_indexing import make_w5, make_w6
from tidu_compile.tools.bench.workloads_linalg import make_w7
from tidu_compile.tools.dump import backward_nodes, stage_text

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.compiler import native, pipeline
from tidu_compile.compiler.plan_builder import node_function
from tidu_compile.executors.compiled import CompiledExecutor

WORKLOADS = [
    workload
    for composite in (False, True)
    for workload in (
        make_w1(1000, composite=composite),
        make_w2(9, composite=composite),
        make_w3("float32", 8, 12, 16, 3, composite=composite),
        make_w3("float64", 8, 12, 16, 3, composite=composite),
        make_w4(16, 24, composite=composite),
        make_w5(12, 7, 5, composite=composite),
        make_w6(3, 4, composite=composite),
        make_w7(6, composite=composite),
    )
]


def test_every_workload_group_is_covered() -> None:
    covered = {(w.group, w.recording) for w in WORKLOADS}
    assert covered == {(g, r) for g in GROUPS for r in ("per-op", "composite")}


def assert_dump_is_what_runs(
    loss: Any, wrt: list[Any], monkeypatch: pytest.MonkeyPatch, derived: bool = False
) -> None:
    """Run ``loss``'s backward on a fresh compiled executor, keeping the ``loops`` IR of
    every program it lowers (compiled, or with object code its kernels share with
    another: a generic hit), then compare each dumped node with it. ``derived``: the
    tape holds VJP or JVP graphs of nodes (their seed or tangent inputs are ``d0``...)."""
    executed: dict[str, str] = {}  # node function name -> the loops IR the plan came from
    build_plan = pipeline.build_plan

    def spy(module: Any, program: Any) -> Any:
        executed[node_function(module).sym_name.data] = str(module)
        return build_plan(module, program)

    monkeypatch.setattr(pipeline, "build_plan", spy)
    executor = CompiledExecutor(cache_dir=False)
    tc.grad(loss, wrt, executor=executor)
    stats = executor.stats
    assert stats.fallbacks == 0 and stats.compiles + stats.generic_hits == len(executed) > 0

    seen = set()
    nodes = backward_nodes(loss)
    assert derived == any("d0" in map(str, n.recorded.input_keys) for n in nodes)
    for node in nodes:
        name = f"tidu_{native.program_digest(node.program())[:24]}"
        assert name in executed, f"{node.title()}: the executor lowered no such program"
        seen.add(name)
        assert stage_text(node, "loops") == executed[name].replace(name, f"node{node.index}")
    assert seen == set(executed)  # and every lowered program is a dumped node's


@pytest.mark.parametrize("workload", WORKLOADS, ids=[w.key for w in WORKLOADS])
def test_dumped_loops_are_the_executed_loops(
    workload: Workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    # recorded by the reference executor: a CompiledExecutor's joint forward would give a
    # composite's gradient with its forward (``frontend.joint_forward``), and the node
    # would first fill in its kept values by the forward program (not a backward node)
    with tc.use_executor(tc.ReferenceExecutor()):
        loss, wrt, _ = record(workload, workload.make_inputs(0))
    assert_dump_is_what_runs(loss, wrt, monkeypatch)


def inputs() -> tuple[Any, Any]:
    rng = np.random.default_rng(3)
    return (tc.tensor(rng.normal(size=6), requires_grad=True),
            tc.tensor(rng.normal(size=6), requires_grad=True))  # fmt: skip


def test_higher_order_nodes_are_dumped_as_they_run(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = inputs()
    (gx,) = tc.grad(tc.sum(tc.tanh(x * y) * y), [x], create_graph=True)
    assert_dump_is_what_runs(tc.sum(gx * gx), [x, y], monkeypatch, derived=True)


def test_forward_mode_nodes_are_dumped_as_they_run(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = inputs()
    _, tangent = func.jvp(lambda a: tc.sum(tc.exp(a) * y), (x,), (tc.tensor(np.ones(6)),))
    assert_dump_is_what_runs(tangent * tangent, [x, y], monkeypatch, derived=True)

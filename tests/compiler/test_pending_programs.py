"""While a worker compiles a node's (or a graph's) program, that program runs by numpy.

The node's ``PendingPlan`` holds the very program the native code will run; until the
code is back, ``compiler.interpret.evaluate_program`` evaluates it op by op, so the
reference path (linearize, transpose, evaluate) is not taken and only the needed
cotangents are computed. Here the workers never answer (``helpers.pending``), so every
call runs pending; results must equal the ``ReferenceExecutor``'s. (Every op of the
table runs pending too: ``tests/ops/test_op_autodiff.py``'s adjoint test.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers.pending import never_compiling_executor
from tidu_compile.tools.bench.row import Workload
from tidu_compile.tools.bench.workloads import make_w1, make_w2, make_w3, make_w4
from tidu_compile.tools.bench.workloads_indexing import make_w5, make_w6

import tidu_compile as tc
from tidu_compile import Name, ops
from tidu_compile.compiler.interpret import evaluate_program
from tidu_compile.compiler.program import graph_program
from tidu_compile.eager import RecordedGraph
from tidu_compile.executors import graph_runs
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.graph import GraphBuilder, Primary
from tidu_compile.ops.base import type_of

WORKLOADS = [
    make_w1(50),
    make_w1(50, dtype="float32", composite=True),
    make_w2(8, composite=True),
    make_w3("float32", batch=6, features=5, hidden=4, outputs=3),
    make_w3("float64", batch=6, features=5, hidden=4, outputs=3, composite=True),
    make_w4(7, 5),
    make_w5(rows=12, features=6, classes=4, composite=True),
    make_w6(batch=3, size=4),
]


@pytest.fixture
def never_compiled(monkeypatch: pytest.MonkeyPatch) -> CompiledExecutor:
    """An executor whose programs stay pending (``helpers.pending``), and which must not
    fall back to the reference path (node or graph) meanwhile."""

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a pending program ran on the reference path")

    monkeypatch.setattr(CompiledExecutor, "_run_reference", forbidden)
    run_graph = graph_runs.run_graph
    monkeypatch.setattr(graph_runs, "run_graph",
                        lambda self, graph, inputs, reference: run_graph(self, graph, inputs,
                                                                        forbidden))  # fmt: skip
    return never_compiling_executor()


def _gradients(workload: Workload, executor: tc.BackwardExecutor, seed: int) -> list:
    arrays = workload.make_inputs(seed)
    tensors = [tc.tensor(a, requires_grad=i in workload.grad_inputs)
               for i, a in enumerate(arrays)]  # fmt: skip
    wrt = [tensors[i] for i in workload.grad_inputs]
    with tc.use_executor(executor):
        return tc.grad(workload.tidu_loss(*tensors), wrt, executor=executor)


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: f"{w.key} {w.recording}")
def test_pending_nodes_run_their_programs(never_compiled: CompiledExecutor,
                                          workload: Workload) -> None:  # fmt: skip
    rtol = 1e-5 if workload.dtype == "float32" else 1e-12
    for seed in range(2):
        got = _gradients(workload, never_compiled, seed)
        want = _gradients(workload, tc.ReferenceExecutor(), seed)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
    stats = never_compiled.stats
    assert stats.background_runs > 0 and stats.fallbacks == 0 and stats.compiles == 0


def test_a_pending_node_computes_only_the_needed_cotangents(
    never_compiled: CompiledExecutor,
) -> None:
    # x @ w with only w requiring grad: the pending program has no x-cotangent product.
    x = tc.tensor(np.arange(12.0).reshape(3, 4))
    w = tc.tensor(np.linspace(-1.0, 1.0, 8).reshape(4, 2), requires_grad=True)
    (got,) = tc.grad(tc.sum(tc.tanh(x @ w)), [w], executor=never_compiled)
    want = x.numpy().T @ (1 - np.tanh(x.numpy() @ w.numpy()) ** 2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    (plan,) = (p for entry in never_compiled._entries_by_linear.values()
               for p in entry.plans.values() if "DotGeneral" in str(p.submitted.program))
    program = plan.submitted.program
    assert plan.needed is not None and program.results.count(None) == 1
    assert str(program).count("DotGeneral") == 1  # w's cotangent only


def test_a_pending_scan_runs_its_program(never_compiled: CompiledExecutor) -> None:
    xs = np.linspace(0.1, 0.9, 6)

    def loss(h0: Any) -> Any:
        final, ys = tc.scan(lambda h, x: (tc.tanh(h * x + 0.5), h * h), h0, tc.tensor(xs))
        return tc.sum(ys) + final

    def gradient(executor: tc.BackwardExecutor) -> np.ndarray:
        h0 = tc.tensor(0.3, requires_grad=True)
        with tc.use_executor(executor):
            return tc.grad(tc.function(loss)(h0), [h0], executor=executor)[0]

    np.testing.assert_allclose(gradient(never_compiled), gradient(tc.ReferenceExecutor()),
                               rtol=1e-12)  # fmt: skip
    assert never_compiled.stats.background_runs >= 2  # the forward graph and its backward


def test_evaluate_program_follows_the_program_text() -> None:
    b = GraphBuilder()
    (x,) = [b.add_input(Name("x"))]
    (e,) = b.add_operation(ops.Exp(), [x], Primary())
    (s,) = b.add_operation(ops.Sin(), [x], Primary())
    b.set_outputs(b.add_operation(ops.Mul(), [e, s], Primary()))
    values = np.array([0.5, -1.0, 2.0])
    program = graph_program(RecordedGraph.from_graph(b.build()), [type_of(values)])
    (value,) = evaluate_program(program, [values])
    np.testing.assert_array_equal(value, np.exp(values) * np.sin(values))
    with pytest.raises(ValueError, match="expected 1 arguments, got 2"):
        evaluate_program(program, [values, values])


def test_a_pending_tape_runs_its_captured_program_in_one_go() -> None:
    """With capture, from the second backward of a structure on (the first runs node by
    node; the second builds the whole-tape program and hands it to a worker), a tape whose
    nodes wait for workers runs that program by numpy: one background run per backward,
    the per-node path's values exactly (numpy rounds every op alike)."""
    captured, per_node = never_compiling_executor(capture=True), never_compiling_executor()
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 4))
    b = rng.standard_normal(4)

    def gradients(executor: CompiledExecutor, x: np.ndarray) -> list:
        params = [tc.tensor(w, requires_grad=True), tc.tensor(b, requires_grad=True)]
        loss = tc.sum(tc.tanh(tc.tensor(x) @ params[0] + params[1]) ** 2)
        return tc.grad(loss, params, executor=executor)

    for step in range(4):
        x = rng.standard_normal((3, 5))
        runs = captured.stats.background_runs
        got, want = gradients(captured, x), gradients(per_node, x)
        for g, e in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, e)
        one_go = captured.stats.background_runs - runs == 1
        assert one_go == (step >= 1), (step, captured.stats.background_runs - runs)
    assert captured.stats.captured_runs == 0 and captured.stats.fallbacks == 0

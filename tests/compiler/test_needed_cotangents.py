"""Work the backward does not need is not done: cotangents of inputs that need no gradient
are pruned from the compiled program, and retained contraction results are read, not
recomputed. Gradients stay equal to the reference executor's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.ad import LinearizedGraph
from tidu_compile.compiler.plan import LibraryStep
from tidu_compile.compiler.program import build_program, prune_results
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.graph import ValueKey
from tidu_compile.ops.base import TensorType, type_of
from tidu_compile.ops.elementwise import Tanh
from tidu_compile.ops.structural import DotGeneral

REFERENCE = tc.ReferenceExecutor()


def _plans(executor: CompiledExecutor) -> list[Any]:
    return [
        compiled.plan.plan
        for entry in executor._entries_by_linear.values()  # noqa: SLF001 - inspecting plans
        for compiled in entry.plans.values()
    ]


def _contractions(executor: CompiledExecutor) -> list[DotGeneral]:
    return [
        step.op
        for plan in _plans(executor)
        for step in plan.steps
        if isinstance(step, LibraryStep) and isinstance(step.op, DotGeneral)
    ]


def _matmul_entry(executor: CompiledExecutor) -> Any:
    (entry,) = [e for e in executor._entries_by_linear.values()  # noqa: SLF001
                if "DotGeneral" in repr(e.recorded)]  # fmt: skip
    return entry


def test_prune_results_drops_dead_instructions_and_arguments() -> None:
    x = tc.tensor(np.ones((2, 3)))
    w = tc.tensor(np.ones((3, 4)), requires_grad=True)
    executor = CompiledExecutor(False)
    tc.grad(tc.sum(x @ w), [w], executor=executor)
    entry = _matmul_entry(executor)
    f64 = "float64"
    saved = {entry.saved_order[0]: TensorType((2, 3), f64),
             entry.saved_order[1]: TensorType((3, 4), f64)}  # fmt: skip
    full = build_program(entry.recorded, entry.linear, [TensorType((2, 4), f64)], saved,
                         entry.transposed)  # fmt: skip
    pruned = prune_results(full, (False, True))
    assert len(full.instrs) == 4 and full.arg_count == 3
    assert len(pruned.instrs) == 2 and pruned.arg_count == 2  # w is no longer read
    assert pruned.results[0] is None and pruned.results[1] == len(pruned.types) - 1
    assert [s.kind for s in pruned.arg_sources] == ["seed", "saved"]
    assert [i.op for i in pruned.instrs] == [i.op for i in full.instrs[:2]]
    assert str(prune_results(full, (True, True))) == str(full)
    with pytest.raises(ValueError, match="needed"):
        prune_results(full, (True,))


def test_an_input_without_grad_gets_no_contraction() -> None:
    rng = np.random.default_rng(0)
    x = tc.tensor(rng.standard_normal((5, 3)))  # needs no gradient
    w = tc.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    loss = tc.sum(tc.tanh(x @ w))
    executor = CompiledExecutor(False)
    (got,) = tc.grad(loss, [w], executor=executor)
    (want,) = tc.grad(loss, [w], executor=REFERENCE)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    (contraction,) = _contractions(executor)  # only x^T @ ct: no ct @ w^T
    assert contraction.lhs_shape == (5, 3)


def test_a_node_shared_by_needed_and_unneeded_inputs_gets_two_plans() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    executor = CompiledExecutor(False)
    for grads in ((True, True), (False, True), (True, False), (True, True)):
        x = tc.tensor(a, requires_grad=grads[0])
        w = tc.tensor(b, requires_grad=grads[1])
        loss = tc.sum(x @ w)
        wanted = [t for t, g in zip((x, w), grads, strict=True) if g]
        got = tc.grad(loss, wanted, executor=executor)
        want = tc.grad(loss, wanted, executor=REFERENCE)
        for g, r in zip(got, want, strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-12)
    assert len(_matmul_entry(executor).plans) == 3  # all, only w, only x


def test_composite_functions_read_retained_contractions() -> None:
    rng = np.random.default_rng(2)
    x = tc.tensor(rng.standard_normal((6, 5)))
    w1 = tc.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    w2 = tc.tensor(rng.standard_normal((4, 3)), requires_grad=True)

    @tc.function
    def mlp(x: tc.Tensor, w1: tc.Tensor, w2: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.tanh(x @ w1) @ w2)

    loss = mlp(x, w1, w2)
    executor = CompiledExecutor(False)
    got = tc.grad(loss, [w1, w2], executor=executor)
    want = tc.grad(loss, [w1, w2], executor=REFERENCE)
    for g, r in zip(got, want, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-12)
    # dW2 = h^T ct, dh = ct W2^T, dW1 = x^T dz: no forward x @ w1 recomputed, no dx.
    shapes = sorted(c.lhs_shape + c.rhs_shape for c in _contractions(executor))
    assert len(shapes) == 3 and (6, 5, 5, 4) not in shapes
    # h = tanh(x @ w1) is an operand of a contraction: retained, so no tanh is recomputed.
    trace = loss._trace
    entry = next(iter(executor._entries_by_linear.values()))  # noqa: SLF001
    saved = {k: type_of(v) for k, v in trace.saved_values.items()}
    program = build_program(entry.recorded, entry.linear, [type_of(np.ones(()))], saved,
                            entry.transposed, entry.saved_order)  # fmt: skip
    assert not any(isinstance(i.op, Tanh) for i in program.instrs), str(program)


class _CountingCompiled(CompiledExecutor):
    """A subclass that overrides only ``run_transposed_linear``: it must still be called."""

    def __init__(self) -> None:
        super().__init__(False)
        self.calls = 0

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any]:
        self.calls += 1
        return super().run_transposed_linear(linear, cotangent_out, external_data, ctx)


def test_overrides_of_run_transposed_linear_still_see_every_node() -> None:
    x = tc.tensor(np.ones((2, 3)))
    w = tc.tensor(np.ones((3, 2)), requires_grad=True)
    executor = _CountingCompiled()
    (got,) = tc.grad(tc.sum(x @ w), [w], executor=executor)
    np.testing.assert_array_equal(got, np.full((3, 2), 2.0))
    assert executor.calls == 2  # the sum node and the (partly needed) matmul node


def test_needed_flags_must_match_the_inputs() -> None:
    x = tc.tensor(np.ones(3), requires_grad=True)
    executor = CompiledExecutor(False)
    tc.grad(tc.sum(x * 2.0), [x], executor=executor)
    entry = next(iter(executor._entries_by_linear.values()))  # noqa: SLF001
    with pytest.raises(ValueError, match="needed"):
        executor.run_transposed_linear_for(entry.linear, [np.ones(())], {}, None, (True,) * 3)

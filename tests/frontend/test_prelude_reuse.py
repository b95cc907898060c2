"""A trace called again with equal integer arguments reuses its checked prelude.

``ForwardPlan.check_indices`` evaluates the operations on a trace's integer arguments
(the *prelude*: ``tokens[t]``) with numpy and range-checks every index before native
code runs. A call whose integer arguments equal the last checked call's reuses that
call's prelude values (both kept as copies, when small). These tests hold the reuse to
what evaluating afresh gives: equal content reuses, other content (a new array, the
same array changed, an index out of range) is evaluated and checked again, and large
integer arguments are never kept.
"""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend import composite_forward

WEIGHTS = np.linspace(-1.0, 1.0, 12).reshape(6, 2)


def _loss(table: tc.Tensor, tokens: tc.Tensor) -> tc.Tensor:
    total = tc.sum(table[tokens[0]] * table[tokens[1]])
    return total + tc.sum(table[tokens[2:5]] ** 2)


@pytest.fixture
def prelude_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a prelude was evaluated."""
    runs: list[int] = []
    evaluate = composite_forward._evaluate_nodes

    def counted(nodes, values):  # type: ignore[no-untyped-def]
        runs.append(len(nodes))
        evaluate(nodes, values)

    monkeypatch.setattr(composite_forward, "_evaluate_nodes", counted)
    return runs


def _gradient(traced, tokens: np.ndarray, executor: tc.BackwardExecutor) -> np.ndarray:  # type: ignore[no-untyped-def]
    table = tc.tensor(WEIGHTS, requires_grad=True)
    with tc.use_executor(executor):
        return tc.grad(traced(table, tc.tensor(tokens)), [table], executor=executor)[0]


def _reference(tokens: np.ndarray) -> np.ndarray:
    table = tc.tensor(WEIGHTS, requires_grad=True)
    with tc.use_executor(tc.ReferenceExecutor()):
        return tc.grad(_loss(table, tc.tensor(tokens)), [table])[0]


def test_equal_integer_arguments_reuse_the_checked_prelude(prelude_runs: list[int]) -> None:
    traced = tc.function(_loss)
    executor = CompiledExecutor(False, background=False)
    tokens = np.array([1, 4, 0, 5, 2, 3])
    for _ in range(3):  # the trace, then twice the same tokens (one a new array)
        got = _gradient(traced, tokens.copy(), executor)
        np.testing.assert_allclose(got, _reference(tokens), rtol=1e-12)
    assert prelude_runs and len(prelude_runs) == 1  # evaluated by the first call only
    other = np.array([2, 2, 1, 0, 5, 4])
    np.testing.assert_allclose(_gradient(traced, other, executor), _reference(other),
                               rtol=1e-12)  # fmt: skip
    assert len(prelude_runs) == 2
    other[0] = 3  # the same array changed in place: evaluated again
    np.testing.assert_allclose(_gradient(traced, other, executor), _reference(other),
                               rtol=1e-12)  # fmt: skip
    assert len(prelude_runs) == 3


def test_an_index_out_of_range_after_a_reused_call_still_raises() -> None:
    traced = tc.function(_loss)
    tokens = np.array([1, 4, 0, 5, 2, 3])
    for _ in range(2):
        _gradient(traced, tokens, tc.get_default_executor())
    with pytest.raises(IndexError):
        _gradient(traced, np.array([1, 6, 0, 5, 2, 3]), tc.get_default_executor())
    np.testing.assert_allclose(_gradient(traced, tokens, tc.get_default_executor()),
                               _reference(tokens), rtol=1e-12)  # fmt: skip


def test_a_large_prelude_is_evaluated_every_call(prelude_runs: list[int]) -> None:
    """Beyond ``REUSED_BYTES`` of integer arguments nothing is kept (nor copied)."""
    traced = tc.function(_loss)
    big = np.resize(np.array([1, 4, 0, 5, 2, 3]), composite_forward.REUSED_BYTES // 8 + 1)
    for _ in range(3):
        _gradient(traced, big, tc.get_default_executor())
    assert len(prelude_runs) == 3  # every call (the tracing call too)
    np.testing.assert_allclose(_gradient(traced, big, tc.get_default_executor()),
                               _reference(big), rtol=1e-12)  # fmt: skip

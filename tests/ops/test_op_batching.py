"""Every op's batching rule (``batch_rule``, ``ops.batching``), table-driven.

For each case of ``op_cases.CASES`` and each way of batching its inputs (all at axis 0;
each input alone, the others shared; all at their last axis), the rule's graph run on
``B`` stacked examples equals the stack of the op on each example: on the reference
executor for every case, and compiled (no fallback) for one case per op class, all its
batchings as outputs of one graph. A missing rule fails naming the op.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from op_cases import CASES, Case, params

import tidu_compile as tc
from tidu_compile import Name, RecordedGraph, ops
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.ops.batching import (
    Batcher,
    BatchRuleResult,
    batch_by_moving_axis,
    batch_sequentially,
    has_batch_rule,
    materialized,
)

SIZE = 3


def test_every_op_of_the_table_has_a_batching_rule() -> None:
    missing = sorted(name for name, op in ops.OP_TABLE.items() if not has_batch_rule(op))
    assert not missing, f"ops without a batch_rule (README 'Adding an op'): {missing}"


def _batchings(case: Case) -> Iterator[tuple[int | None, ...]]:
    """Which axis of each input carries the batch: all first, each alone, all last."""
    count = len(case.args)
    yield (0,) * count
    if count > 1:
        for i in range(count):
            yield tuple(0 if j == i else None for j in range(count))
    if all(a.shape for a in case.args):
        yield tuple(len(a.shape) for a in case.args)


def _own_rule(op: ops.TensorOp, b: Batcher, ids: list[int], dims: list[int | None]
              ) -> BatchRuleResult:  # fmt: skip
    return op.batch_rule(b, ids, dims)


def _add_batching(
    b: Batcher, case: Case, dims: tuple[int | None, ...], examples: list[list[np.ndarray]],
    rule: Any = _own_rule,
) -> list[int]:
    """Inputs of ``case`` batched at ``dims`` into ``b``; the ids of the results with the
    batch axis first."""
    ids = []
    for i, dim in enumerate(dims):
        if dim is None:
            array = examples[0][i]
        else:
            array = np.stack([example[i] for example in examples], axis=dim)
        ids.append(b.add_input(Name(f"in{len(b.input_data)}"), ops.type_of(array), array))
    if all(d is None for d in dims):
        return b.add(case.op, ids)
    outputs, out_dims = rule(case.op, b, ids, list(dims))
    return [materialized(b, o, d) for o, d in zip(outputs, out_dims, strict=True)]


def _expected(case: Case, dims: tuple[int | None, ...],
              examples: list[list[np.ndarray]]) -> list[np.ndarray]:  # fmt: skip
    per_example = [case.op.evaluate(*[examples[0][i] if d is None else example[i]
                                      for i, d in enumerate(dims)])
                   for example in examples]  # fmt: skip
    return [np.stack([r[slot] for r in per_example]) for slot in range(len(per_example[0]))]


def _examples(case: Case) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(len(case.id))
    return [case.inputs(rng) for _ in range(SIZE)]


def _graph(case: Case, rule: Any = _own_rule
           ) -> tuple[RecordedGraph, list[np.ndarray], list[np.ndarray]]:  # fmt: skip
    """One graph holding every batching of ``case`` (by the op's own ``rule`` unless
    given): its inputs and expected outputs."""
    b, examples = Batcher(SIZE), _examples(case)
    outputs: list[int] = []
    expected: list[np.ndarray] = []
    for dims in _batchings(case):
        outputs += _add_batching(b, case, dims, examples, rule)
        expected += _expected(case, dims, examples)
    b.builder.set_outputs(outputs)
    # the inputs in order: the batched arguments, and the constants rules added (iotas)
    return RecordedGraph.from_graph(b.builder.build()), b.input_data, expected


def _assert_equal(got: list[np.ndarray], expected: list[np.ndarray], case: Case) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype, (case.id, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-5 if e.dtype.itemsize <= 8 else 1e-12,
                                   atol=1e-6, err_msg=case.id)  # fmt: skip


@pytest.mark.parametrize("case", params(CASES))
def test_batched_op_is_the_stack_of_its_examples(case: Case) -> None:
    recorded, inputs, expected = _graph(case)
    values = tc.ReferenceExecutor().run_graph(recorded, inputs)
    _assert_equal([np.asarray(v) for v in values], expected, case)


def _one_case_per_op() -> list[Case]:
    chosen: dict[type, Case] = {}
    for case in CASES:
        current = chosen.get(type(case.op))
        if current is None or (case.args[0].dtype == "float64" and
                               current.args[0].dtype != "float64"):  # fmt: skip
            chosen[type(case.op)] = case
    return list(chosen.values())


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompiledExecutor:
    return CompiledExecutor(tmp_path_factory.mktemp("batching-cache"), background=False)


@pytest.mark.parametrize("case", params(_one_case_per_op()))
def test_batched_op_compiles_with_no_fallback(case: Case, compiled: CompiledExecutor) -> None:
    recorded, inputs, expected = _graph(case)
    before = compiled.stats.fallbacks
    values = compiled.run_graph(recorded, inputs)
    _assert_equal([np.asarray(v) for v in values], expected, case)
    assert compiled.stats.fallbacks == before, case.id


@pytest.mark.parametrize("case", params(_one_case_per_op()))
def test_the_sequential_rule_batches_any_op(case: Case) -> None:
    recorded, inputs, expected = _graph(case, batch_sequentially)
    _assert_equal([np.asarray(v) for v in tc.ReferenceExecutor().run_graph(recorded, inputs)],
                  expected, case)  # fmt: skip


#: Ops that take leading batch axes: elementwise ones, and a reshape (its shape fields
#: get the batch size in front).
LEADING_AXES = [c for c in _one_case_per_op() if isinstance(c.op, (ops.Elementwise, ops.Reshape))]


@pytest.mark.parametrize("case", params(LEADING_AXES))
def test_the_moving_axis_rule_batches_ops_that_take_leading_axes(case: Case) -> None:
    recorded, inputs, expected = _graph(case, batch_by_moving_axis)
    _assert_equal([np.asarray(v) for v in tc.ReferenceExecutor().run_graph(recorded, inputs)],
                  expected, case)  # fmt: skip

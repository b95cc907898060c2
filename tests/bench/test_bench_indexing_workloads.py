"""W5 and W6: the hand-written numpy gradients against the ReferenceExecutor, and the
compiled executor against both (no fallback)."""

from __future__ import annotations

import numpy as np
import pytest
from tidu_compile.tools.bench.row import Workload, relative_errors
from tidu_compile.tools.bench.workloads import find_workload
from tidu_compile.tools.bench.workloads_indexing import make_w5, make_w6

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

SMALL = [make_w5(12, 7, 5), make_w5(12, 7, 5, composite=True), make_w6(3, 4),
         make_w6(3, 4, composite=True)]  # fmt: skip


def _gradients(workload: Workload, arrays: list[np.ndarray], executor) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    tensors = [tc.tensor(a, requires_grad=i in workload.grad_inputs)
               for i, a in enumerate(arrays)]  # fmt: skip
    loss = workload.tidu_loss(*tensors)
    return tc.grad(loss, [tensors[i] for i in workload.grad_inputs], executor=executor)


@pytest.mark.parametrize("workload", SMALL, ids=lambda w: w.key)
def test_hand_gradients_match_both_executors(workload: Workload) -> None:
    arrays = workload.make_inputs(3)
    hand = workload.numpy_gradients(arrays)
    reference = _gradients(workload, arrays, tc.ReferenceExecutor())
    compiled = CompiledExecutor(cache_dir=False)
    got = _gradients(workload, arrays, compiled)
    assert compiled.stats.fallbacks == 0 and not compiled.stats.errors
    for grads in (reference, got):
        errors = relative_errors(grads, hand)
        assert max(errors) <= 1e-12, dict(zip(workload.grad_names, errors, strict=True))


def test_quick_rows_are_found_by_key() -> None:
    assert find_workload("W5 512x256x50").size == 512
    assert find_workload("W6").size == 64


def test_fused_slices_measure_runs() -> None:
    """The measure checks its two gradients agree; no timing is asserted."""
    from tidu_compile.tools.bench.fused_slices import measure_ratio

    sliced, plain = measure_ratio(50, rounds=1, repeats=1)
    assert sliced > 0 and plain > 0

"""W7, the GP marginal likelihood: the hand-written numpy gradient against both
executors (the compiled one with no fallback), per op and as one ``@tc.function``."""

from __future__ import annotations

import numpy as np
import pytest
from tidu_compile.tools.bench.row import Workload, relative_errors
from tidu_compile.tools.bench.workloads import find_workload
from tidu_compile.tools.bench.workloads_linalg import make_w7

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

SMALL = [make_w7(9), make_w7(9, composite=True)]


def _gradients(workload: Workload, arrays: list[np.ndarray], executor) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    tensors = [tc.tensor(a, requires_grad=i in workload.grad_inputs)
               for i, a in enumerate(arrays)]  # fmt: skip
    with tc.use_executor(executor):
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
        assert max(errors) <= 1e-9, dict(zip(workload.grad_names, errors, strict=True))


def test_rows_are_found_by_key() -> None:
    assert find_workload("W7 n=1024").size == 1024
    assert find_workload("W7 n=256 composite").recording == "composite"

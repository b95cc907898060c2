"""Chunked kernels on several threads: shared rows, private partial sums, odd splits."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.compiler import parallel
from tidu_compile.executors.compiled import CompiledExecutor

REFERENCE = tc.ReferenceExecutor()


@tc.function
def broadcast_loss(a: tc.Tensor, v: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
    """Column vector, row vector and full reductions in one backward kernel."""
    return tc.sum(tc.exp(tc.tanh(a - v) * w) ** 2)


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_threaded_kernels_match_reference(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDU_COMPILE_THREADS", str(threads))
    rng = np.random.default_rng(threads)
    rows, cols = 301, 257  # > PARALLEL_THRESHOLD elements, rows not divisible by threads
    assert rows * cols >= parallel.PARALLEL_THRESHOLD
    a = tc.tensor(rng.standard_normal((rows, cols)), requires_grad=True)
    v = tc.tensor(rng.standard_normal(cols), requires_grad=True)
    w = tc.tensor(rng.standard_normal((rows, 1)), requires_grad=True)
    loss = broadcast_loss(a, v, w)
    executor = CompiledExecutor(False)
    got = tc.grad(loss, [a, v, w], executor=executor)
    want = tc.grad(loss, [a, v, w], executor=REFERENCE)
    for g, r in zip(got, want, strict=True):
        np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-12)
    assert executor.stats.errors == []


def test_thread_count_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "3")
    assert parallel.thread_count() == 3
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "zero")
    with pytest.raises(ValueError, match="TIDU_COMPILE_THREADS"):
        parallel.thread_count()
    monkeypatch.delenv("TIDU_COMPILE_THREADS")
    assert 1 <= parallel.thread_count() <= 8

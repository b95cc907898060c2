"""Chunked kernels on several threads: shared rows, private partial sums, odd splits."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.compiler import parallel
from tidu_compile.compiler.plan import KernelStep
from tidu_compile.executors.compiled import CompiledExecutor

REFERENCE = tc.ReferenceExecutor()


@tc.function
def broadcast_loss(a: tc.Tensor, v: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
    """Column vector, row vector and full reductions in one backward kernel."""
    return tc.sum(tc.exp(tc.tanh(a - v) * w) ** 2)


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_threaded_kernels_match_reference(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDU_COMPILE_THREADS", str(threads))
    monkeypatch.setattr(parallel, "PARALLEL_WORK", 1)  # split every chunked kernel
    rng = np.random.default_rng(threads)
    rows, cols = 301, 257  # rows not divisible by the thread counts
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


def _kernel_steps(executor: CompiledExecutor) -> list[KernelStep]:
    return [
        step
        for entry in executor._entries_by_linear.values()  # noqa: SLF001 - inspecting plans
        for compiled in entry.plans.values()
        for step in compiled.plan.plan.steps
        if isinstance(step, KernelStep)
    ]


def test_work_counts_the_expanded_math() -> None:
    x = tc.tensor(np.linspace(-1.0, 1.0, 1000), requires_grad=True)
    cheap, costly = CompiledExecutor(False), CompiledExecutor(False)
    tc.grad(tc.sum(x * 3.0), [x], executor=cheap)
    tc.grad(tc.function(lambda t: tc.sum(tc.exp(t)))(x), [x], executor=costly)
    cheap_work = max(s.work for s in _kernel_steps(cheap))
    costly_work = max(s.work for s in _kernel_steps(costly))
    for step in _kernel_steps(cheap) + _kernel_steps(costly):
        assert step.work % step.domain_size == 0 and step.work >= step.domain_size
    assert costly_work >= 20 * 1000 and costly_work > 2 * cheap_work  # exp: a polynomial


def test_only_costly_kernels_use_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "2")
    used: list[int] = []
    real_pool = parallel._get_pool  # noqa: SLF001

    def spy(workers: int) -> object:
        used.append(workers)
        return real_pool(workers)

    monkeypatch.setattr(parallel, "_get_pool", spy)
    x = tc.tensor(np.linspace(-1.0, 1.0, 4096), requires_grad=True)
    loss = tc.function(lambda t: tc.sum(tc.tanh(t) * t))(x)
    executor = CompiledExecutor(False)
    want = tc.grad(loss, [x], executor=executor)
    (work,) = [s.work for s in _kernel_steps(executor)]
    assert work < parallel.PARALLEL_WORK and used == []
    monkeypatch.setattr(parallel, "PARALLEL_WORK", work)  # read when a plan is bound
    got = tc.grad(loss, [x], executor=CompiledExecutor(False))
    assert used == [1]  # one pool thread beside the calling one
    np.testing.assert_allclose(got[0], want[0], rtol=1e-15)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_threaded_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's pool threads do not exist in a child: it must not wait for them."""
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "2")
    monkeypatch.setattr(parallel, "PARALLEL_WORK", 1)
    x = tc.tensor(np.linspace(-1.0, 1.0, 4096), requires_grad=True)
    loss = tc.function(lambda t: tc.sum(tc.tanh(t) * tc.exp(t)))(x)
    executor = CompiledExecutor(False)
    (want,) = tc.grad(loss, [x], executor=executor)  # the pool now has a thread
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 if the gradient is right
        try:
            (got,) = tc.grad(loss, [x], executor=executor)
            os._exit(0 if np.array_equal(got, want) else 3)
        finally:
            os._exit(4)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung on the kernel thread pool")

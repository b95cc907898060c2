"""Chunked kernels on several threads: shared rows, private partial sums, odd splits,
chunks claimed by whichever thread asks next."""

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


@pytest.mark.parametrize(("threads", "chunk_work"), [(1, None), (2, None), (3, None), (7, None),
                                                    (2, 1)])  # fmt: skip
def test_threaded_kernels_match_reference(
    threads: int, chunk_work: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDU_COMPILE_THREADS", str(threads))
    monkeypatch.setattr(parallel, "PARALLEL_WORK", 1)  # split every chunked kernel
    monkeypatch.setattr(parallel.ChunkedKernel, "threaded_next", lambda self: True)
    if chunk_work is not None:  # as many chunks as allowed: CHUNKS_PER_THREAD per thread
        monkeypatch.setattr(parallel, "CHUNK_WORK", chunk_work)
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
    real_workers = parallel._get_workers  # noqa: SLF001

    def spy(workers: int) -> object:
        used.append(workers)
        return real_workers(workers)

    monkeypatch.setattr(parallel, "_get_workers", spy)
    x = tc.tensor(np.linspace(-1.0, 1.0, 4096), requires_grad=True)
    loss = tc.function(lambda t: tc.sum(tc.tanh(t) * t))(x)
    executor = CompiledExecutor(False)
    want = tc.grad(loss, [x], executor=executor)
    (work,) = [s.work for s in _kernel_steps(executor)]
    assert work < parallel.PARALLEL_WORK and used == []
    monkeypatch.setattr(parallel, "PARALLEL_WORK", work)  # read when a plan is bound
    threaded = CompiledExecutor(False)
    got = tc.grad(loss, [x], executor=threaded)  # probes one thread first
    assert used == []
    got = tc.grad(loss, [x], executor=threaded)  # then all threads
    assert used == [1]  # one worker thread beside the calling one
    np.testing.assert_allclose(got[0], want[0], rtol=1e-15)


@pytest.mark.parametrize(
    ("extent", "chunks"), [(1000, 3), (64 * 8, 8), (64 * 8 - 1, 8), (5, 5), (7, 2), (10**6, 8)]
)
def test_chunk_bounds_cover_the_rows(extent: int, chunks: int) -> None:
    bounds = parallel.chunk_bounds(extent, chunks)
    assert len(bounds) == chunks + 1 and bounds[0] == 0 and bounds[-1] == extent
    assert all(lo < hi for lo, hi in zip(bounds, bounds[1:], strict=False))
    if extent >= 64 * chunks:
        assert all(b % 64 == 0 for b in bounds[:-1])


def test_chunk_count() -> None:
    chunk = parallel.CHUNK_WORK
    assert parallel.chunk_count(10**6, chunk, 2, has_partial=False) == 2  # at least a thread's
    assert parallel.chunk_count(10**6, 5 * chunk, 2, has_partial=False) == 5
    assert parallel.chunk_count(10**6, 10**3 * chunk, 2, has_partial=False) == (
        2 * parallel.CHUNKS_PER_THREAD)  # fmt: skip
    assert parallel.chunk_count(3, 10**3 * chunk, 2, has_partial=False) == 3  # rows bound it
    assert parallel.chunk_count(10**6, 10**3 * chunk, 2, has_partial=True) == 2


def test_every_chunk_runs_once_and_errors_reach_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "3")
    ranges: list[tuple[int, int]] = []

    def kernel(out: int, lo: int, hi: int) -> None:
        time.sleep(0.001)  # lets the workers claim chunks too
        ranges.append((lo, hi))

    out = np.zeros(10)
    parallel.run_chunked(kernel, [], [out], (), 1000, 10**9, id)
    assert sorted(ranges) == list(zip(parallel.chunk_bounds(1000, 12)[:-1],
                                      parallel.chunk_bounds(1000, 12)[1:], strict=True))

    def failing(out: int, lo: int, hi: int) -> None:
        if lo > 0:
            raise RuntimeError(f"chunk at {lo} failed")

    with pytest.raises(RuntimeError, match="chunk at"):
        parallel.run_chunked(failing, [], [out], (), 1000, 10**9, id)
    ranges.clear()
    parallel.run_chunked(kernel, [], [out], (), 1000, 10**9, id)  # the workers still serve
    assert len(ranges) == 12


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_threaded_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's pool threads do not exist in a child: it must not wait for them."""
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "2")
    monkeypatch.setattr(parallel, "PARALLEL_WORK", 1)
    monkeypatch.setattr(parallel.ChunkedKernel, "threaded_next", lambda self: True)
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


def test_chunked_kernel_probes_then_keeps_the_faster_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Alternate while probing, then the way with the better recent time, the other one
    retried every RETRY_EVERY calls. Time is a fake clock: threaded runs take 3, single 5
    (then the roles swap)."""
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "2")
    clock = [0.0]
    cost = {True: 3.0, False: 5.0}
    ways: list[bool] = []

    def fake_run(*args: object) -> None:
        workers = args[7]
        ways.append(bool(workers))
        clock[0] += cost[bool(workers)]

    def single(*args: object) -> None:
        ways.append(False)
        clock[0] += cost[False]

    monkeypatch.setattr(parallel, "_run", fake_run)
    monkeypatch.setattr(parallel.time, "perf_counter", lambda: clock[0])
    kernel = parallel.ChunkedKernel(single, (), 1000, 10**9, id)
    out = np.zeros(4)
    for _ in range(2 * kernel.PROBES):
        kernel([], [out])
    assert ways == [False, True] * kernel.PROBES
    ways.clear()
    for _ in range(kernel.RETRY_EVERY):
        kernel([], [out])
    assert ways.count(False) == 1 and ways[kernel.RETRY_EVERY - 2 * kernel.PROBES] is False
    cost[True], cost[False] = 9.0, 1.0  # load changed: threads now lose
    ways.clear()
    for _ in range(3 * kernel.RETRY_EVERY):
        kernel([], [out])
    assert ways[-kernel.RETRY_EVERY :].count(True) == 1  # only the retry


@pytest.mark.parametrize("threaded", [False, True])
def test_partial_sums_do_not_depend_on_the_way(
    threaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread or two, a kernel with partial sums is cut into the same chunks: the
    gradients are bit for bit the same."""
    monkeypatch.setenv("TIDU_COMPILE_THREADS", "2")
    monkeypatch.setattr(parallel, "PARALLEL_WORK", 1)
    rng = np.random.default_rng(5)
    a = tc.tensor(rng.standard_normal((301, 257)), requires_grad=True)
    v = tc.tensor(rng.standard_normal(257), requires_grad=True)
    w = tc.tensor(rng.standard_normal((301, 1)), requires_grad=True)
    loss = broadcast_loss(a, v, w)
    monkeypatch.setattr(parallel.ChunkedKernel, "threaded_next", lambda self: True)
    want = tc.grad(loss, [a, v, w], executor=CompiledExecutor(False))
    monkeypatch.setattr(parallel.ChunkedKernel, "threaded_next", lambda self: threaded)
    got = tc.grad(loss, [a, v, w], executor=CompiledExecutor(False))
    for g, r in zip(got, want, strict=True):
        assert np.array_equal(g, r)

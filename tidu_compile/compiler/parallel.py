"""Running a chunked kernel on several threads.

A chunked kernel computes rows ``[lo, hi)`` of its domain's dimension 0. Costly kernels
(``KernelStep.work >= PARALLEL_WORK``) are cut into chunks that the calling thread and
a few long-lived worker threads claim one at a time (ctypes releases the GIL during the
native call) until none is left:

* the calling thread starts on the first chunk at once: waking a worker costs 10-100 us
  on a 2-vCPU VM (more when the other vCPU is busy), and a worker that wakes late
  simply claims fewer chunks instead of holding everyone up, as it did when the rows
  were split once into equal halves;
* a chunk is about ``CHUNK_WORK`` (~50 us of one thread), at least one per thread and
  at most ``CHUNKS_PER_THREAD`` per thread; chunk bounds are multiples of 64 rows where
  that leaves every chunk some rows, so vector loops seldom end in a remainder;
* a worker waits on a lock of its own; handing it a job is one lock release (no
  futures, no queues: a lock round trip is ~19 us here, a ``ThreadPoolExecutor``
  future ~27 us, and the ``np.linspace`` that cut the rows cost 17 us alone).

Measured on the W1 f64 backward kernel (AMD EPYC, 2 vCPUs, under load from other
processes), one thread / two before / two now: n = 1e5 485 / 687 / 589 us, n = 3e4
177 / 825 / 204 us. Two threads do not always win (there, two FP-bound processes each
ran at half speed), so ``ChunkedKernel``, which the compiled plans use, measures both
ways on each kernel and keeps the faster.

Outputs that the kernel reduces over dimension 0 are private per chunk and combined
afterwards (added up, or their maxima, minima or products: ``COMBINE``; such kernels are
cut into one chunk per thread); every other output is shared (chunks write disjoint
rows).

``TIDU_COMPILE_THREADS`` sets the thread count (default: the CPUs this process may use,
at most 8); 1 turns threading off. A forked child starts workers of its own (the
parent's threads do not exist there).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.compiler import buffers

__all__ = [
    "CHUNK_WORK", "COMBINE", "PARALLEL_WORK", "ChunkedKernel", "run_chunked", "thread_count",
]  # fmt: skip

#: Estimated work (elements x loop-body operations, see ``KernelStep.work``) from which a
#: kernel runs on several threads: about 0.1 ms of one thread's time for f64 math on the
#: benchmark machine.
PARALLEL_WORK = 6_000_000

#: Work per chunk: about 50 us of one thread, several times the cost of claiming one.
CHUNK_WORK = 3_000_000

CHUNKS_PER_THREAD = 4

#: How the chunks' private partial results combine, by the kernel result's combiner
#: (NaN-propagating max and min, as the kernels; on bool, ``or`` and ``and``).
COMBINE: dict[str, np.ufunc] = {
    "add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply,
}  # fmt: skip

_ALIGN = 64  # rows: chunk bounds are multiples of this when every chunk still gets rows


def thread_count() -> int:
    configured = os.environ.get("TIDU_COMPILE_THREADS")
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            raise ValueError(
                f"TIDU_COMPILE_THREADS must be a positive integer, got {configured!r}"
            ) from None
    return max(1, min(8, len(os.sched_getaffinity(0))))


class _Job:
    """Chunks of one kernel call, claimed by whichever thread asks next."""

    def __init__(self, run_chunk: Callable[[int], None], count: int) -> None:
        self.run_chunk = run_chunk
        self.count = count
        self.claimed = 0
        self.finished_chunks = 0
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.done = threading.Lock()
        self.done.acquire()  # released when the last chunk finishes

    def work(self) -> None:
        """Run chunks until none is left to claim."""
        while True:
            with self.lock:
                index = self.claimed
                if index >= self.count:
                    return
                self.claimed = index + 1
            try:
                self.run_chunk(index)
            except BaseException as error:  # noqa: BLE001 - re-raised by the caller
                self.error = self.error or error
            with self.lock:
                self.finished_chunks += 1
                if self.finished_chunks == self.count:
                    self.done.release()

    def wait(self) -> None:
        """Block until every chunk has run; re-raise the first error of any chunk."""
        self.done.acquire()
        if self.error is not None:
            raise self.error


class _Worker:
    """A daemon thread that joins the jobs handed to it, one at a time."""

    def __init__(self, number: int) -> None:
        self._wake = threading.Lock()
        self._wake.acquire()
        self._slot = threading.Lock()
        self._job: _Job | None = None
        self._pending = False
        thread = threading.Thread(target=self._loop, name=f"tidu-kernel-{number}", daemon=True)
        thread.start()

    def submit(self, job: _Job) -> None:
        """Offer ``job``; a job still waiting for this worker is replaced (its caller
        only returns once all its chunks ran, so it needs no more help)."""
        with self._slot:
            self._job = job
            if not self._pending:
                self._pending = True
                self._wake.release()

    def _loop(self) -> None:
        while True:
            self._wake.acquire()
            with self._slot:
                job, self._job = self._job, None
                self._pending = False
            if job is not None:
                job.work()


_workers: list[_Worker] = []
_workers_lock = forksafe.Lock()


def _get_workers(count: int) -> list[_Worker]:
    with _workers_lock:
        while len(_workers) < count:
            _workers.append(_Worker(len(_workers) + 1))
        return _workers[:count]


def _forget_workers() -> None:
    """In a forked child: the parent's worker threads do not exist there (a job handed
    to one would wait forever), so start afresh."""
    _workers.clear()  # (``_workers_lock`` is renewed by ``forksafe``)


forksafe.after_fork_in_child(_forget_workers)


def chunk_bounds(extent: int, chunks: int) -> list[int]:
    """``chunks + 1`` increasing row bounds from 0 to ``extent``, multiples of 64 rows
    when every chunk still gets some."""
    align = _ALIGN if extent >= _ALIGN * chunks else 1
    units = extent // align
    bounds = [units * i // chunks * align for i in range(chunks)]
    return [*bounds, extent]


def chunk_count(extent: int, work: int, threads: int, has_partial: bool) -> int:
    """How many chunks a kernel of ``work`` over ``extent`` rows is cut into."""
    if has_partial:
        return min(threads, extent)
    wanted = max(threads, min(threads * CHUNKS_PER_THREAD, work // CHUNK_WORK))
    return min(wanted, extent)


def _run(
    call: Callable[..., Any],
    in_args: list[int],
    out_args: list[int],
    outputs: list[np.ndarray],
    partial: Sequence[int],
    extent: int,
    chunks: int,
    workers: int,
    to_argument: Callable[[Any], int],
    combiners: Sequence[str],
) -> None:
    """Run ``chunks`` chunks on the calling thread and ``workers`` worker threads;
    combine the private copies of ``outputs[j]``, ``j in partial``, by ``combiners``
    (one per partial output; empty: all ``add``)."""
    bounds = chunk_bounds(extent, chunks)
    fresh = buffers.poisoned(np.empty) if buffers.DEBUG_FILL else np.empty
    private: list[list[np.ndarray]] = [
        [fresh(outputs[j].shape, outputs[j].dtype) for j in partial] for _ in range(chunks - 1)
    ]

    def run_chunk(index: int) -> None:
        args = out_args
        if partial and index:
            args = list(out_args)
            for j, copy in zip(partial, private[index - 1], strict=True):
                args[j] = to_argument(copy)
        call(*in_args, *args, bounds[index], bounds[index + 1])

    job = _Job(run_chunk, chunks)
    for worker in _get_workers(workers):
        worker.submit(job)
    job.work()
    job.wait()
    combine = [COMBINE[c] for c in combiners or ("add",) * len(partial)]
    for copies in private:
        for j, ufunc, copy in zip(partial, combine, copies, strict=True):
            ufunc(outputs[j], copy, out=outputs[j])


def run_chunked(
    call: Callable[..., Any],
    inputs: Sequence[Any],
    outputs: list[np.ndarray],
    partial: Sequence[int],
    extent: int,
    work: int,
    to_argument: Callable[[Any], int],
    combiners: Sequence[str] = (),
) -> None:
    """Run ``call(*inputs, *outputs, lo, hi)`` over ``[0, extent)``, on all threads if
    ``work >= PARALLEL_WORK``. ``outputs[j]`` for ``j in partial`` are combined over the
    chunks' private copies by ``combiners`` (one per partial output; empty: all ``add``)."""
    threads = min(thread_count(), extent) if work >= PARALLEL_WORK else 1
    in_args = [to_argument(a) for a in inputs]
    out_args = [to_argument(o) for o in outputs]
    if threads <= 1:
        call(*in_args, *out_args, 0, extent)
        return
    chunks = chunk_count(extent, work, threads, bool(partial))
    _run(call, in_args, out_args, outputs, partial, extent, chunks, threads - 1, to_argument,
         combiners)  # fmt: skip


class ChunkedKernel:
    """A costly chunked kernel that runs on all threads or on the calling one alone,
    whichever its own recent calls found faster.

    Two threads are not always faster: on a 2-vCPU VM whose vCPUs share one core's FP
    units (or when another process keeps the second vCPU busy), an FP-bound kernel runs
    no faster on two threads and pays the hand-off. So the first ``PROBES`` calls of
    each way alternate, then the way with the lower best-of-recent time is used, the
    other one retried once every ``RETRY_EVERY`` calls (load changes). A kernel with
    partial sums is cut into the same chunks either way (run one after the other on
    one thread), so its results do not depend on the choice.

    ``kernel(inputs, outputs)`` runs it; the argument lists are as for ``run_chunked``.
    """

    PROBES = 2
    RETRY_EVERY = 32
    KEEP = 4  # recent times kept per way

    def __init__(
        self,
        call: Callable[..., Any],
        partial: Sequence[int],
        extent: int,
        work: int,
        to_argument: Callable[[Any], int],
        combiners: Sequence[str] = (),
    ) -> None:
        self.call = call
        self.partial = tuple(partial)
        self.combiners = tuple(combiners)
        self.extent = extent
        self.work = work
        self.to_argument = to_argument
        self.calls = 0
        self.times: dict[bool, list[float]] = {False: [], True: []}  # threaded? -> seconds

    def threaded_next(self) -> bool:
        """Whether the next call runs on all threads (and counts it)."""
        calls = self.calls
        self.calls = calls + 1
        if calls < 2 * self.PROBES:
            return calls % 2 == 1
        best = min(self.times[True]) <= min(self.times[False])
        return not best if calls % self.RETRY_EVERY == 0 else best

    def __call__(self, inputs: Sequence[Any], outputs: list[np.ndarray]) -> None:
        threads = min(thread_count(), self.extent) if self.work >= PARALLEL_WORK else 1
        to_argument = self.to_argument
        in_args = [to_argument(a) for a in inputs]
        out_args = [to_argument(o) for o in outputs]
        if threads <= 1:
            self.call(*in_args, *out_args, 0, self.extent)
            return
        threaded = self.threaded_next()
        start = time.perf_counter()
        if threaded or self.partial:
            chunks = chunk_count(self.extent, self.work, threads, bool(self.partial))
            workers = threads - 1 if threaded else 0
            _run(self.call, in_args, out_args, outputs, self.partial, self.extent, chunks,
                 workers, to_argument, self.combiners)  # fmt: skip
        else:
            self.call(*in_args, *out_args, 0, self.extent)
        recent = self.times[threaded]
        recent.append(time.perf_counter() - start)
        if len(recent) > self.KEEP:
            del recent[0]

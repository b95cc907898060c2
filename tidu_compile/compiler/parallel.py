"""Running a chunked kernel on several threads.

A chunked kernel computes rows ``[lo, hi)`` of its domain's dimension 0. Costly kernels
(``KernelStep.work >= PARALLEL_WORK``) are split into one chunk per thread: the calling
thread runs one, a small process-wide pool runs the others (ctypes releases the GIL
during the native call). Waking a pool thread costs tens of microseconds here, so a
kernel is split only when it runs for about 0.15 ms or more on one thread: a tanh
backward over 256x512 elements takes 22 us on one thread and 61 us on two. Outputs
that the kernel reduces over dimension 0 are private per chunk and combined afterwards
(added up, or their maxima, minima or products: ``COMBINE``); every other output is
shared (chunks write disjoint rows).

``TIDU_COMPILE_THREADS`` sets the thread count (default: the CPUs this process may use,
at most 8); 1 turns threading off. A forked child starts a pool of its own (the
parent's threads do not exist there).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

__all__ = ["COMBINE", "PARALLEL_WORK", "run_chunked", "thread_count"]

#: Estimated work (elements x loop-body operations) from which a kernel runs on several
#: threads; about 0.15 ms of one thread's time for f64 math on the benchmark machine.
PARALLEL_WORK = 10_000_000

#: How the chunks' private partial results combine, by the kernel result's combiner
#: (NaN-propagating max and min, as the kernels; on bool, ``or`` and ``and``).
COMBINE: dict[str, np.ufunc] = {
    "add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply,
}  # fmt: skip

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


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


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there (submitting to
    that pool would wait forever), so start afresh."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers < workers:  # noqa: SLF001 - grow only
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="tidu-kernel")
        return _pool


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
    """Run ``call(*inputs, *outputs, lo, hi)`` over ``[0, extent)``, in parallel if large.

    ``outputs[j]`` for ``j in partial`` are combined over the chunks' private copies by
    ``combiners`` (one per partial output; empty: all ``add``).
    """
    threads = min(thread_count(), extent) if work >= PARALLEL_WORK else 1
    in_args = [to_argument(a) for a in inputs]
    if threads <= 1:
        call(*in_args, *(to_argument(o) for o in outputs), 0, extent)
        return
    bounds = np.linspace(0, extent, threads + 1).astype(int)
    chunk_outputs = [outputs]
    for _ in range(threads - 1):
        chunk_outputs.append(
            [np.empty_like(o) if j in partial else o for j, o in enumerate(outputs)]
        )

    def run(index: int) -> None:
        out_args = [to_argument(o) for o in chunk_outputs[index]]
        call(*in_args, *out_args, int(bounds[index]), int(bounds[index + 1]))

    pool = _get_pool(threads - 1)
    futures = [pool.submit(run, i) for i in range(1, threads)]
    run(0)
    for future in futures:
        future.result()
    for j, combiner in zip(partial, combiners or ("add",) * len(partial), strict=True):
        for copy in chunk_outputs[1:]:
            COMBINE[combiner](outputs[j], copy[j], out=outputs[j])

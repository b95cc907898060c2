"""Compiling in worker processes while the caller keeps running.

The xDSL pipeline holds the GIL for its whole run (~20-100 ms per node), so compiling
on a thread would stall the caller as much as compiling inline. A
``CompiledExecutor(background=True)`` instead hands a node's program to a worker
process (``submit``) and runs the node on the reference path until the worker's
artifact arrives; then it binds the object code and runs natively from the next call
on (``executors.compiled``). The worker also stores the artifact in the disk cache, so
other processes find it there.

Workers are forked where ``fork`` exists (ready in ~4 ms: they inherit the imported
compiler; ``tidu_compile.forksafe`` makes forking with threads safe) and spawned
elsewhere (~0.5 s to import the compiler). There are ``TIDU_COMPILE_WORKERS`` of them
(default: the CPU count minus one, at least 1, at most 4), started on first use and
shared by every executor of the process. A worker exits when its parent dies. A
forked child of the caller gets a new pool (the parent's workers are not its own).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from tidu_compile import forksafe

__all__ = ["BACKGROUND_ENV", "WORKERS_ENV", "default_enabled", "generation", "submit", "workers"]

BACKGROUND_ENV = "TIDU_COMPILE_BACKGROUND"
WORKERS_ENV = "TIDU_COMPILE_WORKERS"

_pool: ProcessPoolExecutor | None = None
_pool_lock = forksafe.Lock()
_generation = 0


def default_enabled() -> bool:
    """``CompiledExecutor(background=None)``: on unless ``$TIDU_COMPILE_BACKGROUND`` is 0."""
    return os.environ.get(BACKGROUND_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def workers() -> int:
    """How many worker processes compile (``$TIDU_COMPILE_WORKERS``, else CPUs - 1)."""
    text = os.environ.get(WORKERS_ENV)
    if text:
        try:
            count = int(text)
        except ValueError:
            raise ValueError(f"{WORKERS_ENV} must be an integer >= 1, got {text!r}") from None
        if count < 1:
            raise ValueError(f"{WORKERS_ENV} must be an integer >= 1, got {text!r}")
        return count
    return max(1, min(4, (os.cpu_count() or 2) - 1))


def generation() -> int:
    """Changes in a forked child: futures of an older generation will never finish."""
    return _generation


def submit(program: Any, digest: str, cache_dir: str | None) -> Future:
    """A future of the ``pipeline.Artifact`` of ``program``, compiled in a worker."""
    global _pool
    with _pool_lock:
        if _pool is None:
            method = "fork" if sys.platform == "linux" else "spawn"
            _pool = ProcessPoolExecutor(
                workers(),
                mp_context=multiprocessing.get_context(method),
                initializer=_watch_parent,
                initargs=(os.getpid(),),
            )
        pool = _pool
    return pool.submit(_compile, program, digest, cache_dir)


def _compile(program: Any, digest: str, cache_dir: str | None) -> Any:
    """In a worker: compile, store on disk (for other processes), return the artifact."""
    from tidu_compile.compiler import pipeline
    from tidu_compile.compiler.cache import DiskCache

    artifact = pipeline.compile_program(program, digest)
    if cache_dir is not None:
        DiskCache(cache_dir).put(digest, artifact)
    return artifact


def _watch_parent(parent: int) -> None:
    """In a worker: exit as soon as the parent is gone (a crash leaves no orphans)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.25)
        os._exit(0)

    threading.Thread(target=watch, name="tidu-compile-parent-watch", daemon=True).start()


def _forget_pool() -> None:
    """In a forked child: the parent's workers and futures are not the child's."""
    global _pool, _generation
    _pool = None
    _generation += 1


forksafe.after_fork_in_child(_forget_pool)

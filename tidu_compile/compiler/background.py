"""Compiling in worker processes while the caller keeps running.

The xDSL pipeline holds the GIL for its whole run (~20-100 ms per node), so compiling
on a thread would stall the caller as much as compiling inline. A
``CompiledExecutor(background=True)`` instead hands a node's program to a worker
process (``submit``) and runs the node on the reference path until the worker's
artifact arrives; then it binds the object code and runs natively from the next call
on (``executors.compiled``). The worker also stores the artifact in the disk cache, so
other processes find it there.

The workers (``compiler.process_pool``) are forked when safe (``_start_method``: on
Linux, when no other thread of the caller's may be inside BLAS;
``tidu_compile.forksafe`` handles this library's own threads), ready in a few ms, and
spawned otherwise. Either way they import the compiler (xDSL, ~0.4 s) while the caller
starts (``prewarm``): the caller itself never imports it. There are
``TIDU_COMPILE_WORKERS`` of them (default: the CPU count minus one, at least 1, at most
4), started on first use and shared by every executor of the process:

- a worker that dies (killed, out of memory) is replaced, and the program it compiled
  is compiled again by another; a program that kills two workers fails with
  ``WorkerDied`` (its node runs on the reference path, ``executors.tiered``);
- at the interpreter's exit the programs not compiled yet are dropped and the workers
  killed: a script never waits for them (what they finished is on disk, written
  atomically);
- a worker exits when its parent dies;
- a forked child of the caller gets a pool of its own on first use, which compiles
  the programs the parent's workers had not finished (their futures are the child's
  copies: ``done`` and ``wait`` hand them over), and the parent keeps its own.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
from collections.abc import Collection
from concurrent import futures
from concurrent.futures import Future
from typing import Any

from tidu_compile import forksafe
from tidu_compile.compiler.process_pool import Pool, WorkerDied

__all__ = [
    "BACKGROUND_ENV", "WORKERS_ENV", "WorkerDied", "await_environment", "default_enabled",
    "done", "environment_known", "prewarm", "submit", "wait", "workers",
]

BACKGROUND_ENV = "TIDU_COMPILE_BACKGROUND"
#: How much lower the workers' priority is than the caller's (``os.nice``).
NICENESS = 10
WORKERS_ENV = "TIDU_COMPILE_WORKERS"

_pool: Pool | None = None
_environment: Future | None = None  # the environment fingerprint, from a worker
_pool_lock = forksafe.Lock()
_warmed: Pool | None = None  # the pool whose workers import the compiler
#: In a forked child: the tasks its parent's workers had not done, for its own pool.
_orphans: list[Any] = []


_SWITCH = {"1": True, "true": True, "yes": True, "on": True,
           "0": False, "false": False, "no": False, "off": False}  # fmt: skip


def default_enabled() -> bool:
    """``CompiledExecutor(background=None)``: on unless ``$TIDU_COMPILE_BACKGROUND`` is 0
    (or false, no, off); another value is a ``ValueError``."""
    text = os.environ.get(BACKGROUND_ENV, "1")
    enabled = _SWITCH.get(text.strip().lower())
    if enabled is None:
        raise ValueError(f"{BACKGROUND_ENV} must be 0 or 1 (or true/false, yes/no, on/off), "
                         f"got {text!r}")  # fmt: skip
    return enabled


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


def prewarm() -> None:
    """Get ready: start the workers now, from this thread; the first one computes the
    environment fingerprint the program keys need (llvmlite, ~25 ms, then not in the
    caller: ``learn_environment``) and they import the compiler (xDSL, ~0.4 s) before
    the first program arrives (once per pool, however many executors are made)."""
    global _environment, _warmed
    from tidu_compile.compiler import native

    pool = _get_pool()
    if _environment is None and not native._environment:  # noqa: SLF001 - its cache
        _environment = pool.submit(native.environment_fingerprint)
    if pool is not _warmed:
        _warmed = pool
        for _ in range(workers()):
            pool.submit(_import_compiler)


def environment_known() -> bool:
    """Whether the caller has the environment fingerprint (or can have it at once)."""
    from tidu_compile.compiler import native

    if native._environment:  # noqa: SLF001 - its cache
        return True
    if _environment is not None and _environment.done():
        await_environment()
        return True
    return False


def await_environment(timeout: float = 10.0) -> None:
    """Before the caller's first program key: adopt the worker's environment
    fingerprint (computed meanwhile; else, after ``timeout``, the caller computes it)."""
    global _environment
    future, _environment = _environment, None
    if future is None:
        return
    from tidu_compile.compiler import native

    try:
        native.learn_environment(future.result(timeout))
    except Exception:  # noqa: BLE001 - a slow or broken worker: compute it here
        native.environment_fingerprint()


def submit(
    program: Any, digest: str | None, cache_dir: str | None,
    known: tuple[tuple[str, bytes], ...] = (),
) -> Future:
    """A future of ``(native.Artifact, artifacts.Source)`` for ``program``, from a worker
    (``_compile``); ``known``: object code by kernels digest the worker may reuse;
    ``WorkerDied`` when compiling it killed two workers."""
    return _get_pool().submit(_compile, program, digest, cache_dir, known)


def done(future: Future) -> bool:
    """``future.done()``, a future of ``submit``'s (in a forked child, after handing
    the parent's unfinished programs to the child's pool: they finish there)."""
    if _orphans:
        _get_pool()
    return future.done()


def wait(pending: Collection[Future], timeout: float | None) -> bool:
    """Wait until every future of ``pending`` is done (True) or ``timeout`` passes."""
    if _orphans:
        _get_pool()
    return not futures.wait(pending, timeout=timeout).not_done


def _get_pool() -> Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool(workers(), _init_worker, (os.getpid(),))
            _pool.start(_start_method())
        if _orphans:
            _pool.adopt(_orphans)
            _orphans.clear()
        return _pool


def _start_method() -> str:
    """``fork`` when safe, else ``spawn``. Forking is safe on Linux from a process whose
    other threads are all this library's (idle kernel threads, the prewarm thread):
    ``tidu_compile.forksafe`` renews their locks. Another thread may be inside a BLAS
    call, and OpenBLAS stops its thread pool at ``fork``: that caller would spin
    forever, so then the workers are spawned (~0.5 s until ready, off the caller's
    path)."""
    if sys.platform != "linux":
        return "spawn"
    me = threading.current_thread()
    ours = ("tidu-kernel", "tidu-compile")
    others = [t for t in threading.enumerate() if t is not me and not t.name.startswith(ours)]
    return "spawn" if others else "fork"


def _import_compiler() -> None:
    """In a worker: import the compiler (and its passes) before the first program comes."""
    from tidu_compile.compiler import pipeline, stages  # noqa: F401

    stages.available_passes()


#: In a worker: the object code it knows, per cache directory (None: memory only).
_objects: dict[str | None, Any] = {}


def _compile(
    program: Any, digest: str | None, cache_dir: str | None,
    known: tuple[tuple[str, bytes], ...] = (),
) -> tuple[Any, str]:
    """In a worker: ``(artifact, source)``, compiled (``"compiled"``, or ``"reused"``
    when its kernels' object code was known: ``compiler.objects``) and stored on disk
    for other processes; without a ``digest`` (the caller did not key the program: a
    cold process), first the disk's artifact (``"disk"``) if it has one."""
    from tidu_compile.compiler import native, pipeline
    from tidu_compile.compiler.artifacts import fits
    from tidu_compile.compiler.cache import DiskCache
    from tidu_compile.compiler.objects import ObjectStore

    disk = DiskCache(cache_dir) if cache_dir is not None else None
    if digest is None:
        digest = native.program_digest(program)
        stored = disk.get(digest) if disk is not None else None
        if stored is not None and fits(stored, digest, program):
            return stored, "disk"
    objects = _objects.get(cache_dir)
    if objects is None:
        objects = _objects[cache_dir] = ObjectStore(disk)
    for kernels, code in known:
        objects.put(kernels, code, to_disk=False)
    artifact, generated = pipeline.compile_program(program, digest, objects)
    if disk is not None:
        disk.put(digest, artifact)
    return artifact, "compiled" if generated else "reused"


def _init_worker(parent: int) -> None:
    """In a worker: yield the CPU to the caller (``nice``: its threads, BLAS's among
    them, come first on a busy machine), and exit as soon as the parent is gone (a
    crash leaves no orphans)."""
    with contextlib.suppress(OSError):
        os.nice(NICENESS)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.25)
        os._exit(0)

    threading.Thread(target=watch, name="tidu-compile-parent-watch", daemon=True).start()


def _forget_pool() -> None:
    """In a forked child: the parent's workers are not the child's; the programs they
    had not compiled go to the child's own pool when it starts (``_get_pool``)."""
    global _pool, _environment
    if _pool is not None:
        _orphans.extend(_pool.forget())
    _pool = None
    _environment = None


def _close_pool() -> None:
    """At exit: drop the programs not compiled yet and kill the workers, now."""
    if _pool is not None:
        _pool.close("the interpreter is exiting")


forksafe.after_fork_in_child(_forget_pool)
atexit.register(_close_pool)

"""A forked child computes gradients even when the parent forked mid-compile.

``fork`` copies only the calling thread: a lock another thread holds stays held in the
child. Every lock of the compiler is a ``tidu_compile.forksafe`` lock, renewed in the
child; without that, the child below deadlocks on the pipeline's compile lock.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import forksafe
from tidu_compile.compiler import native
from tidu_compile.executors.compiled import CompiledExecutor

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _child_gradient(executor: CompiledExecutor) -> int:
    """In the child: a gradient that needs a new compile; the exit status says if right
    (and the compile neither failed nor fell back to the reference path)."""
    errors, compiles = len(executor.stats.errors), executor.stats.compiles
    x = tc.tensor(np.linspace(0.1, 1.0, 7), requires_grad=True)
    (got,) = tc.grad(tc.sum(tc.sin(x) * tc.exp(x)), [x], executor=executor)
    expected = np.cos(x.numpy()) * np.exp(x.numpy()) + np.sin(x.numpy()) * np.exp(x.numpy())
    compiled = executor.stats.compiles > compiles and len(executor.stats.errors) == errors
    return 0 if compiled and np.allclose(got, expected, rtol=1e-12) else 3


def _wait(pid: int, seconds: float) -> int | None:
    """The child's exit status, or None (after killing it) when it is stuck."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.timeout(300)
def test_fork_while_another_thread_compiles(tmp_path) -> None:
    executor = CompiledExecutor(False)
    stop = threading.Event()

    def compile_forever() -> None:  # new programs (new sizes of a 10 x n shape) each time
        n = 2
        while not stop.is_set():
            n += 1
            x = tc.tensor(np.ones((10, n)), requires_grad=True)
            tc.grad(tc.sum(tc.tanh(x) * tc.exp(x)), [x], executor=executor)

    thread = threading.Thread(target=compile_forever, daemon=True)
    thread.start()
    try:
        statuses = []
        for attempt in range(4):
            deadline = time.monotonic() + 60
            while not native.COMPILE_LOCK._lock.locked():  # noqa: SLF001 - mid-compile
                assert time.monotonic() < deadline, "the thread never compiled"
                time.sleep(0.001)
            time.sleep(0.01 * attempt)  # fork at different points of the compile
            pid = os.fork()
            if pid == 0:  # the child: only this thread exists here
                status = 4
                try:
                    status = _child_gradient(executor)
                finally:
                    os._exit(status)
            statuses.append(_wait(pid, 60))
    finally:
        stop.set()
        thread.join(120)
    assert statuses == [0, 0, 0, 0], f"child exit statuses (None: deadlocked): {statuses}"


def test_locks_are_fresh_in_a_child() -> None:
    lock = forksafe.Lock()
    lock.acquire()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if lock.acquire(timeout=5) else 5)
    lock.release()
    assert _wait(pid, 30) == 0

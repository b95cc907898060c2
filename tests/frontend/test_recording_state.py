"""The per-thread recording state as the fast path reads it (``state.SPECIAL_THREADS``).

While no thread has gradients disabled or a ``function`` trace in progress, the fast
path reads one shared counter instead of the thread's state; it must still record
exactly as each thread's state says, whatever the other threads do, and the counter must
come back to what it was after every ``no_grad`` and trace, raised out of or not, and
after ``fork``.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.frontend.state import SPECIAL_THREADS, THREAD_STATE


def _recorded(t: tc.Tensor) -> bool:
    return t._trace is not None


def test_no_grad_and_traces_are_counted_and_uncounted() -> None:
    base = SPECIAL_THREADS[0]
    x = tc.tensor(np.array(0.5), requires_grad=True)
    with tc.no_grad():
        assert SPECIAL_THREADS[0] == base + 1
        with tc.no_grad():
            assert SPECIAL_THREADS[0] == base + 1  # one thread, counted once
            assert not _recorded(x * x) and not _recorded(tc.sin(x)) and not _recorded(2.0 * x)
        assert not _recorded(x * x)
    assert SPECIAL_THREADS[0] == base and _recorded(x * x) and _recorded(x + 1.0)
    with pytest.raises(ZeroDivisionError), tc.no_grad():
        raise ZeroDivisionError
    assert SPECIAL_THREADS[0] == base and THREAD_STATE.grad_enabled

    @tc.function
    def f(a: tc.Tensor) -> tc.Tensor:
        assert SPECIAL_THREADS[0] == base + 1
        return tc.sin(a * a) + 1.0

    @tc.function
    def g(a: tc.Tensor) -> tc.Tensor:
        raise ValueError("inside the trace")

    assert float(f(x)) == pytest.approx(np.sin(0.25) + 1.0)
    with pytest.raises(ValueError, match="inside the trace"):
        g(tc.tensor(np.array(0.75), requires_grad=True))
    assert SPECIAL_THREADS[0] == base and THREAD_STATE.capture is None


def test_each_thread_records_as_its_own_state_says() -> None:
    x = tc.tensor(np.array(0.5), requires_grad=True)
    inside, leave = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def without_gradients() -> None:
        with tc.no_grad():
            inside.set()
            leave.wait(10)
            seen["other thread, no_grad"] = _recorded(x * x) or _recorded(tc.sin(x))
        seen["other thread, after"] = _recorded(x * x) and _recorded(tc.sin(x))

    thread = threading.Thread(target=without_gradients)
    thread.start()
    inside.wait(10)
    assert SPECIAL_THREADS[0] >= 1
    seen["this thread"] = _recorded(x * x) and _recorded(tc.sin(x)) and _recorded(x * 3)
    leave.set()
    thread.join()
    assert seen == {"other thread, no_grad": False, "other thread, after": True,
                    "this thread": True}  # fmt: skip
    assert SPECIAL_THREADS[0] == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_counts_only_its_own_thread() -> None:
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with tc.no_grad():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    inside.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the other thread is gone, so is its count
            ok = SPECIAL_THREADS[0] == 0
            x = tc.tensor(np.array(0.5), requires_grad=True)
            with tc.no_grad():
                ok = ok and SPECIAL_THREADS[0] == 1 and not _recorded(x * x)
            ok = ok and SPECIAL_THREADS[0] == 0 and _recorded(x * x)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        leave.set()
        thread.join()
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_fork_while_another_thread_draws_a_key_does_not_deadlock_the_child() -> None:
    from tidu_compile import eager

    x = tc.tensor(np.array(0.5), requires_grad=True)
    holding, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with eager._KEY_LOCK:  # as a thread drawing a node's key at the fork
            holding.set()
            leave.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait(10)
    try:
        pid = os.fork()
        if pid == 0:
            y = x * x
            os._exit(0 if y._key is y._trace.output_keys[0] else 1)  # type: ignore[union-attr]
        for _ in range(200):  # 10 s at most: a deadlocked child is killed, and fails
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            threading.Event().wait(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the child deadlocked drawing a key")
    finally:
        leave.set()
        thread.join()
    assert os.waitstatus_to_exitcode(status) == 0

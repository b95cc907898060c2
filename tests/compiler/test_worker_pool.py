"""The background compilers' pool: a worker that dies is replaced, a task that kills
two workers fails alone, closing kills the workers at once (``compiler.process_pool``).
"""

from __future__ import annotations

import operator
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tidu_compile.compiler.process_pool import (
    DEATHS,
    START_FAILURES,
    Pool,
    WorkerDied,
    WorkersUnavailable,
)

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork"),
    pytest.mark.timeout(120),
]


@pytest.fixture
def pool() -> Iterator[Pool]:
    """One worker (tasks run in order), forked; closed after the test."""
    pool = Pool(1, os.getpid)
    pool.start("fork")
    yield pool
    pool.close()


# ---------------------------------------------------------------- the pool itself


def test_a_task_that_kills_two_workers_fails_alone(pool: Pool) -> None:
    killer = pool.submit(os._exit, 7)
    queued = pool.submit(operator.add, 1, 2)  # behind it: not charged for its deaths
    with pytest.raises(WorkerDied, match=f"killed {DEATHS} compile workers.*exit status 7"):
        killer.result(60)
    assert queued.result(60) == 3
    assert pool.submit(operator.mul, 6, 7).result(60) == 42  # the pool goes on


def test_a_killed_worker_is_replaced_and_its_task_run_again(pool: Pool) -> None:
    (first,) = pool.pids()
    task = pool.submit(time.sleep, 0.5)
    deadline = time.monotonic() + 30
    while not pool.pids(busy=True):
        assert time.monotonic() < deadline
        time.sleep(0.002)
    os.kill(first, signal.SIGKILL)
    assert task.result(60) is None  # run again by the replacement
    assert pool.pids() and first not in pool.pids()


def test_close_fails_what_is_not_done_and_kills_the_workers_at_once(pool: Pool) -> None:
    running = pool.submit(time.sleep, 60)
    queued = pool.submit(operator.add, 1, 2)
    deadline = time.monotonic() + 30
    while not running.running():
        assert time.monotonic() < deadline
        time.sleep(0.002)
    (pid,) = pool.pids()
    start = time.monotonic()
    pool.close("closed by the test")
    assert time.monotonic() - start < 2.0  # not the 60 s of the running task
    for future in (running, queued):
        with pytest.raises(WorkersUnavailable, match="closed by the test"):
            future.result(5)
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped
    with pytest.raises(WorkersUnavailable):
        pool.submit(operator.add, 1, 2).result(5)


def test_workers_that_cannot_start_make_the_pool_give_up() -> None:
    pool = Pool(1, os._exit, (3,))  # every worker dies in its initializer
    try:
        pool.start("fork")
        task = pool.submit(operator.add, 1, 2)
        with pytest.raises(WorkersUnavailable, match=f"{START_FAILURES} compile workers"):
            task.result(60)
        assert not pool.pids()
    finally:
        pool.close()

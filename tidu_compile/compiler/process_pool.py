"""Worker processes that run one task at a time: the background compilers' pool.

``Pool(count, initializer, initargs)`` keeps ``count`` worker processes, each with its
own socket, and hands each one task at a time from the pool's queue; ``submit(fn,
*args)`` is a ``Future``. One thread of the caller's (``tidu-compile-pool``) sends the
tasks and receives the results. Unlike ``concurrent.futures.ProcessPoolExecutor``:

- a worker that dies (killed, out of memory) is replaced, and the task it was running
  goes back to the front of the queue; a task that kills ``DEATHS`` workers fails with
  ``WorkerDied``. No other task is charged: each worker runs one task at a time, so
  the pool knows which task a dead worker ran. When workers keep dying before they
  are ready (``START_FAILURES`` in a row), the pool gives up: its tasks fail with
  ``WorkersUnavailable``;
- ``close()`` fails the tasks not done (``WorkersUnavailable``) and kills the workers
  at once (the caller closes its pool at exit: a script never waits for its workers);
- in a forked child the pool is the parent's: ``forget()`` closes the child's copies
  of its sockets, touches no worker (they are the parent's), and returns the tasks not
  done, whose futures the child's own pool takes over (``adopt``). The futures' locks
  are renewed in the child (``tidu_compile.forksafe``): the pool's thread may have
  held one at ``fork``.

``start(method)`` starts the missing workers from the calling thread: forked
(``"fork"``, ready in a few ms) or spawned (a fresh ``sys.executable`` with the caller's
``sys.path``, which imports this package only). Replacements are spawned: the pool's
thread cannot know whether another thread is inside a BLAS call, which ``fork`` would
hang (``compiler.background._start_method``).

A worker's socket carries pickled messages, one task at a time::

    pool -> worker   (initializer, initargs)          once, first
    worker -> pool   ("ready", None)                  the initializer ran
    pool -> worker   (fn, args)                       a task
    worker -> pool   ("ok", fn(*args)) | ("error", exception)

and its end of file is the worker's death (or, for the worker, the pool's: it exits).
"""

from __future__ import annotations

import collections
import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, NoReturn

from tidu_compile import forksafe

__all__ = ["DEATHS", "START_FAILURES", "Pool", "WorkerDied", "WorkersUnavailable"]

#: A task fails (``WorkerDied``) once it has killed this many workers.
DEATHS = 2
#: The pool gives up once this many workers in a row died before they were ready.
START_FAILURES = 3

#: What a spawned worker runs: ``python -c _SPAWNED <socket fd> <sys.path as JSON>``.
_SPAWNED = ("import json, sys; sys.path[:] = json.loads(sys.argv[2]); "
            "from tidu_compile.compiler.process_pool import serve_spawned; "
            "serve_spawned(int(sys.argv[1]))")  # fmt: skip


class WorkerDied(RuntimeError):
    """A task killed ``DEATHS`` workers (it crashed them, or ran them out of memory)."""


class WorkersUnavailable(RuntimeError):
    """The pool runs no more tasks: it is closed, or its workers cannot start."""


class _Future(Future):
    """A ``Future`` whose lock is new in a forked child (``forksafe``)."""

    def __init__(self) -> None:
        super().__init__()
        self._condition = threading.Condition(forksafe.Lock())  # type: ignore[arg-type]


@dataclass(eq=False)
class _Task:
    future: Future
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    deaths: int = 0  # workers it killed


@dataclass(eq=False)
class _Worker:
    pid: int
    conn: Connection  # the pool's end of the worker's socket
    process: subprocess.Popen | None  # spawned; None: forked (reaped with ``waitpid``)
    ready: bool = False  # its initializer ran
    task: _Task | None = None  # the task it runs
    gone: bool = False  # reaped: its pid may be another process's now

    def kill(self) -> None:
        if not self.gone:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)

    def reap(self, timeout: float) -> int | None:
        """Its exit status (``-signal`` when killed), None if unknown after ``timeout``."""
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)
            self.gone = self.process.returncode is not None
            return self.process.returncode
        deadline = time.monotonic() + timeout
        while not self.gone:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else (an ``os.wait()``)
                self.gone = True
                return None
            if pid:
                self.gone = True
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.005)
        return None


class Pool:
    """``count`` worker processes, each running ``initializer(*initargs)`` first."""

    def __init__(
        self, count: int, initializer: Callable[..., None], initargs: tuple[Any, ...] = ()
    ) -> None:
        self.count = count
        self._init = (initializer, initargs)
        self._lock = forksafe.Lock()  # the pool's thread may hold it at ``fork``
        self._queue: collections.deque[_Task] = collections.deque()
        self._workers: list[_Worker] = []
        self._wakeup_r, self._wakeup_w = os.pipe()
        os.set_blocking(self._wakeup_w, False)  # a full pipe wakes the thread already
        self._thread: threading.Thread | None = None
        self._closed: str | None = None  # why the pool runs no more tasks
        self._forgotten = False
        self._start_failures = 0  # workers in a row that died before they were ready

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """A future of ``fn(*args)``, called in a worker (they are pickled)."""
        task = _Task(_Future(), fn, args)
        self._enqueue([task], first=False)
        return task.future

    def adopt(self, tasks: Sequence[_Task]) -> None:
        """Run ``tasks`` (``forget``'s, in a forked child) before those queued."""
        self._enqueue(tasks, first=True)

    def _enqueue(self, tasks: Sequence[_Task], first: bool) -> None:
        with self._lock:
            closed = self._closed
            if closed is None and first:
                self._queue.extendleft(reversed(tasks))
            elif closed is None:
                self._queue.extend(tasks)
        if closed is not None:
            for task in tasks:
                _fail(task.future, WorkersUnavailable(closed))
        self._wake()

    def start(self, method: str) -> None:
        """Start the missing workers from this thread, forked or spawned (``method``),
        and the pool's thread."""
        while True:
            with self._lock:
                if self._closed is not None or len(self._workers) >= self.count:
                    break
            self._add_worker(method)
        with self._lock:
            if self._thread is None and self._closed is None:
                self._thread = threading.Thread(target=self._run, name="tidu-compile-pool",
                                                daemon=True)  # fmt: skip
                self._thread.start()

    def pids(self, busy: bool = False) -> list[int]:
        """The workers' process ids (``busy``: only those running a task)."""
        with self._lock:
            return [w.pid for w in self._workers if w.task is not None or not busy]

    def close(self, reason: str = "the pool is closed") -> None:
        """Fail the tasks not done (``WorkersUnavailable``) and kill the workers now."""
        with self._lock:
            if self._closed is not None:
                return
            self._closed = reason
            tasks = [*self._queue, *(w.task for w in self._workers if w.task is not None)]
            self._queue.clear()
            for worker in self._workers:
                worker.task = None
            workers = list(self._workers)
        for worker in workers:
            worker.kill()
        for task in tasks:
            _fail(task.future, WorkersUnavailable(reason))
        deadline = time.monotonic() + 0.1
        for worker in workers:  # killed: a few ms each
            worker.reap(max(0.0, deadline - time.monotonic()))
        self._wake()

    def forget(self) -> list[_Task]:
        """In a forked child: let go of the parent's workers (close this process's
        copies of their sockets); the tasks they had not done, for the child's pool."""
        if self._forgotten:
            return []
        self._forgotten = True
        self._closed = "a forked child's copy of its parent's pool"
        running = [w.task for w in self._workers if w.task is not None]
        tasks = [t for t in [*running, *self._queue] if not t.future.done()]
        for worker in self._workers:
            worker.conn.close()
        self._workers, self._queue = [], collections.deque()
        for fd in (self._wakeup_r, self._wakeup_w):
            if fd >= 0:
                os.close(fd)
        self._wakeup_r = self._wakeup_w = -1
        return tasks

    # ---------------------------------------------------------------- the pool's thread

    def _run(self) -> None:
        """Send tasks to idle workers, receive their results, replace the dead."""
        workers: dict[Connection, _Worker] = {}
        while True:
            with self._lock:
                if self._closed is not None:
                    break
                sends = self._assign()
                workers = {w.conn: w for w in self._workers}
            for worker, task in sends:
                self._send(worker, task)
            for ready in wait([*workers, self._wakeup_r]):
                if ready == self._wakeup_r:
                    os.read(self._wakeup_r, 1 << 16)
                else:
                    self._receive(workers[ready])  # type: ignore[index]
        for worker in workers.values():
            worker.conn.close()
        with self._lock:  # (``_wake`` writes under the lock: never to a reused fd)
            fds, self._wakeup_r, self._wakeup_w = (self._wakeup_r, self._wakeup_w), -1, -1
        for fd in fds:
            os.close(fd)

    def _assign(self) -> list[tuple[_Worker, _Task]]:
        """Under the lock: the queued tasks that idle workers take now."""
        sends = []
        for worker in self._workers:
            while worker.ready and worker.task is None and self._queue:
                task = self._queue.popleft()
                if _claim(task.future):
                    worker.task = task
                    sends.append((worker, task))
        return sends

    def _send(self, worker: _Worker, task: _Task) -> None:
        try:
            worker.conn.send((task.fn, task.args))
        except OSError:  # the worker is dead: its end of file comes next, not its fault
            with self._lock:
                worker.task = None
                self._queue.appendleft(task)
        except Exception as error:  # noqa: BLE001 - the task does not pickle
            with self._lock:
                worker.task = None
            _fail(task.future, error)

    def _receive(self, worker: _Worker) -> None:
        try:
            kind, value = worker.conn.recv()
        except (EOFError, OSError):
            self._died(worker)
            return
        except Exception as error:  # noqa: BLE001 - a result that does not unpickle here
            kind, value = "error", error
        with self._lock:
            task, worker.task = worker.task, None
            if kind == "ready":
                worker.ready, self._start_failures = True, 0
        if task is not None:
            if kind == "ok":
                with contextlib.suppress(InvalidStateError):
                    task.future.set_result(value)
            else:
                _fail(task.future, value)

    def _died(self, worker: _Worker) -> None:
        """A worker's socket closed: it died. Charge its task, replace it."""
        status = worker.reap(0.05)
        if status is None:  # it closed the socket but lives on
            worker.kill()
            status = worker.reap(5.0)
        worker.conn.close()
        failed, lost = None, []
        with self._lock:
            self._workers.remove(worker)
            task, worker.task = worker.task, None
            if task is not None:
                task.deaths += 1
                if task.deaths >= DEATHS:
                    failed = task
                else:
                    self._queue.appendleft(task)
            if not worker.ready:
                self._start_failures += 1
                if self._start_failures >= START_FAILURES and self._closed is None:
                    self._closed = (f"{START_FAILURES} compile workers in a row died before "
                                    f"they were ready ({_describe(status)})")  # fmt: skip
                    lost, self._queue = list(self._queue), collections.deque()
            replace = self._closed is None
        if failed is not None:
            last = _describe(status)
            _fail(failed.future, WorkerDied(f"it killed {DEATHS} compile workers ({last})"))
        for task in lost:
            _fail(task.future, WorkersUnavailable(self._closed or ""))
        if replace:
            self._add_worker("spawn")

    # ---------------------------------------------------------------- workers

    def _add_worker(self, method: str) -> None:
        try:
            worker = self._start_worker(method)
        except (OSError, ValueError) as error:  # cannot start processes here
            with self._lock:
                self._closed = self._closed or f"cannot start a compile worker: {error}"
                lost, self._queue = list(self._queue), collections.deque()
            for task in lost:
                _fail(task.future, WorkersUnavailable(self._closed))
            return
        with self._lock:
            closed = self._closed is not None
            if not closed:
                self._workers.append(worker)
        if closed:
            worker.kill()
            worker.reap(0.1)
            worker.conn.close()
        self._wake()

    def _start_worker(self, method: str) -> _Worker:
        ours, theirs = multiprocessing.Pipe()
        process = None
        if method == "fork":
            pid = os.fork()
            if pid == 0:  # the worker

                def serve() -> None:
                    ours.close()
                    self.forget()
                    _serve(theirs)

                _live(serve)
        else:
            path = json.dumps([p for p in sys.path if isinstance(p, str)])
            process = subprocess.Popen(
                [sys.executable, "-c", _SPAWNED, str(theirs.fileno()), path],
                stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
            )  # fmt: skip
            pid = process.pid
        theirs.close()
        ours.send(self._init)
        return _Worker(pid, ours, process)

    def _wake(self) -> None:
        with self._lock, contextlib.suppress(BlockingIOError):  # full: it wakes anyway
            if self._wakeup_w >= 0:  # else the thread is gone
                os.write(self._wakeup_w, b"\0")


def _claim(future: Future) -> bool:
    """Mark ``future`` running; False when it was cancelled meanwhile."""
    if future.running():  # already: a task a forked child took over (``adopt``)
        return True
    return future.set_running_or_notify_cancel()


def _fail(future: Future, error: BaseException) -> None:
    with contextlib.suppress(InvalidStateError):  # done already
        future.set_exception(error)


def _describe(status: int | None) -> str:
    if status is None:
        return "the last: exit status unknown"
    if status < 0:
        return f"the last killed by {signal.Signals(-status).name}"
    return f"the last: exit status {status}"


def _serve(conn: Connection) -> None:
    """In a worker: run the initializer, then one task at a time until the pool's end
    of the socket closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's, which kills us
    initializer, initargs = conn.recv()
    initializer(*initargs)
    conn.send(("ready", None))
    while True:
        try:
            fn, args = conn.recv()
        except EOFError:
            return
        except Exception as error:  # noqa: BLE001 - a task that does not unpickle here
            reply: tuple[str, Any] = ("error", error)
        else:
            try:
                reply = ("ok", fn(*args))
            except Exception as error:  # noqa: BLE001 - the task's own error, for the caller
                reply = ("error", error)
        try:
            conn.send(reply)
        except (BrokenPipeError, ConnectionResetError):
            return  # the parent is gone (it exited mid-compile): no one to answer
        except Exception as error:  # noqa: BLE001 - a result that does not pickle
            conn.send(("error", RuntimeError(f"{type(error).__name__}: {error}")))


def _live(serve: Callable[[], None]) -> NoReturn:
    """A worker's whole life: ``serve()``, then exit (with 1 after printing an error),
    never returning into the caller's code nor running its exit handlers."""
    status = 1
    try:
        serve()
        status = 0
    except BaseException:  # noqa: BLE001 - the worker's last words
        traceback.print_exc()
    finally:
        os._exit(status)


def serve_spawned(fd: int) -> NoReturn:
    """A spawned worker's life (``_SPAWNED``)."""
    _live(lambda: _serve(Connection(fd)))

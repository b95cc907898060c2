"""Frontend state: the tape recorder, gradient modes (``no_grad``, ``enable_grad``,
``set_grad_enabled``, as PyTorch's), and executor selection (per thread)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tidu_compile import forksafe
from tidu_compile.eager import BackwardExecutor, Recorder

__all__ = [
    "RECORDER",
    "TransformInTrace",
    "SPECIAL_THREADS",
    "THREAD_STATE",
    "current_capture",
    "set_capture",
    "enable_grad",
    "get_default_executor",
    "grad_enabled",
    "install_default_executor",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
    "set_default_executor",
    "use_executor",
]

RECORDER = Recorder()


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.executors: list[BackwardExecutor] = []
        self.capture: Any = None  # the ``function`` trace in progress, if any


_state = _ThreadState()
#: This thread's state, read directly by the recording fast path (``fast_ops``).
THREAD_STATE = _state
#: ``[n]``: how many threads record other than by default (gradients disabled, or a
#: ``function`` trace in progress). While n is 0 the recording fast path reads this
#: instead of ``THREAD_STATE`` (a thread-local read costs ~150 instructions, this ~10).
SPECIAL_THREADS = [0]
_special_lock = forksafe.Lock()


def _set_state(grad_enabled: bool, capture: Any) -> None:
    """Set this thread's recording state, keeping ``SPECIAL_THREADS`` counted (a thread
    counts itself, before it records again, so n is never 0 while it is special)."""
    was_special = not _state.grad_enabled or _state.capture is not None
    _state.grad_enabled = grad_enabled
    _state.capture = capture
    special = not grad_enabled or capture is not None
    if special != was_special:
        with _special_lock:
            SPECIAL_THREADS[0] += 1 if special else -1


def _count_the_forking_thread() -> None:
    """The child has one thread (the forking one): count it alone."""
    SPECIAL_THREADS[0] = int(not _state.grad_enabled or _state.capture is not None)


forksafe.after_fork_in_child(_count_the_forking_thread)

_default: BackwardExecutor | None = None
_default_lock = forksafe.Lock()
#: ``[factory]``: makes the process default on first use (``install_default_executor``).
_default_factory: list[Callable[[], BackwardExecutor]] = []


def grad_enabled() -> bool:
    return _state.grad_enabled


def is_grad_enabled() -> bool:
    """Whether operations are recorded on the tape in this thread (PyTorch's name)."""
    return _state.grad_enabled


class TransformInTrace(TypeError):
    """A ``tidu_compile.func`` transform called inside a ``@tc.function`` trace, where it
    cannot run (``composite_function`` runs such a function eagerly where it may)."""


def current_capture() -> Any:
    """The composite trace in progress in this thread (``frontend.composite_function``),
    or None."""
    return _state.capture


def set_capture(capture: Any) -> None:
    _set_state(_state.grad_enabled, capture)


@contextmanager
def no_grad() -> Iterator[None]:
    """Within this block nothing is recorded on the tape (in this thread); also a
    decorator (``@tc.no_grad()``)."""
    previous = _state.grad_enabled
    _set_state(False, _state.capture)
    try:
        yield
    finally:
        _set_state(previous, _state.capture)


@contextmanager
def enable_grad() -> Iterator[None]:
    """Within this block operations are recorded again, inside ``no_grad`` too."""
    previous = _state.grad_enabled
    _set_state(True, _state.capture)
    try:
        yield
    finally:
        _set_state(previous, _state.capture)


class set_grad_enabled:  # noqa: N801 - PyTorch's name: a function and a context manager
    """``set_grad_enabled(mode)`` sets recording on or off in this thread at once; as a
    context manager (``with tc.set_grad_enabled(False):``) it restores the previous mode
    at the end of the block, as PyTorch's; as a decorator (``@tc.set_grad_enabled(False)``)
    it restores the mode at once and sets it around each call of the function."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, (bool, int)):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {type(mode).__name__}")
        self.mode = bool(mode)
        self.previous = _state.grad_enabled
        _set_state(self.mode, _state.capture)

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        _set_state(self.previous, _state.capture)
        mode = self.mode

        @functools.wraps(function)
        def with_mode(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return function(*args, **kwargs)

        return with_mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        _set_state(self.previous, _state.capture)


def _check_executor(executor: object) -> BackwardExecutor:
    if not isinstance(executor, BackwardExecutor):
        raise TypeError(f"executor: expected a BackwardExecutor, got {type(executor).__name__}")
    return executor


def set_default_executor(executor: BackwardExecutor) -> None:
    """Set the process-wide executor used by ``grad`` and ``Tensor.backward``."""
    global _default
    _default = _check_executor(executor)


def install_default_executor(factory: Callable[[], BackwardExecutor]) -> None:
    """Make the process default with ``factory`` on first use. ``tidu_compile`` installs
    its choice (compiled, else the reference executor): the executors are a layer above
    the frontend, which imports none of them."""
    _default_factory[:] = [factory]


def get_default_executor() -> BackwardExecutor:
    """The innermost ``use_executor`` of this thread, else the process default.

    The process default is a ``CompiledExecutor`` when the compiler is importable,
    else the ``ReferenceExecutor`` (made by the installed factory on first use).
    """
    if _state.executors:
        return _state.executors[-1]
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = _default_factory[0]()
    return _default


@contextmanager
def use_executor(executor: BackwardExecutor) -> Iterator[BackwardExecutor]:
    """Use ``executor`` for backward passes started in this block (in this thread)."""
    _state.executors.append(_check_executor(executor))
    try:
        yield executor
    finally:
        _state.executors.pop()

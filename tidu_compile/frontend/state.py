"""Frontend state: the tape recorder, ``no_grad``, and executor selection (per thread)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tidu_compile import forksafe
from tidu_compile.eager import BackwardExecutor, Recorder

__all__ = [
    "RECORDER",
    "THREAD_STATE",
    "current_capture",
    "set_capture",
    "get_default_executor",
    "grad_enabled",
    "no_grad",
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
_default: BackwardExecutor | None = None
_default_lock = forksafe.Lock()


def grad_enabled() -> bool:
    return _state.grad_enabled


def current_capture() -> Any:
    """The composite trace in progress in this thread (see ``frontend.composite``), or None."""
    return _state.capture


def set_capture(capture: Any) -> None:
    _state.capture = capture


@contextmanager
def no_grad() -> Iterator[None]:
    """Within this block nothing is recorded on the tape (in this thread)."""
    previous = _state.grad_enabled
    _state.grad_enabled = False
    try:
        yield
    finally:
        _state.grad_enabled = previous


def _check_executor(executor: object) -> BackwardExecutor:
    if not isinstance(executor, BackwardExecutor):
        raise TypeError(f"executor: expected a BackwardExecutor, got {type(executor).__name__}")
    return executor


def set_default_executor(executor: BackwardExecutor) -> None:
    """Set the process-wide executor used by ``grad`` and ``Tensor.backward``."""
    global _default
    _default = _check_executor(executor)


def get_default_executor() -> BackwardExecutor:
    """The innermost ``use_executor`` of this thread, else the process default.

    The process default is a ``CompiledExecutor`` when the compiler is importable,
    else the ``ReferenceExecutor``.
    """
    if _state.executors:
        return _state.executors[-1]
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = _make_default_executor()
    return _default


def _make_default_executor() -> BackwardExecutor:
    try:
        from tidu_compile.executors.compiled import CompiledExecutor
    except ImportError:
        from tidu_compile.executors.reference import ReferenceExecutor

        return ReferenceExecutor()
    return CompiledExecutor()


@contextmanager
def use_executor(executor: BackwardExecutor) -> Iterator[BackwardExecutor]:
    """Use ``executor`` for backward passes started in this block (in this thread)."""
    _state.executors.append(_check_executor(executor))
    try:
        yield executor
    finally:
        _state.executors.pop()

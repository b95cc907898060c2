"""Locks that a forked child gets fresh, and the other state a child must renew.

``fork`` copies a process with only the calling thread. A lock another thread held at
that moment (a compile in progress holds the pipeline's lock for ~50 ms) stays held in
the child forever, so the child's first compile would deadlock; data loaders fork.
Every lock of the compiler, the JIT engine, the target machine and the executors is a
``Lock()`` or ``RLock()`` from here: a thin wrapper whose inner lock is replaced in the
child (``os.register_at_fork``), so every reference to it, in any module, sees the
fresh one. ``after_fork_in_child(callback)`` registers other renewals (the kernel
thread pool forgets the parent's threads).

Renewing a lock is safe when what it guards is plain Python state that the child
never finds half-changed in a way that matters (a half-lowered xDSL module is garbage,
not shared state). Native state is not: a thread inside LLVM at ``fork`` (O3 on one
module, ~50 ms) may leave LLVM's globals half-changed, and a thread loading object
code may have added it to the engine but not yet to its symbol table. For these,
``hold_across_fork(acquire, release)``: ``fork`` waits until it holds them (one FFI
call or one load at most) and both processes release them afterwards.

The forking thread itself must hold none of these locks (the library never forks while
holding one): its ``release`` would then find the fresh lock unlocked.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["Lock", "RLock", "RenewableLock", "after_fork_in_child", "hold_across_fork"]


class RenewableLock:
    """A ``threading.Lock`` (or ``RLock``) that is new in a forked child."""

    __slots__ = ("_factory", "_lock", "__weakref__")

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._lock = factory()
        _LOCKS.add(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return bool(self._lock.acquire(blocking, timeout))

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return bool(self._lock.acquire())

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def renew(self) -> None:
        self._lock = self._factory()


def Lock() -> RenewableLock:  # noqa: N802 - threading's name
    """A ``threading.Lock`` renewed after ``fork``."""
    return RenewableLock(threading.Lock)


def RLock() -> RenewableLock:  # noqa: N802 - threading's name
    """A ``threading.RLock`` renewed after ``fork``."""
    return RenewableLock(threading.RLock)


_LOCKS: weakref.WeakSet[RenewableLock] = weakref.WeakSet()
_CALLBACKS: list[Callable[[], None]] = []
_HELD: list[tuple[Callable[[], object], Callable[[], object]]] = []


def after_fork_in_child(callback: Callable[[], None]) -> None:
    """Call ``callback()`` in every forked child, after the locks are renewed."""
    _CALLBACKS.append(callback)


def hold_across_fork(acquire: Callable[[], object], release: Callable[[], object]) -> None:
    """Call ``acquire()`` before every ``fork`` (in registration order) and
    ``release()`` after it, in the parent and in the child (in reverse order)."""
    _HELD.append((acquire, release))


def _before_fork() -> None:
    for acquire, _ in _HELD:
        acquire()


def _after_fork_in_parent() -> None:
    for _, release in reversed(_HELD):
        release()


def _forget_imports_in_progress() -> None:
    """Drop the per-module import locks other threads held (CPython 3.11 renews only
    the global import lock), and the modules they were importing: xDSL imports a pass
    module on every compile, and a child forked meanwhile would wait on that module's
    lock forever, or find it half-initialized. The next import in the child makes a
    new lock and imports the module afresh."""
    import importlib._bootstrap as bootstrap

    me = threading.get_ident()
    locks: dict[str, Any] = getattr(bootstrap, "_module_locks", {})
    for name, ref in list(locks.items()):
        lock = ref()
        if lock is None:
            continue
        owner = getattr(lock, "owner", None)
        inner = getattr(lock, "lock", None)
        if owner not in (None, me) or (owner is None and inner is not None and inner.locked()):
            locks.pop(name, None)
            module = sys.modules.get(name)
            if owner not in (None, me) and getattr(
                getattr(module, "__spec__", None), "_initializing", False
            ):
                sys.modules.pop(name, None)


def _after_fork_in_child() -> None:
    _after_fork_in_parent()
    for lock in list(_LOCKS):
        lock.renew()
    _forget_imports_in_progress()
    for callback in _CALLBACKS:
        callback()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)

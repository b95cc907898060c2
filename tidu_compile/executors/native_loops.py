"""Which loops a ``CompiledExecutor`` runs as one native call (``compiler.native_loop``).

Each body is compiled as a graph of its own (the program a per-iteration call runs too),
through the executor's usual lookup (memory, disk, compile; with ``background``, a
worker compiles it while the loop runs one plan call per iteration). One runner per
loop structure (bodies, consts/carries split, direction); a loop whose plans cannot
run natively (``NotNative``) remembers ``None``:
it calls the body's plan once per iteration (``CompiledExecutor.graph_runner``).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from tidu_compile.compiler.native_loop import NativeScan, NativeWhile, NotNative
from tidu_compile.compiler.program import UnsupportedNode, graph_program
from tidu_compile.executors.tiered import Submitted

__all__ = ["native_loop_runner"]

#: Per executor: loop structure -> its runner, None, or the compiles it waits for.
_RUNNERS: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()

Obtain = Callable[[Any], Any]
"""The executor's lookup of a program's (artifact, bound plan), or a ``Submitted``."""


def _loop_key(loop: Any) -> Hashable:
    if hasattr(loop, "cond_body"):  # a WhileLoop
        return ("while", loop.cond_body, loop.body, loop.cond_consts)
    return ("scan", loop.body, loop.consts, loop.carries, loop.reverse)


def _bodies(loop: Any) -> tuple[Any, ...]:
    return (loop.cond_body, loop.body) if hasattr(loop, "cond_body") else (loop.body,)


def native_loop_runner(executor: Any, loop: Any, obtain: Obtain) -> Any:
    """The native runner of ``loop`` (an ``ops.Scan`` or ``ops.WhileLoop``), or None."""
    runners = _RUNNERS.setdefault(executor, {})
    key = _loop_key(loop)
    found = runners.get(key, runners)
    if found is not runners and not isinstance(found, list):
        return found
    if isinstance(found, list):  # compiles submitted to a worker
        if not all(f.ready() for f in found if type(f) is Submitted):
            return None
        found = [executor.tiered.collect(f) if type(f) is Submitted else f for f in found]
    else:
        try:
            found = [obtain(graph_program(b.recorded, b.input_types)) for b in _bodies(loop)]
        except UnsupportedNode:
            found = [None]
    if any(type(f) is Submitted for f in found):
        runners[key] = found
        return None
    runner: NativeScan | NativeWhile | None = None
    if all(isinstance(f, tuple) for f in found):  # else REFERENCE_ONLY: not compiled
        plans = [f[1] for f in found]
        try:
            if len(plans) == 2:
                runner = NativeWhile(plans[0], plans[1], loop.cond_consts, loop.carries)
            else:
                runner = NativeScan(plans[0], loop.consts, loop.carries, loop.reverse)
        except NotNative:
            runner = None
        except Exception as error:  # noqa: BLE001 - a driver that fails to compile: per iteration
            message = f"native loop: {type(error).__name__}: {error}".splitlines()[0]
            executor.stats.errors.append(message)
            warnings.warn(f"tidu_compile: {message}; the loop calls its body per iteration",
                          RuntimeWarning, stacklevel=2)  # fmt: skip
    runners[key] = runner
    return runner

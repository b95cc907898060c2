"""Which loops a ``CompiledExecutor`` runs as one native call.

A scan or a while loop whose bodies are all kernels runs as the compiled program of the
loop alone (``loop_program``), whose ``loops`` stage makes it ONE kernel
(``tidu-lower-control``: an ``scf.for`` or ``scf.while`` over the bodies' kernels, cached
with any program's). Any other loop runs with ``compiler.native_loop``'s hand-written
driver (counted: ``stats.loop_drivers``).

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
from tidu_compile.compiler.plan import BoundPlan, LibraryStep
from tidu_compile.compiler.program import UnsupportedNode, compilable, graph_program
from tidu_compile.compiler.ssa_program import ArgSource, Instr, NodeProgram
from tidu_compile.executors.tiered import Submitted
from tidu_compile.ops.base import TensorType

__all__ = ["native_loop_runner"]

#: Per executor: loop structure -> its runner, None, or the compiles it waits for.
_RUNNERS: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()

#: False: every loop takes the driver (what its tests and a same-build comparison use).
LOOP_PROGRAMS = True

Obtain = Callable[[Any], Any]
"""The executor's lookup of a program's (artifact, bound plan), or a ``Submitted``."""


def _loop_key(loop: Any) -> Hashable:
    if hasattr(loop, "cond_body"):  # a WhileLoop
        return ("while", loop.cond_body, loop.body, loop.cond_consts)
    # the length too: a scan's own program (``loop_program``) is made for one
    return ("scan", loop.body, loop.consts, loop.carries, loop.reverse, loop.length)


def _bodies(loop: Any) -> tuple[Any, ...]:
    return (loop.cond_body, loop.body) if hasattr(loop, "cond_body") else (loop.body,)


def _input_types(loop: Any) -> list[TensorType]:
    """The operand types of ``loop``: a scan's consts, carries and stacked ``xs``; a while
    loop's test consts, body consts and carries."""
    if hasattr(loop, "cond_body"):
        return [*loop.cond_body.input_types[: loop.cond_consts], *loop.body.input_types]
    split = loop.consts + loop.carries
    rows = loop.body.input_types[split:]
    return [*loop.body.input_types[:split],
            *(TensorType((loop.length, *t.shape), t.dtype) for t in rows)]  # fmt: skip


def loop_program(loop: Any) -> NodeProgram:
    """The program of ``loop`` (an ``ops.Scan`` or ``ops.WhileLoop``) alone::

        program(saved0: consts..., carries..., saved2: length x row...) {
          v3, v4 = Scan(body=..., consts=1, carries=1, length=5, ...)(v0, v1, v2)
          return (v3, v4,)
        }
    """
    types = _input_types(loop)
    inputs = tuple(range(len(types)))
    outputs = tuple(range(len(types), len(types) + len(loop.infer_types(*types))))
    types += loop.infer_types(*types)
    sources = tuple(ArgSource("saved", i) for i in inputs)
    return compilable(NodeProgram(sources, tuple(types), (Instr(loop, inputs, outputs),), outputs))


def _one_kernel(bound: BoundPlan, loop: Any) -> bool:
    """Whether the plan of ``loop_program(loop)`` runs the loop as a kernel (no library
    step of it left: ``tidu-lower-control`` took it)."""
    return not any(isinstance(s, LibraryStep) and isinstance(s.op, type(loop))
                   for s in bound.plan.steps)  # fmt: skip


class _LoopKernelRunner:
    """Runs a loop as the bound plan of its ``loop_program`` (one loop kernel)."""

    def __init__(self, bound: BoundPlan) -> None:
        self.bound = bound

    def __call__(self, *parts: Any) -> list[Any]:
        """A scan's ``(consts, carries, xs, length)`` or a while loop's ``(arrays,)``."""
        arrays = [*parts[0]] if len(parts) == 1 else [*parts[0], *parts[1], *parts[2]]
        return self.bound.run(arrays, check=False)


def native_loop_runner(executor: Any, loop: Any, obtain: Obtain) -> Any:
    """The native runner of ``loop`` (an ``ops.Scan`` or ``ops.WhileLoop``), or None."""
    runners = _RUNNERS.setdefault(executor, {})
    key = _loop_key(loop)
    runner: NativeScan | NativeWhile | _LoopKernelRunner | None = None
    found = runners.get(key, runners)
    if found is not runners and not isinstance(found, list):
        return found
    if isinstance(found, list):  # compiles submitted to a worker
        if not all(f.ready() for f in found if type(f) is Submitted):
            return None
        found = [executor.tiered.collect(f) if type(f) is Submitted else f for f in found]
    else:
        try:
            whole: list[Any] = []
            # not a zero-length scan: compiler.empty folds a program of nothing
            if LOOP_PROGRAMS and (hasattr(loop, "cond_body") or loop.length > 0):
                whole = [obtain(loop_program(loop))]
                if isinstance(whole[0], tuple) and _one_kernel(whole[0][1], loop):
                    runners[key] = runner = _LoopKernelRunner(whole[0][1])
                    return runner  # the body's own program is not needed
            found = [obtain(graph_program(b.recorded, b.input_types)) for b in _bodies(loop)]
            found += whole
        except UnsupportedNode:
            found = [None]
    if any(type(f) is Submitted for f in found):
        runners[key] = found
        return None
    if all(isinstance(f, tuple) for f in found):  # else REFERENCE_ONLY: not compiled
        plans = [f[1] for f in found]
        if len(plans) == len(_bodies(loop)) + 1:  # the bodies, the loop alone
            alone = plans.pop()
            if _one_kernel(alone, loop):
                runners[key] = runner = _LoopKernelRunner(alone)
                return runner
        try:
            if len(plans) == 2:
                runner = NativeWhile(plans[0], plans[1], loop.cond_consts, loop.carries)
            else:
                runner = NativeScan(plans[0], loop.consts, loop.carries, loop.reverse)
            executor.stats.loop_drivers += 1
        except NotNative:
            runner = None
        except Exception as error:  # noqa: BLE001 - a driver that fails to compile: per iteration
            message = f"native loop: {type(error).__name__}: {error}".splitlines()[0]
            executor.stats.errors.append(message)
            warnings.warn(f"tidu_compile: {message}; the loop calls its body per iteration",
                          RuntimeWarning, stacklevel=2)  # fmt: skip
    runners[key] = runner
    return runner

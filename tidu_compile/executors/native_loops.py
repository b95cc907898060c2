"""Which scans a ``CompiledExecutor`` runs as one native loop (``compiler.native_loop``).

The body is compiled as a graph of its own, with its small contractions written as
kernels (``compiler.contraction_kernels``), through the executor's usual lookup (memory,
disk, compile; with ``background``, a worker compiles it while the scan runs one plan
call per iteration). One runner per body, consts/carries split and direction; a body
whose plan cannot run natively (``NotNative``) remembers ``None``: its scans call the
body's plan once per iteration (``CompiledExecutor.graph_runner``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any

from tidu_compile.compiler.contraction_kernels import contractions_as_kernels
from tidu_compile.compiler.native_loop import NativeScan, NotNative
from tidu_compile.compiler.program import UnsupportedNode, graph_program
from tidu_compile.executors.tiered import Submitted

__all__ = ["native_scan_runner"]

#: Per executor: (body, consts, carries, reverse) -> NativeScan, None, or a Submitted.
_RUNNERS: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()


def native_scan_runner(executor: Any, scan: Any, obtain: Callable[[Any], Any]) -> NativeScan | None:
    """``scan``'s native runner, or None (``obtain(program)``: the executor's lookup
    of a program's artifact and bound plan, or a ``Submitted`` compile)."""
    runners = _RUNNERS.setdefault(executor, {})
    key = (scan.body, scan.consts, scan.carries, scan.reverse)
    found = runners.get(key, runners)
    if type(found) is Submitted:
        if not found.ready():
            return None
        found = executor.tiered.collect(found)
    elif found is runners:
        try:
            program = graph_program(scan.body.recorded, scan.body.input_types)
        except UnsupportedNode:
            runners[key] = None
            return None
        found = obtain(contractions_as_kernels(program))
    if type(found) is Submitted:
        runners[key] = found
        return None
    if isinstance(found, tuple):
        try:
            found = NativeScan(found[1], scan.consts, scan.carries, scan.reverse)
        except NotNative:
            found = None
    runner = found if isinstance(found, NativeScan) else None  # REFERENCE_ONLY: not compiled
    runners[key] = runner
    return runner

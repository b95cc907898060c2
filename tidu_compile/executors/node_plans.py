"""What a ``CompiledExecutor`` keeps per node, and its counters.

A node's linearization is memoized once per node structure (``NodeEntry``); each input
signature of it gets a ``CompiledPlan`` (the bound plan, where its arguments come from,
its fast call), a ``PendingPlan`` while a background worker compiles it, or
``REFERENCE_ONLY`` when it cannot be compiled. ``ExecutorStats`` counts what happened.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tidu_compile.ad import LinearizedGraph
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.eager import RecordedGraph
from tidu_compile.executors.tiered import Submitted
from tidu_compile.graph import ValueKey
from tidu_compile.ops.base import TensorType

__all__ = [
    "REFERENCE_ONLY", "CompileForbiddenError", "CompiledPlan", "ExecutorStats", "NodeEntry",
    "PendingPlan", "bound_plan", "plan_bytes",
]  # fmt: skip


class CompileForbiddenError(RuntimeError):
    """Raised when ``forbid_compile`` is set and a node would have to be compiled."""


@dataclass
class ExecutorStats:
    """Counters of a ``CompiledExecutor`` (read them; do not write)."""

    compiles: int = 0
    memory_hits: int = 0
    disk_hits: int = 0
    #: Programs lowered here whose kernels' object code was compiled before for another
    #: program (another batch size: ``compiler.kernel_code``), so LLVM did not run.
    generic_hits: int = 0
    fallbacks: int = 0
    #: Loop structures run by ``compiler.native_loop``'s hand-written driver (a forward
    #: loop, or a scan whose body ``tidu-lower-control`` could not make one kernel of:
    #: ``tidu.loop_driver`` in the ``loops`` stage says why), counted once each.
    loop_drivers: int = 0
    #: Node runs on the reference path while a background worker compiled the node.
    background_runs: int = 0
    #: Whole-tape programs that took over a tape structure's backward (``executors.capture``).
    captured: int = 0
    #: Backward sweeps run by one of them (each instead of one run per node; each also
    #: counts as one of ``memory_hits``).
    captured_runs: int = 0
    #: ``@tc.function`` calls that computed their loss's gradient with their forward, in
    #: one program (``frontend.joint_forward``, which counts them).
    joint_runs: int = 0
    #: Forward-mode and graph-keeping reverse sweeps run as one spliced graph
    #: (``frontend.spliced_tangents``, ``frontend.spliced_cotangents``).
    spliced_runs: int = 0
    compile_seconds: float = 0.0
    #: Time spent reading disk hits and loading their object code (not compiling).
    disk_seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"compiles={self.compiles} memory_hits={self.memory_hits} "
            f"disk_hits={self.disk_hits} generic_hits={self.generic_hits} "
            f"fallbacks={self.fallbacks} loop_drivers={self.loop_drivers} "
            f"background_runs={self.background_runs} "
            f"captured={self.captured} captured_runs={self.captured_runs} "
            f"joint_runs={self.joint_runs} spliced_runs={self.spliced_runs} "
            f"compile_seconds={self.compile_seconds:.3f} disk_seconds={self.disk_seconds:.3f}"
        )


@dataclass(eq=False)  # hashed by identity: a key of the plan LRU
class NodeEntry:
    """A memoized linearization of one node structure."""

    recorded: RecordedGraph
    linear: LinearizedGraph
    transposed: LinearizedGraph
    key: Hashable
    saved_order: tuple[ValueKey, ...]  # inputs, outputs, then retained intermediates
    all_present: bool  # every active output slot has a tangent (the usual case)
    retained_known: bool = False  # saved_order has the retained keys of the first run
    touched_at: int = -1  # the linearization LRU's ``puts`` when this entry was last touched
    last_touched_at: int = -1  # the plan LRU's ``puts`` when ``last_key`` was last touched
    plans: dict[Hashable, Any] = field(default_factory=dict)  # signature -> plan (fast index)
    last: Any = None  # the plan used last: tried first, its argument check is the cache key
    last_key: Any = None  # its key in the plan LRU (hits through ``last`` refresh it)


@dataclass(frozen=True)
class CompiledPlan:
    plan: BoundPlan
    #: Per plan argument: ``(i, None)`` for seed ``i``, ``(-1, key)`` for saved ``key``.
    arg_sources: tuple[tuple[int, ValueKey | None], ...]
    fallbacks: int  # library steps the compiler could not lower, per run
    nbytes: int = 0  # object code + an estimate of the plan: the memory cache's size
    #: (key, shape, dtype) of the saved inputs the plan does not read: the fast path
    #: checks them too, since they fix the node's output types (what a seed must match).
    unread: tuple[tuple[ValueKey, tuple[int, ...], np.dtype], ...] = ()
    #: The inputs whose cotangents the plan computes (None: all of them).
    needed: tuple[bool, ...] | None = None
    #: ``fast(seeds, saved)``: the plan as straight-line code (``compiler.fast_path``),
    #: None when the arguments do not fit it exactly.
    fast: Any = None


@dataclass(frozen=True, eq=False)
class PendingPlan:
    """A node's plan being compiled by a background worker: until it is ready, the
    node runs on the reference path."""

    submitted: Submitted
    order: tuple[ValueKey, ...]
    saved_types: tuple[TensorType | None, ...]
    needed: tuple[bool, ...] | None


def bound_plan(found: tuple[Any, BoundPlan] | Submitted) -> BoundPlan | Submitted:
    """A graph's plan: the bound plan found, or what a worker still compiles."""
    return found if isinstance(found, Submitted) else found[1]


def plan_bytes(compiled: Any) -> int:
    """The size the in-memory cache counts for a cached value."""
    return compiled.nbytes if isinstance(compiled, CompiledPlan) else 64


#: Cached in place of a plan when a node cannot be compiled: it runs on the reference path.
REFERENCE_ONLY = object()

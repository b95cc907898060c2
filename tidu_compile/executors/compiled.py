"""``CompiledExecutor``: each backward node runs as native code compiled from its VJP.

Per node, the first call with given input types builds the node's backward program
(``compiler.program``), compiles it through the pipeline (tidu dialect -> fused kernels
-> loops -> LLVM -> native object, see ``compiler.pipeline``) and caches the result:

1. linearizations are memoized by the node's structure (its structural input and output
   keys and the active slots), never by the tape's fresh value keys;
2. bound plans live in an in-memory LRU keyed by (structure, slots, types);
3. artifacts (plan + object code) live on disk, keyed by the program text and the
   compilation environment (``compiler.cache``).

``execute_forward`` computes nothing: residuals are recomputed inside the kernels from
the saved data. Nodes the compiler cannot type (a user's own primitive set) run on the
``ReferenceExecutor`` and count as fallbacks.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tidu_compile.ad import LinearizedGraph, PrimitiveGraph, linear_transpose
from tidu_compile.compiler.cache import DiskCache, MemoryCache, default_cache_dir
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.compiler.program import UnsupportedNode, build_program
from tidu_compile.eager import BackwardExecutor, RecordedGraph
from tidu_compile.executors.reference import ReferenceExecutor
from tidu_compile.graph import ValueKey
from tidu_compile.ops.base import TensorType, type_of

__all__ = ["CompileForbiddenError", "CompiledExecutor", "ExecutorStats"]


class CompileForbiddenError(RuntimeError):
    """Raised when ``forbid_compile`` is set and a node would have to be compiled."""


@dataclass
class ExecutorStats:
    """Counters of a ``CompiledExecutor`` (read them; do not write)."""

    compiles: int = 0
    memory_hits: int = 0
    disk_hits: int = 0
    fallbacks: int = 0
    compile_seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"compiles={self.compiles} memory_hits={self.memory_hits} "
            f"disk_hits={self.disk_hits} fallbacks={self.fallbacks} "
            f"compile_seconds={self.compile_seconds:.3f}"
        )


@dataclass(eq=False)  # hashed by identity: a key of the plan LRU
class _NodeEntry:
    """A memoized linearization of one node structure."""

    recorded: RecordedGraph
    linear: LinearizedGraph
    transposed: LinearizedGraph
    key: Hashable
    saved_order: tuple[ValueKey, ...]
    all_present: bool  # every active output slot has a tangent (the usual case)
    plans: dict[Hashable, Any] = field(default_factory=dict)  # signature -> plan (fast index)
    last: Any = None  # the plan used last: tried first, its argument check is the cache key


@dataclass(frozen=True)
class _Compiled:
    plan: BoundPlan
    arg_sources: tuple[tuple[bool, int], ...]  # (is_seed, index) per plan argument
    fallbacks: int  # library steps the compiler could not lower, per run


#: Cached in place of a plan when a node cannot be compiled: it runs on the reference path.
_REFERENCE_ONLY = object()


class CompiledExecutor(BackwardExecutor):
    """Runs backward nodes as JIT-compiled native kernels, cached in memory and on disk.

    ``cache_dir``: None for the user cache directory (``$TIDU_COMPILE_CACHE_DIR``
    overrides it), a path, or False for memory only. ``forbid_compile=True`` makes any
    compilation raise ``CompileForbiddenError`` (tests use it to prove cache hits).
    """

    def __init__(
        self,
        cache_dir: str | Path | None | bool = None,
        *,
        memory_entries: int = 1024,
        forbid_compile: bool = False,
    ) -> None:
        if cache_dir is True:
            raise TypeError("cache_dir: pass None, a path, or False")
        self.disk = (
            None if cache_dir is False else DiskCache(cache_dir or default_cache_dir())
        )
        self.memory = MemoryCache(memory_entries, self._forget_plan)
        self.forbid_compile = forbid_compile
        self.stats = ExecutorStats()
        self._linearizations = MemoryCache(memory_entries, self._forget_linearization)
        self._entries_by_linear: dict[int, _NodeEntry] = {}
        self._entries_by_graph: dict[tuple[int, tuple[int, ...]], _NodeEntry] = {}
        self._lock = threading.RLock()
        self._reference = ReferenceExecutor()

    # ---------------------------------------------------------------- protocol

    def linearize_recorded_graph(
        self, graph: RecordedGraph, output_slots: Sequence[int], ctx: Any
    ) -> LinearizedGraph:
        slots = tuple(output_slots)
        entry = self._entries_by_graph.get((id(graph), slots))  # same graph object: fast path
        if entry is not None and entry.recorded is graph:
            return entry.linear
        key = (graph.input_keys, graph.output_keys, slots)  # structure: any equal graph
        entry = self._linearizations.get(key)
        if entry is None:
            with self._lock:
                entry = self._linearizations.get(key)
                if entry is None:
                    linear = graph.linearize(output_slots, ctx)
                    entry = _NodeEntry(
                        graph,
                        linear,
                        linear_transpose(linear, ctx),
                        key,
                        graph.input_keys + graph.output_keys,
                        all(t is not None for t in linear.tangent_outputs),
                    )
                    self._entries_by_linear[id(linear)] = entry
                    self._linearizations.put(key, entry)
        if len(self._entries_by_graph) > 4 * self._linearizations.max_entries:
            self._entries_by_graph.clear()  # graph objects come and go: keep the index bounded
        self._entries_by_graph[(id(graph), slots)] = entry
        return entry.linear

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> Mapping[ValueKey, Any]:
        """Residuals are recomputed by the kernels: hand the saved data through."""
        return initial_data

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any]:
        if len(cotangent_out) != len(linear.tangent_outputs):
            raise ValueError(
                f"cotangent_out: expected {len(linear.tangent_outputs)} cotangents, "
                f"got {len(cotangent_out)}"
            )
        entry = self._entries_by_linear.get(id(linear))
        if entry is None or entry.linear is not linear:
            return self._run_reference(linear, cotangent_out, external_data, ctx)
        seeds = (
            cotangent_out
            if entry.all_present
            else [c for c, t in zip(cotangent_out, linear.tangent_outputs, strict=True)
                  if t is not None]  # fmt: skip
        )
        saved = [external_data.get(k) for k in entry.saved_order]
        last = entry.last
        if last is not None:  # the usual case: same types as last time
            try:
                args = [seeds[i] if is_seed else saved[i] for is_seed, i in last.arg_sources]
                if last.plan.matches(args):
                    self.stats.memory_hits += 1
                    if last.fallbacks:
                        self.stats.fallbacks += last.fallbacks
                    return last.plan.run_matching(args)
            except AttributeError:  # not arrays: a user's own operand type
                pass
        try:  # the cache key: shapes and dtypes of every argument
            signature = (
                tuple([(s.shape, s.dtype) for s in seeds]),
                tuple([None if v is None else (v.shape, v.dtype) for v in saved]),
            )
        except AttributeError:  # not arrays: a user's own operand type
            return self._run_reference(linear, cotangent_out, external_data, ctx)
        compiled = entry.plans.get(signature)
        if compiled is None:
            compiled = self._compile(entry, signature, seeds, saved)
        elif compiled is not _REFERENCE_ONLY:
            self.stats.memory_hits += 1
        if compiled is _REFERENCE_ONLY:
            return self._run_reference(linear, cotangent_out, external_data, ctx)
        entry.last = compiled
        args = [seeds[i] if is_seed else saved[i] for is_seed, i in compiled.arg_sources]
        if compiled.fallbacks:
            self.stats.fallbacks += compiled.fallbacks
        return compiled.plan.run(args, check=False)

    def add_operands(self, a: Any, b: Any) -> Any:
        return np.add(a, b) if isinstance(a, np.ndarray) else a + b

    # ---------------------------------------------------------------- compiling

    def _compile(
        self, entry: _NodeEntry, signature: Hashable, seeds: Sequence[Any], saved: Sequence[Any]
    ) -> Any:
        """A ``_Compiled`` plan, or ``_REFERENCE_ONLY`` when the node cannot be compiled."""
        with self._lock:  # single flight: one compile per key, others wait and hit
            cached = entry.plans.get(signature)
            if cached is not None:
                if cached is not _REFERENCE_ONLY:
                    self.stats.memory_hits += 1
                return cached
            try:
                types = (
                    tuple(type_of(s) for s in seeds),
                    tuple(None if v is None else type_of(v) for v in saved),
                )
                compiled: Any = self._compile_locked(entry, types)
            except (CompileForbiddenError, KeyboardInterrupt):
                raise
            except UnsupportedNode:
                compiled = _REFERENCE_ONLY  # a user's own primitive set: no types to compile
            except Exception as error:  # noqa: BLE001 - any compiler failure falls back
                message = f"{type(error).__name__}: {error}".splitlines()[0]
                self.stats.errors.append(message)
                warnings.warn(
                    f"tidu_compile: compiling a backward node failed ({message}); "
                    "running it on the reference executor",
                    RuntimeWarning,
                    stacklevel=5,
                )
                compiled = _REFERENCE_ONLY
            entry.plans[signature] = compiled
            self.memory.put((entry, signature), compiled)
            return compiled

    def _compile_locked(
        self,
        entry: _NodeEntry,
        types: tuple[tuple[TensorType, ...], tuple[TensorType | None, ...]],
    ) -> _Compiled:
        from tidu_compile.compiler import pipeline

        seed_types, saved_types = types
        saved = {k: t for k, t in zip(entry.saved_order, saved_types, strict=True)
                 if t is not None}  # fmt: skip
        program = build_program(
            entry.recorded, entry.linear, seed_types, saved, entry.transposed
        )
        digest = pipeline.program_digest(program)
        artifact = self.disk.get(digest) if self.disk is not None else None
        if artifact is not None and pipeline.artifact_matches(artifact, digest):
            self.stats.disk_hits += 1
        else:
            if self.forbid_compile:
                raise CompileForbiddenError(
                    f"compiling a backward node is forbidden (forbid_compile=True):\n{program}"
                )
            start = time.perf_counter()
            artifact = pipeline.compile_program(program, digest)
            self.stats.compile_seconds += time.perf_counter() - start
            self.stats.compiles += 1
            for stage, seconds in artifact.stage_seconds.items():
                self.stats.stage_seconds[stage] = (
                    self.stats.stage_seconds.get(stage, 0.0) + seconds
                )
            if self.disk is not None:
                self.disk.put(digest, artifact)
        bound = pipeline.bind(artifact)
        sources = tuple((s.kind == "seed", s.index) for s in program.arg_sources)
        return _Compiled(bound, sources, artifact.plan.fallback_count)

    def _run_reference(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any]:
        self.stats.fallbacks += 1
        residuals = self._reference.execute_forward(PrimitiveGraph(linear.graph), external_data)
        return self._reference.run_transposed_linear(linear, cotangent_out, residuals, ctx)

    def _forget_plan(self, key: Hashable, plan: Any) -> None:
        entry, signature = key  # type: ignore[misc]
        entry.plans.pop(signature, None)
        if entry.last is plan:
            entry.last = None

    def _forget_linearization(self, key: Hashable, entry: _NodeEntry) -> None:
        self._entries_by_linear.pop(id(entry.linear), None)
        for graph_key in [k for k, e in self._entries_by_graph.items() if e is entry]:
            del self._entries_by_graph[graph_key]


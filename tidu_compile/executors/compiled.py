"""``CompiledExecutor``: each backward node runs as native code compiled from its VJP.

Per node, the first call with given input types builds the node's backward program
(``compiler.program``), compiles it through the pipeline (tidu dialect -> fused kernels
-> loops -> LLVM -> native object, see ``compiler.pipeline``) and caches the result:

1. linearizations are memoized by the node's structure (its structural input and output
   keys and the active slots), never by the tape's fresh value keys;
2. bound plans live in an in-memory LRU keyed by (structure, slots, types);
3. artifacts (plan + object code) live on disk, keyed by the program text and the
   compilation environment (``compiler.cache``); a program whose kernels were compiled
   before for another program (another batch size) is lowered and reuses their object
   code (``compiler.artifacts``, ``compiler.kernel_code``);
4. with ``background=True`` a node that must be compiled runs on the reference path
   while a worker process compiles it (``compiler.background``);
5. a tape whose structure was seen before runs as one program (``run_tape``,
   ``executors.capture``), and so does a forward-mode or graph-keeping reverse sweep
   (``frontend.spliced_tangents``, ``spliced_cotangents``), unless ``capture=False``.

``execute_forward`` computes nothing: residuals are recomputed inside the kernels from
the saved data (or read from values the tape retained). A node some of whose inputs
need no gradient comes through ``run_transposed_linear_for`` and gets a plan without
their cotangents. The usual call, with the argument types of the previous one, goes
through the plan's generated fast call (``compiler.fast_path``). Nodes the compiler
cannot type (a user's own primitive set) run on the ``ReferenceExecutor`` and count as
fallbacks. What is kept per node, and the counters, are in ``executors.node_plans``.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Container, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.ad import LinearizedGraph, PrimitiveGraph, linear_transpose
from tidu_compile.compiler import background as _background
from tidu_compile.compiler.artifacts import Artifacts, Keys
from tidu_compile.compiler.buffers import MIN_POOLED_BYTES, POOL
from tidu_compile.compiler.cache import DiskCache, MemoryCache, default_cache_dir
from tidu_compile.compiler.fast_path import build_fast_call
from tidu_compile.compiler.fused_grad import FusedGrad, build_fused
from tidu_compile.compiler.interpret import evaluate_program
from tidu_compile.compiler.native import CodegenRefused
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.compiler.program import (
    MissingSavedValue,
    UnsupportedNode,
    needed_mask,
    node_program,
    saved_value_order,
)
from tidu_compile.eager import BackwardExecutor, RecordedGraph, Trace
from tidu_compile.executors import graph_runs
from tidu_compile.executors.capture import TapeCapture
from tidu_compile.executors.graph_fast import GraphFastCalls
from tidu_compile.executors.native_loops import native_loop_runner
from tidu_compile.executors.node_plans import (
    REFERENCE_ONLY,
    CompiledPlan,
    CompileForbiddenError,
    ExecutorStats,
    NodeEntry,
    PendingPlan,
    plan_bytes,
)
from tidu_compile.executors.reference import ReferenceExecutor, cotangent_count_error
from tidu_compile.executors.tiered import Submitted, Tiered
from tidu_compile.executors.type_problem import type_problem
from tidu_compile.graph import ValueKey
from tidu_compile.ops.base import TensorType, type_of

__all__ = ["CompileForbiddenError", "CompiledExecutor", "ExecutorStats"]


_F64 = np.dtype(np.float64)

#: ``stats.errors`` keeps this many of the most recent compile errors.
_MAX_ERRORS = 100


def _signature(
    seeds: Sequence[Any], saved: Sequence[Any], needed: tuple[bool, ...] | None
) -> Hashable | None:
    """A node's plan key: the shapes and dtypes of its seeds and saved values and the
    cotangents it computes; None for operands that are not arrays (a user's own operand
    type), ``TypeError`` for a seed that is not an array among saved arrays."""
    try:
        return (
            tuple([(s.shape, s.dtype) for s in seeds]),
            tuple([None if v is None else (v.shape, v.dtype) for v in saved]),
            needed,
        )
    except AttributeError:
        for index, seed in enumerate(seeds):
            if not hasattr(seed, "shape") and any(hasattr(v, "shape") for v in saved):
                raise TypeError(
                    f"cotangent_out[{index}]: expected an array, got {type(seed).__name__}"
                ) from None
        return None


class CompiledExecutor(BackwardExecutor):
    """Runs backward nodes as JIT-compiled native kernels, cached in memory and on disk.

    ``cache_dir``: None for the user cache directory (``$TIDU_COMPILE_CACHE_DIR``
    overrides it), a path, or False for memory only. ``forbid_compile=True`` makes any
    compilation that needs LLVM raise ``CompileForbiddenError`` (tests use it to prove
    cache hits; lowering a program whose kernels' object code is known is allowed).

    ``background=True`` (the default unless ``$TIDU_COMPILE_BACKGROUND`` is 0) never
    waits on the compiler: a node whose native code is neither in memory nor on disk
    runs on the reference path (``stats.background_runs``) while a worker process
    compiles it (``compiler.background``), and natively from the first call after the
    worker is done; ``wait_for_background()`` waits for the workers.
    ``background=False`` compiles on the calling thread before running the node.

    The in-memory plan cache keeps at most ``memory_entries`` plans and at most
    ``memory_bytes`` bytes of them (None: no byte bound), counted as each plan's object
    code plus an estimate of its plan (``ExecutorStats``/``memory.total_bytes``); the
    least recently used plans go first. Evicted plans come back from the disk cache (or
    are compiled again). Native code stays loaded in the process's JIT engine, which
    cannot unload it: the engine grows with the number of distinct programs, never with
    the number of calls. Node linearizations are bounded by ``memory_entries`` too.
    """

    def __init__(
        self,
        cache_dir: str | Path | None | bool = None,
        *,
        memory_entries: int = 1024,
        memory_bytes: int | None = 256 << 20,
        forbid_compile: bool = False,
        background: bool | None = None,
        capture: bool = True,
        joint_forward: bool = True,
    ) -> None:
        if cache_dir is True or not (
            cache_dir is None or cache_dir is False or isinstance(cache_dir, str | os.PathLike)
        ):
            raise TypeError(f"cache_dir: pass None, a path, or False, got {cache_dir!r}")
        self.disk = (
            None if cache_dir is False else DiskCache(cache_dir or default_cache_dir())
        )
        self.memory = MemoryCache(
            memory_entries, self._forget_plan, max_bytes=memory_bytes, size_of=plan_bytes
        )
        self.forbid_compile = forbid_compile
        self.stats = ExecutorStats()
        self._linearizations = MemoryCache(memory_entries, self._forget_linearization)
        self._entries_by_linear: dict[int, NodeEntry] = {}
        self._entries_by_graph: dict[tuple[int, tuple[int, ...]], NodeEntry] = {}
        self._lock = forksafe.RLock()
        self._reference = ReferenceExecutor()
        self.artifacts = Artifacts(self.disk, self.stats, memory_entries, memory_bytes)
        self.background = _background.default_enabled() if background is None else bool(
            background
        )
        if self.background:
            _background.prewarm()
        #: Programs handed to background workers (``executors.tiered``).
        self.tiered = Tiered(self.artifacts, self._compile_here)
        #: ``run_graph``'s plans by (graph structure, input types).
        self._graph_plans: dict[Hashable, Any] = {}
        self._graph_fast = GraphFastCalls()  # their fast calls (``executors.graph_fast``)
        #: Whole-tape programs (``executors.capture``); None with ``capture=False``.
        self.capture = TapeCapture.of(self, CompiledExecutor) if capture else None
        self.splice_sweeps = bool(capture)  # ``frontend.spliced_tangents``, ``_cotangents``
        #: A ``@tc.function`` call recording a scalar loss computes its gradient with it
        #: (``frontend.joint_forward``; ``stats.joint_runs`` counts them).
        self.joint_forward = joint_forward

    # ---------------------------------------------------------------- protocol

    def linearize_recorded_graph(
        self, graph: RecordedGraph, output_slots: Sequence[int], ctx: Any
    ) -> LinearizedGraph:
        slots = tuple(output_slots)
        entry = self._entries_by_graph.get((id(graph), slots))  # same graph object: fast path
        if entry is not None and entry.recorded is graph:
            puts = self._linearizations.puts
            if entry.touched_at != puts:  # an LRU, not a FIFO: hot nodes stay
                self._linearizations.touch(entry.key)
                entry.touched_at = puts
            return entry.linear
        key = (graph.structure, slots)  # structure: any equal graph
        entry = self._linearizations.get(key)
        if entry is None:
            with self._lock:
                entry = self._linearizations.get(key)
                if entry is None:
                    linear = graph.linearize(output_slots, ctx)
                    entry = NodeEntry(
                        graph,
                        linear,
                        linear_transpose(linear, ctx),
                        key,
                        saved_value_order(graph, ()),
                        all(t is not None for t in linear.tangent_outputs),
                    )
                    self._entries_by_linear[id(linear)] = entry
                    self._linearizations.put(key, entry)
        if len(self._entries_by_graph) > 4 * self._linearizations.max_entries:
            self._entries_by_graph.clear()  # graph objects come and go: keep the index bounded
        self._entries_by_graph[(id(graph), slots)] = entry
        return entry.linear

    def joint_program(
        self,
        graph: RecordedGraph,
        input_types: Sequence[Any],
        needed: tuple[bool, ...],
    ) -> FusedGrad | None:
        """``compiler.fused_grad``'s loss-and-gradient graph (``frontend.joint_forward``)."""
        return build_fused(graph, input_types, needed)

    def run_tape(
        self,
        output_key: ValueKey,
        output_trace: Trace,
        seed: Any,
        ctx: Any,
        wanted: Container[ValueKey] | None,
    ) -> dict[ValueKey, Any] | None:
        """The whole sweep as one program once the tape's structure was seen before
        and its program is compiled (``executors.capture``), else None: node by node."""
        capture = self.capture
        return None if capture is None else capture.run(output_key, output_trace, seed, ctx, wanted)

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> Mapping[ValueKey, Any]:
        """Residuals are recomputed by the kernels: hand the saved data through."""
        return initial_data

    def run_transposed_linear_for(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
        needed: Sequence[bool],
    ) -> list[Any]:
        """Runs a plan compiled without the cotangents of the inputs not ``needed``."""
        if type(self).run_transposed_linear is not CompiledExecutor.run_transposed_linear:
            return self.run_transposed_linear(linear, cotangent_out, external_data, ctx)
        return CompiledExecutor.run_transposed_linear(
            self, linear, cotangent_out, external_data, ctx, needed_mask(linear, needed)
        )

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
        needed: tuple[bool, ...] | None = None,
    ) -> list[Any]:
        """The protocol's method; ``needed`` (from ``run_transposed_linear_for``) selects
        a plan that computes only those inputs' cotangents. ``_route`` decides where the
        node runs; this only runs it."""
        if len(cotangent_out) != len(linear.tangent_outputs):
            raise cotangent_count_error(linear, cotangent_out)
        entry = self._entries_by_linear.get(id(linear))
        if entry is None or entry.linear is not linear:  # not linearized here
            return self._run_reference(linear, cotangent_out, external_data, ctx)
        seeds = (
            cotangent_out
            if entry.all_present
            else [c for c, t in zip(cotangent_out, linear.tangent_outputs, strict=True)
                  if t is not None]  # fmt: skip
        )
        last = entry.last
        if last is not None and last.needed == needed:  # usually the types of last time
            results = self._run_last(entry, last, seeds, external_data)
            if results is not None:
                return results
        route = self._route(entry, seeds, external_data, needed)
        if type(route) is CompiledPlan:
            return self._run_plan(route, seeds, external_data)
        if type(route) is PendingPlan:  # a worker compiles it: its program, by numpy
            return self._run_pending(route, seeds, external_data)
        return self._run_reference(linear, cotangent_out, external_data, ctx)

    def _route(
        self,
        entry: NodeEntry,
        seeds: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        needed: tuple[bool, ...] | None,
    ) -> Any:
        """Where the node runs with these arguments: its ``CompiledPlan`` (found in memory,
        loaded or compiled, or a background compile's, once done), its ``PendingPlan``
        (a worker compiles it: its program runs op by op meanwhile) or ``REFERENCE_ONLY``
        (the reference path: it cannot be compiled, or its operands are not arrays)."""
        if not entry.retained_known:
            self._learn_retained(entry, external_data)
        saved = [external_data.get(k) for k in entry.saved_order]
        signature = _signature(seeds, saved, needed)
        if signature is None:
            return REFERENCE_ONLY
        compiled: Any = entry.plans.get(signature)
        if compiled is None:
            compiled = self._compile(entry, signature, seeds, saved, needed)
        else:
            self.memory.touch((entry, signature))
            if type(compiled) is CompiledPlan:
                self.stats.memory_hits += 1
        if type(compiled) is PendingPlan:
            compiled = self._settle(entry, signature, compiled)
            if type(compiled) is PendingPlan:  # its native code is not ready yet
                self.stats.background_runs += 1
                return compiled
        if type(compiled) is CompiledPlan and entry.plans.get(signature) is compiled:
            entry.last, entry.last_key = compiled, (entry, signature)  # not evicted at once
        return compiled

    def _run_plan(
        self, compiled: CompiledPlan, seeds: Sequence[Any], external_data: Mapping[ValueKey, Any]
    ) -> list[Any]:
        """Run a node's plan on its seeds and saved values (types known to fit)."""
        args = [seeds[i] if key is None else external_data.get(key)
                for i, key in compiled.arg_sources]  # fmt: skip
        if compiled.fallbacks:
            self.stats.fallbacks += compiled.fallbacks
        return compiled.plan.run(args, check=False)

    def _run_pending(
        self, pending: PendingPlan, seeds: Sequence[Any], external_data: Mapping[ValueKey, Any]
    ) -> list[Any]:
        """A node whose plan a worker compiles: its program evaluated by numpy
        (``compiler.interpret``), on the arguments the plan will take."""
        program = pending.submitted.program
        order = pending.order
        args = [seeds[s.index] if s.kind == "seed" else external_data.get(order[s.index])
                for s in program.arg_sources]  # fmt: skip
        return evaluate_program(program, args)

    def run_graph(self, graph: RecordedGraph, inputs: Sequence[Any]) -> list[Any]:
        """``graph``'s outputs for ``inputs`` as native code, compiled once per graph
        structure and input types and cached like backward plans (in memory, on disk):
        forward-mode tangents and the derived graphs of higher order run here
        (``executors.graph_runs``)."""
        return graph_runs.run_graph(self, graph, inputs, super().run_graph)

    def graph_runner(self, graph: RecordedGraph) -> Callable[[Sequence[Any]], list[Any]]:
        """``run_graph`` for calls that all pass inputs of one set of types (a loop body,
        once per iteration): once bound, later calls run the plan directly."""
        return graph_runs.graph_runner(self, graph)

    def loop_runner(self, loop: Any) -> Callable[..., list[Any]] | None:
        """A scan's or while loop's iterations as one native call
        (``executors.native_loops``), or None: each calls the body's plan (``graph_runner``)."""

        def obtain(program: Any) -> Any:
            with self._lock:
                return self._guarded(lambda: self._obtain(program))

        return native_loop_runner(self, loop, obtain)  # type: ignore[no-any-return]

    def add_operands(self, a: Any, b: Any) -> Any:
        """``a + b``; large sums go into recycled memory (``compiler.buffers``), 0-d f64
        sums are added as Python floats (the same IEEE addition, a third of the cost)."""
        if (
            type(a) is np.ndarray
            and type(b) is np.ndarray
            and a.dtype is _F64
            and b.dtype is _F64
            and not a.shape
            and not b.shape
        ):
            return np.array(a.item() + b.item())
        if (
            type(a) is np.ndarray
            and a.nbytes >= MIN_POOLED_BYTES
            and type(b) is np.ndarray
            and a.shape == b.shape
            and a.dtype == b.dtype
            and a.dtype.isnative
        ):
            return np.add(a, b, out=POOL.allocate(a.shape, a.dtype))
        # np.asarray: np.add of two 0-d arrays is a numpy scalar, not an array.
        return np.asarray(np.add(a, b)) if isinstance(a, np.ndarray) else a + b

    def _run_last(
        self,
        entry: NodeEntry,
        last: CompiledPlan,
        seeds: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
    ) -> list[Any] | None:
        """Run the plan used last if the arguments still fit it exactly, else None."""
        results = last.fast(seeds, external_data)
        if results is not None:
            self.stats.memory_hits += 1
            if last.fallbacks:
                self.stats.fallbacks += last.fallbacks
            puts = self.memory.puts
            if entry.last_touched_at != puts:
                self.memory.touch(entry.last_key)
                entry.last_touched_at = puts
        return results

    def _learn_retained(self, entry: NodeEntry, external_data: Mapping[ValueKey, Any]) -> None:
        """Append the keys of retained intermediates (saved data beyond the node's inputs
        and outputs) to ``entry.saved_order``, once.

        Retention is a property of the recording (``tidu_compile.function`` keeps
        contraction results), the same for every trace of one structure; keys a later
        trace lacks are None, which is a different plan signature.
        """
        with self._lock:
            if not entry.retained_known:  # the old order (inputs, outputs) stays a prefix
                entry.saved_order = saved_value_order(entry.recorded, external_data)
                entry.retained_known = True

    # ---------------------------------------------------------------- compiling

    def _compile(
        self,
        entry: NodeEntry,
        signature: Hashable,
        seeds: Sequence[Any],
        saved: Sequence[Any],
        needed: tuple[bool, ...] | None,
    ) -> Any:
        """A ``CompiledPlan`` plan, a ``PendingPlan`` one (compiling in the background), or
        ``REFERENCE_ONLY`` when the node cannot be compiled."""
        with self._lock:  # single flight: one compile per key, others wait and hit
            cached = entry.plans.get(signature)
            if cached is not None:
                if type(cached) is CompiledPlan:
                    self.stats.memory_hits += 1
                return cached
            types = (
                tuple(type_of(s) for s in seeds),
                tuple(None if v is None else type_of(v) for v in saved),
            )
            problem = type_problem(entry, *types)
            if problem is not None:  # the caller's mistake: raise it, cache nothing
                raise problem
            compiled = self._guarded(lambda: self._compile_locked(entry, types, needed))
            entry.plans[signature] = compiled
            self.memory.put((entry, signature), compiled)
            return compiled

    def _guarded(self, compile_: Callable[[], Any]) -> Any:
        """``compile_()``, or ``REFERENCE_ONLY`` when the node cannot be compiled (a
        user's own primitive set has no types) or compiling fails: then the error goes
        to ``stats.errors``, with a warning, and the node runs on the reference path."""
        try:
            return compile_()
        except (CompileForbiddenError, KeyboardInterrupt, MissingSavedValue):
            raise
        except UnsupportedNode:
            return REFERENCE_ONLY
        except Exception as error:  # noqa: BLE001 - any compiler failure falls back
            message = f"{type(error).__name__}: {error}".splitlines()[0]
            self.stats.errors.append(message)
            del self.stats.errors[:-_MAX_ERRORS]  # the most recent ones: bounded
            warnings.warn(
                f"tidu_compile: compiling a node failed ({message}); "
                "running it on the reference executor",
                RuntimeWarning,
                stacklevel=6,
            )
            return REFERENCE_ONLY

    def _compile_locked(
        self,
        entry: NodeEntry,
        types: tuple[tuple[TensorType, ...], tuple[TensorType | None, ...]],
        needed: tuple[bool, ...] | None,
    ) -> CompiledPlan | PendingPlan:
        """The node's plan: found, or compiled here; with ``background``, a
        ``PendingPlan`` while a worker compiles it."""
        seed_types, saved_types = types
        order = entry.saved_order[: len(saved_types)]  # another thread may have extended it
        program = node_program(
            entry.recorded, entry.linear, seed_types, order, saved_types, needed, entry.transposed
        )
        found = self._obtain(program)
        if isinstance(found, Submitted):
            return PendingPlan(found, order, saved_types, needed)
        return self._node_plan(entry, program, order, saved_types, needed, *found)

    def _obtain(self, program: Any) -> tuple[Any, BoundPlan] | Submitted:
        """``program``'s artifact and bound plan: found (``compiler.artifacts``), else
        compiled here, or with ``background`` handed to a worker."""
        if self.background and not self.forbid_compile and not _background.environment_known():
            # A cold process: nothing is in memory yet; the worker keys the program,
            # looks on disk and compiles, and the caller needs no llvmlite meanwhile.
            return self.tiered.submit(program, None)
        if self.background:
            _background.await_environment()
        keys = Keys.of(program)
        found = self.artifacts.load(program, keys)
        if found is not None:
            return found
        if not self.background or self.forbid_compile:
            return self._compile_here(program, keys)
        return self.tiered.submit(program, keys)

    def _settle(self, entry: NodeEntry, signature: Hashable, pending: PendingPlan) -> Any:
        """``pending``'s plan once its worker is done (else ``pending`` itself): bound,
        cached, from now on run natively."""
        if not pending.submitted.ready():
            return pending
        with self._lock:
            current = entry.plans.get(signature)
            if current is not pending:  # another thread settled it
                return current if current is not None else pending
            args = (entry, pending.submitted.program, pending.order, pending.saved_types,
                    pending.needed)  # fmt: skip

            def settle() -> CompiledPlan | PendingPlan:
                found = self.tiered.collect(pending.submitted)
                if isinstance(found, Submitted):  # its class's code does not serve it
                    return dataclasses.replace(pending, submitted=found)
                return self._node_plan(*args, *found)

            compiled = self._guarded(settle)
            entry.plans[signature] = compiled
            self.memory.put((entry, signature), compiled)
            return compiled

    def wait_for_background(self, timeout: float | None = None) -> bool:
        """Wait until the background compiles this executor started are done (True),
        or ``timeout`` seconds pass (False). Nodes switch to native code on their next
        call."""
        return self.tiered.wait(timeout, self._lock)

    def _node_plan(
        self,
        entry: NodeEntry,
        program: Any,
        order: tuple[ValueKey, ...],
        saved_types: tuple[TensorType | None, ...],
        needed: tuple[bool, ...] | None,
        artifact: Any,
        bound: BoundPlan,
    ) -> CompiledPlan:
        """The executor's record of a node's bound plan, with its fast call."""
        sources = tuple((s.index, None) if s.kind == "seed" else (-1, order[s.index])
                        for s in program.arg_sources)  # fmt: skip
        plan = artifact.plan
        nbytes = len(artifact.object_code or b"") + 512 + 160 * (len(plan.steps) + len(plan.types))
        read = {s.index for s in program.arg_sources if s.kind != "seed"}
        unread = tuple(
            (order[i], t.shape, np.dtype(t.dtype))
            for i, t in enumerate(saved_types[: len(entry.recorded.input_keys)])
            if t is not None and i not in read
        )
        fast = build_fast_call(bound, sources, unread).function
        return CompiledPlan(bound, sources, plan.fallback_count, nbytes, unread, needed, fast)

    def _compile_here(self, program: Any, keys: Keys) -> tuple[Any, BoundPlan]:
        """Compile ``program`` on this thread; with ``forbid_compile``, only with object
        code compiled before (``stats.generic_hits``), else ``CompileForbiddenError``."""
        try:
            return self.artifacts.compile(program, keys, codegen=not self.forbid_compile)
        except CodegenRefused:
            raise CompileForbiddenError(
                f"compiling a node is forbidden (forbid_compile=True):\n{program}"
            ) from None

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
        entry: NodeEntry
        signature: Hashable
        entry, signature = key  # type: ignore[misc]
        entry.plans.pop(signature, None)
        if entry.last is plan:
            entry.last = None

    def _forget_linearization(self, key: Hashable, entry: NodeEntry) -> None:
        if self._entries_by_linear.get(id(entry.linear)) is entry:
            self._entries_by_linear.pop(id(entry.linear), None)
        # list(): other threads add to the index without the lock while we iterate.
        for graph_key, other in list(self._entries_by_graph.items()):
            if other is entry:
                self._entries_by_graph.pop(graph_key, None)
        for signature in list(entry.plans):  # its plans can never be looked up again
            self.memory.discard((entry, signature))


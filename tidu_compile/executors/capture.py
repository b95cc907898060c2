"""Whole-backward capture: a tape whose structure was seen before runs as one program.

PyTorch's compiled autograd captures the autograd graph; this is the same for the
eager tape. ``CompiledExecutor.run_tape`` (which ``backward`` asks first) hands the tape
to ``TapeCapture.run``:

1. the tape's *structure* is its nodes in visiting order, each by its recorded graph's
   structure and the wiring of its inputs by position (``("out", position, slot)`` of
   another node, the ``i``-th distinct leaf, or no gradient), the output slot seeded and
   which values the caller reads (``wanted``); never the tape's keys, which are fresh on
   every step (DESIGN.md, "Per-node cache");
2. the first backward of a structure returns None: ``backward`` walks the nodes one by
   one, as without capture (a one-off backward compiles nothing more);
3. from the second on, the structure's *layout* (the nodes that receive cotangents and
   their saved values) is known, and the types of those saved values and of the seed
   select the program: the nodes' backward programs spliced into one
   (``compiler.tape_program``), fused across node boundaries by the pipeline, cached in
   memory and on disk like a node's program. With ``background`` a worker compiles it;
   meanwhile, while some node's own program is still being compiled too, the spliced
   program runs by numpy in one go (``compiler.interpret``), else the per-node path
   runs; from the first backward after it is done, the whole sweep is one native call
   (``stats.captured`` counts the programs that took over, ``stats.captured_runs`` the
   sweeps they ran).

Anything the capture cannot serve (operands that are not arrays, a node that does not
compile, a program ``forbid_compile`` keeps from compiling, a tape of one node or of
more than ``MAX_NODES``, a tape with a node whose gradients came with its forward:
``frontend.joint_forward``) returns None and the per-node path runs, which raises the
user's errors as always. Reading the saved values of the nodes that receive cotangents is what the
per-node path does too, so a value changed in place, or freed by a first backward,
raises the same ``RuntimeError``.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidu_compile.compiler.fast_path import build_fast_call
from tidu_compile.compiler.interpret import evaluate_program
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.compiler.program import (
    MissingSavedValue,
    UnsupportedNode,
    needed_mask,
    node_program,
)
from tidu_compile.compiler.tape_program import Address, TapeNode, TapeProgram, tape_program
from tidu_compile.eager import Trace, visiting_order
from tidu_compile.executors.node_plans import (
    REFERENCE_ONLY,
    CompileForbiddenError,
    NodeEntry,
    PendingPlan,
)
from tidu_compile.executors.tiered import Submitted
from tidu_compile.graph import ValueKey
from tidu_compile.ops.base import TensorType, type_of

__all__ = ["MAX_NODES", "TapeCapture"]

#: Tapes with more nodes run node by node (a program that large compiles for long).
MAX_NODES = 256

#: Programs kept per tape structure (one per set of input types: batch sizes).
_MAX_SIGNATURES = 64

#: A structure seen once: its next backward builds the layout.
_SEEN_ONCE = object()


@dataclass(eq=False)
class _Layout:
    """One tape structure's nodes that receive cotangents, and its programs by types."""

    #: Per such node: its position in the visiting order and its saved-value order.
    reads: tuple[tuple[int, tuple[ValueKey, ...]], ...]
    #: The flat index of each read node's first saved value, by position.
    offsets: dict[int, int]
    #: The read nodes' memoized linearizations.
    entries: tuple[NodeEntry, ...]
    #: Per input signature: a ``_Captured``, a ``_Pending`` or ``REFERENCE_ONLY``.
    plans: dict[Hashable, Any] = field(default_factory=dict)
    #: The ``_Captured`` run last: tried first.
    last: Any = None


@dataclass(frozen=True, eq=False)
class _Captured:
    """A compiled whole-tape program and where its arguments come from."""

    plan: BoundPlan
    args: tuple[int, ...]  # per saved argument: its index among the layout's values
    results: tuple[Address, ...]
    #: ``fast((seed,), values)``: the plan as straight-line code (``compiler.fast_path``)
    #: over the layout's values by index; None when they do not fit it exactly.
    fast: Any


@dataclass(frozen=True, eq=False)
class _Pending:
    """A whole-tape program a background worker compiles (by numpy meanwhile, or node by
    node once the nodes are native: ``TapeCapture.run``)."""

    submitted: Submitted
    built: TapeProgram
    args: tuple[int, ...]  # per saved argument: its index among the layout's values


@dataclass(frozen=True, eq=False)
class _Tape:
    """One call's tape: its nodes, structure key, leaf keys and wanted addresses."""

    nodes: tuple[Trace, ...]
    key: Hashable
    root_slot: int
    wiring: tuple[tuple[Address | None, ...], ...]
    leaves: tuple[ValueKey, ...]
    wanted: frozenset[Address] | None  # None: every address


def _node_entry(
    executor: Any, graph: Any, slots: tuple[int, ...], ctx: Any, saved: Any
) -> NodeEntry:
    """``graph``'s memoized linearization for ``slots`` in ``executor`` (a friend of this
    module), with the keys of its retained values learned from ``saved``."""
    with executor._lock:  # no other thread evicts the linearization meanwhile
        linear = executor.linearize_recorded_graph(graph, slots, ctx)
        entry: NodeEntry | None = executor._entries_by_linear.get(id(linear))
    if entry is None or entry.linear is not linear:  # evicted at once (a tiny cache)
        raise UnsupportedNode(f"{graph!r}: its linearization was evicted")
    if saved is not None and not entry.retained_known:
        executor._learn_retained(entry, saved)
    return entry


def _nodes_pending(layout: _Layout) -> bool:
    """Whether some node of ``layout`` still waits for its worker (a plan whose worker is
    done is native from the node's next run: then the per-node path runs)."""
    return any(type(plan) is PendingPlan and not plan.submitted.ready()
               for entry in layout.entries for plan in entry.plans.values())  # fmt: skip


def _tape(output_key: ValueKey, output_trace: Trace, wanted: Container[ValueKey] | None) -> _Tape:
    """The tape under ``output_trace`` with its structure (see the module docstring)."""
    nodes = visiting_order(output_trace)
    position = {id(node): p for p, node in enumerate(nodes)}
    leaves: dict[ValueKey, int] = {}
    wiring: list[tuple[Address | None, ...]] = []
    parts: list[Hashable] = []
    for node in nodes:
        targets: list[Address | None] = []
        for edge in node.inputs:
            producer = edge.trace
            if not edge.requires_grad:
                targets.append(None)
            elif producer is None:
                targets.append(("leaf", leaves.setdefault(edge.key, len(leaves))))
            else:
                keys = producer.output_keys
                slot = 0 if len(keys) == 1 else keys.index(edge.key)
                targets.append(("out", position[id(producer)], slot))
        wiring.append(tuple(targets))
        parts.append((node.graph.structure, wiring[-1]))
    chosen: frozenset[Address] | None = None
    if wanted is not None:
        chosen = frozenset(
            [("leaf", i) for key, i in leaves.items() if key in wanted]
            + [("out", p, s) for p, node in enumerate(nodes)
               for s, key in enumerate(node.output_keys) if key in wanted]
        )  # fmt: skip
    root_slot = nodes[0].output_keys.index(output_key)
    key = (root_slot, tuple(parts), chosen)
    return _Tape(nodes, key, root_slot, tuple(wiring), tuple(leaves), chosen)


class TapeCapture:
    """A ``CompiledExecutor``'s whole-tape programs, by tape structure (bounded)."""

    def __init__(self, executor: Any, max_entries: int) -> None:
        self.executor = executor
        self.max_entries = max_entries
        self.layouts: dict[Hashable, Any] = {}  # structure -> _SEEN_ONCE or _Layout

    @classmethod
    def of(cls, executor: Any, base: type) -> TapeCapture | None:
        """``executor``'s capture, or None when its class changes how ``base`` runs a
        node (a subclass counting or tracing node runs: capture would bypass it)."""
        per_node = ("linearize_recorded_graph", "execute_forward", "run_transposed_linear",
                    "run_transposed_linear_for", "add_operands")  # fmt: skip
        if any(getattr(type(executor), m) is not getattr(base, m) for m in per_node):
            return None
        return cls(executor, executor.memory.max_entries)

    def run(
        self,
        output_key: ValueKey,
        output_trace: Trace,
        seed: Any,
        ctx: Any,
        wanted: Container[ValueKey] | None,
    ) -> dict[ValueKey, Any] | None:
        """``backward``'s result computed by the tape's captured program, or None."""
        # the visiting order first (``backward`` walks it next if this returns None): a
        # tape of one node (its own program is the tape's) or too many nodes is left to
        # the per-node path before its structure is built (~5 ms for a GRU's 1,400 nodes)
        order = visiting_order(output_trace)
        if not 1 < len(order) <= MAX_NODES or any(n.precomputed is not None for n in order):
            return None  # precomputed: a joint forward's gradients (``frontend.joint_forward``)
        tape = _tape(output_key, output_trace, wanted)
        layout = self.layouts.get(tape.key)
        if layout is None:
            if len(self.layouts) >= self.max_entries:
                self.layouts.clear()  # bounded; a structure seen again starts over
            self.layouts[tape.key] = _SEEN_ONCE
            return None
        if layout is _SEEN_ONCE:
            with self.executor._lock:  # one layout per structure, whichever thread makes it
                layout = self.layouts.get(tape.key)
                if layout is _SEEN_ONCE or layout is None:
                    try:
                        layout = self.layouts[tape.key] = self._layout(tape, ctx)
                    except UnsupportedNode:
                        return None  # node by node; tried again next time
        saved = [tape.nodes[p].saved_values for p, _ in layout.reads]
        values = [d.get(k) for d, (_, order) in zip(saved, layout.reads, strict=True)
                  for k in order]  # fmt: skip
        last = layout.last
        if last is not None and last.fast is not None:  # its fast call checks the types
            outputs = last.fast((seed,), dict(enumerate(values)))
            if outputs is not None:
                return self._native_results(tape, last, seed, outputs)
        try:
            signature = (
                (seed.shape, seed.dtype),
                tuple([None if v is None else (v.shape, v.dtype) for v in values]),
            )
        except AttributeError:  # not arrays: a user's own operand type
            return None
        captured = layout.plans.get(signature)
        if captured is None or type(captured) is _Pending:
            captured = self._obtain(tape, layout, signature, captured, seed, values, ctx)
        if type(captured) is _Pending and _nodes_pending(layout):
            # Neither it nor its nodes are native yet: its program by numpy, in one go
            # (the per-node path would run each node's program so, one by one).
            built = captured.built
            self.executor.stats.background_runs += 1
            args = [seed, *[values[i] for i in captured.args]]
            return self._results(tape, built.results, seed, evaluate_program(built.program, args))
        if type(captured) is not _Captured:
            return None
        if captured.fast is not None:
            layout.last = captured
        outputs = captured.plan.run(
            [seed, *[values[i] for i in captured.args]], check=False
        )
        return self._native_results(tape, captured, seed, outputs)

    def _native_results(
        self, tape: _Tape, captured: _Captured, seed: Any, outputs: Sequence[Any]
    ) -> dict[ValueKey, Any]:
        """The compiled program's ``outputs`` by the tape's keys; the counters."""
        stats = self.executor.stats
        stats.captured_runs += 1
        stats.memory_hits += 1  # the program was found in memory
        stats.fallbacks += captured.plan.plan.fallback_count
        return self._results(tape, captured.results, seed, outputs)

    def _results(
        self, tape: _Tape, results: Sequence[Address], seed: Any, outputs: Sequence[Any]
    ) -> dict[ValueKey, Any]:
        """The tape program's ``outputs`` by the tape's keys."""
        cotangents: dict[ValueKey, Any] = {tape.nodes[0].output_keys[tape.root_slot]: seed}
        for address, value in zip(results, outputs, strict=True):
            if address[0] == "leaf":
                cotangents[tape.leaves[address[1]]] = value
            else:
                cotangents[tape.nodes[address[1]].output_keys[address[2]]] = value
        return cotangents

    def _layout(self, tape: _Tape, ctx: Any) -> _Layout:
        """The nodes of ``tape`` that receive cotangents (by the transposed graphs'
        structural zeros), with their saved-value orders."""
        executor = self.executor
        incoming: dict[int, set[int]] = {0: {tape.root_slot}}
        reads: list[tuple[int, tuple[ValueKey, ...]]] = []
        entries: list[NodeEntry] = []
        offsets: dict[int, int] = {}
        count = 0
        for position, node in enumerate(tape.nodes):
            slots = incoming.pop(position, None)
            if not slots:
                continue
            entry = _node_entry(executor, node.graph, tuple(sorted(slots)), ctx, node.saved_values)
            reads.append((position, entry.saved_order))
            entries.append(entry)
            offsets[position] = count
            count += len(entry.saved_order)
            outputs = entry.transposed.tangent_outputs
            for target, output in zip(tape.wiring[position], outputs, strict=True):
                if target is not None and output is not None and target[0] == "out":
                    incoming.setdefault(target[1], set()).add(target[2])
        return _Layout(tuple(reads), offsets, tuple(entries))

    def _obtain(
        self,
        tape: _Tape,
        layout: _Layout,
        signature: Hashable,
        pending: _Pending | None,
        seed: Any,
        values: Sequence[Any],
        ctx: Any,
    ) -> Any:
        """The ``_Captured`` program for ``signature``: built and compiled (or handed to a
        worker: then a ``_Pending``), collected once the worker is done; or
        ``REFERENCE_ONLY`` when it cannot be compiled here."""
        executor = self.executor
        if pending is not None and not pending.submitted.ready():
            return pending
        with executor._lock:
            current = layout.plans.get(signature)
            if current is not pending:  # another thread got there first
                return current
            if pending is None and any(REFERENCE_ONLY in e.plans.values() for e in layout.entries):
                # a node that does not compile (its error was reported once): node by node
                layout.plans[signature] = REFERENCE_ONLY
                return REFERENCE_ONLY
            try:
                if pending is None:
                    nodes = self._nodes(tape, layout, values, ctx)
                    built = tape_program(type_of(seed), tape.root_slot, nodes, self._wanted(tape))
                    found = executor._guarded(lambda: executor._obtain(built.program))
                else:
                    built = pending.built
                    found = executor._guarded(lambda: executor.tiered.collect(pending.submitted))
            except (UnsupportedNode, MissingSavedValue, CompileForbiddenError, ValueError,
                    TypeError):  # fmt: skip
                # the per-node path runs (and raises what it must)
                layout.plans[signature] = REFERENCE_ONLY
                return REFERENCE_ONLY
            if len(layout.plans) >= _MAX_SIGNATURES:
                layout.plans.clear()  # bounded; a signature met again is found on disk
                layout.last = None
            layout.plans[signature] = captured = self._captured(found, built, layout, values)
            return captured

    def _captured(
        self, found: Any, built: TapeProgram, layout: _Layout, values: Sequence[Any]
    ) -> Any:
        """``found`` (what compiling ``built`` gave) as what ``layout.plans`` keeps."""
        if found is REFERENCE_ONLY:
            return REFERENCE_ONLY
        args = tuple(layout.offsets[p] + i for p, i in built.saved)
        if isinstance(found, Submitted):
            return _Pending(found, built, args)
        self.executor.stats.captured += 1
        bound = found[1]
        fast = None
        if all(v is not None for v in values):  # the fast call cannot check absence
            # Every value's type is in the program's key: it checks the unread ones too.
            read = set(args)
            unread = tuple((i, v.shape, v.dtype) for i, v in enumerate(values) if i not in read)
            sources = ((0, None), *((-1, i) for i in args))
            fast = build_fast_call(bound, sources, unread).function
        return _Captured(bound, args, built.results, fast)

    def _wanted(self, tape: _Tape) -> Any:
        chosen = tape.wanted
        return (lambda address: True) if chosen is None else chosen.__contains__

    def _nodes(
        self, tape: _Tape, layout: _Layout, values: Sequence[Any], ctx: Any
    ) -> list[TapeNode]:
        """The splice's view of each node: where its cotangents go, how its program is
        built (``node_program`` with the types of this call's saved values)."""
        executor = self.executor
        orders = dict(layout.reads)

        def builder(position: int) -> Any:
            node = tape.nodes[position]

            def build(
                slots: tuple[int, ...], seed_types: tuple[TensorType, ...]
            ) -> tuple[Any, tuple[int, ...]]:
                if position not in orders:
                    raise UnsupportedNode("a node outside the layout receives a cotangent")
                entry = _node_entry(executor, node.graph, slots, ctx, None)
                present = [t is not None for t in entry.linear.tangent_outputs]
                order = orders[position]
                start = layout.offsets[position]
                saved_types = [None if v is None else type_of(v)
                               for v in values[start : start + len(order)]]  # fmt: skip
                needed = node.needed_inputs
                program = node_program(
                    entry.recorded,
                    entry.linear,
                    [t for t, p in zip(seed_types, present, strict=True) if p],
                    order,
                    saved_types,
                    None if needed is None else needed_mask(entry.linear, needed),
                    entry.transposed,
                )
                return program, tuple(s for s, p in zip(slots, present, strict=True) if p)

            return build

        return [TapeNode(tape.wiring[p], builder(p)) for p in range(len(tape.nodes))]

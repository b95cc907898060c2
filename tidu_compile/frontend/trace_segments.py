"""Long ``@tc.function`` traces run and record as a chain of segments, one tape node each.

The compile time of one program grows faster than its length (LLVM's loop vectorizer is
quadratic in one fused loop), while real long traces repeat themselves: an unrolled ODE
solver, an RNN over time steps, a stack of equal layers. A trace of at least
``SEGMENTED_AT`` operations is therefore cut, in trace order, into segments of about
``SEGMENT_OPS`` operations; each segment is its own graph (its own forward program, its
own tape node, so its own backward program), and the values crossing a cut are its
outputs and the next segments' inputs::

    traced:   x, w -> v2 = Mul(x, w)  v4 = Add(v2, c)  v5 = Tanh(v4)  v7 = Sub(v5, v6) ...
    segment:  in0, in1 -> the operations of one stretch       outputs: values read later

Where the trace is periodic (``segment_cuts`` finds the shortest period of its operation
sequence), the cuts fall a whole number of periods apart, so the segments of the
periodic stretch are equal programs: the cache compiles one of them, and a trace of
3,200 operations compiles the few programs of a few hundred operations that it is made
of. Where no two segments would be equal programs (each step of an unrolled loop reads
its own ``tokens[t]``), cutting saves no compile time and costs every call: such a trace
stays one program below ``UNSHARED_SEGMENTED_AT`` operations. Sharing is an
optimisation only: a segment is served by another's native code exactly when the
per-node cache says the two programs are the same (``DESIGN.md``,
"Per-node cache"); the cuts never change a value. Each segment routes on its own, so
with background compilation the first segments run natively while the others compile.

Constants without inputs (``Constant`` splats of Python numbers) are copied into every
segment that reads them rather than passed across a cut. Where segments differ in those
constants' values only (an unrolled solver whose step ``k`` reads ``t0 + k * dt``), the
period is found with constants compared by shape and dtype, and such segments take
their constants as inputs instead (a 0-d value, broadcast in the segment), so they are
equal programs too::

    inlined:  v4 = Add(v2, Constant(0.1003, (64,)))        one program per step
    lifted:   in2 (0-d) -> v3 = BroadcastInDim(in2, (64,)) -> v4 = Add(v2, v3)

The backward of a segment recomputes its own non-retained values from its inputs (as
every node does), so what a cut costs is the crossing values kept on the tape.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.eager import BackwardExecutor, EagerInput, RecordedGraph
from tidu_compile.frontend.composite_forward import ForwardPlan
from tidu_compile.frontend.state import RECORDER, get_default_executor
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.graph import Graph, GraphBuilder, OperationNode, Primary, ValueKey
from tidu_compile.ops import BroadcastInDim, Constant

__all__ = ["SEGMENTED_AT", "SEGMENT_OPS", "UNSHARED_SEGMENTED_AT", "Segment", "SegmentedTrace",
           "record_call", "retained_pairs", "segment_cuts", "split_trace"]  # fmt: skip

#: Target operations per segment.
SEGMENT_OPS = 384
#: Traces with fewer operations stay one program (and one tape node): a GRU step over
#: 24 tokens (~720 operations) runs 1.6x faster as one program than in segments, and
#: compiles in seconds either way.
SEGMENTED_AT = 1024
#: Traces with fewer operations whose segments would all be different programs stay one
#: program too: segments save compile time only where the cache compiles one program for
#: several equal ones. A GRU step over 24 token ids (1,223 operations; each time step
#: slices its own ``tokens[t]``, so no two segments are equal) compiles in 5.5 s either
#: way, and its ``value_and_grad`` runs in 0.18 ms as one program, 0.70 ms in three
#: segments (Intel Xeon, 2026-12-04).
UNSHARED_SEGMENTED_AT = 2048


def retained_pairs(graph: Graph, retained: Sequence[int]) -> tuple[tuple[ValueKey, int], ...]:
    """``(key, local id)`` of each retained value, one per key: a trace may compute one
    value twice (structurally equal keys), and a dict built from such keys compares them
    whole at every call."""
    unique = {graph.values[i].key: i for i in retained}
    return tuple(unique.items())


def record_call(
    recorded: RecordedGraph, inputs: Sequence[Tensor], values: Sequence[Any],
    retained: Sequence[tuple[ValueKey, int]], holders: Sequence[Tensor],
) -> list[Tensor]:  # fmt: skip
    """Record one call of ``recorded`` on ``inputs`` whose values by local id are
    ``values``; the tape keeps the ``retained`` ``(key, local id)`` values and the
    outputs (``backward`` checks a seed against them) and checks ``holders``' versions.
    Returns the output tensors (integer and bool outputs carry no gradient)."""
    graph = recorded.graph
    eager_inputs = [EagerInput(t._key, t._trace, t._requires_grad, t._data) for t in inputs]
    outputs = [values[i] for i in graph.outputs]
    kept = {key: values[i] for key, i in retained}
    kept.update(zip(recorded.output_keys, outputs, strict=True))
    nodes = RECORDER.record_graph(recorded, eager_inputs, outputs, kept)
    if nodes and nodes[0].trace is not None:
        nodes[0].trace.holders = tuple(holders)
    return [
        Tensor(np.array(o, copy=False), r.requires_grad, r.key, r.trace)
        if np.asarray(o).dtype.kind in "fc" else Tensor(np.array(o, copy=True))
        for o, r in zip(outputs, nodes, strict=True)
    ]


def _longest_run(matches: np.ndarray) -> tuple[int, int]:
    """``(start, length)`` of the longest stretch of True in ``matches``."""
    padded = np.concatenate(([False], matches, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    if edges.size == 0:
        return 0, 0
    starts, ends = edges[0::2], edges[1::2]
    best = int(np.argmax(ends - starts))
    return int(starts[best]), int(ends[best] - starts[best])


def segment_cuts(signatures: Sequence[Hashable], target: int) -> list[int]:
    """Where segments start (operation indices after 0) for a trace whose operations
    have these ``signatures``, segments of about ``target`` operations.

    The shortest period ``p <= target`` whose repetition covers half the trace at least
    (``signatures[i] == signatures[i + p]`` over a stretch) sets the segment length to
    ``p * round(target / p)``, cut from the stretch's start; without one, every
    ``target`` operations. The last segment takes the rest (no segment is shorter than
    half the length, except a trace's prologue before its periodic stretch)::

        segment_cuts("ab" * 6 + "z", 4)  == [4, 8]      # ab ab | ab ab | ab ab z
    """
    count = len(signatures)
    codes_of: dict[Hashable, int] = {}
    codes = np.array([codes_of.setdefault(s, len(codes_of)) for s in signatures], np.int64)
    start, length = 0, target
    for period in range(1, min(target, count // 4) + 1):
        run_start, run = _longest_run(codes[:-period] == codes[period:])
        if run + period >= max(count // 2, 2 * period):
            start, length = run_start, period * max(1, round(target / period))
            break
    cuts = [start] if start >= length // 2 else []
    cut = start + length
    while cut + length // 2 <= count:
        cuts.append(cut)
        cut += length
    return cuts


def _signature(node: OperationNode) -> Hashable:
    operation = node.operation
    if _is_free_constant(node):  # by type: a step's own constants keep the period
        assert isinstance(operation, Constant)
        return Constant, tuple(operation.shape), operation.dtype
    return type(operation), repr(operation), len(node.inputs)


def _is_free_constant(node: OperationNode) -> bool:
    return isinstance(node.operation, Constant) and not node.inputs


@dataclass(frozen=True)
class Segment:
    """One stretch of a trace: its graph, how it runs, and its wiring to the trace.

    ``inputs`` and ``outputs`` are the trace's value ids it takes and gives, in its own
    input and output order; ``retained`` are local ids the tape keeps (contractions...);
    ``lifted``: the free constants among ``inputs`` (trace id, a 0-d tensor of its
    value, made once: a constant's tensor is the same at every call).
    """

    recorded: RecordedGraph
    forward_plan: ForwardPlan
    retained: tuple[tuple[ValueKey, int], ...]  # ``retained_pairs``
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    lifted: tuple[tuple[int, Tensor], ...] = ()


@dataclass(frozen=True)
class _SegmentGraph:
    """A segment's graph before it is a ``Segment``: its values by local id, kept ids,
    inputs (trace ids), the constants taken as inputs, and the free constants its
    operations read (trace ids, in order of first use: what ``lift`` positions index)."""

    graph: Graph
    values: list[Any]
    kept: tuple[int, ...]
    inputs: tuple[int, ...]
    lifted: tuple[tuple[int, Tensor], ...]
    constants_read: tuple[int, ...]

    def structure(self, abstract: bool = False) -> Hashable:
        """Operations, wiring, outputs, retained ids and input types; ``abstract``:
        free constants by shape and dtype only (segments equal but for their values)."""
        operations = tuple(
            (_signature(n) if abstract else (type(n.operation), repr(n.operation)),
             tuple(r.id for r in n.inputs))  # type: ignore[union-attr]  # Local refs
            for n in self.graph.operations
        )
        types = tuple((np.dtype(self.values[i].dtype).str, np.shape(self.values[i]))
                      for i in self.graph.inputs)  # fmt: skip
        return operations, self.graph.outputs, self.kept, types


def _varying_positions(segments: Sequence[Sequence[int]], constants: dict[int, OperationNode]
                       ) -> frozenset[int]:  # fmt: skip
    """The positions at which equal segments (their ``constants_read``) read constants
    of different values."""
    texts = [[repr(constants[i].operation) for i in read] for read in segments]
    return frozenset(j for j in range(len(texts[0])) if len({t[j] for t in texts}) > 1)


def _segment_graph(
    nodes: Sequence[OperationNode], outputs: Sequence[int], constants: dict[int, OperationNode],
    retained: set[int], traced_values: Sequence[Any], lift: frozenset[int] = frozenset(),
) -> _SegmentGraph:  # fmt: skip
    """The graph of ``nodes`` giving ``outputs``: its inputs in order of first use, the
    free ``constants`` (by the value they give) it reads copied in at first use, but
    those whose position among the constants it reads is in ``lift``: inputs after the others
    (a 0-d value broadcast to the constant's shape)."""
    body = [n for n in nodes if not _is_free_constant(n)]
    produced = {o for n in body for o in n.outputs}
    reads = list(dict.fromkeys(r.id for n in body for r in n.inputs))  # type: ignore[union-attr]
    inputs = [i for i in reads if i not in produced and i not in constants]
    constants_read = tuple(i for i in reads if i in constants)
    lifted = [i for j, i in enumerate(constants_read) if j in lift]
    builder = GraphBuilder()
    local = {i: builder.add_input(Name(f"in{j}")) for j, i in enumerate(inputs)}
    values: dict[int, Any] = {lid: traced_values[i] for i, lid in local.items()}
    scalars: list[tuple[int, Tensor]] = []
    for i in lifted:
        constant = constants[i].operation
        assert isinstance(constant, Constant)
        scalar = np.array(constant.value, dtype=constant.dtype)
        scalar_id = builder.add_input(Name(f"in{len(local) + len(scalars)}"))
        values[scalar_id] = scalar
        scalars.append((i, Tensor(scalar)))
        local[i] = scalar_id
        if constant.shape:
            shape = tuple(constant.shape)
            (local[i],) = builder.add_operation(BroadcastInDim(shape, (), ()), [scalar_id],
                                                Primary())  # fmt: skip
            values[local[i]] = traced_values[i]
    for node in body:
        for ref in node.inputs:
            if ref.id in constants and ref.id not in local:  # type: ignore[union-attr]
                (local[ref.id],) = builder.add_operation(  # type: ignore[union-attr]
                    constants[ref.id].operation, [], Primary()  # type: ignore[union-attr]
                )
                values[local[ref.id]] = traced_values[ref.id]  # type: ignore[union-attr]
        ids = builder.add_operation(
            node.operation, [local[r.id] for r in node.inputs], node.role  # type: ignore[union-attr]
        )
        local.update(zip(node.outputs, ids, strict=True))
        values.update((lid, traced_values[o]) for o, lid in zip(node.outputs, ids, strict=True))
    builder.set_outputs([local[i] for i in outputs])
    graph = builder.build()
    kept = tuple(local[i] for i in sorted(retained & produced))
    return _SegmentGraph(graph, [values[lid] for lid in range(len(graph.values))], kept,
                         (*inputs, *lifted), tuple(scalars), constants_read)  # fmt: skip


def _segment(made: _SegmentGraph, outputs: Sequence[int], built: dict[Hashable, Segment]
             ) -> Segment:  # fmt: skip
    """``made`` as a ``Segment``. One equal to a segment in ``built`` shares its graph and
    plan, so the executor's lookups by graph find the very object (no structural
    comparison of equal graphs on every call)."""
    structure = made.structure()
    twin = built.get(structure)
    if twin is not None:
        return Segment(twin.recorded, twin.forward_plan, twin.retained, made.inputs,
                       tuple(outputs), made.lifted)  # fmt: skip
    plan = ForwardPlan(made.graph, made.kept, made.values)
    segment = Segment(RecordedGraph.from_graph(made.graph), plan,
                      retained_pairs(made.graph, made.kept), made.inputs, tuple(outputs),
                      made.lifted)  # fmt: skip
    built[structure] = segment
    return segment


def split_trace(
    graph: Graph, retained: Sequence[int], traced_values: Sequence[Any]
) -> list[Segment] | None:
    """``graph``'s segments of about ``SEGMENT_OPS`` operations (``segment_cuts``), or
    None when it stays one program: fewer than ``SEGMENTED_AT`` operations, one segment,
    fewer than ``UNSHARED_SEGMENTED_AT`` operations in segments that are all different
    programs, or an output that no operation computes (an argument or a constant
    returned as it is). ``retained``: the trace's ids the tape keeps; ``traced_values``: the tracing
    call's values by id (their dtypes and shapes)."""
    nodes = graph.operations
    if len(nodes) < SEGMENTED_AT:
        return None
    constants = {o: n for n in nodes if _is_free_constant(n) for o in n.outputs}
    computed = {o for n in nodes for o in n.outputs} - constants.keys()
    if not all(o in computed for o in graph.outputs):
        return None
    cuts = segment_cuts([_signature(n) for n in nodes], SEGMENT_OPS)
    if not cuts:
        return None
    bounds = list(zip([0, *cuts], [*cuts, len(nodes)], strict=True))
    segment_of = {o: k for k, (lo, hi) in enumerate(bounds) for n in nodes[lo:hi]
                  for o in n.outputs if o not in constants}  # fmt: skip
    last_reader: dict[int, int] = {}
    for k, (lo, hi) in enumerate(bounds):
        for node in nodes[lo:hi]:
            for ref in node.inputs:
                last_reader[ref.id] = k  # type: ignore[union-attr]
    finals, kept = set(graph.outputs), set(retained)
    outputs = [sorted(i for i, s in segment_of.items()
                      if s == k and (i in finals or last_reader.get(i, k) > k))
               for k in range(len(bounds))]  # fmt: skip
    made = [_segment_graph(nodes[lo:hi], outputs[k], constants, kept, traced_values)
            for k, (lo, hi) in enumerate(bounds)]  # fmt: skip
    kinds: dict[Hashable, list[int]] = {}  # equal but for constants' values
    for k, m in enumerate(made):
        kinds.setdefault(m.structure(abstract=True), []).append(k)
    if len(kinds) == len(made) and len(nodes) < UNSHARED_SEGMENTED_AT:
        return None  # no segment's program serves another: one program compiles as fast
    for members in kinds.values():
        reads = [made[k].constants_read for k in members]
        lift = _varying_positions(reads, constants) if len(members) > 1 else frozenset()
        for k in members if lift else ():
            made[k] = _segment_graph(nodes[slice(*bounds[k])], outputs[k], constants, kept,
                                     traced_values, lift)  # fmt: skip
    built: dict[Hashable, Segment] = {}
    return [_segment(m, outputs[k], built) for k, m in enumerate(made)]


class SegmentedTrace:
    """A trace run and recorded as ``segments`` (what ``_Traced`` is for one program).

    ``forward`` runs the segments in order on the current executor, each its own
    program; ``record`` then records one tape node per segment, the tensors of one
    segment's outputs the next segments' inputs.
    """

    def __init__(self, graph: Graph, segments: list[Segment]) -> None:
        self.graph = graph
        self.segments = segments

    def forward(self, executor: BackwardExecutor, inputs: Sequence[Any]) -> list[list[Any]]:
        """Each segment's values by its local ids, from the trace's input data."""
        table: dict[int, Any] = dict(zip(self.graph.inputs, inputs, strict=True))
        per_segment = []
        for segment in self.segments:
            table.update((i, t._data) for i, t in segment.lifted)
            values = segment.forward_plan.run(executor, [table[i] for i in segment.inputs])
            outputs = segment.recorded.graph.outputs
            table.update((g, values[lid]) for g, lid in zip(segment.outputs, outputs,
                                                            strict=True))  # fmt: skip
            per_segment.append(values)
        return per_segment

    def call(self, inputs: list[Tensor], constants: list[np.ndarray], records: bool
             ) -> list[Tensor]:  # fmt: skip
        """One call: the segments run on the current executor, recorded when ``records``
        (else the outputs are tensors without gradient)."""
        per_segment = self.forward(get_default_executor(), [t._data for t in inputs] + constants)
        if records:
            return self.record(inputs + [Tensor(c) for c in constants], len(inputs), per_segment)
        return [Tensor(np.asarray(d)) for d in self.output_data(per_segment)]

    def output_data(self, per_segment: Sequence[list[Any]]) -> list[Any]:
        """The trace's output data from ``forward``'s result."""
        where = {g: values[lid] for segment, values in zip(self.segments, per_segment, strict=True)
                 for g, lid in zip(segment.outputs, segment.recorded.graph.outputs, strict=True)}
        return [where[i] for i in self.graph.outputs]

    def record(self, inputs: Sequence[Tensor], arguments: int,
               per_segment: Sequence[list[Any]]) -> list[Tensor]:  # fmt: skip
        """Record every segment; ``inputs`` are the trace's input tensors, the first
        ``arguments`` of them the call's (the others constants). Returns the outputs."""
        tensors: dict[int, Tensor] = dict(zip(self.graph.inputs, inputs, strict=True))
        user = set(self.graph.inputs[:arguments])
        for segment, values in zip(self.segments, per_segment, strict=True):
            tensors.update(segment.lifted)
            reads = [tensors[i] for i in segment.inputs]
            holders = [tensors[i] for i in segment.inputs if i in user]
            outputs = record_call(segment.recorded, reads, values, segment.retained, holders)
            tensors.update(zip(segment.outputs, outputs, strict=True))
        return [tensors[i] for i in self.graph.outputs]

"""The eager tape: record graphs as they run, then walk them backward.

Each call of ``Recorder.record_graph`` that has an input requiring gradients creates one
``Trace`` node holding the ``RecordedGraph`` and the data transpose may need. ``backward``
sorts the nodes reachable from an output, visits them in reverse and, per node, asks a
``BackwardExecutor`` to

1. linearize the node for its active output slots (``linearize_recorded_graph``),
2. evaluate the residuals of that linear graph from the saved data (``execute_forward``),
3. run the transposed linear map on the incoming cotangents (``run_transposed_linear``;
   for a node with inputs that need no gradient, ``run_transposed_linear_for``, which
   tells the executor which cotangents will be read),

then accumulates the input cotangents with ``add_operands`` (a node that carries its
input cotangents, computed with its forward for the executor at hand, hands them over
instead: ``Trace.precomputed``). The tape never looks at the operands themselves: a
scalar primitive set with float operands works as well as numpy.

Saved values carry a version, as PyTorch's do: a frontend that changes a value in place
(``p -= lr * p.grad`` under ``no_grad``) calls ``note_change(holder)``, which gives the
holder a ``_version`` from one process-wide count of changes. Every node keeps that count
as of its recording (``Trace.stamp``) and the objects whose data it saved (``holders``,
or its sources); reading its saved data or its edges after a holder changed raises
``RuntimeError`` ("modified by an inplace operation", PyTorch's words) instead of
computing with other values than were recorded. ``free_graph`` drops the saved data of
the nodes a backward pass visited (PyTorch's default without ``retain_graph=True``); a
later pass through them raises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Container, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tidu_compile import forksafe
from tidu_compile.ad import LinearizedGraph, PrimitiveGraph
from tidu_compile.eager_keys import CountingKeySource, KeySource
from tidu_compile.evaluation import evaluate_graph
from tidu_compile.graph import Input, ValueKey, post_order
from tidu_compile.recorded_graph import RecordedGraph

__all__ = [
    "BackwardExecutor",
    "EagerInput",
    "EagerOutput",
    "CHANGES",
    "RecordedGraph",
    "Recorder",
    "Trace",
    "backward",
    "free_graph",
    "note_change",
    "upstream_nodes",
    "visiting_order",
]


# --------------------------------------------------------------------------- tape


@dataclass(frozen=True, slots=True)
class EagerInput:
    """An input to a recorded graph: its tape key, producing trace and data."""

    key: ValueKey
    trace: Trace | None
    requires_grad: bool
    data: Any


@dataclass(frozen=True, slots=True)
class EagerOutput:
    """An output of a recorded graph: a fresh tape key and the node that made it."""

    key: ValueKey
    trace: Trace | None
    requires_grad: bool
    output_slot: int


class _Edge(NamedTuple):
    """An input of a tape node: its tape key, producing node, and whether it needs a
    gradient (a tuple: ``fast_ops`` makes one per recorded op)."""

    key: ValueKey
    trace: Trace | None
    requires_grad: bool


class Trace:
    """One tape node: a recorded graph, its input edges, output keys and saved data.

    ``saved_values`` maps the graph's input keys (and output and retained keys) to data.
    A node recorded by ``frontend.fast_ops`` (one or two inputs, one output) keeps its
    input tensors (objects with ``_key``, ``_trace``, ``_requires_grad`` and ``_data``:
    ``_source0``, ``_source1``) and output data (``_output``) instead, and builds
    ``inputs`` and ``saved_values`` when they are first read (by a backward pass: most
    recorded nodes never are). Its one output key is drawn from the recorder's
    ``KeySource`` when first read too (``output_keys``).
    """

    __slots__ = (
        "graph", "_inputs", "needed_inputs", "_output_keys", "_saved", "_source0", "_source1",
        "_output", "upstream", "stamp", "holders", "precomputed", "__weakref__",
    )  # fmt: skip

    def __init__(
        self,
        graph: RecordedGraph,
        inputs: tuple[_Edge, ...],
        output_keys: tuple[ValueKey, ...],
        saved_values: dict[ValueKey, Any],
    ) -> None:
        self.graph = graph
        self._inputs: tuple[_Edge, ...] | None = inputs
        #: The output keys, or (``fast_ops``) the ``KeySource`` to draw the one key from.
        self._output_keys: tuple[ValueKey, ...] | KeySource = tuple(output_keys)
        self._saved: Any = saved_values  # a dict, None (``fast_ops``: built later) or _FREED
        self._source0: Any = None
        self._source1: Any = None
        self._output: Any = None  # not None: recorded by ``fast_ops``
        needed = tuple(edge.requires_grad for edge in inputs)
        #: Which inputs' cotangents ``backward`` reads; None when all of them.
        self.needed_inputs: tuple[bool, ...] | None = None if all(needed) else needed
        #: The nodes this one depends on, consumers first (``backward``'s visiting order
        #: after this node), computed on the first backward from it: the tape is immutable.
        self.upstream: tuple[Trace, ...] | None = None
        #: ``CHANGES[0]`` when the node was recorded (``fast_ops`` sets it too).
        self.stamp: int = CHANGES[0]
        #: The objects (with a ``_version``) whose data the node saved, set by the
        #: frontend; None: none to check (a ``fast_ops`` node checks its sources).
        self.holders: tuple[Any, ...] | None = None
        #: None, or cotangents computed with the forward (``frontend.joint_forward``: a
        #: scalar loss's gradient): ``cotangents(cts, executor)`` gives the node's input
        #: cotangents, or None to let ``backward`` run the transposed map, after
        #: ``fill(node)`` completes ``saved_values`` for it (a tidu_compile addition).
        self.precomputed: Any = None

    @property
    def output_keys(self) -> tuple[ValueKey, ...]:
        """The tape keys of the outputs (one per graph output), each made once."""
        keys = self._output_keys
        if type(keys) is tuple:
            return keys
        with _KEY_LOCK:  # two threads reading it first must agree on one key
            keys = self._output_keys
            if type(keys) is not tuple:
                keys = self._output_keys = (Input(keys.fresh_input_key()),)  # type: ignore[union-attr]
        return keys  # type: ignore[return-value]

    @property
    def inputs(self) -> tuple[_Edge, ...]:
        """One edge per graph input: its tape key, producing node, ``requires_grad``."""
        edges = self._inputs
        if edges is None:  # recorded with its sources (``fast_ops``): build them once
            if self.stamp != CHANGES[0]:
                self._check_unchanged()
            edges = self._inputs = tuple(
                _Edge(s._key, s._trace, s._requires_grad) for s in self._sources()
            )
        return edges

    def _sources(self) -> tuple[Any, ...]:
        """The input tensors of a node recorded by ``fast_ops``."""
        if len(self.graph.input_keys) == 1:
            return (self._source0,)
        return (self._source0, self._source1)

    @property
    def saved_values(self) -> dict[ValueKey, Any]:
        """The saved data by the recorded graph's keys (inputs, outputs, retained)."""
        saved = self._saved
        if type(saved) is not dict:
            if saved is _FREED:
                raise RuntimeError(
                    f"{self.graph!r}: trying to backward through the graph a second time "
                    "(its saved values were freed by the first backward pass); pass "
                    "retain_graph=True to the first backward() to keep them"
                )
            # recorded with its sources (``fast_ops``): build it once
            if self.stamp != CHANGES[0]:
                self._check_unchanged()
            graph = self.graph
            values = [*(s._data for s in self._sources()), self._output]
            saved = self._saved = dict(
                zip((*graph.input_value_keys, *graph.output_keys), values, strict=True)
            )
        if self.stamp != CHANGES[0]:  # something changed in place since the recording
            self._check_unchanged()
        return saved

    def _check_unchanged(self) -> None:
        """``RuntimeError`` when a value the node saved changed after it was recorded."""
        holders = self._sources() if self._output is not None else self.holders
        for position, holder in enumerate(holders or ()):
            version = getattr(holder, "_version", 0)
            if version > self.stamp:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: input {position} of {self.graph!r}, "
                    f"saved for this backward pass, is at version {version}, the node was "
                    f"recorded at {self.stamp} (PyTorch's error); record the computation "
                    "again after the update, or update out of place (p = p - lr * g)"
                )

    def free(self) -> None:
        """Drop the saved data (its edges stay, built first): a later read raises."""
        self.inputs  # noqa: B018 - built from the sources before they are dropped
        self._saved = _FREED
        self._source0 = self._source1 = self._output = None
        self.holders = self.precomputed = None

    def __repr__(self) -> str:
        return f"Trace({self.graph!r})"


#: Held while a node's key is drawn (renewed after ``fork``: a thread of the parent may
#: have held it).
_KEY_LOCK = forksafe.Lock()

#: ``Trace._saved`` of a node whose saved data a backward pass freed.
_FREED = object()

#: ``[n]``: how many values have changed in place so far (``note_change``); a node's
#: ``stamp`` is this count as of its recording.
CHANGES = [0]
_CHANGES_LOCK = forksafe.Lock()


def note_change(holder: Any) -> None:
    """Record that ``holder``'s value changed in place: its ``_version`` becomes the new
    count of changes, so the nodes recorded before (a lower ``stamp``) that saved its data
    refuse to be used."""
    with _CHANGES_LOCK:
        CHANGES[0] += 1
        holder._version = CHANGES[0]


def free_graph(output_trace: Trace) -> None:
    """Free the saved data of ``output_trace`` and of every node it depends on."""
    for node in visiting_order(output_trace):
        node.free()


class Recorder:
    """Records graphs on the tape, handing out fresh keys from ``key_source``."""

    def __init__(self, key_source: KeySource | None = None) -> None:
        self.key_source = key_source if key_source is not None else CountingKeySource()

    def fresh_input_keys(self, count: int) -> list[Hashable]:
        """``count`` raw input keys never used before, as tidu's ``fresh_input_keys``
        gives them: graph input keys for ``RecordedGraph.from_primitive(op, keys)``; the
        value key of a leaf made from one is ``Input(key)``."""
        return [self.key_source.fresh_input_key() for _ in range(count)]

    def record_graph(
        self,
        graph: RecordedGraph,
        inputs: Sequence[EagerInput],
        outputs: Sequence[Any],
        retained_values: Mapping[ValueKey, Any] | None = None,
    ) -> list[EagerOutput]:
        """Record ``graph`` applied to ``inputs`` that produced the data ``outputs``.

        A trace node is created only when some input requires gradients; its saved data
        are the inputs' data under the graph's input keys plus ``retained_values``.
        """
        if len(inputs) != len(graph.input_keys):
            raise ValueError(
                f"inputs: the graph takes {len(graph.input_keys)} inputs, got {len(inputs)}"
            )
        if len(outputs) != len(graph.output_keys):
            raise ValueError(
                f"outputs: the graph has {len(graph.output_keys)} outputs, got {len(outputs)}"
            )
        keys = [Input(k) for k in self.fresh_input_keys(len(outputs))]
        if not any(i.requires_grad for i in inputs):
            return [EagerOutput(k, None, False, s) for s, k in enumerate(keys)]
        saved = {gk: i.data for gk, i in zip(graph.input_value_keys, inputs, strict=True)}
        if retained_values:
            saved.update(retained_values)
        edges = tuple(_Edge(i.key, i.trace, i.requires_grad) for i in inputs)
        trace = Trace(graph, edges, tuple(keys), saved)
        return [EagerOutput(k, trace, True, s) for s, k in enumerate(keys)]


# --------------------------------------------------------------------------- backward


class BackwardExecutor(ABC):
    """What ``backward`` calls for each tape node; see tidu's ``BackwardExecutor``."""

    #: Whether a ``@tc.function`` call recording a scalar loss computes the loss's
    #: gradient with its forward, by ``joint_program`` (``frontend.joint_forward``; a
    #: tidu_compile addition to tidu's protocol).
    joint_forward: bool = False

    #: Whether forward mode, and reverse mode with the graph kept, run a sweep seen before
    #: as one graph of every node's JVP or VJP, recorded as one node
    #: (``frontend.spliced_tangents``, ``frontend.spliced_cotangents``; a tidu_compile
    #: addition).
    splice_sweeps: bool = False

    def joint_program(
        self,
        graph: RecordedGraph,
        input_types: Sequence[Any],
        needed: tuple[bool, ...],
    ) -> Any:
        """For an executor with ``joint_forward``: the graph that computes ``graph``'s one
        real scalar output for inputs of ``input_types``, then the gradients of the
        inputs with ``needed`` (``with_gradient``: their input positions), run with
        ``run_graph``; None when there is none (see ``compiler.fused_grad``)."""
        return None

    @abstractmethod
    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> Mapping[ValueKey, Any]:
        """Evaluate the residual (primal) values of ``graph`` from ``initial_data``."""

    @abstractmethod
    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list:
        """Apply the transpose of ``linear``.

        ``cotangent_out`` has one cotangent per entry of ``linear.tangent_outputs``
        (entries whose tangent output is None are ignored). Returns one cotangent (or
        None) per entry of ``linear.tangent_inputs``.
        """

    @abstractmethod
    def add_operands(self, a: Any, b: Any) -> Any:
        """``a + b`` for two cotangents of one value."""

    def linearize_recorded_graph(
        self, graph: RecordedGraph, output_slots: Sequence[int], ctx: Any
    ) -> LinearizedGraph:
        """Linearize one node; override to memoize per node structure."""
        return graph.linearize(output_slots, ctx)

    def run_transposed_linear_for(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
        needed: Sequence[bool],
    ) -> list:
        """``run_transposed_linear`` when only the cotangents of inputs with ``needed[i]``
        will be read (the others may be None); ``backward`` calls it for nodes with
        inputs that need no gradient. The default computes them all; an executor may
        override it to skip the work (a tidu_compile addition to tidu's protocol).
        """
        return self.run_transposed_linear(linear, cotangent_out, external_data, ctx)

    def run_tape(
        self,
        output_key: ValueKey,
        output_trace: Trace,
        seed: Any,
        ctx: Any,
        wanted: Container[ValueKey] | None,
    ) -> dict[ValueKey, Any] | None:
        """The whole sweep at once: ``backward``'s result for the tape under
        ``output_trace`` (at least the cotangents of the ``wanted`` keys reached; all of
        them when None), or None to let ``backward`` visit the nodes one by one (the
        default). A compiling executor runs a tape it has seen before as one program
        (``executors.capture``; a tidu_compile addition to tidu's protocol)."""
        return None

    def run_graph(self, graph: RecordedGraph, inputs: Sequence[Any]) -> list:
        """The values of ``graph``'s outputs for one value per input (forward mode and
        higher order evaluate derived graphs with it). The default evaluates op by op
        (``evaluate_graph``); a compiling executor overrides it (a tidu_compile addition
        to tidu's protocol)."""
        if len(inputs) != len(graph.input_keys):
            raise ValueError(
                f"inputs: {graph!r} takes {len(graph.input_keys)} inputs, got {len(inputs)}"
            )
        return evaluate_graph(graph.graph, dict(zip(graph.input_value_keys, inputs, strict=True)))


def upstream_nodes(roots: Sequence[Trace]) -> list[Trace]:
    """The nodes reachable from ``roots`` (themselves included), consumers first: the
    order ``backward`` visits them in; reversed, the order forward mode visits them in."""
    order = post_order(
        roots, lambda trace: [e.trace for e in reversed(trace.inputs) if e.trace is not None]
    )
    order.reverse()
    return order


def visiting_order(output_trace: Trace) -> tuple[Trace, ...]:
    """``output_trace`` and the nodes it depends on, consumers first (``backward``'s
    order); cached on the node
    (without itself: a node never references itself, so no reference cycle)."""
    upstream = output_trace.upstream
    if upstream is None:
        upstream = output_trace.upstream = tuple(_reverse_topological(output_trace)[1:])
    return (output_trace, *upstream)


def _reverse_topological(output_trace: Trace) -> list[Trace]:
    """Nodes reachable from ``output_trace``, consumers first (iterative DFS)."""
    return upstream_nodes([output_trace])


def _check_seed(seed: Any, trace: Trace, slot: int) -> None:
    """When the node saved the output's value and both are typed, their types must agree.

    Duck-typed (``shape`` and ``dtype`` attributes): the tape never assumes numpy.
    """
    value = trace.saved_values.get(trace.graph.output_keys[slot])
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return
    seed_shape, seed_dtype = getattr(seed, "shape", None), getattr(seed, "dtype", None)
    if seed_shape is None or seed_dtype is None:
        raise TypeError(
            f"seed: expected an array of shape {tuple(shape)} and dtype {dtype}, "
            f"got {type(seed).__name__}"
        )
    if tuple(seed_shape) != tuple(shape):
        raise ValueError(f"seed: shape {tuple(seed_shape)} does not match the output's "
                         f"{tuple(shape)}")  # fmt: skip
    # ``is`` first: numpy's builtin dtypes are singletons and ``dtype.name`` costs ~7 us.
    if seed_dtype is not dtype and getattr(seed_dtype, "name", seed_dtype) != getattr(
        dtype, "name", dtype
    ):
        raise TypeError(f"seed: dtype {seed_dtype} does not match the output's {dtype}")


_FIRST_SLOT = (0,)


def _precomputed(
    node: Trace, precomputed: Any, cts: list[Any], executor: BackwardExecutor
) -> list | None:
    """``node.precomputed``'s input cotangents for ``cts`` when ``executor`` runs this
    backward, read after ``saved_values``, which raises for a node freed or changed in
    place since recording, as the transposed map's run would; else None, the node's
    saved values completed for the transposed map."""
    node.saved_values  # noqa: B018 - the checks only
    results = precomputed.cotangents(cts, executor)
    if results is None:
        precomputed.fill(node)  # the saved values the transposed map reads
    return results  # type: ignore[no-any-return]


def backward(
    output_key: ValueKey,
    output_trace: Trace | None,
    seed: Any,
    executor: BackwardExecutor,
    ctx: Any = None,
    wanted: Container[ValueKey] | None = None,
) -> dict[ValueKey, Any]:
    """Reverse-mode sweep from ``output_key`` seeded with ``seed``.

    Returns the accumulated cotangent of every tape value reached that requires
    gradients (including ``output_key`` itself), keyed by tape value key. ``wanted``
    (a tidu_compile addition): the keys the caller reads; the result may then leave the
    others out (an executor that runs the whole tape at once computes only those:
    ``BackwardExecutor.run_tape``).
    """
    if not isinstance(executor, BackwardExecutor):
        raise TypeError(f"executor: expected a BackwardExecutor, got {type(executor).__name__}")
    if seed is None:
        raise TypeError("seed: expected the cotangent of the output, got None")
    cotangents: dict[ValueKey, Any] = {output_key: seed}
    if output_trace is None:
        return cotangents
    if not isinstance(output_trace, Trace):
        raise TypeError(
            f"output_trace: expected a Trace or None, got {type(output_trace).__name__}"
        )
    if output_key not in output_trace.output_keys:
        raise ValueError(f"output_key: {output_key!r} is not an output of output_trace")
    _check_seed(seed, output_trace, output_trace.output_keys.index(output_key))
    whole = executor.run_tape(output_key, output_trace, seed, ctx, wanted)
    if whole is not None:
        return whole
    # Bound once: this loop runs per tape node and is the whole per-node overhead.
    linearize = executor.linearize_recorded_graph
    execute_forward = executor.execute_forward
    run_transposed = executor.run_transposed_linear
    add = executor.add_operands
    for node in visiting_order(output_trace):
        keys = node.output_keys
        if len(keys) == 1:  # the usual node: one output
            ct = cotangents.get(keys[0])
            if ct is None:
                continue
            slots: Sequence[int] = _FIRST_SLOT
            cts = [ct]
        else:
            incoming = [cotangents.get(k) for k in keys]
            slots = [s for s, ct in enumerate(incoming) if ct is not None]
            if not slots:
                continue
            cts = [incoming[s] for s in slots]
        precomputed = node.precomputed
        if precomputed is None or (
            results := _precomputed(node, precomputed, cts, executor)
        ) is None:
            linear = linearize(node.graph, slots, ctx)
            forward = execute_forward(linear.primitive_graph, node.saved_values)
            needed = node.needed_inputs
            if needed is None:
                results = run_transposed(linear, cts, forward, ctx)
            else:
                results = executor.run_transposed_linear_for(linear, cts, forward, ctx, needed)
        edges = node.inputs
        if len(results) != len(edges):
            raise ValueError(
                f"executor {type(executor).__name__}.run_transposed_linear returned "
                f"{len(results)} cotangents for a node with {len(edges)} inputs"
            )
        for edge, ct in zip(edges, results):  # noqa: B905 - lengths checked above
            if ct is None or not edge.requires_grad:
                continue
            previous = cotangents.get(edge.key)
            cotangents[edge.key] = ct if previous is None else add(previous, ct)
    return cotangents

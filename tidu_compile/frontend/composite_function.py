"""Composite recording: ``@tidu_compile.function`` records a whole function as ONE tape node.

>>> @tc.function
... def loss(x, y):
...     return tc.sum(tc.tanh(x * y + tc.exp(-x)) * y)

The first call with given argument shapes, dtypes and ``requires_grad`` flags *traces*
the function: it runs eagerly, and every primitive it applies is captured into one
``Graph`` instead of being recorded op by op. Later calls with the same signature
*replay* that graph (the Python function is not run again). Every call, the tracing one
too (so that every call gives the same values), runs the graph as one program of the
current executor: native code compiled like a backward program on a ``CompiledExecutor``
(``frontend.composite_forward``), numpy op by op on the ``ReferenceExecutor``; each call
records a single tape node, so the backward pass of the whole function is one compiled
program, usually one fused kernel (a scalar loss on a ``CompiledExecutor`` computes its
gradient with its forward instead, in one program: ``frontend.joint_forward``). A new
signature re-traces.

Arguments may be given by position or keyword and nest in lists, tuples and dicts
(``params=[(W1, b1), (W2, b2)]``). Tensors and numpy arrays are the graph's inputs:
an array argument is a tensor that needs no gradient, its values passed at every call
(never baked in). Any other argument (numbers, strings, ...) must be hashable: it is
part of the trace's key by type and exact value (``_static_key``: ``0.0`` and ``-0.0``
trace apart, as do ``1``, ``1.0`` and ``True``), so a new value re-traces.

Like ``jax.jit``: values the function closes over (arrays, Python numbers, random draws
made inside it) are constants captured at trace time; data-dependent Python control
flow follows the traced branch. Reading a traced value (``float(t)``, ``t.item()``,
``bool(t)``, ``t.numpy()``, ``np.asarray(t)``) raises ``TracedValueError`` rather than
freezing it. A closed-over tensor that requires gradients is an error (pass it as an
argument).
"""

from __future__ import annotations

import functools
import struct
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from tidu_compile import forksafe
from tidu_compile.ad import Name
from tidu_compile.collections_pause import fewer_collections
from tidu_compile.eager import RecordedGraph
from tidu_compile.frontend.composite_forward import UNBUILT, ForwardPlan
from tidu_compile.frontend.joint_forward import JointState, record_jointly
from tidu_compile.frontend.state import (
    TransformInTrace,
    current_capture,
    get_default_executor,
    grad_enabled,
    set_capture,
)
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.frontend.trace_segments import (
    SegmentedTrace,
    record_call,
    retained_pairs,
    split_trace,
)
from tidu_compile.frontend.trees import map_leaves
from tidu_compile.graph import Graph, GraphBuilder, Primary, ValueKey
from tidu_compile.ops import (
    DIFFERENTIABLE_DTYPES,
    Constant,
    ControlFlow,
    DotGeneral,
    ReduceMax,
    ReduceMin,
    ReduceProd,
    ReduceSum,
    TensorOp,
)

__all__ = ["function"]

F = TypeVar("F", bound=Callable[..., Any])

#: Ops whose outputs are saved on the tape rather than recomputed in the backward kernel
#: (so are the integer outputs of any op: the kernels compute floats, complex and masks).
RETAINED_OPS: tuple[type[TensorOp], ...] = (DotGeneral, ReduceSum, ReduceMax, ReduceMin,
                                              ReduceProd, ControlFlow)  # loops: never rerun
#: Ops whose computed operands are saved too: a contraction's backward reads them whole
#: (``dW = h^T @ ct``), so recomputing one (``h = tanh(x @ w)``) would redo its producers.
RETAINED_OPERANDS_OF: tuple[type[TensorOp], ...] = (DotGeneral,)


def splat_constant(data: np.ndarray) -> Constant | None:
    """A ``Constant`` op for data holding one repeated float/complex value, else None."""
    if data.dtype.name not in DIFFERENTIABLE_DTYPES or data.size == 0:
        return None
    first = data.flat[0]
    if data.size > 1 and not np.array_equal(data, np.broadcast_to(first, data.shape), True):
        return None
    value = complex(first) if data.dtype.kind == "c" else float(first)
    return Constant(value, tuple(data.shape), data.dtype.name)


class Capture:
    """The graph being traced: tensors (by identity) -> local value ids."""

    def __init__(self, arguments: list[Tensor], name: str) -> None:
        self.name = name
        self.builder = GraphBuilder()
        self.ids: dict[int, int] = {}
        self.traced: set[int] = set()  # tensors computed from the arguments, by identity
        self.keep_alive: list[Tensor] = []
        self.constants: list[np.ndarray] = []
        self.retained: list[int] = []
        self.produced: set[int] = set()  # ids computed by an op (not inputs or constants)
        for i, tensor in enumerate(arguments):
            self._bind(tensor, self.builder.add_input(Name(f"arg{i}")))
            self.traced.add(id(tensor))

    def is_traced(self, tensor: Tensor) -> bool:
        """Whether ``tensor``'s value depends on the arguments (reading it is an error)."""
        return id(tensor) in self.traced

    def is_produced(self, tensor: Tensor) -> bool:
        """Whether ``tensor`` was computed by an op of the trace (not an argument or a
        constant): such a tensor may change in place (``rebind``)."""
        return self.ids.get(id(tensor)) in self.produced

    def rebind(self, tensor: Tensor, result: Tensor) -> None:
        """``tensor`` (changed in place) stands for ``result``'s value from now on."""
        self.ids[id(tensor)] = self.local_id(result)
        self.traced.add(id(tensor))
        tensor._data = result._data

    def _bind(self, tensor: Tensor, local_id: int) -> None:
        self.ids[id(tensor)] = local_id
        self.keep_alive.append(tensor)

    def local_id(self, tensor: Tensor) -> int:
        found = self.ids.get(id(tensor))
        if found is not None:
            return found
        if tensor._requires_grad:
            raise TypeError(
                "tidu_compile.function: the function uses a tensor that requires gradients "
                "but is not one of its arguments; pass it as an argument"
            )
        splat = splat_constant(tensor._data)
        if splat is not None:  # Python numbers: a constant op the kernel inlines
            (local_id,) = self.builder.add_operation(splat, [], Primary())
            self._bind(tensor, local_id)
            return local_id
        local_id = self.builder.add_input(Name(f"const{len(self.constants)}"))
        self.constants.append(tensor._data)
        self._bind(tensor, local_id)
        return local_id

    def apply(self, op: TensorOp, inputs: list[Tensor], outputs: list[np.ndarray]) -> list[Tensor]:
        input_ids = [self.local_id(t) for t in inputs]
        ids = self.builder.add_operation(op, input_ids, Primary())
        tensors = [Tensor(o) for o in outputs]
        for tensor, local_id in zip(tensors, ids, strict=True):
            self._bind(tensor, local_id)
            self.traced.add(id(tensor))
        if isinstance(op, RETAINED_OPS):
            self.retained.extend(ids)
        else:  # integer results (argmax, reshaped indices) are read, never recomputed
            self.retained.extend(i for i, o in zip(ids, outputs, strict=True)
                                 if o.dtype.kind in "iu")  # fmt: skip
        if isinstance(op, RETAINED_OPERANDS_OF):
            self.retained.extend(i for i in input_ids if i in self.produced
                                 and i not in self.retained)  # fmt: skip
        self.produced.update(ids)
        return tensors


@dataclass
class _Traced:
    """One traced signature: the recorded graph and what each call must supply."""

    recorded: RecordedGraph
    constants: list[np.ndarray]
    retained: list[int]
    single_output: bool
    forward_plan: ForwardPlan | None  # None: segmented
    #: The segments a long trace runs as (``frontend.trace_segments``), else None.
    segmented: SegmentedTrace | None = None
    #: ``func.value_and_grad``'s fused program (``tidu_compile.composite_grad``), built on
    #: its first use: one per trace, whose key fixes the input types and which inputs
    #: require gradients. None: not fusable.
    fused: Any = UNBUILT
    #: The joint forward's program (``frontend.joint_forward``).
    joint: JointState = field(default_factory=JointState)

    @property
    def graph(self) -> Graph:
        return self.recorded.graph

    @functools.cached_property
    def retained_pairs(self) -> tuple[tuple[ValueKey, int], ...]:
        """``(key, local id)`` of each retained value, one per key: a trace may compute
        one value twice (structurally equal keys), and a dict built from such keys
        compares them whole at every call."""
        return retained_pairs(self.graph, self.retained)

    def forward(self, inputs: list[np.ndarray]) -> list[Any]:
        """The outputs and retained values by local id (the others None), computed by
        the current executor (``ForwardPlan.run``)."""
        assert self.forward_plan is not None, "a segmented trace runs its segments"
        return self.forward_plan.run(get_default_executor(), inputs)


def _record(
    traced: _Traced,
    arguments: list[Tensor],
    values: list[Any],
    kept: Sequence[tuple[ValueKey, int]] | None = None,
) -> list[Tensor]:
    """Record the call; the tape keeps the ``kept`` values (the trace's retained ones
    unless given)."""
    constant_inputs = [Tensor(c) for c in traced.constants]
    kept = traced.retained_pairs if kept is None else kept
    return record_call(traced.recorded, arguments + constant_inputs, values, kept, arguments)


def _static_key(value: Any) -> Hashable:
    """A static argument as a trace key: its type and exact value.

    Numbers enter by their bits, so that values Python calls equal but that compute
    differently get traces of their own: ``0.0`` and ``-0.0`` (``1 / (x * s)`` is
    ``inf`` or ``-inf``), NaNs of different payloads (two NaNs of one payload share a
    trace, though ``nan != nan``), ``1``, ``1.0``, ``True`` and ``np.float32(1)``
    (each its own type; a numpy scalar by its dtype too)::

        _static_key(-0.0)            == (float, b"\x00\x00\x00\x00\x00\x00\x00\x80")
        _static_key(np.float32(1))   == (np.float32, "<f4", b"\x00\x00\x80?")
        _static_key("relu")          == (str, "relu")

    A frozenset by the keys of its items; any other value by its own equality.
    """
    kind = type(value)
    if isinstance(value, np.generic):  # before float and complex: np.float64 is a float
        return (kind, value.dtype.str, value.tobytes())
    if isinstance(value, float):
        return (kind, struct.pack("<d", value))
    if isinstance(value, complex):
        return (kind, struct.pack("<dd", value.real, value.imag))
    if isinstance(value, frozenset):
        return (kind, frozenset(_static_key(item) for item in value))
    return (kind, value)


def _flatten(value: Any, leaves: list[Any]) -> Any:
    """The structure of ``value`` as a trace key; its tensors and arrays go to ``leaves``.

    Lists, tuples and dicts are walked (a dict's keys enter by ``_static_key``, in
    order); a tensor or array leaf enters the key by shape and dtype (and
    ``requires_grad``); any other leaf by ``_static_key``.
    """
    if isinstance(value, Tensor):
        leaves.append(value)
        return ("T", value.shape, value.dtype, value._requires_grad)
    if isinstance(value, np.ndarray):
        leaves.append(value)
        return ("A", value.shape, value.dtype)
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_flatten(item, leaves) for item in value))
    if isinstance(value, dict):
        return (dict, tuple((_static_key(k), _flatten(v, leaves)) for k, v in value.items()))
    return ("P", _static_key(value))


def function(fn: F | None = None, *, max_traces: int = 64, always_compiled: bool = False) -> Any:
    """Decorator: record every call of ``fn`` as one tape node (see the module docstring).

    ``fn`` takes tensors and arrays (by position or keyword, possibly in lists, tuples
    and dicts) and hashable other arguments (part of the trace key), and returns a
    tensor or a tuple of tensors.

    A call that records nothing (under ``no_grad``, or no argument requires gradients)
    runs ``fn`` eagerly, unless ``always_compiled``: then it too runs the traced program
    (its outputs are tensors without gradient), as ``tidu_compile.optim``'s steps do.

    ``fn`` made by ``func.grad(f)`` or ``func.value_and_grad(f)`` (JAX's
    ``jax.jit(jax.value_and_grad(f))``) is that transform of ``function(f)``: the
    transforms cannot run inside a trace, and of a traced ``f`` they run forward and
    backward as one program (``compiled_form``). An ``f`` that calls transforms itself
    (a gradient of a gradient written with lambdas) then runs eagerly, as it would have.
    """
    if fn is None:
        return functools.partial(function, max_traces=max_traces, always_compiled=always_compiled)
    compiled_form = getattr(fn, "compiled_form", None)
    if compiled_form is not None:
        def decorate(inner: Callable[..., Any]) -> Any:
            traced = function(inner, max_traces=max_traces, always_compiled=always_compiled)
            traced.transforms_run_eagerly = True
            return traced

        return functools.wraps(fn)(compiled_form(decorate))
    traces: OrderedDict[Hashable, _Traced] = OrderedDict()
    lock = forksafe.Lock()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves: list[Any] = []
        key = _flatten((args, kwargs), leaves)
        records = grad_enabled() and any(isinstance(a, Tensor) and a._requires_grad for a in leaves)
        if current_capture() or not (records or always_compiled):
            return fn(*args, **kwargs)
        try:
            hash(key)
        except TypeError:
            raise TypeError(
                f"{fn.__name__}: arguments other than tensors and arrays must be hashable "
                "(they key the trace)"
            ) from None
        inputs = _as_inputs(leaves)
        traced = traced_for(key, args, kwargs, inputs)
        if traced is _EAGER:
            return fn(*args, **kwargs)
        # The tracing call too: every call's values come from the same program.
        if traced.segmented is not None:
            outputs = traced.segmented.call(inputs, traced.constants, records)
            return outputs[0] if traced.single_output else tuple(outputs)
        data = [t._data for t in inputs] + traced.constants
        if records:
            outputs = record_jointly(
                traced.recorded, traced.forward_plan, traced.joint, inputs, data,
                traced.retained_pairs, lambda values: _record(traced, inputs, values, ()),
            )  # fmt: skip
            if outputs is None:
                outputs = _record(traced, inputs, traced.forward(data))
        else:
            values = traced.forward(data)
            outputs = [Tensor(np.asarray(values[i])) for i in traced.graph.outputs]
        return outputs[0] if traced.single_output else tuple(outputs)

    def traced_for(key: Hashable, args: tuple[Any, ...], kwargs: dict[str, Any],
                   inputs: list[Tensor]) -> Any:  # fmt: skip
        """The trace of ``key`` (``_EAGER`` for a function calling transforms), made
        from a call with ``args``, ``kwargs`` (whose leaves are ``inputs``) if new."""
        with lock:
            traced = traces.get(key)
            if traced is not None:
                traces.move_to_end(key)
        if traced is None:
            replacements = iter(inputs)  # the tensors and arrays, in _flatten's order
            call_args, call_kwargs = map_leaves(
                (args, kwargs),
                lambda leaf: next(replacements) if isinstance(leaf, (Tensor, np.ndarray)) else leaf,
            )
            try:
                with fewer_collections():  # tracing makes many young objects
                    traced = _trace(fn, call_args, call_kwargs, inputs)
            except TransformInTrace:
                if not getattr(wrapper, "transforms_run_eagerly", False):
                    raise
                traced = _EAGER  # remembered: not traced again
            with lock:
                traces[key] = traced
                while len(traces) > max_traces:
                    traces.popitem(last=False)
        return traced

    def trace_for(
        args: tuple[Any, ...], needs_gradient: bool = True
    ) -> tuple[_Traced, list[Any]] | None:
        """The trace a call with ``args`` replays (traced now if new: its first call then
        needs no forward program of its own) and its tensor and array leaves (in the
        trace's input order), or None when that call takes the tape's path (or, with
        ``needs_gradient``, when no leaf requires gradients: ``optim``'s steps ask
        without)."""
        leaves: list[Any] = []
        key = _flatten((args, {}), leaves)
        if needs_gradient and not any(isinstance(a, Tensor) and a._requires_grad
                                      for a in leaves):  # fmt: skip
            return None
        try:
            with lock:
                traced = traces.get(key)
        except TypeError:  # an unhashable argument: the call raises it
            return None
        if traced is None:  # traced now (its inputs copied only then)
            traced = traced_for(key, args, {}, _as_inputs(leaves))
        if traced is _EAGER or traced.segmented is not None:  # segments: the tape's path
            return None
        return traced, leaves

    wrapper.traces = traces  # type: ignore[attr-defined]
    wrapper.trace_for = trace_for  # type: ignore[attr-defined]
    return wrapper


def _as_inputs(leaves: list[Any]) -> list[Tensor]:
    """A call's tensor and array leaves as the trace's input tensors (arrays copied)."""
    return [a if isinstance(a, Tensor) else Tensor(np.array(a, copy=True)) for a in leaves]


#: A signature whose function calls transforms (``function``'s ``compiled_form``): eager.
_EAGER: Any = object()


def _trace(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], inputs: list[Tensor]
) -> _Traced:
    capture = Capture(inputs, getattr(fn, "__qualname__", repr(fn)))
    set_capture(capture)
    try:
        result = fn(*args, **kwargs)
    finally:
        set_capture(None)
    single = isinstance(result, Tensor)
    results = [result] if single else list(result) if isinstance(result, (tuple, list)) else None
    if not results or not all(isinstance(r, Tensor) for r in results):
        raise TypeError(
            f"{fn.__name__}: a tidu_compile.function must return a Tensor or a tuple of Tensors"
        )
    output_ids = [capture.local_id(r) for r in results]
    builder = capture.builder
    builder.set_outputs(output_ids)
    graph = builder.build()
    recorded = RecordedGraph.from_graph(graph)
    values: list[Any] = [None] * len(graph.values)  # the trace's values: their dtypes
    for tensor in capture.keep_alive:
        values[capture.ids[id(tensor)]] = tensor._data
    segments = split_trace(graph, capture.retained, values)
    if segments is not None:  # each segment has its forward plan
        segmented = SegmentedTrace(graph, segments)
        return _Traced(recorded, capture.constants, capture.retained, single, None, segmented)
    forward = ForwardPlan(graph, capture.retained, values)
    return _Traced(recorded, capture.constants, capture.retained, single, forward)

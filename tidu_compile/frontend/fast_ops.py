"""Cheap recording of the common elementwise ops (``x * y``, ``tc.sin(x)``) on the tape.

The general path (``elementwise.binary`` -> ``promotion.coerce`` -> ``tensor.apply_op``
-> ``Recorder.record_graph``) promotes dtypes, broadcasts, runs the op's type rule,
evaluates the op, and builds the node's keys, edges and saved-data dict: ~18 us per
op, ~80 numpy 0-d ops. For the common case this module does only what the call needs:

* operands: float or complex tensors of one dtype and one shape, or a tensor and a
  Python number (numpy's weak scalars keep the tensor's dtype), outside ``@tc.function``
  traces: nothing to promote or broadcast, and the elementwise type rule holds;
* the op's ufunc on the data (what ``Elementwise.evaluate`` calls);
* per op class, once: the recorded one-op graph and the dtypes the op allows (``SPECS``);
* keys: ``EagerKey`` ints, their ``Input`` value keys made without ``__init__``;
* edges and saved data: the node keeps its input tensors and output data, and builds
  ``Trace.inputs`` and ``Trace.saved_values`` from them when a backward first reads
  them; the constant operand of ``x * 2.0`` is made only then (``_Number``).

Anything else returns None and takes the general path, which gives the same tensors,
tape nodes and saved data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile.eager import CountingKeySource, EagerKey, RecordedGraph, Trace
from tidu_compile.frontend.state import RECORDER, THREAD_STATE
from tidu_compile.frontend.tensor import _NO_KEY, Tensor, recorded_graph_for
from tidu_compile.graph import Input
from tidu_compile.ops import OP_TABLE, Elementwise, TensorOp

__all__ = ["SPECS", "Spec", "binary", "binary_operator", "unary", "unary_operator"]

Spec = tuple[np.ufunc, RecordedGraph, frozenset[np.dtype]]
"""Per op class: its ufunc, its one-op recorded graph, the dtypes it allows."""

_new = object.__new__
_empty = np.empty
_eager_key = EagerKey
_set_input_key = Input.__dict__["key"].__set__
_set_input_hash = Input.__dict__["_hash"].__set__
_MAX_EXACT_INT = 1 << 53


def _specs() -> dict[type[TensorOp], Spec]:
    """The elementwise ops of the table that evaluate with a plain ufunc and type-check
    with the elementwise rule (one type in, that type out)."""
    specs: dict[type[TensorOp], Spec] = {}
    for op in OP_TABLE.values():
        if (
            issubclass(op, Elementwise)
            and op.evaluate is Elementwise.evaluate
            and op.infer_types is Elementwise.infer_types
            and isinstance(getattr(op, "numpy_fn", None), np.ufunc)
            and op.input_count in (1, 2)
            and op.differentiable
        ):
            try:
                instance = op()
            except TypeError:  # an op with parameters
                continue
            dtypes = frozenset(np.dtype(d) for d in op.allowed_dtypes)
            specs[op] = (op.numpy_fn, recorded_graph_for(instance), dtypes)  # type: ignore[assignment]
    return specs


#: Op class -> ``Spec``, for every op the fast path handles.
SPECS: dict[type[TensorOp], Spec] = _specs()


def _plain(out: np.ndarray) -> Tensor:
    tensor = _new(Tensor)
    tensor._data = out
    tensor._requires_grad = False
    tensor.grad = None
    tensor._key = _NO_KEY
    tensor._trace = None
    return tensor


def _recorded(
    graph: RecordedGraph, data: tuple[Any, ...], out: np.ndarray, needed: tuple[bool, ...] | None
) -> Tensor:
    """The output tensor of a new one-op tape node (``Recorder.record_graph``'s node);
    ``data``: the input tensors (sources of the node's edges and saved data) and ``out``."""
    source = RECORDER.key_source
    raw = (_eager_key(next(source._counter)) if type(source) is CountingKeySource
           else source.fresh_input_key())  # fmt: skip
    key = _new(Input)
    _set_input_key(key, raw)
    _set_input_hash(key, hash(("Input", raw)))
    trace = _new(Trace)
    trace.graph = graph
    trace._inputs = None
    trace.output_keys = (key,)
    trace._saved = None
    trace._data = data
    trace.needed_inputs = needed
    trace.upstream = None
    tensor = _new(Tensor)
    tensor._data = out
    tensor._requires_grad = True
    tensor.grad = None
    tensor._key = key
    tensor._trace = trace
    return tensor


def _result(ufunc: Callable[..., Any], *operands: Any) -> np.ndarray:
    out = ufunc(*operands)
    if type(out) is not np.ndarray:  # a 0-d result comes back as a numpy scalar
        out = np.asarray(out)
    out.setflags(False)  # positional: a third of the cost of write=False
    return out  # type: ignore[no-any-return]


def unary(spec: Spec, x: Any) -> Tensor | None:
    """``op(x)`` for a float or complex tensor ``x``, or None (the general path)."""
    if type(x) is not Tensor:
        return None
    ufunc, graph, dtypes = spec
    data = x._data
    if data.dtype not in dtypes:
        return None
    state = THREAD_STATE
    if state.capture is not None:
        return None
    # A 0-d result would come back as a numpy scalar: ask for an array.
    out = ufunc(data) if data.ndim else ufunc(data, out=_empty((), data.dtype))
    out.setflags(False)  # positional: a third of the cost of write=False
    if not (x._requires_grad and state.grad_enabled):
        return _plain(out)
    return _recorded(graph, (x, out), out, None)


def binary(spec: Spec, a: Any, b: Any) -> Tensor | None:
    """``op(a, b)`` for two tensors of one float or complex dtype and one shape, or a
    tensor and a Python number; else None (the general path)."""
    if type(a) is Tensor:
        if type(b) is Tensor:
            return _tensors(spec, a, b)
        return _with_number(spec, a, b, False)
    if type(b) is Tensor:
        return _with_number(spec, b, a, True)
    return None


def _tensors(spec: Spec, a: Tensor, b: Tensor) -> Tensor | None:
    """``op(a, b)`` for two tensors (the hot path: ``_result`` inlined)."""
    ufunc, graph, dtypes = spec
    da, db = a._data, b._data
    dtype = da.dtype
    if db.dtype is not dtype or dtype not in dtypes or da.shape != db.shape:
        return None
    state = THREAD_STATE
    if state.capture is not None:
        return None
    # A 0-d result would come back as a numpy scalar: ask for an array.
    out = ufunc(da, db) if da.ndim else ufunc(da, db, out=_empty((), dtype))
    out.setflags(False)  # positional: a third of the cost of write=False
    ra, rb = a._requires_grad, b._requires_grad
    if not ((ra or rb) and state.grad_enabled):
        return _plain(out)
    return _recorded(graph, (a, b, out), out, None if ra and rb else (ra, rb))


class _Number:
    """A number operand as a source of a tape node: no key, no gradient; its saved data
    is what the general path saves (a read-only array of the other operand's dtype and
    shape, ``like``'s), made only if a backward pass reads it. Made with ``_new`` and
    two slot stores (no ``__init__`` call: this is per recorded op)."""

    __slots__ = ("number", "like")

    _key = _NO_KEY
    _trace = None
    _requires_grad = False

    number: Any
    like: np.ndarray

    @property
    def _data(self) -> np.ndarray:
        like = self.like
        array = np.array(self.number, dtype=like.dtype)
        array.setflags(write=False)
        return array if array.shape == like.shape else np.broadcast_to(array, like.shape)


def _with_number(spec: Spec, t: Tensor, number: Any, reflected: bool) -> Tensor | None:
    """``op(t, number)`` (``op(number, t)`` when ``reflected``)."""
    kind = type(number)
    data = t._data
    dtype = data.dtype
    if kind is float:
        pass
    elif kind is int:
        if not -_MAX_EXACT_INT < number < _MAX_EXACT_INT:
            return None
    elif kind is not complex or dtype.kind != "c":
        return None
    ufunc, graph, dtypes = spec
    if dtype not in dtypes:
        return None
    state = THREAD_STATE
    if state.capture is not None:
        return None
    out = _result(ufunc, number, data) if reflected else _result(ufunc, data, number)
    if out.dtype is not dtype:
        return None
    if not (t._requires_grad and state.grad_enabled):
        return _plain(out)
    constant = _new(_Number)
    constant.number = number
    constant.like = out
    if reflected:
        return _recorded(graph, (constant, t, out), out, (False, True))
    return _recorded(graph, (t, constant, out), out, (True, False))

def _general(function: str) -> Callable[..., Tensor]:
    from tidu_compile import frontend

    return getattr(frontend, function)  # type: ignore[no-any-return]


def binary_operator(
    op: type[TensorOp], function: str, reflected: bool = False
) -> Callable[..., Tensor]:
    """A ``Tensor`` operator method (``__mul__``; ``__rmul__`` when ``reflected``): the
    fast path, else the frontend function named ``function``."""
    spec = SPECS[op]

    def method(self: Tensor, other: Any) -> Tensor:
        if type(other) is Tensor:
            out = _tensors(spec, self, other)
        else:
            out = _with_number(spec, self, other, reflected)
        if out is not None:
            return out
        general = _general(function)
        return general(other, self) if reflected else general(self, other)

    return method


def unary_operator(op: type[TensorOp], function: str) -> Callable[[Tensor], Tensor]:
    """A unary ``Tensor`` operator method (``__neg__``), as ``binary_operator``."""
    spec = SPECS[op]

    def method(self: Tensor) -> Tensor:
        out = unary(spec, self)
        return out if out is not None else _general(function)(self)

    return method


def _install_operators() -> None:
    """``Tensor.__add__`` ... ``Tensor.__neg__`` (``frontend.tensor`` imports this module
    last, to install them)."""
    from tidu_compile import ops

    for name, op, function in (("add", ops.Add, "add"), ("sub", ops.Sub, "subtract"),
                               ("mul", ops.Mul, "multiply"), ("truediv", ops.Div, "divide")):
        setattr(Tensor, f"__{name}__", binary_operator(op, function))
        setattr(Tensor, f"__r{name}__", binary_operator(op, function, reflected=True))
    Tensor.__neg__ = unary_operator(ops.Neg, "negative")


_install_operators()

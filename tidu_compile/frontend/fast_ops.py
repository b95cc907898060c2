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
* saved data: a tuple in the node (``Trace.saved_values`` is built when first read);
  the constant operand of ``x * 2.0`` only if a backward reads it (``Deferred``).

Anything else returns None and takes the general path, which gives the same tensors,
tape nodes and saved data.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile.eager import CountingKeySource, Deferred, EagerKey, RecordedGraph, Trace, _Edge
from tidu_compile.frontend.state import RECORDER, THREAD_STATE
from tidu_compile.frontend.tensor import _NO_KEY, Tensor, recorded_graph_for
from tidu_compile.graph import Input
from tidu_compile.ops import OP_TABLE, Elementwise, TensorOp

__all__ = ["SPECS", "Spec", "binary", "binary_operator", "unary", "unary_operator"]

Spec = tuple[np.ufunc, RecordedGraph, frozenset[np.dtype]]
"""Per op class: its ufunc, its one-op recorded graph, the dtypes it allows."""

_new = object.__new__
_new_tuple = tuple.__new__
_set_input_key = Input.__dict__["key"].__set__
_set_input_hash = Input.__dict__["_hash"].__set__
_CONSTANT_EDGE = _Edge(_NO_KEY, None, False)
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


def _edge(t: Tensor) -> _Edge:
    return _new_tuple(_Edge, (t._key, t._trace, t._requires_grad))  # type: ignore[no-any-return]


def _recorded(
    graph: RecordedGraph,
    edges: tuple[_Edge, ...],
    data: tuple[Any, ...],
    out: np.ndarray,
    needed: tuple[bool, ...] | None,
) -> Tensor:
    """The output tensor of a new one-op tape node (``Recorder.record_graph``'s node)."""
    source = RECORDER.key_source
    raw = (EagerKey(next(source._counter)) if type(source) is CountingKeySource
           else source.fresh_input_key())  # fmt: skip
    key = _new(Input)
    _set_input_key(key, raw)
    _set_input_hash(key, hash(("Input", raw)))
    trace = _new(Trace)
    trace.graph = graph
    trace.inputs = edges
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
    out.setflags(write=False)
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
    out = _result(ufunc, data)
    if not (x._requires_grad and state.grad_enabled):
        return _plain(out)
    return _recorded(graph, (_edge(x),), (data, out), out, None)


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
    """``op(a, b)`` for two tensors (the hot path: ``_result`` and ``_edge`` inlined)."""
    ufunc, graph, dtypes = spec
    da, db = a._data, b._data
    dtype = da.dtype
    if db.dtype is not dtype or dtype not in dtypes or da.shape != db.shape:
        return None
    state = THREAD_STATE
    if state.capture is not None:
        return None
    out = ufunc(da, db)
    if type(out) is not np.ndarray:  # a 0-d result comes back as a numpy scalar
        out = np.asarray(out)
    out.setflags(write=False)
    ra, rb = a._requires_grad, b._requires_grad
    if not ((ra or rb) and state.grad_enabled):
        return _plain(out)
    edges = (_new_tuple(_Edge, (a._key, a._trace, ra)), _new_tuple(_Edge, (b._key, b._trace, rb)))
    return _recorded(graph, edges, (da, db, out), out, None if ra and rb else (ra, rb))


def _constant(number: Any, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The saved data of a number operand, as the general path saves it (a read-only
    array of the tensor's dtype, broadcast to its shape)."""
    array = np.array(number, dtype=dtype)
    array.setflags(write=False)
    return array if array.shape == shape else np.broadcast_to(array, shape)


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
    constant = Deferred(_constant, number, dtype, data.shape)
    if reflected:
        return _recorded(graph, (_CONSTANT_EDGE, _edge(t)), (constant, data, out), out,
                         (False, True))  # fmt: skip
    return _recorded(graph, (_edge(t), _CONSTANT_EDGE), (data, constant, out), out,
                     (True, False))  # fmt: skip


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
    """``Tensor.__add__`` ... call these (``frontend.tensor`` imports this module last)."""
    from tidu_compile import ops

    tensor: Any = sys.modules[Tensor.__module__]
    for name, op, function in (("ADD", ops.Add, "add"), ("SUB", ops.Sub, "subtract"),
                               ("MUL", ops.Mul, "multiply"), ("TRUEDIV", ops.Div, "divide")):
        setattr(tensor, f"_{name}", binary_operator(op, function))
        setattr(tensor, f"_R{name}", binary_operator(op, function, reflected=True))
    tensor._NEG = unary_operator(ops.Neg, "negative")


_install_operators()

"""Cheap recording of the common elementwise ops (``x * y``, ``tc.sin(x)``) on the tape.

The general path (``elementwise.binary`` -> ``promotion.coerce`` -> ``tensor.apply_op``
-> ``Recorder.record_graph``) promotes dtypes, broadcasts, runs the op's type rule,
evaluates the op, and builds the node's keys, edges and saved-data dict: ~18 us per
op, ~80 numpy 0-d ops. For the common case this module does only what the call needs:

* operands: float or complex tensors of one dtype and one shape, or a tensor and a
  Python number (numpy's weak scalars keep the tensor's dtype), outside ``@tc.function``
  traces: nothing to promote or broadcast, and the elementwise type rule holds; two
  tensors of one dtype whose shapes broadcast (``x @ w + b``) are first broadcast as the
  general path does it, each by its own ``BroadcastInDim`` node where it records one
  (``_broadcast_pair``: a third of the general path's cost, measured on the MLP's bias);
* the op's ufunc on the data (what ``Elementwise.evaluate`` calls), or for a large
  tensor and a transcendental op, or two very large ones and ``+ - * /``, the executor's
  compiled kernel (``native_elementwise``); on 0-d float64
  data, Python's float arithmetic or the ufunc on Python floats (``_float64``: the same
  bits and warnings at a third of the cost of a ufunc on 0-d arrays);
* per op class, once: the recorded one-op graph and the dtypes the op allows (``SPECS``),
  bound in the op's own function (``fast_unary``, ``fast_binary``: they are the
  operators, ``Tensor.__mul__`` set by ``tensor_methods``, and the frontend functions,
  ``tc.sin``; one Python
  frame per op, the tape node built inline);
* the thread's state (``no_grad``, a trace in progress) read only when some thread has
  one (``state.SPECIAL_THREADS``): a thread-local read costs ~10% of an op;
* keys: none at recording; the node's ``Input(EagerKey(n))`` is drawn when first read
  (``Trace.output_keys``, ``Tensor._key``: by a backward pass or the general path);
* edges and saved data: the node keeps its input tensors and output data, and builds
  ``Trace.inputs`` and ``Trace.saved_values`` from them when a backward first reads
  them; the constant operand of ``x * 2.0`` is made only then (``_Number``).

Anything else takes the general path (``unary`` and ``binary`` return None for it),
which gives the same tensors, tape nodes and saved data.

Measured (callgrind, the ``bench --workload recording`` chain, instructions per op;
numpy 0-d: ~4,000): 21,000 before the items from ``_float64`` on; 19,700 with
``_float64``, 13,800 with keys drawn when read, 12,400 with one frame per op, 11,300 with
the thread's state read only when needed, 11,200 now.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.eager import CHANGES, RecordedGraph, Trace
from tidu_compile.frontend.native_elementwise import (
    NATIVE_BINARY_ELEMENTS,
    NATIVE_BINARY_OPS,
    NATIVE_ELEMENTS,
    NATIVE_OPS,
    native_result,
)
from tidu_compile.frontend.state import RECORDER, SPECIAL_THREADS, THREAD_STATE
from tidu_compile.frontend.tensor import CONSTANT_KEY, Tensor, recorded_graph_for
from tidu_compile.ops import OP_TABLE, Elementwise, TensorOp

__all__ = [
    "BINARY_OPERATORS", "SPECS", "UNARY_OPERATORS", "Spec", "binary", "fast_binary",
    "fast_unary", "matmul_up_to_2d", "power_by_number", "slice_leading", "sum_all", "unary",
]  # fmt: skip

Spec = tuple[np.ufunc, RecordedGraph, frozenset[np.dtype], Callable[[Any, Any], Any] | None]
"""Per op class: its ufunc, its one-op recorded graph, the dtypes it allows, and Python's
operator for it on floats (``operator.mul`` for ``Mul``; None for ops without one)."""

_new = object.__new__
#: Read first: while no thread records other than by default (``state.SPECIAL_THREADS``),
#: no thread-local read (``THREAD_STATE.capture``, ``.grad_enabled``) is needed.
_special = SPECIAL_THREADS
#: The count of in-place changes, a new node's ``stamp`` (``eager.note_change``).
_changes = CHANGES
_empty = np.empty
_array = np.array
_MAX_EXACT_INT = 1 << 53
_F64 = np.dtype(np.float64)
_NORMAL_MIN = sys.float_info.min  # the smallest positive normal float64
_FINITE_MAX = sys.float_info.max
_NEGATIVE_MIN, _NEGATIVE_MAX = -_NORMAL_MIN, -_FINITE_MAX  # (normal negatives: in between)
#: The ops whose float64 result Python's float arithmetic gives bit for bit (IEEE 754
#: correctly rounded ``+ - * /``, as numpy's loops).
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "Add": operator.add, "Sub": operator.sub, "Mul": operator.mul, "Div": operator.truediv,
}  # fmt: skip


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
            specs[op] = (op.numpy_fn, recorded_graph_for(instance), dtypes,  # type: ignore[assignment]
                         _OPERATORS.get(op.__name__))  # fmt: skip
    return specs


#: Op class -> ``Spec``, for every op the fast path handles.
SPECS: dict[type[TensorOp], Spec] = _specs()


def _plain(out: np.ndarray) -> Tensor:
    tensor = _new(Tensor)
    tensor._data = out
    tensor._requires_grad = False
    tensor.grad = None
    tensor._tape_key = CONSTANT_KEY
    tensor._trace = None
    return tensor


def _recorded(
    graph: RecordedGraph, a: Any, b: Any, out: np.ndarray, needed: tuple[bool, ...] | None
) -> Tensor:
    """The output tensor of a new tape node of a binary op (``Recorder.record_graph``'s
    node): ``a`` and ``b`` are its sources (of its edges and saved data; ``b`` None for
    a unary op), ``out`` its output data. Its key is drawn from the recorder's key
    source when first read."""
    trace = _new(Trace)
    trace.graph = graph
    trace._inputs = None
    trace._output_keys = RECORDER.key_source
    trace._saved = None
    trace._source0 = a
    trace._source1 = b
    trace._output = out
    trace.needed_inputs = needed
    trace.upstream = None
    trace.stamp = _changes[0]
    trace.precomputed = None
    tensor = _new(Tensor)
    tensor._data = out
    tensor._requires_grad = True
    tensor.grad = None
    tensor._tape_key = None
    tensor._trace = trace
    return tensor


def _of_one_operand(graph: RecordedGraph, x: Tensor, out: np.ndarray) -> Tensor:
    """``out``, the value of ``graph``'s one op on ``x``: a new tape node's output when
    ``x`` requires a gradient and recording is on, else a plain tensor."""
    if not (x._requires_grad and (not _special[0] or THREAD_STATE.grad_enabled)):
        return _plain(out)
    return _recorded(graph, x, None, out, None)


def _float64(spec: Spec, x: float, y: float) -> np.ndarray:
    """``op(x, y)`` for two float64 values as a 0-d array (writable: the caller freezes
    it). Python's float arithmetic when its result is a normal number: IEEE 754 rounds it
    as numpy's loop does, and raises no floating-point exception numpy would report
    (overflow, division by zero and invalid give inf or nan, underflow a subnormal or
    zero). Else, and for ops without a Python operator, the ufunc on the two Python
    floats (numpy's float64 loop, its warnings and ``errstate``), ~3x the cost."""
    ufunc, python = spec[0], spec[3]
    if python is None:
        return _array(ufunc(x, y))
    try:
        r = python(x, y)
    except ZeroDivisionError:
        return _array(ufunc(x, y))
    if _NORMAL_MIN < r <= _FINITE_MAX or _NEGATIVE_MAX <= r < _NEGATIVE_MIN:
        return _array(r)
    return _array(ufunc(x, y))


def fast_unary(op: type[TensorOp], general: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``op(x)``: the fast path for a float or complex tensor ``x`` (``op``'s ufunc, graph
    and dtypes bound once), else ``general(x)``. Its body is the whole path, node included:
    a Python call costs ~400 instructions, ~5% of a recorded op."""
    ufunc, graph, dtypes, _ = SPECS[op]
    native = op.__name__ in NATIVE_OPS  # large tensors: compiled kernels (native_elementwise)

    def function(x: Any) -> Any:
        if type(x) is Tensor:
            data = x._data
            dtype = data.dtype
            if dtype in dtypes and (not _special[0] or THREAD_STATE.capture is None):
                if data.ndim:
                    out: Any = None
                    if native and data.size >= NATIVE_ELEMENTS:
                        out = native_result(graph, data)
                    if out is None:
                        out = ufunc(data)
                elif dtype is _F64:  # numpy's loop on a Python float: 1/3 of a 0-d array's cost
                    out = _array(ufunc(float(data)))
                else:  # a 0-d result would come back as a numpy scalar: ask for an array
                    out = ufunc(data, out=_empty((), dtype))
                out.setflags(False)  # positional: a third of the cost of write=False
                if not (x._requires_grad and (not _special[0] or THREAD_STATE.grad_enabled)):
                    return _plain(out)
                trace = _new(Trace)  # ``_recorded``, inlined
                trace.graph = graph
                trace._inputs = None
                trace._output_keys = RECORDER.key_source
                trace._saved = None
                trace._source0 = x
                trace._source1 = None
                trace._output = out
                trace.needed_inputs = None
                trace.upstream = None
                trace.stamp = _changes[0]
                trace.precomputed = None
                tensor = _new(Tensor)
                tensor._data = out
                tensor._requires_grad = True
                tensor.grad = None
                tensor._tape_key = None
                tensor._trace = trace
                return tensor
        return general(x)

    return function


def fast_binary(
    op: type[TensorOp], general: Callable[[Any, Any], Any], reflected: bool = False
) -> Callable[[Any, Any], Any]:
    """``op(a, b)`` (``op(b, a)`` when ``reflected``, for ``__rmul__``): the fast path for
    two tensors of one float or complex dtype and one shape (inline, as ``fast_unary``)
    or a tensor and a Python number (``_with_number``), else ``general(a, b)``."""
    spec = SPECS[op]
    ufunc, graph, dtypes, python = spec
    native = op.__name__ in NATIVE_BINARY_OPS  # large tensors: compiled kernels

    def function(a: Any, b: Any) -> Any:
        if reflected:
            a, b = b, a
        if type(a) is Tensor and type(b) is Tensor:
            da = a._data
            db = b._data
            dtype = da.dtype
            shape = da.shape
            if (shape != db.shape and db.dtype is dtype and dtype in dtypes
                    and (not _special[0] or THREAD_STATE.capture is None)):  # fmt: skip
                pair = _broadcast_pair(a, b)  # ``x @ w + b``: the bias broadcast
                if pair is not None:
                    a, b = pair
                    da = a._data
                    db = b._data
                    shape = da.shape
            if (db.dtype is dtype and dtype in dtypes and shape == db.shape
                    and (not _special[0] or THREAD_STATE.capture is None)):  # fmt: skip
                if shape:
                    out: Any = None
                    if native and da.size >= NATIVE_BINARY_ELEMENTS:
                        out = native_result(graph, da, db)
                    if out is None:
                        out = ufunc(da, db)
                elif dtype is _F64:  # ``_float64``, inlined
                    x, y = float(da), float(db)
                    if python is None:
                        r = ufunc(x, y)
                    else:
                        try:
                            r = python(x, y)
                        except ZeroDivisionError:
                            r = ufunc(x, y)
                        else:
                            if not (_NORMAL_MIN < r <= _FINITE_MAX
                                    or _NEGATIVE_MAX <= r < _NEGATIVE_MIN):  # fmt: skip
                                r = ufunc(x, y)
                    out = _array(r)
                else:  # a 0-d result would come back as a numpy scalar: ask for an array
                    out = ufunc(da, db, out=_empty((), dtype))
                out.setflags(False)
                ra = a._requires_grad
                rb = b._requires_grad
                if not ((ra or rb) and (not _special[0] or THREAD_STATE.grad_enabled)):
                    return _plain(out)
                trace = _new(Trace)  # ``_recorded``, inlined
                trace.graph = graph
                trace._inputs = None
                trace._output_keys = RECORDER.key_source
                trace._saved = None
                trace._source0 = a
                trace._source1 = b
                trace._output = out
                trace.needed_inputs = None if ra and rb else (ra, rb)
                trace.upstream = None
                trace.stamp = _changes[0]
                trace.precomputed = None
                tensor = _new(Tensor)
                tensor._data = out
                tensor._requires_grad = True
                tensor.grad = None
                tensor._tape_key = None
                tensor._trace = trace
                return tensor
        else:
            fast = (_with_number(spec, a, b, False) if type(a) is Tensor
                    else _with_number(spec, b, a, True) if type(b) is Tensor else None)  # fmt: skip
            if fast is not None:
                return fast
        return general(a, b)

    return function


def _broadcast_pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor] | None:
    """``a`` and ``b`` (of one dtype) broadcast to one shape as the general path
    broadcasts them (``promotion.broadcast_to``: a ``BroadcastInDim`` tape node for an
    operand that records one), or None when their shapes do not broadcast (the general
    path raises numpy's error)."""
    try:
        shape = np.broadcast_shapes(a._data.shape, b._data.shape)
    except ValueError:
        return None
    return _broadcast(a, shape), _broadcast(b, shape)


def _broadcast(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    data = x._data
    if data.shape == shape:
        return x
    out = np.broadcast_to(data, shape)  # read-only, as ``BroadcastInDim.evaluate``'s
    return _of_one_operand(_broadcast_graph(shape, data.shape), x, out)


@functools.lru_cache(maxsize=1024)
def _broadcast_graph(shape: tuple[int, ...], operand_shape: tuple[int, ...]) -> RecordedGraph:
    """The one-op graph of broadcasting ``operand_shape`` to ``shape`` (numpy's rule: the
    trailing dimensions line up), as the general path records it."""
    dims = tuple(range(len(shape) - len(operand_shape), len(shape)))
    return recorded_graph_for(ops.BroadcastInDim(shape, dims, operand_shape))


#: The float and complex dtypes a ``matmul_up_to_2d`` takes the fast path in.
_CONTRACTION_DTYPES = frozenset(np.dtype(d) for d in ops.DIFFERENTIABLE_DTYPES)


def matmul_up_to_2d(a: Any, b: Any) -> Tensor | None:
    """``a @ b`` for two tensors of at most 2 dimensions (vectors and matrices) of one
    float or complex dtype whose contracted extents agree, outside ``@tc.function``
    traces: the ``DotGeneral`` node the general path (``linalg.matmul``) records, its op
    and graph made once per pair of shapes; None for anything else (the general path
    checks and raises). ~3 us instead of ~40 for the general path's promotion, type rule
    and graph lookup (a GRU step's matrices are small: the path is most of the cost)."""
    if type(a) is not Tensor or type(b) is not Tensor:
        return None
    da = a._data
    db = b._data
    dtype = da.dtype
    if (not 0 < da.ndim <= 2 or not 0 < db.ndim <= 2 or db.dtype is not dtype
            or dtype not in _CONTRACTION_DTYPES or da.shape[-1] != db.shape[0]
            or (_special[0] and THREAD_STATE.capture is not None)):  # fmt: skip
        return None
    op, graph = _matmul_op(da.shape, db.shape)
    out = op.evaluate_into(None, da, db)
    out.setflags(False)  # type: ignore[call-arg]  # positional: a third of the cost
    ra = a._requires_grad
    rb = b._requires_grad
    if not ((ra or rb) and (not _special[0] or THREAD_STATE.grad_enabled)):
        return _plain(out)
    return _recorded(graph, a, b, out, None if ra and rb else (ra, rb))


@functools.lru_cache(maxsize=1024)
def _matmul_op(
    lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> tuple[ops.DotGeneral, RecordedGraph]:
    """``linalg.matmul``'s op for operands of at most 2 dimensions: ``lhs``'s last
    dimension contracted with ``rhs``'s first."""
    op = ops.DotGeneral((len(lhs) - 1,), (0,), (), (), lhs, rhs)
    return op, recorded_graph_for(op)


def slice_leading(x: Any, key: slice) -> Tensor | None:
    """``x[key]`` for a slice ``key`` of ``x``'s first dimension (``gx[:8]``), outside
    ``@tc.function`` traces: the ``Slice`` node the general path (``indexing.window``)
    records, its op and graph made once per window; ``x`` itself for the whole axis, as
    there; None for anything else (an empty window, a 0-d ``x``: the general path)."""
    if type(x) is not Tensor or (_special[0] and THREAD_STATE.capture is not None):
        return None
    data = x._data
    shape = data.shape
    if not shape:
        return None
    first, stop, stride = key.indices(shape[0])
    count = len(range(first, stop, stride))
    if count == 0:
        return None
    if count == shape[0] and stride == 1:
        return x
    op, graph = _slice_op(first, stride, count, shape)
    out = op.evaluate(data)[0]  # a view of frozen data: frozen
    return _of_one_operand(graph, x, out)


@functools.lru_cache(maxsize=4096)
def _slice_op(
    first: int, stride: int, count: int, shape: tuple[int, ...]
) -> tuple[ops.Slice, RecordedGraph]:
    rest = len(shape) - 1
    op = ops.Slice((first,) + (0,) * rest, (stride,) + (1,) * rest, (count, *shape[1:]), shape)
    return op, recorded_graph_for(op)


def power_by_number(x: Any, exponent: Any) -> Tensor | None:
    """``x ** exponent`` for a float or complex tensor and a Python ``int`` or ``float``
    exponent, outside ``@tc.function`` traces: the ``Pow`` node the general path
    (``elementwise.power``) records, its op and graph made once per exponent; None for
    anything else (integer tensors, other exponents: the general path)."""
    kind = type(exponent)
    if type(x) is not Tensor or (kind is not float and kind is not int):
        return None
    data = x._data
    if data.dtype not in _CONTRACTION_DTYPES or (_special[0] and THREAD_STATE.capture is not None):
        return None
    number = float(exponent)
    op, graph = _pow_op(number, math.copysign(1.0, number))  # Pow(-0.0) is not Pow(0.0)
    out = op.evaluate(data)[0]
    out.setflags(False)  # type: ignore[call-arg]
    return _of_one_operand(graph, x, out)


@functools.lru_cache(maxsize=256)
def _pow_op(exponent: float, sign: float) -> tuple[ops.Pow, RecordedGraph]:
    op = ops.Pow(exponent)
    return op, recorded_graph_for(op)


def sum_all(x: Any) -> Tensor | None:
    """``tc.sum(x)`` over every axis of a float or complex tensor of at least one
    dimension, outside ``@tc.function`` traces: the ``ReduceSum`` node the general path
    (``reductions.sum``) records, its op and graph made once per shape; None for anything
    else (integers accumulate in int64 there, a 0-d ``x`` is itself)."""
    if type(x) is not Tensor:
        return None
    data = x._data
    shape = data.shape
    if (not shape or data.dtype not in _CONTRACTION_DTYPES
            or (_special[0] and THREAD_STATE.capture is not None)):  # fmt: skip
        return None
    op, graph = _sum_op(shape)
    out = np.asarray(op.evaluate(data)[0])
    out.setflags(False)  # type: ignore[call-arg]
    return _of_one_operand(graph, x, out)


@functools.lru_cache(maxsize=1024)
def _sum_op(shape: tuple[int, ...]) -> tuple[ops.ReduceSum, RecordedGraph]:
    op = ops.ReduceSum(tuple(range(len(shape))), shape)
    return op, recorded_graph_for(op)


def _none(*operands: Any) -> None:
    return None


#: Op class -> its fast path, None where the general path is needed (``unary``, ``binary``).
_TRY: dict[type[TensorOp], Callable[..., Tensor | None]] = {
    op: fast_unary(op, _none) if op.input_count == 1 else fast_binary(op, _none) for op in SPECS
}


def unary(op: type[TensorOp], x: Any) -> Tensor | None:
    """``op(x)`` by the fast path, or None (the general path is needed)."""
    fast = _TRY.get(op)
    return None if fast is None else fast(x)


def binary(op: type[TensorOp], a: Any, b: Any) -> Tensor | None:
    """``op(a, b)`` by the fast path, or None (the general path is needed)."""
    fast = _TRY.get(op)
    return None if fast is None else fast(a, b)


class _Number:
    """A number operand as a source of a tape node: no key, no gradient; its saved data
    is what the general path saves (a read-only array of the other operand's dtype and
    shape, ``like``'s), made only if a backward pass reads it. Made with ``_new`` and
    two slot stores (no ``__init__`` call: this is per recorded op)."""

    __slots__ = ("number", "like")

    _key = CONSTANT_KEY
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
    ufunc, graph, dtypes, _ = spec
    if dtype not in dtypes:
        return None
    if _special[0] and THREAD_STATE.capture is not None:
        return None
    out: Any
    if dtype is _F64 and not data.ndim:
        x = float(data)
        out = _float64(spec, number, x) if reflected else _float64(spec, x, number)
    else:
        out = ufunc(number, data) if reflected else ufunc(data, number)
        if type(out) is not np.ndarray:  # a 0-d result comes back as a numpy scalar
            out = np.asarray(out)
        if out.dtype is not dtype:
            return None
    out.setflags(False)  # positional: a third of the cost of write=False
    if not (t._requires_grad and (not _special[0] or THREAD_STATE.grad_enabled)):
        return _plain(out)
    constant = _new(_Number)
    constant.number = number
    constant.like = out
    if reflected:
        return _recorded(graph, constant, t, out, (False, True))
    return _recorded(graph, t, constant, out, (True, False))


#: The operators on this path (``tensor_methods`` sets them on ``Tensor``): ``name`` ->
#: (op class, the frontend function of the general path). A binary one is ``__name__``
#: and ``__rname__``.
BINARY_OPERATORS: dict[str, tuple[type[TensorOp], str]] = {
    "add": (ops.Add, "add"), "sub": (ops.Sub, "subtract"), "mul": (ops.Mul, "multiply"),
    "truediv": (ops.Div, "divide"), "mod": (ops.Mod, "mod"),
}  # fmt: skip
UNARY_OPERATORS: dict[str, tuple[type[TensorOp], str]] = {"neg": (ops.Neg, "negative")}

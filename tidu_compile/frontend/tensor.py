"""``Tensor``: a read-only numpy array that records the primitives applied to it.

Every op call checks types with the op's type rule, evaluates it with numpy and, when
gradients are enabled and some input requires them, records it on the tape as a
one-op ``RecordedGraph`` (cached per op, so its structure is shared between calls).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.eager import EagerInput, RecordedGraph, Trace
from tidu_compile.frontend.state import RECORDER, current_capture, grad_enabled
from tidu_compile.graph import Input, ValueKey
from tidu_compile.ops import DIFFERENTIABLE_DTYPES, TensorOp, type_of

__all__ = ["Tensor", "tensor", "apply_op", "as_tensor", "LEAVES"]

_NO_KEY: ValueKey = Input("constant")

#: Leaf tensors that require gradients, by tape key (``Tensor.backward`` fills their .grad).
LEAVES: weakref.WeakValueDictionary[ValueKey, Tensor] = weakref.WeakValueDictionary()


def _readonly(array: np.ndarray) -> np.ndarray:
    """Freeze ``array`` (which the tensor owns) so neither it nor its views can change."""
    array.flags.writeable = False
    return array


class Tensor:
    """An immutable n-d array with optional gradient tracking."""

    __slots__ = ("_data", "requires_grad", "grad", "_key", "_trace", "__weakref__")
    __array_priority__ = 1000  # numpy defers to our reflected operators

    def __init__(
        self,
        data: np.ndarray,
        requires_grad: bool = False,
        key: ValueKey = _NO_KEY,
        trace: Trace | None = None,
    ) -> None:
        self._data = _readonly(data)
        self.requires_grad = requires_grad
        self.grad: np.ndarray | None = None
        self._key = key
        self._trace = trace

    # ------------------------------------------------------------ array protocol
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return int(self._data.size)

    def numpy(self) -> np.ndarray:
        """The data as a read-only numpy array (a view; no copy)."""
        return self._data.view()

    def item(self) -> Any:
        return self._data.item()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self._data, dtype=dtype, copy=True)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({np.array2string(self._data, separator=', ')}, dtype={self.dtype}{grad})"

    __hash__ = object.__hash__

    # ------------------------------------------------------------ autograd
    def backward(self, seed: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into ``leaf.grad`` for every leaf requiring grad."""
        from tidu_compile.frontend.autograd import run_backward, user_array

        cotangents = run_backward(self, seed, None)
        taken: set[int] = set()
        for key, ct in cotangents.items():
            leaf = LEAVES.get(key)
            if leaf is None or leaf is self and self._trace is not None:
                continue
            if leaf.grad is None:
                leaf.grad = user_array(ct, leaf.dtype, taken)
            else:
                leaf.grad = leaf.grad + np.asarray(ct, dtype=leaf.dtype)

    def detach(self) -> Tensor:
        return Tensor(self._data)

    # ------------------------------------------------------------ operators
    def __add__(self, other: Any) -> Tensor:
        return _functions().add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _functions().add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _functions().subtract(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _functions().subtract(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _functions().multiply(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _functions().multiply(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _functions().divide(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _functions().divide(other, self)

    def __neg__(self) -> Tensor:
        return _functions().negative(self)

    def __pos__(self) -> Tensor:
        return self

    def __pow__(self, exponent: Any) -> Tensor:
        return _functions().power(self, exponent)

    def __rpow__(self, base: Any) -> Tensor:
        return _functions().power(base, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _functions().matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _functions().matmul(other, self)

    def __lt__(self, other: Any) -> Tensor:
        return _functions().compare("lt", self, other)

    def __le__(self, other: Any) -> Tensor:
        return _functions().compare("le", self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _functions().compare("gt", self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _functions().compare("ge", self, other)

    @property
    def T(self) -> Tensor:  # noqa: N802 - numpy's name
        return _functions().transpose(self)

    def sum(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _functions().sum(self, axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return _functions().mean(self, axis, keepdims)

    def reshape(self, *shape: Any) -> Tensor:
        target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return _functions().reshape(self, target)

    def transpose(self, *axes: Any) -> Tensor:
        target = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return _functions().transpose(self, target or None)

    # ------------------------------------------------------------ indexing (frontend.indexing)
    def __getitem__(self, key: Any) -> Tensor:
        """numpy's basic and advanced indexing, recorded (``Slice``, ``Gather``)."""
        from tidu_compile.frontend.indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(
            "Tensor does not support item assignment (tensors are immutable); "
            "x.at[key].set(value) returns a new tensor with those elements replaced, "
            "x.at[key].add(value) one with value added to them"
        )

    @property
    def at(self) -> Any:
        """Functional updates, as in JAX: ``x.at[key].set(v)``, ``x.at[key].add(v)``."""
        from tidu_compile.frontend.updates import IndexUpdates

        return IndexUpdates(self)


def _functions() -> Any:
    """The frontend package, whose namespace holds every function (imported late: the
    function modules import this one)."""
    from tidu_compile import frontend

    return frontend


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """A new tensor holding a copy of ``data``.

    An integer or bool tensor cannot require gradients (``TypeError``).
    """
    if isinstance(data, Tensor):
        data = data.numpy()
    try:
        array = np.array(data, dtype=dtype, copy=True)
    except (TypeError, ValueError) as error:  # ragged lists, unknown dtypes, bad strings
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(f"tensor: cannot convert the data: {error}") from None
    if array.dtype == object:
        raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} data")
    if requires_grad:
        if array.dtype.name not in DIFFERENTIABLE_DTYPES:
            raise TypeError(
                f"tensor: requires_grad=True needs a float or complex dtype, got {array.dtype} "
                "(pass dtype=np.float64)"
            )
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        (key,) = RECORDER.fresh_input_keys(1)
        leaf = Tensor(array, True, key)
        LEAVES[key] = leaf
        return leaf
    return Tensor(array)


def as_tensor(value: Any) -> Tensor:
    """``value`` if it is a Tensor, else a constant tensor (no gradient) of it."""
    if isinstance(value, Tensor):
        return value
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"expected a Tensor, array or number, got {type(value).__name__}")
    return Tensor(np.array(array, copy=True))


@functools.lru_cache(maxsize=16384)
def recorded_graph_for(op: TensorOp) -> RecordedGraph:
    """The one-op graph recorded for ``op`` (shared by every call with this op)."""
    return RecordedGraph.from_primitive(op, [Name(f"in{i}") for i in range(op.input_count)])


def apply_op(op: TensorOp, inputs: Sequence[Tensor]) -> list[Tensor]:
    """Check types, evaluate ``op`` on the inputs' data, and record it when needed."""
    data = [t._data for t in inputs]
    op.infer_types(*(type_of(d) for d in data))
    outputs = [_readonly(np.asarray(o)) for o in op.evaluate(*data)]
    capture = current_capture()
    if capture is not None:  # inside a ``tidu_compile.function`` trace
        return capture.apply(op, list(inputs), outputs)  # type: ignore[no-any-return]
    if not (grad_enabled() and op.differentiable and any(t.requires_grad for t in inputs)):
        return [Tensor(o) for o in outputs]
    graph = recorded_graph_for(op)
    eager_inputs = [EagerInput(t._key, t._trace, t.requires_grad, t._data) for t in inputs]
    retained = dict(zip(graph.output_keys, outputs, strict=True))
    recorded = RECORDER.record_graph(graph, eager_inputs, outputs, retained)
    return [
        Tensor(o, r.requires_grad, r.key, r.trace) for o, r in zip(outputs, recorded, strict=True)
    ]


def record_node(
    graph: RecordedGraph, inputs: Sequence[EagerInput], outputs: Sequence[np.ndarray]
) -> list[Tensor]:
    """Tensors of ``outputs``, the values ``graph`` gave for ``inputs``, recorded on the tape
    as one node (when gradients are enabled and an input requires them): how higher order
    and forward mode put their derived graphs on the tape."""
    if current_capture() is not None:
        raise TypeError(
            "tidu_compile.function: derivatives (tc.grad with create_graph, tidu_compile.func) "
            "cannot be taken inside a traced function; call them outside it"
        )
    arrays = [_readonly(np.asarray(o)) for o in outputs]
    if not (grad_enabled() and any(i.requires_grad for i in inputs)):
        return [Tensor(a) for a in arrays]
    retained = dict(zip(graph.output_keys, arrays, strict=True))
    recorded = RECORDER.record_graph(graph, inputs, arrays, retained)
    pairs = zip(arrays, recorded, strict=True)
    return [Tensor(a, r.requires_grad, r.key, r.trace) for a, r in pairs]


def eager_input(t: Tensor) -> EagerInput:
    """``t`` as an input of a recorded node."""
    return EagerInput(t._key, t._trace, t.requires_grad, t._data)


def apply1(op: TensorOp, *inputs: Tensor) -> Tensor:
    """``apply_op`` for a single-output op."""
    return apply_op(op, inputs)[0]


def input_types(inputs: Sequence[Tensor]) -> list[Any]:
    return [type_of(t._data) for t in inputs]

"""``Tensor``: a read-only numpy array that records the primitives applied to it.

Every op call checks types with the op's type rule, evaluates it with numpy and, when
gradients are enabled and some input requires them, records it on the tape as a
one-op ``RecordedGraph`` (cached per op, so its structure is shared between calls).

The operators and methods that call frontend functions (``x * y``, ``x[key]``,
``x.sum()``, ``x.backward()``, numpy's ``__array_ufunc__``) are attached to the class
by ``frontend.tensor_methods``, above the modules that implement them (as JAX's
``array_methods``): this module imports none of them.
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.eager import EagerInput, RecordedGraph, Trace, note_change
from tidu_compile.frontend.state import RECORDER, current_capture, grad_enabled
from tidu_compile.graph import Input, ValueKey
from tidu_compile.ops import DIFFERENTIABLE_DTYPES, Scale, TensorOp, type_of

__all__ = [
    "CONSTANT_KEY", "LEAVES", "RETAINS_GRAD", "Tensor", "TracedValueError", "apply_op",
    "as_tensor", "contains_tensor", "tensor",
]  # fmt: skip

#: The tape key of a constant tensor (one that records nothing).
CONSTANT_KEY: ValueKey = Input("constant")

#: Leaf tensors that require gradients, by tape key (``Tensor.backward`` fills their .grad).
LEAVES: weakref.WeakValueDictionary[ValueKey, Tensor] = weakref.WeakValueDictionary()
#: Non-leaf tensors whose ``.grad`` ``Tensor.backward`` fills too (``retain_grad()``).
RETAINS_GRAD: weakref.WeakSet[Tensor] = weakref.WeakSet()


def _readonly(array: np.ndarray) -> np.ndarray:
    """Freeze ``array`` (which the tensor owns) so neither it nor its views can change."""
    array.setflags(write=False)  # cheaper than ``array.flags.writeable = False``
    return array


class TracedValueError(TypeError):
    """Reading the value of a traced tensor inside ``@tidu_compile.function``.

    A trace records operations, not values: a value read while tracing (``float(t)``,
    ``t.item()``, ``bool(t)``, ``t.numpy()``, ``np.asarray(t)``) would be frozen into
    every later call of the function (as JAX's tracer errors explain).
    """


def _set_requires_grad(self: Tensor, value: Any) -> None:
    self.requires_grad_(value)


class Tensor:
    """An immutable n-d array with optional gradient tracking.

    It follows numpy's array protocol: operators (``==`` and ``!=`` elementwise, hash by
    identity), ``float()``/``int()``/``bool()``/``complex()`` of one element, methods
    named as ``ndarray``'s, and numpy functions called on it (``np.exp(t)``,
    ``np.sum(t)``) run tidu_compile's function of that name or raise ``TypeError``
    (``frontend.dispatch``); they never drop the gradient.
    """

    __slots__ = (
        "_data", "_requires_grad", "grad", "_tape_key", "_trace", "_version", "_alias",
        "__weakref__",
    )  # fmt: skip
    __array_priority__ = 1000  # numpy defers to our reflected operators
    _version: int  # slots left unset until first written (read with getattr and a default)
    _alias: Tensor | None

    def __init__(
        self,
        data: np.ndarray,
        requires_grad: bool = False,
        key: ValueKey = CONSTANT_KEY,
        trace: Trace | None = None,
    ) -> None:
        self._data = _readonly(data)
        self._requires_grad = requires_grad
        #: A numpy array (``autograd.Grad``), or a ``Tensor`` after ``create_graph=True``.
        self.grad: Any = None
        self._tape_key: ValueKey | None = key
        self._trace = trace

    @property
    def _key(self) -> ValueKey:
        """The tape key of this value (``CONSTANT_KEY`` for a constant). A tensor recorded by
        ``fast_ops`` has None until first read: its node's output key, made then."""
        key = self._tape_key
        if key is None:
            key = self._tape_key = self._trace.output_keys[0]  # type: ignore[union-attr]
        return key

    #: Whether gradients flow to this tensor; set it on leaves only (``requires_grad_``).
    requires_grad = property(operator.attrgetter("_requires_grad"), _set_requires_grad)

    # ------------------------------------------------------------ PyTorch's autograd state
    # ``_version`` (unset: 0) counts in-place changes (``eager.note_change``); ``_alias``
    # (unset: None) is the tensor a ``.data`` alias writes its in-place changes to.

    @property
    def is_leaf(self) -> bool:
        """Whether the tensor was made by the user rather than by a recorded operation
        (tensors that need no gradient are leaves too, as in PyTorch)."""
        return self._trace is None

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Make this leaf require gradients (or stop requiring them), in place, as
        PyTorch's; returns ``self``. A tensor computed by recorded operations keeps its
        flag (``detach()`` gives one without gradient). Switching a leaf off after it was
        recorded counts as a change: a backward through those records raises."""
        flag = bool(requires_grad)
        if self._trace is not None:
            if flag:
                return self
            raise RuntimeError(
                "requires_grad_: you can only change requires_grad of leaf tensors; "
                "t.detach() is the value without gradient"
            )
        if flag == self._requires_grad:
            return self
        if flag:
            if self._data.dtype.name not in DIFFERENTIABLE_DTYPES:
                raise TypeError(
                    f"requires_grad_: only float and complex tensors can require gradients, "
                    f"this one is {self._data.dtype}"
                )
            if self._tape_key is CONSTANT_KEY:
                (raw,) = RECORDER.fresh_input_keys(1)
                self._tape_key = Input(raw)
            LEAVES[self._key] = self
        else:
            LEAVES.pop(self._key, None)
            note_change(self)
        self._requires_grad = flag
        return self

    def retain_grad(self) -> None:
        """Fill ``.grad`` of this non-leaf tensor too in ``backward()`` (PyTorch's)."""
        if not self._requires_grad:
            raise RuntimeError("retain_grad: the tensor does not require gradients")
        if self._trace is not None:
            RETAINS_GRAD.add(self)

    @property
    def data(self) -> Tensor:
        """The values as a tensor without gradient whose in-place changes (``p.data.add_(...)``,
        ``p.data -= ...``) change ``self``, as PyTorch's ``.data``; it does not follow later
        changes of ``self``. ``p.data = values`` replaces the values of ``self``."""
        alias = Tensor(self._data)
        alias._alias = self
        return alias

    @data.setter
    def data(self, values: Any) -> None:
        array = values._data if isinstance(values, Tensor) else np.array(values, copy=True)
        if self._requires_grad and array.dtype.name not in DIFFERENTIABLE_DTYPES:
            raise TypeError(
                f"data: a tensor that requires gradients needs float or complex values, "
                f"got {array.dtype}"
            )
        self.replace_values(array)

    def replace_values(self, array: np.ndarray) -> None:
        """Give ``self`` the values ``array`` (which nothing may change afterwards) in
        place: the tensor keeps its tape key and history, the arrays saved before keep
        theirs, and nodes recorded before that saved ``self`` refuse to run backward."""
        if array is self._data:
            return
        self._data = _readonly(array) if array.flags.writeable else array
        note_change(self)

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

    def _concrete(self, reader: str) -> np.ndarray:
        """The data, for a reader of values; inside a ``@tc.function`` trace, a traced
        tensor's value cannot be read (``TracedValueError``)."""
        capture = current_capture()
        if capture is not None and capture.is_traced(self):
            raise TracedValueError(
                f"{reader} reads the value of a traced tensor inside @tidu_compile.function "
                f"{capture.name!r}: the trace records operations, not values, so this value "
                "would be frozen into every later call. Compute with tidu_compile functions "
                "(tc.where for data-dependent choices), return the value and read it after "
                "the call, or call the function without @tidu_compile.function"
            )
        return self._data

    def numpy(self) -> np.ndarray:
        """The data as a read-only numpy array (a view; no copy)."""
        return self._concrete("Tensor.numpy()").view()

    def item(self) -> Any:
        return self._concrete("Tensor.item()").item()

    def tolist(self) -> Any:
        return self._concrete("Tensor.tolist()").tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """A writable copy, for a tensor that needs no gradient; ``TypeError`` for one
        that does (numpy would compute on the copy and drop the gradient, as PyTorch
        refuses too): use tidu_compile's functions, or ``t.numpy()`` for the values.
        Into an integer or bool ``dtype`` (``np.int64(t)``) it is allowed: integer
        values carry no gradient, so none is lost."""
        data = self._concrete("np.asarray(tensor)")
        if self._requires_grad and (dtype is None or np.dtype(dtype).kind not in "iub"):
            raise TypeError(
                "np.asarray/np.array of a tensor that requires gradients would drop them: "
                "use tidu_compile functions (import tidu_compile.numpy as np), or "
                "t.numpy() / t.detach() for the values without gradient"
            )
        return np.array(data, dtype=dtype, copy=True)

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Tensor]:
        """Rows along the first axis: ``x[0], x[1], ...`` (recorded like any indexing)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([self[i] for i in range(len(self))])

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self._requires_grad else ""
        return f"tensor({np.array2string(self._data, separator=', ')}, dtype={self.dtype}{grad})"

    def __format__(self, spec: str) -> str:
        if not spec:
            return repr(self)
        return format(self._concrete("format(tensor)").item(), spec)

    def __bool__(self) -> bool:
        return bool(self._concrete("bool(tensor)"))

    def __float__(self) -> float:
        return float(self._concrete("float(tensor)"))  # numpy: one element only

    def __int__(self) -> int:
        return int(self._concrete("int(tensor)"))

    def __complex__(self) -> complex:
        return complex(self._concrete("complex(tensor)"))

    def __index__(self) -> int:
        return operator.index(self._concrete("operator.index(tensor)"))  # integer 0-d only

    def detach(self) -> Tensor:
        """The same values as a tensor without gradient."""
        return Tensor(self._concrete("Tensor.detach()"))

    __hash__ = object.__hash__  # by identity: == is elementwise

    # ------------------------------------------------------------ attached from above
    # Set by ``frontend.tensor_methods`` (see the module docstring); declared here for
    # type checkers. ``+ - * / %`` and unary ``-`` go through the recording fast path
    # (``frontend.fast_ops``); every other one calls the frontend function of its name.
    __add__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __radd__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __sub__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __rsub__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __mul__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __rmul__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __truediv__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __rtruediv__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __mod__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __rmod__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __floordiv__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __rfloordiv__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __neg__: ClassVar[Callable[[Tensor], Tensor]]
    __abs__: ClassVar[Callable[[Tensor], Tensor]]
    __pow__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __rpow__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __matmul__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __rmatmul__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __lt__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __le__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __gt__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __ge__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __eq__: ClassVar[Callable[[Tensor, object], Any]]
    __ne__: ClassVar[Callable[[Tensor, object], Any]]
    __getitem__: ClassVar[Callable[[Tensor, Any], Tensor]]
    __array_ufunc__: ClassVar[Callable[..., Any]]
    __array_function__: ClassVar[Callable[..., Any]]
    backward: ClassVar[Callable[..., None]]
    T: Tensor  # properties
    real: Tensor
    imag: Tensor
    at: Any
    astype: ClassVar[Callable[[Tensor, Any], Tensor]]
    sum: ClassVar[Callable[..., Tensor]]
    mean: ClassVar[Callable[..., Tensor]]
    reshape: ClassVar[Callable[..., Tensor]]
    transpose: ClassVar[Callable[..., Tensor]]
    conj: ClassVar[Callable[..., Tensor]]
    conjugate: ClassVar[Callable[..., Tensor]]
    dot: ClassVar[Callable[..., Tensor]]
    flatten: ClassVar[Callable[..., Tensor]]
    ravel: ClassVar[Callable[..., Tensor]]
    squeeze: ClassVar[Callable[..., Tensor]]
    swapaxes: ClassVar[Callable[..., Tensor]]
    clip: ClassVar[Callable[..., Tensor]]
    max: ClassVar[Callable[..., Tensor]]
    min: ClassVar[Callable[..., Tensor]]
    prod: ClassVar[Callable[..., Tensor]]
    var: ClassVar[Callable[..., Tensor]]
    std: ClassVar[Callable[..., Tensor]]
    argmax: ClassVar[Callable[..., Tensor]]
    argmin: ClassVar[Callable[..., Tensor]]
    all: ClassVar[Callable[..., Tensor]]
    any: ClassVar[Callable[..., Tensor]]
    # PyTorch's spellings (``torch_methods``) and in-place changes (``inplace``)
    unsqueeze: ClassVar[Callable[..., Tensor]]
    permute: ClassVar[Callable[..., Tensor]]
    view: ClassVar[Callable[..., Tensor]]
    t: ClassVar[Callable[..., Tensor]]
    clamp: ClassVar[Callable[..., Tensor]]
    masked_fill: ClassVar[Callable[..., Tensor]]
    pow: ClassVar[Callable[..., Tensor]]
    dim: ClassVar[Callable[..., int]]
    numel: ClassVar[Callable[..., int]]
    float: ClassVar[Callable[..., Tensor]]
    double: ClassVar[Callable[..., Tensor]]
    contiguous: ClassVar[Callable[..., Tensor]]
    exp: ClassVar[Callable[..., Tensor]]
    log: ClassVar[Callable[..., Tensor]]
    sqrt: ClassVar[Callable[..., Tensor]]
    abs: ClassVar[Callable[..., Tensor]]
    tanh: ClassVar[Callable[..., Tensor]]
    __iadd__: ClassVar[Callable[..., Tensor]]  # type: ignore[misc]
    __isub__: ClassVar[Callable[..., Tensor]]  # type: ignore[misc]
    __imul__: ClassVar[Callable[..., Tensor]]  # type: ignore[misc]
    __itruediv__: ClassVar[Callable[..., Tensor]]  # type: ignore[misc]
    __ipow__: ClassVar[Callable[..., Tensor]]  # type: ignore[misc]
    add_: ClassVar[Callable[..., Tensor]]
    sub_: ClassVar[Callable[..., Tensor]]
    mul_: ClassVar[Callable[..., Tensor]]
    div_: ClassVar[Callable[..., Tensor]]
    clamp_: ClassVar[Callable[..., Tensor]]
    copy_: ClassVar[Callable[..., Tensor]]
    fill_: ClassVar[Callable[..., Tensor]]
    zero_: ClassVar[Callable[..., Tensor]]
    masked_fill_: ClassVar[Callable[..., Tensor]]

    def __pos__(self) -> Tensor:
        return self

    def copy(self) -> Tensor:
        """A tensor of the same values whose in-place changes leave ``self`` alone; the
        gradient flows through it (``clone()``)."""
        return self.clone()

    def clone(self) -> Tensor:
        """A copy that keeps the gradient path, as PyTorch's ``clone``: for a tensor that
        requires gradients, a recorded identity (a new tape value, not a leaf)."""
        if self._requires_grad or current_capture() is not None:
            return apply_op(Scale(1.0), [self])[0]
        return Tensor(self._data)  # the data is never written: sharing it is a copy

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(
            "Tensor does not support item assignment; x.at[key].set(value) returns a new "
            "tensor with those elements replaced, x.at[key].add(value) one with value "
            "added to them (x.copy_(x.at[key].set(value)) changes x in place)"
        )


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """A new tensor holding a copy of ``data``.

    An integer or bool tensor cannot require gradients, and tensors inside ``data``
    (``tensor([a, 2 * a])``, which would cut their gradient) are a ``TypeError`` pointing
    to ``stack`` (or ``tidu_compile.numpy.array``, which stacks them).
    """
    if isinstance(data, Tensor):
        data = data.numpy()
    elif contains_tensor(data):
        raise TypeError(
            "tensor: the data holds tensors; building a tensor from them would cut their "
            "gradient. Use tidu_compile.stack (or tidu_compile.numpy.array) to combine tensors, "
            "or pass t.numpy() / t.detach() for the values only"
        )
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
        (raw,) = RECORDER.fresh_input_keys(1)
        key = Input(raw)
        leaf = Tensor(array, True, key)
        LEAVES[key] = leaf
        return leaf
    return Tensor(array)


def contains_tensor(data: Any) -> bool:
    """Whether ``data`` is, or nests in lists and tuples, a ``Tensor``."""
    if isinstance(data, Tensor):
        return True
    return isinstance(data, (list, tuple)) and any(contains_tensor(item) for item in data)


#: How nested lists holding tensors become one tensor, as numpy reads an array-like:
#: ``frontend.creation.array`` (which stacks them, keeping their gradients), set there
#: (this module imports no function module).
STACK_NESTED: list[Callable[[Any], Tensor]] = []


def as_tensor(value: Any) -> Tensor:
    """``value`` if it is a Tensor, else a constant tensor (no gradient) of it; nested
    lists and tuples holding tensors are stacked (``np.mean([x, x + 2])``)."""
    if isinstance(value, Tensor):
        return value
    if contains_tensor(value):
        return STACK_NESTED[0](value)
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
    if not (
        grad_enabled()
        and op.differentiable
        and any(t._requires_grad for t in inputs)
        and any(o.dtype.kind in "fc" for o in outputs)  # integer results carry no gradient
    ):
        return [Tensor(o) for o in outputs]
    graph = recorded_graph_for(op)
    eager_inputs = [EagerInput(t._key, t._trace, t._requires_grad, t._data) for t in inputs]
    retained = dict(zip(graph.output_keys, outputs, strict=True))
    recorded = RECORDER.record_graph(graph, eager_inputs, outputs, retained)
    recorded[0].trace.holders = tuple(inputs)  # type: ignore[union-attr]
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


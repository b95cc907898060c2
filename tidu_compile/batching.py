"""``vmap``: a function of one example run on a batch as ONE batched program.

::

    per_example = lambda w, x: tc.sum(tc.tanh(x @ w))
    vmap(per_example, in_axes=(None, 0))(w, X)      # X: (B, n); w: (n, m) shared
    # == tc.stack([per_example(w, X[i]) for i in range(B)])

How (JAX's batching interpreter, ``jax/_src/interpreters/batching.py``, over a trace):
``f`` runs ONCE on tracers holding the first example's values, under a capture (as a
``@tc.function`` trace: integer values stay in the graph, reading a value is refused).
Every primitive it applies goes to ``BatchTrace.apply``, which writes the op's batched
form into one graph: each traced value is ``(id, dim)``, its id in the batched graph and
its batch axis (``None``: the same for every example), and the op's ``batch_rule``
(``ops.batching``) emits the batched op(s) and returns the result's axis::

    f(x) = sum(exp(x) * w)      x: (n,) per example, (B, n) batched at 0; w: (n,) shared

    %e = exp %X                          : (B, n) at 0
    %w = broadcast_in_dim %W dims [1]    : (B, n) at 0   (the shared operand, broadcast)
    %p = mul %e, %w                      : (B, n) at 0
    %s = reduce_sum %p axes [1]          : (B,)   at 0

The graph is recorded on the tape as one node and run as one program of the current
executor (native code on a ``CompiledExecutor``, cached by structure and input types):
``grad``, ``jvp`` and the Jacobians differentiate it like any node. Called under
another trace (an outer ``vmap``, a ``@tc.function``), its ops are applied one by one
to that trace instead, so ``vmap(vmap(f))`` batches twice. A transform of
``tidu_compile.func`` as ``f`` (``vmap(grad(loss))``) brings its own rule (its
``vmap_rule`` attribute: ``func``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.ad import Name
from tidu_compile.eager import RecordedGraph
from tidu_compile.frontend.closure_key import call_key
from tidu_compile.frontend.state import current_capture, get_default_executor, set_capture
from tidu_compile.frontend.tensor import Tensor, apply_op, eager_input, record_node
from tidu_compile.frontend.trees import leaves, map_leaves
from tidu_compile.graph import GraphBuilder, Local, Primary
from tidu_compile.ops import Constant, TensorOp, type_of
from tidu_compile.ops.batching import Batcher, batch_op, materialized, moved

__all__ = [
    "Axes", "BatchTrace", "Replay", "axes_of_leaves", "batch_size", "flatten", "memoized",
    "keyed", "rebuild", "run_recorded", "vmap",
]  # fmt: skip

Tree = Any
Axes = int | None | tuple[Any, ...] | list[Any] | dict[Any, Any]


def flatten(tree: Tree) -> list[Any]:
    """The leaves of a tree of lists, tuples and dicts, in order."""
    return list(leaves(tree))


def rebuild(tree: Tree, leaves: list[Any]) -> Tree:
    """``tree`` with its leaves replaced by ``leaves``, in order."""
    items = iter(leaves)
    return map_leaves(tree, lambda _: next(items))


def axes_of_leaves(axes: Axes, tree: Tree, what: str) -> list[int | None]:
    """One axis per leaf of ``tree``: ``axes`` is a prefix of it (an int or None stands
    for every leaf below it), as JAX's ``in_axes``."""
    if axes is None or isinstance(axes, int) and not isinstance(axes, bool):
        return [axes] * len(flatten(tree))
    if isinstance(axes, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(axes) != len(tree):
            raise ValueError(f"vmap: {what} has {len(axes)} entries for a structure of "
                             f"{len(tree)}: give one axis (int or None) per entry")  # fmt: skip
        return [a for sub, t in zip(axes, tree, strict=True)
                for a in axes_of_leaves(sub, t, what)]  # fmt: skip
    if isinstance(axes, dict) and isinstance(tree, dict):
        if set(axes) != set(tree):
            raise ValueError(f"vmap: {what} has keys {sorted(map(str, axes))}, the argument "
                             f"{sorted(map(str, tree))}")  # fmt: skip
        return [a for k in tree for a in axes_of_leaves(axes[k], tree[k], what)]
    raise TypeError(
        f"vmap: {what} must be an int, None, or a tuple/list/dict prefix of the arguments' "
        f"structure, got {type(axes).__name__} for a {type(tree).__name__}"
    )


def _splat(data: np.ndarray) -> Constant | None:
    """A ``Constant`` for float data of one repeated value (a Python number), else None."""
    if data.dtype.kind not in "fc" or data.size == 0:
        return None
    first = data.flat[0]
    if data.size > 1 and not np.array_equal(data, np.broadcast_to(first, data.shape), True):
        return None
    value = complex(first) if data.dtype.kind == "c" else float(first)
    return Constant(value, tuple(data.shape), data.dtype.name)


class BatchTrace:
    """The batched graph being traced: tensors (by identity) -> ``(id, batch axis)``.

    The capture protocol of ``frontend`` (as ``@tc.function``'s): ``name``, ``ids``,
    ``is_traced``, and ``apply``, which every primitive applied to a tracer reaches.
    """

    def __init__(self, name: str, size: int, batch: bool = True, outer: Any = None) -> None:
        self.name = name
        #: The capture this trace runs inside (an enclosing vmap, ``@tc.function`` or
        #: loop body), or None: its tracers are values of one of its examples, never
        #: constants of this trace.
        self.outer = outer
        #: False: only the trace on one example is kept (``example``), no rule runs.
        self.batch = batch
        self.batcher = Batcher(size)
        self.ids: dict[int, tuple[int, int | None]] = {}
        self.keep_alive: list[Any] = []
        #: The same trace on one example (unbatched), for the transforms' rules
        #: (``batched_transforms``: the VJP graph of one example, then batched).
        self.example = GraphBuilder()
        self.example_ids: dict[int, int] = {}
        #: Each graph input's data and batch axis, in order.
        self.inputs: list[tuple[Any, int | None]] = []
        #: Graph input -> the argument leaf it is (``bind_arguments``); the others are
        #: closed-over values.
        self.argument_of: dict[int, int] = {}

    def is_traced(self, tensor: Tensor) -> bool:
        """``tensor`` is a tracer of this trace or of an enclosing one (whose ops on it,
        inside ``f``, this trace records with the tensor as a closed-over input)."""
        outer = self.outer
        return id(tensor) in self.ids or (outer is not None and outer.is_traced(tensor))

    def bind_input(self, tensor: Tensor, data: Any, dim: int | None) -> None:
        """``tensor`` (a tracer) stands for graph input ``data`` batched at ``dim``."""
        key = Name(f"in{len(self.batcher.input_data)}")
        local_id = self.batcher.add_input(key, type_of(_data_of(data)), data)
        self.inputs.append((data, dim))
        self._bind(tensor, local_id, dim, self.example.add_input(key))

    def _bind(self, tensor: Tensor, local_id: int, dim: int | None, example_id: int) -> None:
        self.ids[id(tensor)] = (local_id, dim)
        self.example_ids[id(tensor)] = example_id
        self.keep_alive.append(tensor)

    def tracer(self, leaf: Any, axis: int | None) -> Any:
        """What ``f`` sees for one argument leaf: a tracer of one example (the first), or,
        unmapped, the leaf's tracer; a non-array leaf (a number) unmapped is itself."""
        if axis is None and not isinstance(leaf, (Tensor, np.ndarray)):
            return leaf
        data = np.asarray(_data_of(leaf))
        if axis is not None and data.dtype == object:
            raise TypeError(f"vmap: a mapped argument must be an array, got {type(leaf).__name__}")
        example = data if axis is None else np.take(data, 0, axis=axis % data.ndim)
        tracer = Tensor(np.array(example, copy=True))
        source = leaf if isinstance(leaf, Tensor) else Tensor(np.array(data, copy=True))
        self.bind_input(tracer, source, None if axis is None else axis % data.ndim)
        return tracer

    def bind_arguments(self, leaves: list[Any], axes: list[int | None]) -> list[Any]:
        """``tracer`` of every argument leaf, in order; ``argument_of`` then maps each
        graph input bound here to its leaf's number."""
        tracers = []
        for n, (leaf, axis) in enumerate(zip(leaves, axes, strict=True)):
            first = len(self.inputs)
            tracers.append(self.tracer(leaf, axis))
            if len(self.inputs) > first:
                self.argument_of[first] = n
        return tracers

    def example_graph(self, outputs: list[Tensor]) -> RecordedGraph:
        """The trace on one example, with ``outputs`` (tensors of the trace)."""
        for tensor in outputs:
            self.value(tensor)
        self.example.set_outputs([self.example_ids[id(t)] for t in outputs])
        return RecordedGraph.from_graph(self.example.build())

    def value(self, tensor: Tensor) -> tuple[int, int | None]:
        """``tensor``'s id and batch axis; a tensor from outside (a closed-over value)
        is the same for every example: a constant op, or an input holding it (always
        an input for an enclosing trace's tracer: its data is one example's)."""
        found = self.ids.get(id(tensor))
        if found is not None:
            return found
        outer_traced = self.outer is not None and self.outer.is_traced(tensor)
        splat = None if tensor._requires_grad or outer_traced else _splat(tensor._data)
        if splat is not None:
            (example_id,) = self.example.add_operation(splat, [], Primary())
            local_id = self.batcher.add1(splat, []) if self.batch else -1
            self._bind(tensor, local_id, None, example_id)
        else:
            self.bind_input(tensor, tensor, None)
        return self.ids[id(tensor)]

    def apply(self, op: TensorOp, inputs: list[Tensor], outputs: list[np.ndarray]) -> list[Tensor]:
        ids, dims = zip(*(self.value(t) for t in inputs), strict=True) if inputs else ((), ())
        out_ids: Sequence[int]
        out_dims: Sequence[int | None]
        if self.batch:
            out_ids, out_dims = batch_op(self.batcher, op, ids, dims)
        else:
            out_ids, out_dims = [-1] * len(outputs), [None] * len(outputs)
        example_ids = self.example.add_operation(
            op, [self.example_ids[id(t)] for t in inputs], Primary()
        )
        tensors = [Tensor(o) for o in outputs]
        for tensor, local_id, dim, o, example_id in zip(
            tensors, out_ids, out_dims, outputs, example_ids, strict=True
        ):
            if self.batch:
                self._check_rule(op, local_id, dim, o)
            self._bind(tensor, local_id, dim, example_id)
        return tensors

    def _check_rule(self, op: TensorOp, local_id: int, dim: int | None, example: Any) -> None:
        """A batching rule's result is the example's type with the batch axis at ``dim``."""
        t = self.batcher.type_of(local_id)
        shape = t.shape if dim is None else t.shape[:dim] + t.shape[dim + 1 :]
        if (shape, t.dtype) != (example.shape, example.dtype.name) or (
            dim is not None and t.shape[dim] != self.batcher.size
        ):
            raise RuntimeError(
                f"batch_rule of {op!r} gave {t} batched at {dim} for an example of shape "
                f"{example.shape} {example.dtype} (batch size {self.batcher.size})"
            )

    def output(self, leaf: Any, axis: int | None) -> int:
        """The id of output ``leaf`` with its batch axis at ``axis``."""
        tensor = leaf if isinstance(leaf, Tensor) else Tensor(np.asarray(leaf))
        local_id, dim = self.value(tensor)
        b = self.batcher
        if axis is None:
            if dim is not None:
                raise ValueError("vmap: out_axes None for an output that depends on the "
                                 "batched arguments (give its batch axis)")  # fmt: skip
            return local_id
        rank = b.type_of(local_id).ndim + (dim is None)
        if not -rank <= axis < rank:
            raise ValueError(f"vmap: out_axes {axis} is out of range for an output of rank "
                             f"{rank} (its batch axis included)")  # fmt: skip
        return moved(b, materialized(b, local_id, dim), 0, axis % rank)


def _data_of(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value


def batch_size(args: tuple[Any, ...], in_axes: Axes, axis_size: int | None) -> int:
    """The size of the mapped axes of ``args`` (``ValueError`` when they differ)."""
    axes_tree = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    return _batch_size(flatten(args), axes_of_leaves(axes_tree, args, "in_axes"), axis_size)


def _batch_size(leaves: list[Any], axes: list[int | None], axis_size: int | None) -> int:
    sizes: dict[int, list[str]] = {}
    for n, (leaf, axis) in enumerate(zip(leaves, axes, strict=True)):
        if axis is None:
            continue
        shape = np.shape(_data_of(leaf))
        if not -len(shape) <= axis < max(len(shape), 1) or not shape:
            raise ValueError(f"vmap: in_axes {axis} for argument leaf {n} of shape {shape}: "
                             "out of range (a mapped argument needs that axis)")  # fmt: skip
        sizes.setdefault(shape[axis], []).append(f"leaf {n} {shape} axis {axis}")
    if axis_size is not None:
        sizes.setdefault(axis_size, []).append("axis_size")
    if not sizes:
        raise ValueError("vmap: no argument is mapped (every in_axes is None): give axis_size")
    if len(sizes) > 1:
        listed = "; ".join(f"size {s}: {', '.join(w)}" for s, w in sizes.items())
        raise ValueError(f"vmap: mapped axes have different sizes ({listed})")
    (size,) = sizes
    if size == 0:
        raise ValueError("vmap: the mapped axis is empty (batch size 0 is not supported)")
    return size


def run_recorded(recorded: RecordedGraph, input_data: list[Any]) -> list[Tensor]:
    """A batched graph's outputs for its inputs (tensors or arrays): one recorded node
    run by the current executor, or, under an outer trace, its ops applied one by one
    (the outer trace batches them)."""
    graph = recorded.graph
    inputs = [v if isinstance(v, Tensor) else Tensor(v) for v in input_data]
    if current_capture() is not None:
        values: dict[int, Tensor] = dict(zip(graph.inputs, inputs, strict=True))
        for node in graph.operations:
            operands = [values[ref.id] for ref in node.inputs if isinstance(ref, Local)]
            results = apply_op(node.operation, operands)
            values.update(zip(node.outputs, results, strict=True))
        return [values[i] for i in graph.outputs]
    arrays = get_default_executor().run_graph(recorded, [t._data for t in inputs])
    return record_node(recorded, [eager_input(t) for t in inputs], arrays)


@dataclass(frozen=True)
class Replay:
    """A traced call's batched program and where each of its inputs comes from at a
    later call with the same key (``memoized``): argument leaf ``argument_leaf[i]``, or,
    for a closed-over value or a rule's constant (``None``), ``fixed[i]``."""

    recorded: RecordedGraph
    argument_leaf: tuple[int | None, ...]
    fixed: tuple[Any, ...]
    #: What the result is built from (``rebuild``): the traced result's structure.
    outputs: Tree
    #: The objects the key names by identity (``closure_key``), kept alive with it.
    alive: tuple[Any, ...]

    @staticmethod
    def of(trace: BatchTrace, recorded: RecordedGraph, input_data: list[Any], outputs: Tree,
           alive: tuple[Any, ...]) -> Replay:  # fmt: skip
        """The replay of ``trace`` (its arguments bound by ``bind_arguments``), whose
        program ``recorded`` takes ``input_data`` (the trace's inputs, then constants)."""
        leaf_of = tuple(trace.argument_of.get(i) for i in range(len(input_data)))
        fixed = tuple(None if n is not None else d for n, d in zip(leaf_of, input_data,
                                                                     strict=True))  # fmt: skip
        return Replay(recorded, leaf_of, fixed, outputs, alive)

    def run(self, leaves: list[Any]) -> list[Tensor]:
        """The program's outputs for a call's argument leaves (``run_recorded``)."""
        inputs = [self.fixed[i] if n is None else _argument_tensor(leaves[n])
                  for i, n in enumerate(self.argument_leaf)]  # fmt: skip
        return run_recorded(self.recorded, inputs)


def _argument_tensor(leaf: Any) -> Tensor:
    """An argument leaf as a graph input, as ``BatchTrace.tracer`` binds it (an array
    is copied: the tape may keep it)."""
    return leaf if isinstance(leaf, Tensor) else Tensor(np.array(leaf, copy=True))


#: Traced calls of ``vmap`` and of its transforms' rules, by ``call_key``: the key holds
#: everything the trace depends on, so a call with the same key runs the same program
#: without running ``f`` (see ``frontend.closure_key`` for what a key compares).
_REPLAYS: OrderedDict[Hashable, Replay] = OrderedDict()
_MAX_REPLAYS = 128
_REPLAYS_LOCK = forksafe.Lock()


def memoized(key: Hashable | None, trace: Callable[[], Replay]) -> Replay:
    """The replay memoized under ``key``, or ``trace()``'s (memoized unless ``key`` is
    None: an unkeyable call traces every time)."""
    if key is None:
        return trace()
    with _REPLAYS_LOCK:
        found = _REPLAYS.get(key)
        if found is not None:
            _REPLAYS.move_to_end(key)
            return found
    replay = trace()
    with _REPLAYS_LOCK:
        _REPLAYS[key] = replay
        while len(_REPLAYS) > _MAX_REPLAYS:
            _REPLAYS.popitem(last=False)
    return replay


def keyed(f: Callable[..., Any], args: tuple[Any, ...], *statics: Any) -> tuple[Hashable | None,
                                                                               tuple[Any, ...]]:
    """``frontend.closure_key.call_key`` as a memo key (None: unkeyable) and what it
    keeps alive."""
    found = call_key(f, args, *statics)
    return (None, ()) if found is None else (found[0], tuple(found[1]))


def vmap(
    f: Callable[..., Any],
    in_axes: Axes = 0,
    out_axes: Axes = 0,
    axis_size: int | None = None,
) -> Callable[..., Any]:
    """``f`` mapped over axis ``in_axes`` of its arguments, the results stacked along
    ``out_axes`` (as ``jax.vmap``): ``in_axes`` is an int, None (not mapped) or a prefix
    of the arguments' structure (``(None, 0, 0)``); ``axis_size`` gives the batch size
    when no argument is mapped. The batched program is one tape node (see the module).

    ``f`` is traced once per call signature, as ``jax.jit`` traces: the shapes and
    dtypes of the arguments, their other leaves by value, the axes, the batch size, and
    what ``f`` can read besides its arguments (closed-over numbers, arrays and tensors:
    ``frontend.closure_key``, compared at every call, so a changed closure traces anew).
    A call whose ``f`` reaches something the key cannot compare traces every time."""
    rule = getattr(f, "vmap_rule", None)
    if rule is not None:  # a transform of tidu_compile.func: its own rule
        return rule(in_axes, out_axes, axis_size)  # type: ignore[no-any-return]

    def batched(*args: Any) -> Tree:
        axes_tree = in_axes if not isinstance(in_axes, list) else tuple(in_axes)
        arguments = flatten(args)
        axes = axes_of_leaves(axes_tree, args, "in_axes")
        size = _batch_size(arguments, axes, axis_size)
        key, alive = keyed(f, args, "vmap", tuple(axes), size, out_axes)
        replay = memoized(key, lambda: _trace(f, args, arguments, axes, size, out_axes, alive))
        return rebuild(replay.outputs, replay.run(arguments))

    return batched


def _trace(
    f: Callable[..., Any], args: tuple[Any, ...], arguments: list[Any], axes: list[int | None],
    size: int, out_axes: Axes, alive: tuple[Any, ...],
) -> Replay:  # fmt: skip
    """``f`` traced on ``args`` and batched: its program, as a ``Replay``."""
    previous = current_capture()
    trace = BatchTrace(f"vmap of {getattr(f, '__qualname__', repr(f))}", size, outer=previous)
    tracers = trace.bind_arguments(arguments, axes)
    set_capture(trace)
    try:
        out = f(*rebuild(args, tracers))
    finally:
        set_capture(previous)
    out_leaves = flatten(out)
    for i, leaf in enumerate(out_leaves):
        if not isinstance(leaf, (Tensor, np.ndarray, int, float, complex)):
            raise TypeError(f"vmap: output leaf {i} is a {type(leaf).__name__}, expected "
                            "a Tensor")  # fmt: skip
    out_axes_of = axes_of_leaves(out_axes, out, "out_axes")
    ids = [trace.output(leaf, axis) for leaf, axis in zip(out_leaves, out_axes_of, strict=True)]
    b = trace.batcher
    b.builder.set_outputs(ids)
    recorded = RecordedGraph.from_graph(b.builder.build())
    return Replay.of(trace, recorded, b.input_data, map_leaves(out, lambda _: None), alive)

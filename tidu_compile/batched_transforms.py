"""``vmap`` of the transforms of ``tidu_compile.func``: their batching rules.

* ``vmap(grad(f), in_axes=(None, 0, 0))(w, X, Y)`` (and ``value_and_grad``): ``f``
  traced on one example, the VJP graph of that trace, batched: ONE program, as JAX
  batches a gradient (``_one_program``)::

      h = tanh(x @ W)          ->  H = tanh(X @ W)              (W shared: one product)
      dW = x^T (dh * (1-h^2))  ->  dW[b] = outer(X[b], dZ[b])   (batched at 0)

The examples of a batch are independent, so the other per-example derivatives are
derivatives of the batched function (``vmap(f)``, one batched tape node) with a seed per
example (``grad_b = d f(W_b, X_b) / d W_b = d (sum_b' f(W_b', X_b')) / d W_b``, the
shared arguments broadcast to one copy per example):

* ``vmap(grad(g))`` where ``g`` is itself a transform: ``vjp(vmap(g), W, ...)`` seeded
  with ``ones(B)``;
* ``vmap(jacrev(f))``: one VJP of ``vmap(f)`` per output element ``k`` (seed: ``e_k``
  for every example), as jacrev is a vmap of vjp; ``vmap(jacfwd(f))``: one JVP per input
  element; ``vmap(hessian(f))`` is ``vmap(jacfwd(jacrev(f)))``, both rules in turn.

``func`` hands its ``vjp`` and ``jvp`` in (this module sits below it).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.ad import Name
from tidu_compile.batching import (
    Axes,
    BatchTrace,
    Replay,
    axes_of_leaves,
    batch_size,
    flatten,
    keyed,
    memoized,
    rebuild,
    vmap,
)
from tidu_compile.eager import RecordedGraph
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.state import current_capture, set_capture
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.frontend.trees import map_leaves
from tidu_compile.node_graphs import vjp_graph
from tidu_compile.ops import Constant, type_of
from tidu_compile.ops.batching import Batcher, batch_graph, materialized

__all__ = ["batched_jacobian", "batched_value_and_grad"]

Tree = Any


def _numbers(argnums: int | Sequence[int], count: int) -> tuple[int, ...]:
    numbers = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in numbers:
        if not -count <= n < count:
            raise ValueError(f"vmap: argnums {n} is out of range for {count} arguments")
    return tuple(n % count for n in numbers)


def _batch_first(leaf: Any, axis: int | None, size: int) -> Tensor:
    """``leaf`` with its batch axis first: moved there, or (unmapped) broadcast to
    ``(size, ...)`` (recorded for a tensor an outer transform tracks)."""
    tensor = leaf if isinstance(leaf, Tensor) else Tensor(np.array(leaf, dtype=float))
    if axis is None:
        return FUNCTIONS["broadcast_to"](tensor, (size, *tensor.shape))  # type: ignore[no-any-return]
    return FUNCTIONS["moveaxis"](tensor, axis, 0)  # type: ignore[no-any-return]


def _batched(
    f: Callable[..., Any], args: tuple[Any, ...], numbers: tuple[int, ...],
    in_axes: Axes, axis_size: int | None,
) -> tuple[int, list[Tree], Callable[..., Any]]:  # fmt: skip
    """The batch size, the differentiated arguments batch-first, and ``vmap(f)`` as a
    function of those alone (the other arguments mapped as ``in_axes`` says)."""
    per_argument = list(in_axes) if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
    if len(per_argument) != len(args):
        raise ValueError(f"vmap: in_axes has {len(per_argument)} entries for {len(args)} "
                         "arguments")  # fmt: skip
    size = batch_size(args, tuple(per_argument), axis_size)
    differentiated = []
    for n in numbers:
        axes = axes_of_leaves(per_argument[n], args[n], "in_axes")
        firsts = [_batch_first(leaf, a, size) for leaf, a in zip(flatten(args[n]), axes,
                                                                   strict=True)]  # fmt: skip
        differentiated.append(rebuild(args[n], firsts))
        per_argument[n] = 0

    def batched_f(*diff: Any) -> Any:
        call = list(args)
        for n, value in zip(numbers, diff, strict=True):
            call[n] = value
        return vmap(f, tuple(per_argument), 0, size)(*call)

    return size, differentiated, batched_f


def _at_out_axes(result: Tree, out_axes: Axes) -> Tree:
    """``result`` (every leaf batch-first) with each leaf's batch axis at ``out_axes``."""
    leaves = flatten(result)
    axes = axes_of_leaves(out_axes, result, "out_axes")
    if any(a is None for a in axes):
        raise ValueError("vmap: out_axes None for a per-example derivative (give its axis)")
    return rebuild(result, [leaf if a == 0 else FUNCTIONS["moveaxis"](leaf, 0, a)
                            for leaf, a in zip(leaves, axes, strict=True)])  # fmt: skip


def _one_program(
    f: Callable[..., Any], args: tuple[Any, ...], numbers: tuple[int, ...],
    in_axes: Axes, axis_size: int | None, value: bool,
) -> Tree:  # fmt: skip
    """``vmap(value_and_grad(f))`` as ONE batched program, as JAX batches a gradient:
    ``f`` traced on one example, the VJP graph of that trace (``node_graphs.vjp_graph``,
    memoized by structure), and that graph batched (``ops.batching.batch_graph``):
    the forward keeps the shared arguments unbatched (``x @ W`` stays one product)
    and the backward gives every example's cotangents. Results batch-first.

    The trace is memoized by the call's key (``batching.memoized``, as ``vmap``'s):
    a later call with the same key runs the program without running ``f``."""
    per_argument = list(in_axes) if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
    if len(per_argument) != len(args):
        raise ValueError(f"vmap: in_axes has {len(per_argument)} entries for {len(args)} "
                         "arguments")  # fmt: skip
    size = batch_size(args, tuple(per_argument), axis_size)
    args = tuple(map_leaves(arg, _as_array) if n in numbers else arg
                 for n, arg in enumerate(args))  # fmt: skip
    leaves = flatten(args)
    axes = [a for arg, axes in zip(args, per_argument, strict=True)
            for a in axes_of_leaves(axes, arg, "in_axes")]  # fmt: skip
    key, alive = keyed(f, args, "vmap(grad)", tuple(axes), size, numbers, value)
    replay = memoized(key, lambda: _traced_program(f, args, leaves, axes, numbers, size, value,
                                                   alive))  # fmt: skip
    results = iter(replay.run(leaves))
    value_out = next(results) if value else None
    gradients = [rebuild(args[n], [next(results) for _ in flatten(args[n])]) for n in numbers]
    return value_out, gradients


def _traced_program(
    f: Callable[..., Any], args: tuple[Any, ...], leaves: list[Any], axes: list[int | None],
    numbers: tuple[int, ...], size: int, value: bool, alive: tuple[Any, ...],
) -> Replay:  # fmt: skip
    """``f`` traced on one example of ``args`` (``leaves``, mapped at ``axes``) and its
    batched value and gradients program (``_program``, memoized by structure)."""
    previous = current_capture()
    trace = BatchTrace(f"vmap of {getattr(f, '__qualname__', repr(f))}", size, batch=False,
                       outer=previous)  # fmt: skip
    flat_tracers = iter(trace.bind_arguments(leaves, axes))
    tracers = [[next(flat_tracers) for _ in flatten(arg)] for arg in args]
    set_capture(trace)
    try:
        out = f(*(rebuild(arg, leaves) for arg, leaves in zip(args, tracers, strict=True)))
    finally:
        set_capture(previous)
    if not isinstance(out, Tensor) or out.shape != () or out.dtype.kind != "f":
        got = getattr(out, "shape", type(out).__name__)
        raise ValueError(f"vmap(grad(f)): f must return a real scalar per example, got {got}")
    example = trace.example_graph([out])
    positions = {local_id: i for i, local_id in enumerate(example.graph.inputs)}
    wanted = [[positions[trace.example_ids[id(t)]] for t in tracers[n]] for n in numbers]
    needed = [False] * len(trace.inputs)
    for indices in wanted:
        for i in indices:
            if trace.inputs[i][0].dtype.kind in "fc":
                needed[i] = True
    key = (example.structure, tuple((type_of(_data(d)), a) for d, a in trace.inputs), size,
           tuple(map(tuple, wanted)), value, out.dtype.name)  # fmt: skip
    with _PROGRAMS_LOCK:
        found = _PROGRAMS.get(key)
    if found is None:
        found = _program(example, trace, wanted, tracers, numbers, needed, size, value,
                         out.dtype.name)  # fmt: skip
        with _PROGRAMS_LOCK:
            _PROGRAMS[key] = found
            while len(_PROGRAMS) > _MAX_PROGRAMS:
                _PROGRAMS.popitem(last=False)
    recorded, constants = found
    return Replay.of(trace, recorded, [d for d, _ in trace.inputs] + constants, None, alive)


#: The batched programs of ``_one_program`` by the example trace's structure, the input
#: types and batch axes, the batch size and what is asked: a call that traces the same
#: graph reuses the batched one (its rules and the VJP graph run once).
_PROGRAMS: OrderedDict[Any, tuple[RecordedGraph, list[Any]]] = OrderedDict()
_MAX_PROGRAMS = 64
_PROGRAMS_LOCK = forksafe.Lock()


def _program(
    example: RecordedGraph, trace: BatchTrace, wanted: list[list[int]],
    tracers: list[list[Any]], numbers: tuple[int, ...], needed: list[bool], size: int,
    value: bool, dtype: str,
) -> tuple[RecordedGraph, list[Any]]:  # fmt: skip
    """The batched value (when ``value``) and gradients of ``example`` (a loss of
    ``dtype``); the constants its rules added (inputs after the trace's)."""
    node = vjp_graph(example, [0], needed)
    b = Batcher(size)
    refs = [(b.add_input(Name(f"in{i}"), type_of(_data(data)), data), dim)
            for i, (data, dim) in enumerate(trace.inputs)]  # fmt: skip
    seeds = [(b.add1(Constant(1.0, (), dtype), []), None)] if node.seeded else []
    cotangents = batch_graph(b, node.recorded.graph, seeds + refs)
    outputs = [materialized(b, *batch_graph(b, example.graph, refs)[0])] if value else []
    for indices, arg_tracers in zip(wanted, (tracers[n] for n in numbers), strict=True):
        for i, t in zip(indices, arg_tracers, strict=True):
            result = node.results[i]
            if result is None:  # no path from this leaf to the loss: zeros
                zero = Constant(0.0, (size, *t.shape), t.dtype.name)
                outputs.append(b.add1(zero, []))
            else:
                outputs.append(materialized(b, *cotangents[result]))
    b.builder.set_outputs(outputs)
    return RecordedGraph.from_graph(b.builder.build()), b.input_data[len(trace.inputs):]


def _data(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value


def _as_array(leaf: Any) -> Any:
    """A differentiated argument's leaf as a tensor or array (a number: a float array)."""
    return leaf if isinstance(leaf, (Tensor, np.ndarray)) else np.array(leaf, dtype=float)


def batched_value_and_grad(
    vjp: Callable[..., Any], f: Callable[..., Any], argnums: int | Sequence[int],
    in_axes: Axes, out_axes: Axes, axis_size: int | None, value: bool = True,
) -> Callable[..., Any]:  # fmt: skip
    """``vmap(value_and_grad(f, argnums))`` (``value=False``: ``vmap(grad(...))``): one
    batched program (``_one_program``) for a plain ``f``; for an ``f`` that is itself
    a transform (``vmap(grad(grad(g)))``), the VJP of ``vmap(f)`` seeded with ones."""

    def batched(*args: Any) -> Any:
        numbers = _numbers(argnums, len(args))
        if getattr(f, "vmap_rule", None) is None:
            out, gradients = _one_program(f, args, numbers, in_axes, axis_size, value)
            gradient = gradients[0] if isinstance(argnums, int) else tuple(gradients)
            return _at_out_axes((out, gradient) if value else gradient, out_axes)
        size, differentiated, batched_f = _batched(f, args, numbers, in_axes, axis_size)
        out, vjp_fn = vjp(batched_f, *differentiated)
        if not isinstance(out, Tensor) or out.shape != (size,) or out.dtype.kind != "f":
            got = getattr(out, "shape", type(out).__name__)
            raise ValueError(f"vmap(grad(f)): f must return a real scalar per example, got "
                             f"{got} for the batch")  # fmt: skip
        gradients = vjp_fn(Tensor(np.ones(size, dtype=out.dtype)))
        gradient = gradients[0] if isinstance(argnums, int) else tuple(gradients)
        return _at_out_axes((out, gradient) if value else gradient, out_axes)

    return batched


def _stacked(columns: list[Tensor], shape: tuple[int, ...], axis: int) -> Tensor:
    """``columns`` (each ``(B, ...)``) stacked along ``axis`` and reshaped to ``shape``."""
    return FUNCTIONS["reshape"](FUNCTIONS["stack"](columns, axis=axis), shape)  # type: ignore[no-any-return]


def _units(size: int, shape: tuple[int, ...], dtype: np.dtype) -> list[Tensor]:
    """For each element ``k`` of ``shape``, ``e_k`` for every example: ``(size,) + shape``."""
    count = math.prod(shape)
    return [Tensor(np.broadcast_to(np.eye(1, count, k, dtype=dtype).reshape(shape),
                                   (size, *shape)).copy()) for k in range(count)]  # fmt: skip


def batched_jacobian(
    vjp: Callable[..., Any], jvp: Callable[..., Any], f: Callable[..., Any],
    argnums: int | Sequence[int], in_axes: Axes, out_axes: Axes, axis_size: int | None,
    forward: bool,
) -> Callable[..., Any]:  # fmt: skip
    """``vmap(jacrev(f, argnums))``, or ``vmap(jacfwd(...))`` when ``forward``: each
    example's Jacobian blocks, arranged as ``jacrev`` arranges them."""

    def batched(*args: Any) -> Any:
        numbers = _numbers(argnums, len(args))
        size, differentiated, batched_f = _batched(f, args, numbers, in_axes, axis_size)
        xs = [flatten(d) for d in differentiated]
        if forward:
            out = batched_f(*differentiated)
            outs = flatten(out)
            columns: dict[tuple[int, int, int], list[Tensor]] = {}  # (arg, leaf, output)
            for k, leaves in enumerate(xs):
                for j, x in enumerate(leaves):
                    for unit in _units(size, x.shape[1:], x.dtype):
                        tangents = [rebuild(d, [unit if (i, m) == (k, j) else
                                                Tensor(np.zeros(v.shape, v.dtype))
                                                for m, v in enumerate(flatten(d))])
                                    for i, d in enumerate(differentiated)]  # fmt: skip
                        pushed = flatten(jvp(batched_f, tuple(differentiated), tuple(tangents))[1])
                        for o, t in enumerate(pushed):
                            columns.setdefault((k, j, o), []).append(t)
            block = lambda k, j, o: _stacked(  # noqa: E731
                columns[k, j, o], (size, *outs[o].shape[1:], *xs[k][j].shape[1:]), -1)
        else:
            out, vjp_fn = vjp(batched_f, *differentiated)
            outs = flatten(out)
            rows: dict[tuple[int, int, int], list[Tensor]] = {}
            for o, leaf in enumerate(outs):
                for unit in _units(size, leaf.shape[1:], leaf.dtype):
                    seeds = [unit if m == o else Tensor(np.zeros(v.shape, v.dtype))
                             for m, v in enumerate(outs)]  # fmt: skip
                    for k, ct in enumerate(vjp_fn(rebuild(out, seeds))):
                        for j, c in enumerate(flatten(ct)):
                            rows.setdefault((k, j, o), []).append(c)
            block = lambda k, j, o: _stacked(  # noqa: E731
                rows[k, j, o], (size, *outs[o].shape[1:], *xs[k][j].shape[1:]), 1)
        jacobians = tuple(
            rebuild(out, [rebuild(differentiated[k], [block(k, j, o) for j in range(len(xs[k]))])
                          for o in range(len(outs))])
            for k in range(len(numbers))
        )  # fmt: skip
        return _at_out_axes(jacobians[0] if isinstance(argnums, int) else jacobians, out_axes)

    return batched

"""``tc.scan``, ``tc.fori_loop``, ``tc.while_loop`` and ``tc.cond``: loops that stay loops.

Each traces its Python functions once into bodies (``ops.loop_body.Body``) and applies
ONE primitive (``ops.Scan``, ``ops.Cond``, ``ops.WhileLoop``): an RNN over 1000 steps is
one tape node, whose backward is a reverse scan, and compiles its body once::

    def step(h, x):
        h = tc.tanh(h @ W + x)
        return h, tc.sum(h)

    h, ys = tc.scan(step, h0, xs)          # as jax.lax.scan: ys stacked along axis 0

Carries and ``xs`` are pytrees (lists, tuples, dicts) of tensors, arrays or numbers; a
carry must keep its shape and dtype. Tensors the functions close over (weights) become
inputs of the primitive, so gradients reach them; a closed-over number or array is a
constant. ``checkpoint=True`` keeps no per-step carries for the backward: it recomputes
them with one more forward scan (``jax.checkpoint``'s trade).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.frontend.comparisons import less
from tidu_compile.frontend.composite_function import Capture, splat_constant
from tidu_compile.frontend.state import current_capture, get_default_executor, set_capture
from tidu_compile.frontend.tensor import Tensor, apply_op, as_tensor
from tidu_compile.frontend.trees import leaves, map_leaves
from tidu_compile.graph import Graph
from tidu_compile.ops import Cond, Scan, TensorType, WhileLoop, type_of
from tidu_compile.ops.loop_body import Body, BodyBuilder, install_body_executor

__all__ = ["cond", "fori_loop", "scan", "while_loop"]

install_body_executor(get_default_executor)  # loop bodies run on the current executor


class _BodyCapture(Capture):
    """A body being traced: tensors from outside it (closures) become inputs."""

    def __init__(self, arguments: list[Tensor], name: str, outer: Any) -> None:
        super().__init__(arguments, name)
        self.outer = outer
        self.closed: list[Tensor] = []

    def is_traced(self, tensor: Tensor) -> bool:
        outer = self.outer
        return super().is_traced(tensor) or (outer is not None and outer.is_traced(tensor))

    def local_id(self, tensor: Tensor) -> int:
        found = self.ids.get(id(tensor))
        if found is not None:
            return found
        if (not tensor._requires_grad and not self.is_traced(tensor)
                and splat_constant(tensor._data) is not None):  # fmt: skip
            return super().local_id(tensor)  # a filled constant the kernels inline
        local_id = self.builder.add_input(Name(f"closure{len(self.closed)}"))
        self.closed.append(tensor)
        self._bind(tensor, local_id)
        return local_id


def _trace(
    name: str, arguments: list[Tensor], call: Callable[[list[Tensor]], Any]
) -> tuple[_BodyCapture, Any]:
    """Run ``call`` on ``arguments`` (fresh tensors) under a body capture."""
    outer = current_capture()
    capture = _BodyCapture(arguments, name, outer)
    set_capture(capture)
    try:
        with np.errstate(all="ignore"):
            result = call(arguments)
    finally:
        set_capture(outer)
    return capture, result


def _graph(capture: _BodyCapture, outputs: Sequence[Tensor]) -> Graph:
    capture.builder.set_outputs([capture.local_id(t) for t in outputs])
    return capture.builder.build()


def _tensors(tree: Any, what: str) -> list[Tensor]:
    try:
        return [as_tensor(leaf) for leaf in leaves(tree)]
    except TypeError as error:
        raise TypeError(f"{what}: {error}") from None


def _shape_of_tree(tree: Any) -> Any:
    return map_leaves(tree, lambda leaf: None)


def _rebuild(tree: Any, tensors: Sequence[Tensor]) -> Any:
    remaining = iter(tensors)
    return map_leaves(tree, lambda leaf: next(remaining))


def _fresh(tensors: Sequence[Tensor]) -> list[Tensor]:
    return [Tensor(t._data) for t in tensors]


def _check_same_tree(name: str, before: Any, after: Any, what: str) -> None:
    if _shape_of_tree(before) != _shape_of_tree(after):
        raise TypeError(f"{name}: {what} returns a carry of structure {_shape_of_tree(after)!r}, "
                        f"the carry given is {_shape_of_tree(before)!r}")  # fmt: skip


def _check_carry_types(name: str, before: Sequence[Tensor], after: Sequence[Tensor]) -> None:
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        if type_of(a._data) != type_of(b._data):
            raise TypeError(
                f"{name}: carry leaf {i} enters as {type_of(a._data)} and leaves as "
                f"{type_of(b._data)}; a carry must keep its shape and dtype (convert the "
                "initial value with .astype or tc.tensor(..., dtype=...))"
            )


def _body(graph: Graph, inputs: Sequence[TensorType], order: Sequence[int],
          extra_outputs: Sequence[int] = ()) -> Body:  # fmt: skip
    """The body with inputs ``inputs`` whose traced ``graph`` reads input ``order[k]``
    as its input ``k`` (the trace's arguments, then its closures); ``extra_outputs`` are
    inputs returned after the graph's outputs."""
    b = BodyBuilder(inputs)
    outputs = b.inline(graph, [b.inputs[k] for k in order])
    return b.finish([*outputs, *(b.inputs[k] for k in extra_outputs)])


def scan(
    f: Callable[[Any, Any], tuple[Any, Any]],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    checkpoint: bool = False,
) -> tuple[Any, Any]:
    """``jax.lax.scan``: ``f(carry, x) -> (carry, y)`` over the rows of ``xs``, as ONE
    primitive; returns the final carry and the ``y`` stacked along a new axis 0."""
    carries = _tensors(init, "scan: init")
    x_leaves = _tensors(xs, "scan: xs") if xs is not None else []
    lengths = {int(x.shape[0]) for x in x_leaves if x.ndim}
    if any(x.ndim == 0 for x in x_leaves):
        raise ValueError("scan: every xs leaf needs a leading axis to scan over; got a 0-d one")
    if len(lengths) > 1 or (length is not None and lengths and lengths != {length}):
        found = sorted(lengths | ({length} if length is not None else set()))
        raise ValueError(f"scan: xs leaves and length disagree on the length: {found}")
    if length is None and not lengths:
        raise ValueError("scan: give xs or length")
    steps = int(length if length is not None else lengths.pop())
    if steps < 0:
        raise ValueError(f"scan: length must be >= 0, got {steps}")
    slices = [Tensor(np.array(x._data[0] if steps else np.zeros(x.shape[1:], x.dtype)))
              for x in x_leaves]  # fmt: skip
    out_tree: list[Any] = []

    def call(arguments: list[Tensor]) -> list[Tensor]:
        carry = _rebuild(init, arguments[: len(carries)])
        x = None if xs is None else _rebuild(xs, arguments[len(carries) :])
        result = f(carry, x)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError("scan: f must return a pair (carry, y)")
        new_carry, y = result
        _check_same_tree("scan", init, new_carry, "f")
        out_tree.append(y)
        return [*_tensors(new_carry, "scan: f's carry"), *(_tensors(y, "scan: f's y")
                                                           if y is not None else [])]  # fmt: skip

    arguments = _fresh([*carries, *slices])
    capture, outputs = _trace(getattr(f, "__qualname__", "scan body"), arguments, call)
    _check_carry_types("scan", carries, outputs[: len(carries)])
    graph = _graph(capture, outputs)
    closed = capture.closed
    n_k, n_c, n_x = len(closed), len(carries), len(slices)
    types = [*(type_of(t._data) for t in closed), *(type_of(t._data) for t in arguments)]
    order = [*range(n_k, n_k + n_c + n_x), *range(n_k)]  # the trace: arguments, closures
    history = () if checkpoint else tuple(range(n_k, n_k + n_c))
    op = Scan(_body(graph, types, order, history), n_k, n_c, steps, bool(reverse),
              saves=not checkpoint)  # fmt: skip
    results = apply_op(op, [*closed, *carries, *x_leaves])
    final = results[:n_c]
    ys = results[n_c : len(results) - len(history)]
    y_tree = out_tree[0]
    return _rebuild(init, final), (None if y_tree is None else _rebuild(y_tree, ys))


def _python_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def fori_loop(lower: Any, upper: Any, body: Callable[[Any, Any], Any], init: Any) -> Any:
    """``jax.lax.fori_loop``: ``for i in range(lower, upper): carry = body(i, carry)``.
    With Python int bounds it is a ``scan`` over ``i`` (differentiable); with tensor
    bounds a ``while_loop`` (forward only)."""
    if _python_int(lower) and _python_int(upper):
        indices = np.arange(int(lower), max(int(lower), int(upper)), dtype=np.int64)
        if not indices.size:
            return init
        final, _ = scan(lambda c, i: (body(i, c), None), init, Tensor(indices))
        return final
    start = as_tensor(lower)
    stop = as_tensor(upper)
    if start.shape or stop.shape or start.dtype.kind not in "iu" or stop.dtype.kind not in "iu":
        raise TypeError("fori_loop: lower and upper must be integer scalars")
    _, final = while_loop(lambda s: less(s[0], stop), lambda s: (s[0] + 1, body(s[0], s[1])),
                          (start, init))  # fmt: skip
    return final


def while_loop(cond_fun: Callable[[Any], Any], body_fun: Callable[[Any], Any], init: Any) -> Any:
    """``jax.lax.while_loop``: ``while cond_fun(carry): carry = body_fun(carry)``, as ONE
    primitive; forward only (a derivative raises ``ADRuleError``: use ``scan``)."""
    carries = _tensors(init, "while_loop: init")

    def test(arguments: list[Tensor]) -> list[Tensor]:
        result = as_tensor(cond_fun(_rebuild(init, arguments)))
        if result.shape != () or result.dtype != np.bool_:
            raise TypeError(f"while_loop: cond_fun must return a bool scalar, got shape "
                            f"{result.shape} dtype {result.dtype}")  # fmt: skip
        return [result]

    def step(arguments: list[Tensor]) -> list[Tensor]:
        new = body_fun(_rebuild(init, arguments))
        _check_same_tree("while_loop", init, new, "body_fun")
        return _tensors(new, "while_loop: body_fun's carry")

    test_capture, test_out = _trace("while_loop cond", _fresh(carries), test)
    step_capture, step_out = _trace("while_loop body", _fresh(carries), step)
    _check_carry_types("while_loop", carries, step_out)
    n_c = len(carries)
    bodies = []
    for capture, outputs in ((test_capture, test_out), (step_capture, step_out)):
        n_k = len(capture.closed)
        types = [*(type_of(t._data) for t in capture.closed), *(type_of(t._data) for t in carries)]
        bodies.append(_body(_graph(capture, outputs), types,
                            [*range(n_k, n_k + n_c), *range(n_k)]))  # fmt: skip
    op = WhileLoop(bodies[0], bodies[1], len(test_capture.closed))
    results = apply_op(op, [*test_capture.closed, *step_capture.closed, *carries])
    return _rebuild(init, results)


def cond(
    pred: Any, true_fun: Callable[..., Any], false_fun: Callable[..., Any], *operands: Any
) -> Any:
    """``jax.lax.cond``: ``true_fun(*operands) if pred else false_fun(*operands)``, as ONE
    primitive (both branches traced; they must return the same structure and types)."""
    predicate = as_tensor(pred)
    if predicate.shape != () or predicate.dtype != np.bool_:
        raise TypeError(f"cond: pred must be a bool scalar, got shape {predicate.shape} "
                        f"dtype {predicate.dtype} (compare it: pred != 0)")  # fmt: skip
    values = _tensors(list(operands), "cond: operands")
    trees: list[Any] = []

    def branch(fn: Callable[..., Any]) -> Callable[[list[Tensor]], list[Tensor]]:
        def call(arguments: list[Tensor]) -> list[Tensor]:
            result = fn(*_rebuild(list(operands), arguments))
            trees.append(result)
            return _tensors(result, "cond: a branch's result")

        return call

    traced = [_trace(getattr(fn, "__qualname__", "cond branch"), _fresh(values), branch(fn))
              for fn in (true_fun, false_fun)]  # fmt: skip
    if _shape_of_tree(trees[0]) != _shape_of_tree(trees[1]):
        first, second = _shape_of_tree(trees[0]), _shape_of_tree(trees[1])
        raise TypeError(f"cond: the branches return different structures: {first!r} and "
                        f"{second!r}")  # fmt: skip
    closed = [t for capture, _ in traced for t in capture.closed]
    types = [*(type_of(t._data) for t in values), *(type_of(t._data) for t in closed)]
    n_v, offset, bodies = len(values), len(values), []
    for capture, outputs in traced:
        n_k = len(capture.closed)
        order = [*range(n_v), *range(offset, offset + n_k)]
        bodies.append(_body(_graph(capture, outputs), types, order))
        offset += n_k
    results = apply_op(Cond(bodies[0], bodies[1]), [predicate, *values, *closed])
    return _rebuild(trees[0], results)

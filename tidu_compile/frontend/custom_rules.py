"""``custom_jvp`` and ``custom_vjp``: functions with the user's own derivative rules, as JAX's.

::

    @tc.custom_jvp
    def log1pexp(x):
        return tc.log1p(tc.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * tc.sigmoid(x)          # stable where exp(x) overflows

    @tc.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),                # fwd: out, residuals
                         lambda res, g: (None, None, tc.clip(g, *res)))  # bwd: cotangents

The function and its rules are written with tidu_compile functions. The first call per
signature (argument shapes, dtypes and ``requires_grad``, and the values of the
``nondiff_argnums`` arguments) traces them into graphs (``frontend.rule_tracing``) and
checks the rules (their count, shapes and dtypes, linearity in the tangents or
cotangents: a ``TypeError`` naming the function); every call then applies one call op
(``ops.custom_calls``) holding those graphs, recorded on the tape as one node (per-op),
into the trace of an enclosing ``@tc.function``, or into an enclosing rule's graph. Its
derivatives are the rules' graphs inlined, compiled like any node. Like ``jax.jit`` and
``@tc.function``, values the functions close over are constants of the trace.

A call that records nothing (no argument requires a gradient, or under ``no_grad``,
outside any trace) runs the function itself. The rules nest in ``tidu_compile.func``:
``grad``, ``vjp``, ``jacrev`` of either kind, ``jvp``, ``jacfwd`` and ``hessian`` of a
``custom_jvp`` function (its rule differentiated again by the standard rules, as in
JAX); forward mode through a ``custom_vjp`` function raises a ``TypeError``, as JAX's.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.frontend.rule_tracing import ConstantPool, trace_graph
from tidu_compile.frontend.state import current_capture, grad_enabled
from tidu_compile.frontend.tensor import Tensor, apply_op, as_tensor
from tidu_compile.frontend.trees import leaves, map_leaves
from tidu_compile.ops import DIFFERENTIABLE_DTYPES, TensorOp, TensorType, type_of
from tidu_compile.ops.custom_calls import CustomJVPCall, CustomVJPCall, TracedGraph

__all__ = ["CustomCalls", "custom_jvp", "custom_vjp", "recording", "static_key", "vjp_call_op"]


def static_key(value: Any) -> Hashable:
    """A static (non-tensor) argument as part of a trace key: its type and ``repr``
    (``0.0`` and ``-0.0`` differ, as do ``1`` and ``1.0``)."""
    return (type(value).__qualname__, repr(value))


@dataclass(frozen=True)
class _Call:
    """One traced signature: the call op and the constants it takes after the arguments."""

    op: TensorOp
    constants: tuple[Tensor, ...]
    single: bool

    def __call__(self, tensors: Sequence[Tensor]) -> Any:
        outputs = apply_op(self.op, [*tensors, *self.constants])
        return outputs[0] if self.single else tuple(outputs)


class CustomCalls:
    """The traced calls of one function with custom rules, by signature (LRU).

    ``tracing`` is true in this thread while the function's own rules are traced: there
    the function runs as itself (``fwd`` and ``jvp`` rules call it for the primal)."""

    def __init__(self, max_traces: int = 64) -> None:
        self._calls: OrderedDict[Hashable, _Call] = OrderedDict()
        self._lock = forksafe.Lock()
        self._max = max_traces
        self._local = threading.local()

    @property
    def tracing(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()

    def call(self, key: Hashable, tensors: Sequence[Tensor], make: Callable[[], _Call]) -> Any:
        key = (key, tuple((t.shape, t.dtype.str, t._requires_grad) for t in tensors))
        with self._lock:
            found = self._calls.get(key)
            if found is not None:
                self._calls.move_to_end(key)
        if found is None:
            self._local.depth = getattr(self._local, "depth", 0) + 1
            try:
                found = make()
            finally:
                self._local.depth -= 1
            with self._lock:
                self._calls[key] = found
                while len(self._calls) > self._max:
                    self._calls.popitem(last=False)
        return found(tensors)


def recording(tensors: Sequence[Tensor]) -> bool:
    """Whether a call on ``tensors`` is differentiated: inside a trace, or recording
    with an argument that requires a gradient."""
    return current_capture() is not None or (
        grad_enabled() and any(t._requires_grad for t in tensors)
    )


def _outputs(name: str, result: Any, what: str) -> tuple[list[Tensor], bool]:
    """``result`` (a tensor or a tuple of tensors) as a list, and whether it is one."""
    if isinstance(result, Tensor):
        return [result], True
    if isinstance(result, (tuple, list)) and result and all(isinstance(r, Tensor) for r in result):
        return list(result), False
    raise TypeError(f"{name}: {what} must be a Tensor or a tuple of Tensors, got "
                    f"{type(result).__name__}")  # fmt: skip


def _same_structure(name: str, result: Any, single: bool, count: int, what: str) -> list[Tensor]:
    """``result`` as the function's outputs are structured (one tensor, or ``count``)."""
    items, one = _outputs(name, result, what)
    if one != single or len(items) != count:
        shape = "a Tensor" if single else f"a tuple of {count} Tensors"
        raise TypeError(f"{name}: {what} must be {shape}, like the function's output")
    return items


def _check_types(
    name: str, got: Sequence[Tensor], want: Sequence[TensorType], what: str, first: int = 0
) -> None:
    for index, (tensor, expected) in enumerate(zip(got, want, strict=True), start=first):
        have = type_of(tensor._data)
        if have != expected:
            raise TypeError(
                f"{name}: {what} {index} has shape {have.shape} and dtype {have.dtype}, "
                f"expected shape {expected.shape} and dtype {expected.dtype}"
            )


def _check_linear(name: str, graph: TracedGraph, count: int) -> None:
    """The tangent outputs (from ``count`` on) of a jvp rule's ``graph`` (inputs: the
    primals, then the tangents) are linear in the tangents: no nonlinear op reads
    them, and an output that does not depend on them is zero."""
    active = [False] * (graph.arity // 2) + [True] * (graph.arity // 2)
    nonlinear = graph.nonlinear_op(active)
    if nonlinear is not None:
        raise TypeError(f"{name}: the custom_jvp rule's tangent output must be linear in "
                        f"the tangents; {nonlinear!r} is applied to values computed from "
                        "them")  # fmt: skip
    for index, live in enumerate(graph.active_outputs(active)[count:]):
        if not live and not graph.is_zero_output(count + index):
            raise TypeError(f"{name}: the custom_jvp rule's tangent output {index} does not "
                            "depend on the tangents (return zeros there)")  # fmt: skip


def _ones(t: TensorType) -> np.ndarray:
    return np.ones(t.shape, dtype=t.dtype)


class _Split:
    """A call's arguments: the differentiable ones as tensors (the rest static)."""

    def __init__(self, name: str, args: tuple[Any, ...], static: Sequence[int]) -> None:
        for n in static:
            if not -len(args) <= n < len(args):
                raise ValueError(f"{name}: nondiff_argnums {n} is out of range for "
                                 f"{len(args)} arguments")  # fmt: skip
        fixed = {n % len(args) for n in static}
        self.args = args
        self.positions = [i for i in range(len(args)) if i not in fixed]
        self.statics = [args[i] for i in sorted(fixed)]
        self.key = tuple((i, static_key(args[i])) for i in sorted(fixed))
        try:
            self.tensors = [as_tensor(args[i]) for i in self.positions]
        except TypeError as error:
            raise TypeError(f"{name}: {error} (a non-array argument goes in "
                            "nondiff_argnums)") from None  # fmt: skip

    def merge(self, tensors: Sequence[Tensor]) -> list[Any]:
        merged = list(self.args)
        for position, tensor in zip(self.positions, tensors, strict=True):
            merged[position] = tensor
        return merged


class custom_jvp:  # noqa: N801 - JAX's name
    """``f`` with the forward-mode rule given by ``f.defjvp(jvp)``; ``jvp(*nondiff_args,
    primals, tangents)`` returns ``(primal_out, tangent_out)`` (module docstring)."""

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None
        self.calls = CustomCalls()

    @property
    def name(self) -> str:
        return getattr(self.fun, "__name__", repr(self.fun))

    def defjvp(self, jvp: Callable[..., Any]) -> Callable[..., Any]:
        """Set the JVP rule (usable as a decorator); returns it."""
        self.jvp = jvp
        self.calls.clear()
        return jvp

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{self.name}: pass the arguments by position")
        if self.jvp is None:
            raise TypeError(f"{self.name}: no JVP rule; define one with {self.name}.defjvp(jvp)")
        split = _Split(self.name, args, self.nondiff_argnums)
        if self.calls.tracing or not recording(split.tensors):
            return self.fun(*args)
        return self.calls.call(split.key, split.tensors, lambda: self._trace(split))

    def _trace(self, split: _Split) -> _Call:
        name, pool, n = self.name, ConstantPool(), len(split.tensors)
        values = [t._data for t in split.tensors]
        result, _, trace = trace_graph(lambda *ts: self.fun(*split.merge(ts)), name, values, pool)
        outs, single = _outputs(name, result, "the function's result")
        function = trace.finish(outs, n)
        jvp = self.jvp
        assert jvp is not None  # noqa: S101 - checked by __call__

        def rule(*ts: Tensor) -> Any:
            return jvp(*split.statics, tuple(ts[:n]), tuple(ts[n:]))

        tangents = [_ones(type_of(v)) for v in values]
        result, _, jtrace = trace_graph(rule, f"{name} (jvp rule)", values + tangents, pool)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError(f"{name}: the custom_jvp rule must return a pair "
                            "(primal_out, tangent_out)")  # fmt: skip
        count = len(outs)
        primal_out = _same_structure(name, result[0], single, count, "the rule's primal output")
        tangent_out = _same_structure(name, result[1], single, count, "the rule's tangent output")
        _check_types(name, primal_out, function.output_types, "the rule's primal output")
        _check_types(name, tangent_out, function.output_types, "the rule's tangent output")
        graph = jtrace.finish([*primal_out, *tangent_out], 2 * n)
        _check_linear(name, graph, count)
        op = CustomJVPCall(name, function, graph, len(pool.tensors))
        return _Call(op, tuple(pool.tensors), single)


def vjp_call_op(
    name: str,
    tensors: Sequence[Tensor],
    fwd: Callable[..., tuple[Any, Any]],
    bwd: Callable[[Any, Any], Any],
) -> _Call:
    """Trace ``fwd(*tensors) -> (out, residuals)`` and ``bwd(residuals, g) -> cotangents``
    (one per tensor, or None) into a ``CustomVJPCall`` (what ``custom_vjp`` and
    ``autograd.Function`` apply). Residuals nest in lists, tuples and dicts; their
    leaves that are not tensors or arrays are passed to ``bwd`` as they are."""
    pool, n = ConstantPool(), len(tensors)
    values = [t._data for t in tensors]
    result, _, ftrace = trace_graph(fwd, f"{name} (fwd)", values, pool)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{name}: the custom_vjp fwd must return a pair (output, residuals)")
    outs, single = _outputs(name, result[0], "fwd's output")
    for index, out in enumerate(outs):
        if out.dtype.name not in DIFFERENTIABLE_DTYPES:
            raise TypeError(f"{name}: output {index} has dtype {out.dtype}; a custom_vjp "
                            "function's outputs are float or complex")  # fmt: skip
    tree = result[1]
    residuals = [as_tensor(leaf) for leaf in leaves(tree) if isinstance(leaf, (Tensor, np.ndarray))]
    fwd_graph = ftrace.finish([*outs, *residuals], n)
    out_types = fwd_graph.output_types[: len(outs)]
    arg_types = fwd_graph.input_types
    count = len(residuals)

    def rule(*ts: Tensor) -> Any:
        given = iter(ts[:count])
        rebuilt = map_leaves(tree, lambda leaf: next(given)
                             if isinstance(leaf, (Tensor, np.ndarray)) else leaf)  # fmt: skip
        return bwd(rebuilt, ts[count] if single else tuple(ts[count:]))

    seeds = [_ones(t) for t in out_types]
    result, _, btrace = trace_graph(
        rule, f"{name} (bwd)", [r._data for r in residuals] + seeds, pool, foreign=ftrace
    )
    cotangents = _cotangents(name, result, arg_types)
    bwd_graph = btrace.finish(cotangents, count + len(outs))
    reached = bwd_graph.active_outputs([False] * count + [True] * len(outs))
    for index, (live, t) in enumerate(zip(reached, arg_types, strict=True)):
        if not live and t.dtype in DIFFERENTIABLE_DTYPES and not bwd_graph.is_zero_output(index):
            raise TypeError(
                f"{name}: the bwd rule's cotangent {index} does not depend on the output "
                "cotangent g (return None for a zero cotangent)"
            )
    op = CustomVJPCall(name, fwd_graph, bwd_graph, len(outs), len(pool.tensors))
    return _Call(op, tuple(pool.tensors), single)


def _cotangents(name: str, result: Any, arg_types: Sequence[TensorType]) -> list[Tensor]:
    """The bwd rule's ``result`` checked against the arguments (one cotangent of each
    one's shape and dtype, or None: zeros)."""
    if isinstance(result, Tensor) or not isinstance(result, (tuple, list)):
        raise TypeError(
            f"{name}: the custom_vjp bwd rule must return a tuple of cotangents (one per "
            f"differentiable argument), got {type(result).__name__}"
        )
    if len(result) != len(arg_types):
        raise TypeError(
            f"{name}: the custom_vjp bwd rule returned {len(result)} cotangents, expected "
            f"{len(arg_types)} (one per differentiable argument)"
        )
    cotangents = []
    for index, (ct, t) in enumerate(zip(result, arg_types, strict=True)):
        if ct is None or t.dtype not in DIFFERENTIABLE_DTYPES:
            cotangents.append(Tensor(np.zeros(t.shape, dtype=t.dtype)))
            continue
        if not isinstance(ct, Tensor):
            raise TypeError(f"{name}: cotangent {index} of the bwd rule is a "
                            f"{type(ct).__name__}, expected a Tensor or None")  # fmt: skip
        _check_types(name, [ct], [t], "the bwd rule's cotangent", index)
        cotangents.append(ct)
    return cotangents


class custom_vjp:  # noqa: N801 - JAX's name
    """``f`` with the reverse-mode rule given by ``f.defvjp(fwd, bwd)``: ``fwd(*args)``
    returns ``(out, residuals)``, ``bwd(*nondiff_args, residuals, g)`` one cotangent
    per differentiable argument (or None); module docstring."""

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        self.calls = CustomCalls()

    @property
    def name(self) -> str:
        return getattr(self.fun, "__name__", repr(self.fun))

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the rule: ``fwd`` and ``bwd`` (see the class docstring)."""
        self.fwd, self.bwd = fwd, bwd
        self.calls.clear()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{self.name}: pass the arguments by position")
        fwd, bwd = self.fwd, self.bwd
        if fwd is None or bwd is None:
            raise TypeError(f"{self.name}: no VJP rule; define one with "
                            f"{self.name}.defvjp(fwd, bwd)")  # fmt: skip
        split = _Split(self.name, args, self.nondiff_argnums)
        if self.calls.tracing or not recording(split.tensors):
            return self.fun(*args)

        def make() -> _Call:
            return vjp_call_op(
                self.name, split.tensors,
                lambda *ts: fwd(*split.merge(ts)),
                lambda res, g: bwd(*split.statics, res, g),
            )  # fmt: skip

        return self.calls.call(split.key, split.tensors, make)

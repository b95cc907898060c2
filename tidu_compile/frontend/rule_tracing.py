"""Tracing a user's function or rule into a ``TracedGraph`` (``ops.custom_calls``).

``trace_graph(fn, name, arguments, constants)`` runs ``fn`` on fresh tensors holding
the arguments' values while a ``RuleTrace`` is this thread's capture (as
``@tc.function``'s trace is): every primitive the function applies goes into one graph
instead of the tape, with its values computed as usual::

    trace_graph(lambda x: tc.log1p(tc.exp(x)), "log1pexp", [x], pool)
    ==> in0 -> v1 = Exp()(in0); v2 = Log1p()(v1)   outputs (v2,)

A tensor the function closes over is a constant of the graph: a ``Constant`` op for a
repeated number, else an input taking its place in ``constants`` (the call's constant
pool, shared by the graphs of one call, which passes them as operands). A closed-over
tensor that needs a gradient, or that an enclosing trace computed, is a ``TypeError``
(its gradient would be lost: pass it as an argument), and so is a tensor computed by
another rule's trace (``foreign``: a backward that reads a forward's value must get it
as a residual).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.frontend.state import current_capture, set_capture
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.graph import GraphBuilder, Primary
from tidu_compile.ops import DIFFERENTIABLE_DTYPES, Constant, TensorOp, type_of
from tidu_compile.ops.custom_calls import TracedGraph

__all__ = ["ConstantPool", "RuleTrace", "trace_graph"]


class ConstantPool:
    """The constant tensors the graphs of one call closed over, by identity."""

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self._index: dict[int, int] = {}

    def index(self, tensor: Tensor) -> int:
        found = self._index.get(id(tensor))
        if found is None:
            found = self._index[id(tensor)] = len(self.tensors)
            self.tensors.append(tensor)
        return found


class RuleTrace:
    """The graph being traced (the capture protocol of ``frontend.composite_function``:
    ``name``, ``ids``, ``is_traced``, ``apply``)."""

    def __init__(
        self, name: str, arguments: Sequence[Tensor], pool: ConstantPool,
        outer: Any, foreign: RuleTrace | None,
    ) -> None:  # fmt: skip
        self.name = name
        self.builder = GraphBuilder()
        self.ids: dict[int, int] = {}
        self.traced: set[int] = set()  # tensors computed from the arguments, by identity
        self.keep_alive: list[Tensor] = []
        self.pool = pool
        self.outer = outer
        self.foreign = foreign
        self.constants: list[int] = []  # the pool index of each constant input
        for i, tensor in enumerate(arguments):
            self._bind(tensor, self.builder.add_input(Name(f"in{i}")))
            self.traced.add(id(tensor))

    def _bind(self, tensor: Tensor, local_id: int) -> None:
        self.ids[id(tensor)] = local_id
        self.keep_alive.append(tensor)

    def is_traced(self, tensor: Tensor) -> bool:
        return id(tensor) in self.traced

    def local_id(self, tensor: Tensor) -> int:
        found = self.ids.get(id(tensor))
        if found is not None:
            return found
        if self.foreign is not None and self.foreign.is_traced(tensor):
            raise TypeError(
                f"{self.name}: the rule uses a tensor computed by the forward function; "
                "pass it as a residual (the second result of fwd, or ctx.save_for_backward)"
            )
        if tensor._requires_grad or (self.outer is not None and self.outer.is_traced(tensor)):
            raise TypeError(
                f"{self.name}: the function uses a tensor that requires gradients but is not "
                "one of its arguments (its gradient would be lost); pass it as an argument"
            )
        data = tensor._data
        if data.dtype.name in DIFFERENTIABLE_DTYPES and data.size and np.all(data == data.flat[0]):
            first = data.flat[0]
            value = complex(first) if data.dtype.kind == "c" else float(first)
            if value == value:  # NaN splats stay inputs: NaN != NaN in the op's parameters
                op = Constant(value, tuple(data.shape), data.dtype.name)
                (local_id,) = self.builder.add_operation(op, [], Primary())
                self._bind(tensor, local_id)
                return local_id
        local_id = self.builder.add_input(Name(f"const{len(self.constants)}"))
        self.constants.append(self.pool.index(tensor))
        self._bind(tensor, local_id)
        return local_id

    def apply(self, op: TensorOp, inputs: list[Tensor], outputs: list[np.ndarray]) -> list[Tensor]:
        ids = self.builder.add_operation(op, [self.local_id(t) for t in inputs], Primary())
        tensors = [Tensor(o) for o in outputs]
        for tensor, local_id in zip(tensors, ids, strict=True):
            self._bind(tensor, local_id)
            self.traced.add(id(tensor))
        return tensors

    def finish(self, results: Sequence[Tensor], arity: int) -> TracedGraph:
        """The traced graph with ``results`` as its outputs."""
        output_ids = [self.local_id(r) for r in results]
        self.builder.set_outputs(output_ids)
        graph = self.builder.build()
        types = {self.ids[id(t)]: type_of(t._data) for t in self.keep_alive}
        return TracedGraph(
            graph, arity, tuple(self.constants),
            tuple(types[i] for i in graph.inputs[:arity]), tuple(types[i] for i in output_ids),
        )  # fmt: skip


def trace_graph(
    fn: Callable[..., Any],
    name: str,
    arguments: Sequence[np.ndarray],
    pool: ConstantPool,
    foreign: RuleTrace | None = None,
) -> tuple[Any, list[Tensor], RuleTrace]:
    """Run ``fn(*tensors)`` on fresh tensors of ``arguments`` while tracing it; returns
    its result, the argument tensors and the trace (``finish`` makes the graph)."""
    tensors = [Tensor(np.asarray(a)) for a in arguments]
    outer = current_capture()
    trace = RuleTrace(name, tensors, pool, outer, foreign)
    set_capture(trace)
    try:
        result = fn(*tensors)
    finally:
        set_capture(outer)
    return result, tensors, trace

"""Traced bodies of the control-flow primitives (``ops.control_flow``), and how they run.

A ``Body`` is a graph with typed inputs, recorded once: ``tc.scan``'s step function,
each branch of ``tc.cond``, ``tc.while_loop``'s test and step. It is a parameter of its
primitive (``Scan(body=Body(...), ...)``), so it compares and hashes by the digest of
its text and types (what the graph computes, never tape keys), and prints as that
digest in a program's text (which keys the compiled code)::

    Body(3f9c0a2e41d7b655:4->3)          4 inputs, 3 outputs

``BodyBuilder`` makes the bodies the derivative rules need (a JVP body, a transposed
body) by inlining other graphs, adding zeros and sums. ``run_body`` runs a body on
values: through ``executor.run_graph`` of the executor ``install_body_executor`` names
(the frontend installs the default executor's getter: on a ``CompiledExecutor`` the
body is one compiled program, compiled once, called once per iteration), else with
numpy op by op.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.eager import RecordedGraph
from tidu_compile.graph import Graph, GraphBuilder, Local, Primary
from tidu_compile.ops.base import TensorType
from tidu_compile.ops.complex_ops import Constant
from tidu_compile.ops.elementwise import Add
from tidu_compile.printing import graph_to_text

__all__ = ["Body", "BodyBuilder", "install_body_executor", "native_loop", "run_body"]


def _value_types(graph: Graph, input_types: Sequence[TensorType]) -> list[TensorType | None]:
    """The type of every value of ``graph`` (no parents), by each op's ``infer_types``."""
    types: list[TensorType | None] = [None] * len(graph.values)
    for local_id, t in zip(graph.inputs, input_types, strict=True):
        types[local_id] = t
    for node in graph.operations:
        operands = [types[r.id] for r in node.inputs if isinstance(r, Local)]
        if len(operands) != len(node.inputs) or any(t is None for t in operands):
            raise ValueError(f"body: {node.operation!r} reads a value of another graph")
        results = node.operation.infer_types(*operands)
        for local_id, t in zip(node.outputs, results, strict=True):
            types[local_id] = t
    return types


class Body:
    """A traced graph with typed inputs (see the module docstring)."""

    __slots__ = ("graph", "recorded", "input_types", "output_types", "digest", "_value_types")

    def __init__(self, graph: Graph, input_types: Sequence[TensorType]) -> None:
        if graph.parents:
            raise ValueError("body: the graph must not read values of other graphs")
        self.graph = graph
        self.input_types = tuple(input_types)
        self._value_types = _value_types(graph, self.input_types)
        self.output_types: tuple[TensorType, ...] = tuple(
            self._value_types[o] for o in graph.outputs  # type: ignore[misc]
        )
        self.recorded = RecordedGraph.from_graph(graph)
        text = graph_to_text(graph) + "|" + ",".join(map(str, self.input_types))
        self.digest = hashlib.sha256(text.encode()).hexdigest()[:24]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Body) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"Body({self.digest}:{len(self.input_types)}->{len(self.output_types)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Body, (self.graph, self.input_types))

    def evaluate(self, values: Sequence[Any]) -> list[np.ndarray]:
        """The outputs for ``values``, op by op with numpy."""
        data: list[Any] = [None] * len(self.graph.values)
        for local_id, value in zip(self.graph.inputs, values, strict=True):
            data[local_id] = value
        for node in self.graph.operations:
            results = node.operation.evaluate(*(data[r.id] for r in node.inputs))  # type: ignore[union-attr]
            for local_id, result in zip(node.outputs, results, strict=True):
                data[local_id] = np.asarray(result)
        return [data[o] for o in self.graph.outputs]


#: The executor loop bodies run on (a getter; None: numpy op by op).
_BODY_EXECUTOR: list[Callable[[], Any] | None] = [None]


def install_body_executor(getter: Callable[[], Any] | None) -> None:
    """Run loop bodies through ``getter().run_graph`` (the frontend's default executor)."""
    _BODY_EXECUTOR[0] = getter


def run_body(body: Body) -> Callable[[Sequence[Any]], list[Any]]:
    """How to run ``body`` for the rest of one loop: the executor's ``graph_runner`` (on
    a ``CompiledExecutor``: the body's compiled program, looked up once) or
    ``run_graph``, else ``body.evaluate``."""
    getter = _BODY_EXECUTOR[0]
    executor = getter() if getter is not None else None
    if executor is None or not body.graph.operations:
        return body.evaluate
    graph_runner = getattr(executor, "graph_runner", None)
    if graph_runner is not None:  # a CompiledExecutor: the bound plan, looked up once
        return graph_runner(body.recorded)  # type: ignore[no-any-return]
    run_graph, recorded = executor.run_graph, body.recorded
    return lambda values: run_graph(recorded, list(values))


def native_loop(loop: Any) -> Callable[..., list[Any]] | None:
    """The executor's runner of a whole ``Scan`` or ``WhileLoop`` in native code (on a
    ``CompiledExecutor``: ``loop_runner``), or None: run the body once per iteration."""
    getter = _BODY_EXECUTOR[0]
    executor = getter() if getter is not None else None
    loop_runner = getattr(executor, "loop_runner", None)
    if loop_runner is None or not loop.body.graph.operations:
        return None
    return loop_runner(loop)  # type: ignore[no-any-return]


class BodyBuilder:
    """Builds a ``Body`` from pieces of other graphs.

    >>> b = BodyBuilder([TensorType((3,), "float64")] * 2)
    >>> (y,) = b.inline(other.graph, [b.inputs[1], None])    # other's input 1 is unused
    >>> body = b.finish([b.add(y, b.inputs[0])])             # doctest: +SKIP
    """

    def __init__(self, input_types: Sequence[TensorType]) -> None:
        self.builder = GraphBuilder()
        self.input_types = tuple(input_types)
        self.inputs = [self.builder.add_input(Name(f"in{i}")) for i in range(len(input_types))]
        self.types: dict[int, TensorType] = dict(zip(self.inputs, self.input_types, strict=True))

    def operation(self, op: Any, inputs: Sequence[int], role: Any = None) -> list[int]:
        """Add ``op`` on ``inputs`` (local ids); returns its outputs."""
        ids = self.builder.add_operation(op, list(inputs), role or Primary())
        results = op.infer_types(*(self.types[i] for i in inputs))
        self.types.update(zip(ids, results, strict=True))
        return ids

    def inline(self, graph: Graph, arguments: Sequence[int | None]) -> list[int]:
        """``graph``'s outputs computed here from ``arguments`` (one per input of
        ``graph``; None: an input ``graph`` must not read, else ``ValueError``)."""
        local: dict[int, int | None] = dict(zip(graph.inputs, arguments, strict=True))
        for node in graph.operations:
            inputs = []
            for ref in node.inputs:
                found = local.get(ref.id) if isinstance(ref, Local) else None
                if found is None:
                    raise ValueError(f"body: {node.operation!r} reads a value that is not given")
                inputs.append(found)
            local.update(zip(node.outputs, self.operation(node.operation, inputs, node.role),
                             strict=True))  # fmt: skip
        outputs = [local.get(o) for o in graph.outputs]
        if any(o is None for o in outputs):
            raise ValueError("body: an output of the inlined graph is an input not given")
        return outputs  # type: ignore[return-value]

    def zeros(self, t: TensorType) -> int:
        return self.operation(Constant(0.0, t.shape, t.dtype), [])[0]

    def add(self, a: int, b: int) -> int:
        return self.operation(Add(), [a, b])[0]

    def type_of(self, local_id: int) -> TensorType:
        return self.types[local_id]

    def finish(self, outputs: Sequence[int]) -> Body:
        self.builder.set_outputs(list(outputs))
        return Body(self.builder.build(), self.input_types)


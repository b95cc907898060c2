"""Running the scalar primitive set of ``scalar_prims``: evaluation, executor, tape.

- ``EvalBuilder``: a ``PrimitiveBuilder`` that evaluates each op as it is added, with
  ``External(key)`` refs looked up in a dict;
- ``evaluate``: replays a graph (and its parents) through an ``EvalBuilder``;
- ``jvp_values`` / ``vjp_values`` / ``vjp_values_graph``: evaluate linearized and
  transposed graphs on concrete numbers;
- ``ScalarExecutor``: a ``BackwardExecutor`` over floats;
- ``Tape`` / ``Var``: a tiny eager frontend over ``Recorder``;
- ``emit``: add one op to a builder and return its single output.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scalar_prims import Ref, Scalar, ScalarPrim

from tidu_compile.ad import (
    LinearizedGraph,
    Name,
    Primitive,
    PrimitiveBuilder,
    PrimitiveGraph,
    linear_transpose,
    linear_transpose_with_builder,
)
from tidu_compile.eager import (
    BackwardExecutor,
    EagerInput,
    RecordedGraph,
    Recorder,
    Trace,
)
from tidu_compile.graph import (
    Derived,
    External,
    Graph,
    Input,
    Local,
    Primary,
    Role,
    ValueKey,
    resolve,
)

# --------------------------------------------------------------------------- builder


def as_value_key(key: Hashable) -> ValueKey:
    return key if isinstance(key, (Input, Derived)) else Input(key)


class EvalBuilder(PrimitiveBuilder):
    """Evaluates every op immediately. Ids index ``values``; ``External`` refs are looked
    up in ``external`` (value key -> number)."""

    def __init__(self, external: Mapping[ValueKey, Scalar] | None = None) -> None:
        self.external: dict[ValueKey, Scalar] = dict(external) if external else {}
        self.values: list[Scalar] = []
        self.ops: list[tuple[Primitive, Role]] = []

    def constant(self, value: Scalar) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def lookup(self, ref: Ref) -> Scalar:
        if isinstance(ref, bool):
            raise TypeError(f"inputs: not a value id: {ref!r}")
        if isinstance(ref, int):
            return self.values[ref]
        if isinstance(ref, Local):
            return self.values[ref.id]
        if isinstance(ref, External):
            if ref.key not in self.external:
                raise KeyError(f"no value for external key {ref.key!r}")
            return self.external[ref.key]
        raise TypeError(f"inputs: not a ref: {ref!r}")

    def add_primitive(self, op: Primitive, inputs: Sequence[Ref], role: Role) -> list[int]:
        if not isinstance(op, ScalarPrim):
            raise TypeError(f"op: not a scalar primitive: {op!r}")
        if len(inputs) != op.input_count:
            raise ValueError(f"inputs: {op!r} takes {op.input_count}, got {len(inputs)}")
        outputs = op.evaluate(*(self.lookup(r) for r in inputs))
        if len(outputs) != op.output_count:
            raise ValueError(f"{op!r} evaluated to {len(outputs)} values")
        self.ops.append((op, role))
        return [self.constant(v) for v in outputs]


def evaluate(graph: Graph, data: Mapping[Hashable, Scalar]) -> dict[ValueKey, Scalar]:
    """Every value of ``graph`` and its parents computable from ``data``.

    ``data`` keys are value keys or raw input keys. Ops with a missing input (tangent or
    cotangent inputs not given) are skipped, so a linear graph evaluated from primal data
    yields its residuals.
    """
    env = {as_value_key(k): v for k, v in data.items()}
    builder = EvalBuilder()
    builder.external = env  # shared: results become visible to later ops
    for g in resolve(graph).graphs:
        for node in g.operations:
            out_keys = [g.values[o].key for o in node.outputs]
            if all(k in env for k in out_keys):
                continue
            in_keys = [g.key_of(r) for r in node.inputs]
            if any(k not in env for k in in_keys):
                continue
            ids = builder.add_primitive(node.operation, [External(k) for k in in_keys], node.role)
            for k, i in zip(out_keys, ids, strict=True):
                env.setdefault(k, builder.values[i])
    return env


def jvp_values(
    linear: LinearizedGraph,
    primals: Mapping[Hashable, Scalar],
    tangents: Mapping[Hashable, Scalar],
) -> list[Scalar | None]:
    """Evaluate ``linear``: ``tangents`` maps each raw ``wrt`` key to its tangent."""
    data: dict[Hashable, Scalar] = dict(primals)
    for raw, local_id in linear.tangent_inputs:
        data[linear.graph.values[local_id].key] = tangents[raw]
    env = evaluate(linear.graph, data)
    return [None if t is None else env[linear.graph.values[t].key] for t in linear.tangent_outputs]


def vjp_values(
    linear: LinearizedGraph,
    primals: Mapping[Hashable, Scalar],
    cotangents: Sequence[Scalar | None],
    ctx: Any = None,
) -> list[Scalar | None]:
    """Transpose ``linear`` into an ``EvalBuilder``; one cotangent per tangent output."""
    if len(cotangents) != len(linear.tangent_outputs):
        raise ValueError("cotangents: one per tangent output")
    return vjp_values_from_data(linear, evaluate(linear.graph, primals), cotangents, ctx)


def vjp_values_graph(
    linear: LinearizedGraph,
    primals: Mapping[Hashable, Scalar],
    cotangents: Sequence[Scalar],
    ctx: Any = None,
) -> list[Scalar | None]:
    """Same as ``vjp_values`` through ``linear_transpose`` (a graph), then evaluated."""
    transposed = linear_transpose(linear, ctx)
    data: dict[Hashable, Scalar] = dict(primals)
    pairs = zip(cotangents, linear.tangent_outputs, strict=True)
    present = [ct for ct, t in pairs if t is not None]
    for (raw, _), ct in zip(transposed.tangent_inputs, present, strict=True):
        data[raw] = ct
    env = evaluate(transposed.graph, data)
    return [
        None if t is None else env[transposed.graph.values[t].key]
        for t in transposed.tangent_outputs
    ]


def output_key(linear: LinearizedGraph, index: int = 0) -> ValueKey:
    """Value key of tangent output ``index`` (to linearize a linear graph again)."""
    local_id = linear.tangent_outputs[index]
    if local_id is None:
        raise ValueError(f"tangent output {index} is None")
    return linear.graph.values[local_id].key


# --------------------------------------------------------------------------- executor


class ScalarExecutor(BackwardExecutor):
    """A ``BackwardExecutor`` over Python numbers, counting what it is asked to do."""

    def __init__(self) -> None:
        self.linearize_calls: list[tuple[int, ...]] = []
        self.forward_calls = 0
        self.transpose_calls = 0
        self.add_calls = 0
        self.ctx_seen: list[Any] = []

    def execute_forward(self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]) -> dict:
        self.forward_calls += 1
        return evaluate(graph.graph, initial_data)

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list:
        self.transpose_calls += 1
        self.ctx_seen.append(ctx)
        return vjp_values_from_data(linear, external_data, cotangent_out, ctx)

    def add_operands(self, a: Any, b: Any) -> Any:
        self.add_calls += 1
        return a + b

    def linearize_recorded_graph(
        self, graph: RecordedGraph, output_slots: Sequence[int], ctx: Any
    ) -> LinearizedGraph:
        self.linearize_calls.append(tuple(output_slots))
        self.ctx_seen.append(ctx)
        return super().linearize_recorded_graph(graph, output_slots, ctx)


def vjp_values_from_data(
    linear: LinearizedGraph,
    external_data: Mapping[ValueKey, Any],
    cotangent_out: Sequence[Any],
    ctx: Any,
) -> list[Any]:
    builder = EvalBuilder(external_data)
    seeds = [
        None if ct is None else builder.constant(ct)
        for ct, t in zip(cotangent_out, linear.tangent_outputs, strict=True)
        if t is not None
    ]
    ids = linear_transpose_with_builder(linear, builder, seeds, ctx)
    return [None if i is None else builder.values[i] for i in ids]


# --------------------------------------------------------------------------- eager


@dataclass(frozen=True)
class Var:
    """An eager scalar: its value and its tape edge."""

    value: Scalar
    key: ValueKey
    trace: Trace | None
    requires_grad: bool

    def as_input(self) -> EagerInput:
        return EagerInput(self.key, self.trace, self.requires_grad, self.value)


class Tape:
    """A tiny eager frontend: evaluates ops on numbers and records them."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder = recorder if recorder is not None else Recorder()

    def leaf(self, value: Scalar, requires_grad: bool = True) -> Var:
        (key,) = self.recorder.fresh_input_keys(1)  # a raw key: the leaf's value key wraps it
        return Var(value, Input(key), None, requires_grad)

    def apply(self, op: ScalarPrim, *args: Var) -> list[Var]:
        graph = RecordedGraph.from_primitive(op, [Name(f"in{i}") for i in range(len(args))])
        return self.apply_graph(graph, *args)

    def apply_graph(self, graph: RecordedGraph, *args: Var) -> list[Var]:
        data = {k: a.value for k, a in zip(graph.input_value_keys, args, strict=True)}
        env = evaluate(graph.graph, data)
        values = [env[k] for k in graph.output_keys]
        outs = self.recorder.record_graph(graph, [a.as_input() for a in args], values)
        return [Var(v, o.key, o.trace, o.requires_grad) for v, o in zip(values, outs, strict=True)]

    def apply1(self, op: ScalarPrim, *args: Var) -> Var:
        (out,) = self.apply(op, *args)
        return out


# --------------------------------------------------------------------------- graphs


def emit(builder: PrimitiveBuilder, op: Primitive, *inputs: Ref) -> int:
    """Add a one-output Primary op; returns its id."""
    (out,) = builder.add_primitive(op, list(inputs), Primary())
    return out

"""Two more places of tidu's contract, exercised as tidu's own examples do.

* The core hands builders value refs (``Local(id)``, ``External(key)``), never bare ids:
  ``linear_transpose_with_builder`` sums two cotangents of one value with
  ``builder.add_primitive(op.add(), [Local(a), Local(b)], ...)``, so a user's
  ``PrimitiveBuilder`` that reads its inputs as refs only works (a sincos-style op with
  both outputs seeded is where two cotangents meet).
* ``Recorder.fresh_input_keys(n)`` returns raw input keys (tidu's ``Vec<Op::InputKey>``):
  ``RecordedGraph.from_primitive(op, recorder.fresh_input_keys(1))`` linearizes.

The primitive set here is written as a port of tidu's Rust rules would be: every id a
rule passes to the builder is wrapped (``Local(dx)``), as ``PrimitiveValue::Local``.
Expected values are closed forms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from scalar_prims import LIN_BOTH, LIN_FIRST, LIN_SECOND, Scalar, ScalarPrim
from scalar_runtime import evaluate

from tidu_compile.ad import (
    LinearizedGraph,
    Name,
    Primitive,
    PrimitiveBuilder,
    PrimitiveGraph,
    fresh_pass_id,
    linear_transpose_with_builder,
    linearize,
)
from tidu_compile.eager import (
    BackwardExecutor,
    EagerInput,
    KeySource,
    RecordedGraph,
    Recorder,
    backward,
)
from tidu_compile.graph import (
    External,
    GraphBuilder,
    Input,
    Linearized,
    Local,
    Primary,
    PrimitiveValue,
    Role,
    ValueKey,
)

X = Name("x")


# --------------------------------------------------------------------------- the builder


class RefBuilder(PrimitiveBuilder):
    """Evaluates each op as it is added; reads its inputs as value refs only (tidu's
    ``&[PrimitiveValue]``): a bare id is a ``TypeError``."""

    def __init__(self, external: Mapping[ValueKey, Scalar]) -> None:
        self.external = external
        self.values: list[Scalar] = []
        self.added: list[tuple[Primitive, tuple[PrimitiveValue, ...]]] = []

    def constant(self, value: Scalar) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def read(self, ref: Any) -> Scalar:
        if isinstance(ref, Local):
            return self.values[ref.id]
        if isinstance(ref, External):
            return self.external[ref.key]
        raise TypeError(f"inputs: expected a value ref (Local or External), got {ref!r}")

    def add_primitive(self, op: Primitive, inputs: Sequence[Any], role: Role) -> list[int]:
        assert isinstance(op, ScalarPrim)
        outputs = op.evaluate(*(self.read(r) for r in inputs))
        self.added.append((op, tuple(inputs)))
        return [self.constant(v) for v in outputs]


# --------------------------------------------------------------------------- the prims


class RefPrim(ScalarPrim):
    """Real scalar prims whose rules pass refs, accumulating with ``RAdd``."""

    @classmethod
    def add(cls) -> Primitive:
        return RAdd()


def _mul(builder: PrimitiveBuilder, linear: int, residual: PrimitiveValue) -> int:
    (out,) = builder.add_primitive(RMul(), [Local(linear), residual], LIN_FIRST)
    return out


@dataclass(frozen=True)
class RAdd(RefPrim):
    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] + args[1],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        present = [t for t in tangent_inputs if t is not None]
        if len(present) < 2:
            return present or [None]
        return builder.add_primitive(RAdd(), [Local(t) for t in present], LIN_BOTH)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        (ct,) = cotangent_outputs
        return [ct if active else None for active in role.active_mask]


@dataclass(frozen=True)
class RMul(RefPrim):
    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] * args[1],)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        (ct,) = cotangent_outputs
        if role == LIN_FIRST:
            return [_mul(builder, ct, inputs[1]), None]
        assert role == LIN_SECOND
        return [None, _mul(builder, ct, inputs[0])]


@dataclass(frozen=True)
class RNeg(RefPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (-args[0],)


@dataclass(frozen=True)
class RSinCos(RefPrim):
    """``(sin x, cos x)``: one input, two outputs."""

    @property
    def input_count(self) -> int:
        return 1

    @property
    def output_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (math.sin(args[0]), math.cos(args[0]))

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        s, c = (External(k) for k in primal_outputs)
        (dx,) = tangent_inputs
        (minus_s,) = builder.add_primitive(RNeg(), [s], Primary())
        return [_mul(builder, dx, c), _mul(builder, dx, Local(minus_s))]


def _sincos_graph() -> GraphBuilder:
    builder = GraphBuilder()
    x = builder.add_input(X)
    builder.set_outputs(builder.add_operation(RSinCos(), [Local(x)], Primary()))
    return builder


# --------------------------------------------------------------------------- transpose


def test_two_cotangents_of_one_value_are_summed_with_refs() -> None:
    """``x -> (sin x, cos x)`` with both outputs seeded: ``ct_x = a cos x - b sin x``,
    the two contributions added by ``RAdd`` through the builder, as refs."""
    graph = _sincos_graph().build()
    linear = linearize(graph, graph.output_keys(), [X], fresh_pass_id())
    x, a, b = 0.7, 2.0, -3.0
    builder = RefBuilder(evaluate(linear.graph, {X: x}))
    seeds = [builder.constant(a), builder.constant(b)]
    (ct,) = linear_transpose_with_builder(linear, builder, seeds)
    assert ct is not None
    assert builder.values[ct] == pytest.approx(a * math.cos(x) - b * math.sin(x), rel=1e-15)
    sums = [inputs for op, inputs in builder.added if isinstance(op, RAdd)]
    assert len(sums) == 1 and all(isinstance(r, Local) for r in sums[0])


class RefExecutor(BackwardExecutor):
    """A ``BackwardExecutor`` over floats whose transposes run in a ``RefBuilder``."""

    def execute_forward(self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]) -> dict:
        return evaluate(graph.graph, initial_data)

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list:
        builder = RefBuilder(external_data)
        seeds = [None if ct is None else builder.constant(ct)
                 for ct, t in zip(cotangent_out, linear.tangent_outputs, strict=True)
                 if t is not None]  # fmt: skip
        ids = linear_transpose_with_builder(linear, builder, seeds, ctx)
        return [None if i is None else builder.values[i] for i in ids]

    def add_operands(self, a: Any, b: Any) -> Any:
        return a + b


def test_backward_through_a_two_output_node_with_both_outputs_used() -> None:
    """``z = sin x + cos x`` on the tape (tidu's recording example): ``dz/dx = cos x -
    sin x``, both seeds of the sincos node meeting at ``x``."""
    recorder = Recorder()
    x = 0.4
    leaf = EagerInput(Input(Name("user x")), None, True, x)
    sincos = RecordedGraph.from_primitive(RSinCos(), recorder.fresh_input_keys(1))
    s, c = recorder.record_graph(sincos, [leaf], [math.sin(x), math.cos(x)])
    add = RecordedGraph.from_primitive(RAdd(), recorder.fresh_input_keys(2))
    edges = [EagerInput(o.key, o.trace, True, v) for o, v in [(s, math.sin(x)), (c, math.cos(x))]]
    (z,) = recorder.record_graph(add, edges, [math.sin(x) + math.cos(x)])
    assert z.trace is not None
    grads = backward(z.key, z.trace, 1.0, RefExecutor())
    assert grads[leaf.key] == pytest.approx(math.cos(x) - math.sin(x), rel=1e-15)


# --------------------------------------------------------------------------- raw keys


class Counter(KeySource):
    """tidu's doc example: keys 0, 1, 2, ..."""

    def __init__(self) -> None:
        self.next = 0

    def fresh_input_key(self) -> int:
        key, self.next = self.next, self.next + 1
        return key


class Names(KeySource):
    def __init__(self) -> None:
        self.count = 0

    def fresh_input_key(self) -> Name:
        self.count += 1
        return Name(f"k{self.count}")


def test_fresh_input_keys_are_the_key_sources_raw_keys() -> None:
    assert Recorder(Counter()).fresh_input_keys(2) == [0, 1]
    recorder = Recorder(Names())
    assert recorder.fresh_input_keys(2) == [Name("k1"), Name("k2")]
    (out,) = recorder.record_graph(
        RecordedGraph.from_primitive(RNeg(), recorder.fresh_input_keys(1)),
        [EagerInput(Input(Name("x")), None, True, 1.0)], [-1.0],
    )  # fmt: skip
    assert out.key == Input(Name("k4"))  # output keys are value keys of fresh raw keys


def test_a_graph_on_fresh_input_keys_linearizes() -> None:
    """The raw keys are graph input keys: ``linearize`` finds their tangents (value keys
    ``Input(k)`` would fail: 'wrt: key Input(...) has no tangent_of')."""
    recorder = Recorder(Names())
    keys = recorder.fresh_input_keys(1)
    recorded = RecordedGraph.from_primitive(RSinCos(), keys)
    assert recorded.input_keys == keys and recorded.input_value_keys == (Input(keys[0]),)
    linear = recorded.linearize([0, 1], None)
    assert [raw for raw, _ in linear.tangent_inputs] == keys
    x, dx = 1.1, 0.5
    data = {Input(keys[0]): x, linear.graph.values[linear.tangent_inputs[0][1]].key: dx}
    values = evaluate(linear.graph, data)
    ds, dc = (values[linear.graph.values[t].key] for t in linear.tangent_outputs)  # type: ignore[index]
    assert (ds, dc) == (pytest.approx(math.cos(x) * dx), pytest.approx(-math.sin(x) * dx))


def test_linearized_role_of_the_sum_is_linear_in_both() -> None:
    """The accumulating add is recorded as linear in both operands (a graph builder)."""
    graph = _sincos_graph().build()
    linear = linearize(graph, graph.output_keys(), [X], fresh_pass_id())
    builder = GraphBuilder()
    seeds = [builder.add_input(Name("a")), builder.add_input(Name("b"))]
    (ct,) = linear_transpose_with_builder(linear, builder, seeds)
    assert ct is not None
    transposed = builder.build()
    (op_index, _) = transposed.values[ct].producer  # type: ignore[misc]
    node = transposed.operations[op_index]
    assert isinstance(node.operation, RAdd) and node.role == Linearized((True, True))

"""tidu's rule contract, exercised the way tidu's own examples do, with a user's scalar
primitive set (``scalar_prims``: float operands, rules written against tidu's signatures).

* ``jvp_rule`` receives the primals as value keys and wraps the ones it reads itself
  (``External(primal_inputs[1])``); ``transpose_rule`` receives value refs.
* ``RecordedGraph.input_keys`` are raw keys.
* ``evaluate_graph`` evaluates a graph of any order on concrete inputs, and
  ``execute_forward`` provides the residuals of a twice-linearized graph.

Every expected value is a closed form, never the library's own output.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

import pytest
from scalar_prims import Add, Cos, Exp, Mul, Neg, RuleLog, Scalar, ScalarPrim, Sin, SinCos
from scalar_runtime import emit

import tidu_compile as tc
from tidu_compile import (
    ADRuleKind,
    Derived,
    External,
    GraphBuilder,
    Input,
    LinearizedGraph,
    Name,
    PrimitiveGraph,
    RecordedGraph,
    ReferenceExecutor,
    evaluate_graph,
    linear_transpose,
    linearize,
)
from tidu_compile.ad import fresh_pass_id
from tidu_compile.graph import Graph, Linearized

X, Y = Name("x"), Name("y")


@dataclass(frozen=True)
class KeyProbe(ScalarPrim):
    """``x * y`` whose JVP rule checks what it is handed, as a ported tidu rule would."""

    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] * args[1],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        assert all(isinstance(k, Input | Derived) for k in primal_inputs), primal_inputs
        assert all(isinstance(k, Input | Derived) for k in primal_outputs), primal_outputs
        dx, dy = tangent_inputs
        terms = []
        if dx is not None:  # tidu: builder.add_primitive(Mul, &[dx, External(y)], ...)
            terms += builder.add_primitive(
                Mul(), [dx, External(primal_inputs[1])], Linearized((True, False))
            )
        if dy is not None:
            terms += builder.add_primitive(
                Mul(), [External(primal_inputs[0]), dy], Linearized((False, True))
            )
        if len(terms) == 1:
            return terms
        return builder.add_primitive(Add(), terms, Linearized((True, True)))


def _graph(build) -> Graph:  # type: ignore[no-untyped-def]
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    b.set_outputs(build(b, x, y))
    return b.build()


def _jvp(graph: Graph, primals: dict[Hashable, float], tangents: dict[Hashable, float]):  # type: ignore[no-untyped-def]
    linear = linearize(graph, graph.output_keys(), list(tangents), fresh_pass_id())
    inputs: dict[Hashable, float] = dict(primals)
    for raw, local_id in linear.tangent_inputs:
        inputs[linear.graph.values[local_id].key] = tangents[raw]
    return linear, evaluate_graph(linear, inputs)


def _vjp(linear: LinearizedGraph, primals: dict[Hashable, float], cts: list[float]):  # type: ignore[no-untyped-def]
    transposed = linear_transpose(linear)
    inputs: dict[Hashable, float] = dict(primals)
    for (raw, _), ct in zip(transposed.tangent_inputs, cts, strict=True):
        inputs[raw] = ct
    return evaluate_graph(transposed, inputs)


# --------------------------------------------------------------------------- the keys


def test_jvp_rule_receives_value_keys_and_wraps_them_itself() -> None:
    graph = _graph(lambda b, x, y: [emit(b, KeyProbe(), x, y)])
    _, (tangent,) = _jvp(graph, {X: 3.0, Y: 5.0}, {X: 1.0, Y: 2.0})
    assert tangent == pytest.approx(1.0 * 5.0 + 3.0 * 2.0)


def test_recorded_graph_input_keys_are_raw_keys() -> None:
    recorded = RecordedGraph.from_primitive(Mul(), ["x", "y"])
    assert recorded.input_keys == ["x", "y"]
    assert recorded.input_value_keys == (Input("x"), Input("y"))
    assert all(isinstance(k, Derived) for k in recorded.output_keys)
    again = RecordedGraph(recorded.graph, ["x", "y"], recorded.output_keys)
    assert again.structure == recorded.structure
    with pytest.raises(ValueError, match="raw keys"):
        RecordedGraph(recorded.graph, [Input("x"), Input("y")], recorded.output_keys)


def test_backward_saves_inputs_under_their_value_keys() -> None:
    recorded = RecordedGraph.from_primitive(KeyProbe(), [X, Y])
    recorder = tc.Recorder()
    a, b = (Input(k) for k in recorder.fresh_input_keys(2))
    inputs = [tc.EagerInput(a, None, True, 3.0), tc.EagerInput(b, None, True, 5.0)]
    (out,) = recorder.record_graph(recorded, inputs, [15.0])
    assert out.trace is not None
    assert out.trace.saved_values == {Input(X): 3.0, Input(Y): 5.0}
    grads = tc.backward(out.key, out.trace, 1.0, ReferenceExecutor())
    assert (grads[a], grads[b]) == (pytest.approx(5.0), pytest.approx(3.0))


# --------------------------------------------------------------------------- first order


def test_polynomial_in_two_inputs_jvp_and_vjp() -> None:
    """f = x^2 y + 3 x y^2: df = (2xy + 3y^2) dx + (x^2 + 6xy) dy."""

    def build(b, x, y):  # type: ignore[no-untyped-def]
        x2y = emit(b, Mul(), emit(b, Mul(), x, x), y)
        xy2 = emit(b, Mul(), emit(b, Mul(), x, y), y)
        return [emit(b, Add(), x2y, emit(b, Add(), xy2, emit(b, Add(), xy2, xy2)))]

    x, y = 1.5, -0.5
    fx, fy = 2 * x * y + 3 * y * y, x * x + 6 * x * y
    linear, (tangent,) = _jvp(_graph(build), {X: x, Y: y}, {X: 0.25, Y: 2.0})
    assert tangent == pytest.approx(0.25 * fx + 2.0 * fy)
    assert _vjp(linear, {X: x, Y: y}, [1.0]) == [pytest.approx(fx), pytest.approx(fy)]


def test_diamond_and_fan_out_summed_with_add() -> None:
    """f = exp(x*y) * sin(x*y) + x: ``x*y`` feeds two branches, ``x`` three uses."""

    def build(b, x, y):  # type: ignore[no-untyped-def]
        u = emit(b, Mul(), x, y)
        return [emit(b, Add(), emit(b, Mul(), emit(b, Exp(), u), emit(b, Sin(), u)), x)]

    x, y = 0.7, 1.3
    u = x * y
    du = math.exp(u) * (math.sin(u) + math.cos(u))
    linear, _ = _jvp(_graph(build), {X: x, Y: y}, {X: 1.0, Y: 1.0})
    assert _vjp(linear, {X: x, Y: y}, [1.0]) == [pytest.approx(du * y + 1), pytest.approx(du * x)]


def test_sincos_multi_output_jvp() -> None:
    graph = _graph(lambda b, x, y: b.add_operation(SinCos(), [x], tc.Primary()))
    _, tangents = _jvp(graph, {X: 0.4}, {X: 2.0})
    assert tangents == [pytest.approx(2 * math.cos(0.4)), pytest.approx(-2 * math.sin(0.4))]


# --------------------------------------------------------------------------- higher order


def _cube() -> Graph:
    b = GraphBuilder()
    x = b.add_input(X)
    b.set_outputs([emit(b, Mul(), emit(b, Mul(), x, x), x)])
    return b.build()


@pytest.mark.parametrize("executor_path", [False, True], ids=["evaluate_graph", "execute_forward"])
def test_second_to_fourth_derivatives_of_cube_by_repeated_linearize(executor_path: bool) -> None:
    """d^n/dx^n x^3 at x = 2: 12, 12, 6, 0 (the fourth is structurally zero)."""
    x0 = 2.0
    expected = {1: 3 * x0**2, 2: 6 * x0, 3: 6.0}
    graph: Graph = _cube()
    keys = graph.output_keys()
    inputs: dict[Hashable, float] = {X: x0}
    for order in (1, 2, 3, 4):
        pass_id = fresh_pass_id()
        linear = linearize(graph, keys, [X], pass_id)
        inputs[X.tangent_of(pass_id)] = 1.0
        (tangent_id,) = linear.tangent_outputs
        if order == 4:
            assert tangent_id is None
            break
        if executor_path:  # the residuals a backward executor would read
            residuals = ReferenceExecutor().execute_forward(
                PrimitiveGraph(linear.graph), {Input(k): v for k, v in inputs.items()}
            )
            assert residuals  # evaluated through ops of every earlier order
        (value,) = evaluate_graph(linear, inputs)
        assert value == pytest.approx(expected[order]), order
        graph, keys = linear.graph, [linear.graph.values[tangent_id].key]


def test_reverse_over_forward_hessian_vector_product() -> None:
    """f = x^2 y + sin(y): H v for v = (1, 2) at (1, 0.5) by transposing the JVP graph
    linearized again (wrt x and y, tangent seed fixed)."""

    def build(b, x, y):  # type: ignore[no-untyped-def]
        return [emit(b, Add(), emit(b, Mul(), emit(b, Mul(), x, x), y), emit(b, Sin(), y))]

    x, y, v = 1.0, 0.5, (1.0, 2.0)
    graph = _graph(build)
    first = linearize(graph, graph.output_keys(), [X, Y], fresh_pass_id())
    (dx_key, dx_id), (dy_key, dy_id) = first.tangent_inputs
    tangent_out = first.graph.values[first.tangent_outputs[0]].key  # type: ignore[index]
    second = linearize(first.graph, [tangent_out], [X, Y], fresh_pass_id())
    inputs = {X: x, Y: y, first.graph.values[dx_id].key: v[0], first.graph.values[dy_id].key: v[1]}
    hvp = _vjp(second, inputs, [1.0])  # type: ignore[arg-type]
    hessian = [[2 * y, 2 * x], [2 * x, -math.sin(y)]]
    assert hvp == [pytest.approx(sum(h * w for h, w in zip(row, v, strict=True)))
                   for row in hessian]  # fmt: skip


def test_five_thousand_deep_chain() -> None:
    """cos(sin(cos(...(x)))) 5000 ops deep: linearize, transpose and evaluate, no recursion."""
    b = GraphBuilder()
    current = b.add_input(X)
    for depth in range(5000):
        current = emit(b, Sin() if depth % 2 else Cos(), current)
    b.set_outputs([current])
    graph = b.build()
    value, derivative = 0.3, 1.0
    for depth in range(5000):
        if depth % 2:
            derivative *= math.cos(value)
            value = math.sin(value)
        else:
            derivative *= -math.sin(value)
            value = math.cos(value)
    linear, (tangent,) = _jvp(graph, {X: 0.3}, {X: 1.0})
    assert tangent == pytest.approx(derivative)
    assert _vjp(linear, {X: 0.3}, [1.0]) == [pytest.approx(derivative)]


def test_ctx_reaches_every_rule_call() -> None:
    """One JVP rule call per primal op, one transpose rule call per linear op."""

    def build(b, x, y):  # type: ignore[no-untyped-def]
        return [emit(b, Neg(), emit(b, Mul(), emit(b, Exp(), x), emit(b, Cos(), y)))]

    log = RuleLog()
    graph = _graph(build)
    linear = linearize(graph, graph.output_keys(), [X, Y], fresh_pass_id(), log)
    assert log.count(ADRuleKind.JVP) == len(graph.operations) == 4
    linear_ops = sum(isinstance(n.role, Linearized) for n in linear.graph.operations)
    linear_transpose(linear, log)
    assert log.count(ADRuleKind.TRANSPOSE) == linear_ops


def test_evaluate_graph_errors_name_the_problem() -> None:
    graph = _cube()
    with pytest.raises(KeyError, match="no value given"):
        evaluate_graph(graph, {})
    with pytest.raises(TypeError, match="graph"):
        evaluate_graph("graph", {X: 1.0})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="inputs"):
        evaluate_graph(graph, [1.0])  # type: ignore[arg-type]
    assert evaluate_graph(graph, {Input(X): 2.0}) == [8.0]  # value keys work too

"""First-order JVP and VJP of small scalar programs, checked against analytic values.

Every VJP is computed twice: with ``linear_transpose_with_builder`` into an evaluating
builder, and with ``linear_transpose`` (a graph) evaluated afterwards.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Mapping, Sequence

import pytest
from scalar_prims import Add, Cos, Exp, Mul, Neg, RuleLog, Scalar, Sin, SinCos, SumN
from scalar_runtime import EvalBuilder, emit, evaluate, jvp_values, vjp_values, vjp_values_graph

from tidu_compile.ad import (
    ADRuleKind,
    LinearizedGraph,
    Name,
    fresh_pass_id,
    linear_transpose_with_builder,
    linearize,
)
from tidu_compile.graph import Graph, GraphBuilder, Input, Linearized, Primary, ValueKey

X, Y, Z, A = Name("x"), Name("y"), Name("z"), Name("a")


def build(outputs: Sequence[int], builder: GraphBuilder) -> Graph:
    builder.set_outputs(outputs)
    return builder.build()


def lin(
    graph: Graph, wrt: Sequence[Hashable], ctx: object = None, outputs: Sequence[ValueKey] = ()
) -> LinearizedGraph:
    keys = list(outputs) or graph.output_keys()
    return linearize(graph, keys, list(wrt), fresh_pass_id(), ctx)


def both_vjps(
    linear: LinearizedGraph, primals: Mapping[Hashable, Scalar], cts: Sequence[Scalar]
) -> list[Scalar | None]:
    via_builder = vjp_values(linear, primals, cts)
    via_graph = vjp_values_graph(linear, primals, cts)
    assert len(via_builder) == len(via_graph) == len(linear.tangent_inputs)
    for a, b in zip(via_builder, via_graph, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert a == pytest.approx(b, rel=1e-14, abs=1e-14)
    return via_builder


def test_evaluate_primal_graph() -> None:
    b = GraphBuilder()
    x, a = b.add_input(X), b.add_input(A)
    y = emit(b, Exp(), emit(b, Mul(), a, x))
    g = build([y], b)
    env = evaluate(g, {X: 0.5, A: -2.0})
    assert env[g.output_keys()[0]] == pytest.approx(math.exp(-1.0))


def test_x_plus_x() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    g = build([emit(b, Add(), x, x)], b)
    linear = lin(g, [X])
    assert jvp_values(linear, {X: 1.5}, {X: 0.7}) == [pytest.approx(1.4)]
    assert both_vjps(linear, {X: 1.5}, [0.3]) == [pytest.approx(0.6)]


def test_x_times_y() -> None:
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    g = build([emit(b, Mul(), x, y)], b)
    linear = lin(g, [X, Y])
    primals = {X: 2.0, Y: 3.0}
    assert jvp_values(linear, primals, {X: 0.2, Y: -0.5}) == [pytest.approx(0.2 * 3 - 2 * 0.5)]
    assert both_vjps(linear, primals, [1.5]) == [pytest.approx(4.5), pytest.approx(3.0)]


def test_exp_a_x() -> None:
    b = GraphBuilder()
    a, x = b.add_input(A), b.add_input(X)
    g = build([emit(b, Exp(), emit(b, Mul(), a, x))], b)
    linear = lin(g, [A, X])
    av, xv = 0.7, -1.3
    e = math.exp(av * xv)
    primals = {A: av, X: xv}
    assert jvp_values(linear, primals, {A: 0.4, X: -0.9}) == [
        pytest.approx(e * (0.4 * xv + av * -0.9))
    ]
    assert both_vjps(linear, primals, [2.0]) == [
        pytest.approx(2 * xv * e),
        pytest.approx(2 * av * e),
    ]
    # The residual exp(a*x) is the primal output: the linear graph holds no Exp op.
    assert not any(isinstance(n.operation, Exp) for n in linear.graph.operations)


def test_x_plus_x_squared() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    g = build([emit(b, Add(), x, emit(b, Mul(), x, x))], b)
    linear = lin(g, [X])
    for xv in (-2.0, 0.0, 0.3, 5.0):
        assert jvp_values(linear, {X: xv}, {X: 1.0}) == [pytest.approx(1 + 2 * xv)]
        assert both_vjps(linear, {X: xv}, [-0.5]) == [pytest.approx(-0.5 * (1 + 2 * xv))]


def test_sum_exp_a_x_broadcasts_scalar_cotangent() -> None:
    xs = [Name(f"x{i}") for i in range(4)]
    values = [0.3, -1.1, 0.8, 2.0]
    av, ct = 0.45, 2.5
    b = GraphBuilder()
    a = b.add_input(A)
    terms = [emit(b, Exp(), emit(b, Mul(), a, b.add_input(k))) for k in xs]
    g = build([emit(b, SumN(len(xs)), *terms)], b)
    log = RuleLog()
    linear = lin(g, [A, *xs], ctx=log)
    primals = {A: av, **dict(zip(xs, values, strict=True))}
    es = [math.exp(av * v) for v in values]

    tangents = {A: 0.1, **{k: 0.01 * (i + 1) for i, k in enumerate(xs)}}
    expected_jvp = sum(
        e * (0.1 * v + av * tangents[k]) for e, v, k in zip(es, values, xs, strict=True)
    )
    assert jvp_values(linear, primals, tangents) == [pytest.approx(expected_jvp)]

    grads = vjp_values(linear, primals, [ct], ctx=log)
    assert grads[0] == pytest.approx(ct * sum(v * e for v, e in zip(values, es, strict=True)))
    for got, e in zip(grads[1:], es, strict=True):
        assert got == pytest.approx(ct * av * e)
    assert both_vjps(linear, primals, [ct]) == grads
    # One n-ary sum in the linear graph, transposed once; its cotangent reaches every term.
    assert log.count(ADRuleKind.TRANSPOSE, SumN) == 1
    assert log.count(ADRuleKind.JVP, SumN) == 1


def test_sincos_jvp_vjp_and_adjoint() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    s, c = b.add_operation(SinCos(), [x], Primary())
    g = build([s, c], b)
    linear = lin(g, [X])
    xv, v = 0.9, 0.3
    assert jvp_values(linear, {X: xv}, {X: v}) == [
        pytest.approx(math.cos(xv) * v),
        pytest.approx(-math.sin(xv) * v),
    ]
    u0, u1 = 1.7, -0.4
    (g_x,) = both_vjps(linear, {X: xv}, [u0, u1])
    assert g_x == pytest.approx(u0 * math.cos(xv) - u1 * math.sin(xv))
    jv = jvp_values(linear, {X: xv}, {X: v})
    assert jv[0] * u0 + jv[1] * u1 == pytest.approx(v * g_x)
    # Only one output seeded.
    assert both_vjps(linear, {X: xv}, [0.0, 1.0]) == [pytest.approx(-math.sin(xv))]
    assert both_vjps(linear, {X: xv}, [1.0, 0.0]) == [pytest.approx(math.cos(xv))]


def _two_in_two_out() -> Graph:
    """f(x, y) = (sin(x*y), cos(x) + exp(y) * x), with sincos feeding both."""
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    xy = emit(b, Mul(), x, y)
    s, _ = b.add_operation(SinCos(), [xy], Primary())
    second = emit(b, Add(), emit(b, Cos(), x), emit(b, Mul(), emit(b, Exp(), y), x))
    return build([s, second], b)


def test_adjoint_consistency_multi_input_multi_output() -> None:
    g = _two_in_two_out()
    linear = lin(g, [X, Y])
    rng = random.Random(1234)
    for _ in range(5):
        primals = {X: rng.uniform(-2, 2), Y: rng.uniform(-2, 2)}
        v = [rng.uniform(-1, 1), rng.uniform(-1, 1)]
        u = [rng.uniform(-1, 1), rng.uniform(-1, 1)]
        jv = jvp_values(linear, primals, {X: v[0], Y: v[1]})
        jtu = both_vjps(linear, primals, u)
        lhs = sum(a * b for a, b in zip(jv, u, strict=True))
        rhs = sum(a * b for a, b in zip(v, jtu, strict=True))
        assert lhs == pytest.approx(rhs, rel=1e-12)
        # And against the analytic Jacobian.
        xv, yv = primals[X], primals[Y]
        jac = [
            [yv * math.cos(xv * yv), xv * math.cos(xv * yv)],
            [-math.sin(xv) + math.exp(yv), math.exp(yv) * xv],
        ]
        for row, got in zip(jac, jv, strict=True):
            assert got == pytest.approx(row[0] * v[0] + row[1] * v[1])


def test_exp_chain_ten_deep() -> None:
    """y_{k+1} = exp(-y_k), ten times: dy/dx = prod(-y_k) for k = 1..10."""
    b = GraphBuilder()
    cur = b.add_input(X)
    for _ in range(10):
        cur = emit(b, Exp(), emit(b, Neg(), cur))
    g = build([cur], b)
    log = RuleLog()
    linear = lin(g, [X], ctx=log)
    assert log.count(ADRuleKind.JVP, Exp) == 10
    assert log.count(ADRuleKind.JVP, Neg) == 10
    xv = 0.37
    ys, y = [], xv
    for _ in range(10):
        y = math.exp(-y)
        ys.append(y)
    expected = math.prod(-yk for yk in ys)
    assert evaluate(g, {X: xv})[g.output_keys()[0]] == pytest.approx(ys[-1])
    assert jvp_values(linear, {X: xv}, {X: 1.0}) == [pytest.approx(expected)]
    assert both_vjps(linear, {X: xv}, [1.0]) == [pytest.approx(expected)]
    # Cross-check with a central difference.
    h = 1e-6
    fd = (
        evaluate(g, {X: xv + h})[g.output_keys()[0]] - evaluate(g, {X: xv - h})[g.output_keys()[0]]
    ) / (2 * h)
    assert expected == pytest.approx(fd, rel=1e-6)


def test_diamond_shared_subexpression_processed_once() -> None:
    """a = exp(x); y = sin(a) * cos(a): the exp node is linearized and transposed once."""
    b = GraphBuilder()
    x = b.add_input(X)
    a = emit(b, Exp(), x)
    g = build([emit(b, Mul(), emit(b, Sin(), a), emit(b, Cos(), a))], b)
    log = RuleLog()
    linear = lin(g, [X], ctx=log)
    jvp_counts = {t: log.count(ADRuleKind.JVP, t) for t in (Exp, Sin, Cos, Mul)}
    assert jvp_counts == {Exp: 1, Sin: 1, Cos: 1, Mul: 1}
    assert log.count(ADRuleKind.JVP) == 4

    xv = 0.2
    ea = math.exp(xv)
    expected = math.cos(2 * ea) * ea  # d/dx sin(e^x) cos(e^x)
    assert jvp_values(linear, {X: xv}, {X: 1.0}) == [pytest.approx(expected)]

    tlog = RuleLog()
    assert vjp_values(linear, {X: xv}, [1.0], ctx=tlog) == [pytest.approx(expected)]
    n_linear = sum(isinstance(n.role, Linearized) for n in linear.graph.operations)
    assert tlog.count(ADRuleKind.TRANSPOSE) == n_linear
    # Each linear op transposed exactly once.
    assert sorted(id(op) for _, op, _ in tlog.calls) == sorted(
        id(n.operation) for n in linear.graph.operations if isinstance(n.role, Linearized)
    )


def test_diamond_accumulates_with_add() -> None:
    """The cotangent of the shared value is the sum of its two uses (one Add)."""
    b = GraphBuilder()
    x = b.add_input(X)
    a = emit(b, Exp(), x)
    g = build([emit(b, Add(), emit(b, Sin(), a), emit(b, Cos(), a))], b)
    linear = lin(g, [X])
    xv = -0.4
    ea = math.exp(xv)
    builder = EvalBuilder(evaluate(linear.graph, {X: xv}))
    (out,) = linear_transpose_with_builder(linear, builder, [builder.constant(1.0)])
    assert out is not None
    assert builder.values[out] == pytest.approx((math.cos(ea) - math.sin(ea)) * ea)
    # Add's transpose broadcasts one cotangent to both branches; the two branch
    # cotangents meet at da and are summed there with one accumulation Add.
    accumulation_adds = [
        op for op, role in builder.ops if isinstance(op, Add) and role == Linearized((True, True))
    ]
    assert len(accumulation_adds) == 1


def test_inactive_tangent_gives_none() -> None:
    """d(x * exp(y)) wrt x only: no tangent flows through exp(y)."""
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    g = build([emit(b, Mul(), x, emit(b, Exp(), y))], b)
    log = RuleLog()
    linear = lin(g, [X], ctx=log)
    assert log.count(ADRuleKind.JVP, Exp) == 0  # no active tangent: rule not called
    ((kind, op, tangents),) = log.calls
    assert (kind, op) == (ADRuleKind.JVP, Mul())
    assert tangents[0] is not None and tangents[1] is None
    assert [raw for raw, _ in linear.tangent_inputs] == [X]
    primals = {X: 1.5, Y: 0.25}
    assert jvp_values(linear, primals, {X: 2.0}) == [pytest.approx(2.0 * math.exp(0.25))]
    assert both_vjps(linear, primals, [1.0]) == [pytest.approx(math.exp(0.25))]


def test_wrt_input_unused_gets_none_cotangent() -> None:
    b = GraphBuilder()
    x, _ = b.add_input(X), b.add_input(Y)
    g = build([emit(b, Sin(), x)], b)
    linear = lin(g, [X, Y])
    assert both_vjps(linear, {X: 0.5, Y: 9.0}, [1.0]) == [pytest.approx(math.cos(0.5)), None]


def test_constant_output_has_no_tangent() -> None:
    c = Name("c")
    b = GraphBuilder()
    x, cid = b.add_input(X), b.add_input(c)
    g = build([emit(b, Mul(), x, x), emit(b, Exp(), cid), cid, x], b)
    linear = lin(g, [X])
    t = linear.tangent_outputs
    assert t[0] is not None and t[1] is None and t[2] is None
    assert t[3] == linear.tangent_inputs[0][1]  # an input's tangent is its tangent input
    assert len(linear.graph.outputs) == 2
    primals = {X: 3.0, c: 1.0}
    assert jvp_values(linear, primals, {X: 0.5}) == [pytest.approx(3.0), None, None, 0.5]
    # Cotangents of outputs without a tangent are ignored.
    assert both_vjps(linear, primals, [1.0, 100.0, 100.0, 0.25]) == [pytest.approx(6.25)]


def test_no_dependence_at_all() -> None:
    c = Name("c")
    b = GraphBuilder()
    b.add_input(X)
    cid = b.add_input(c)
    g = build([emit(b, Exp(), cid)], b)
    linear = lin(g, [X])
    assert linear.tangent_outputs == (None,)
    assert linear.graph.outputs == ()
    assert not linear.graph.operations
    assert vjp_values(linear, {X: 1.0, c: 1.0}, [1.0]) == [None]


def test_multi_variable_vjp() -> None:
    """f = x*y + sin(z)*x: grad = (y + sin z, x, x cos z)."""
    b = GraphBuilder()
    x, y, z = b.add_input(X), b.add_input(Y), b.add_input(Z)
    g = build([emit(b, Add(), emit(b, Mul(), x, y), emit(b, Mul(), emit(b, Sin(), z), x))], b)
    linear = lin(g, [X, Y, Z])
    xv, yv, zv = 1.2, -0.7, 2.1
    grads = both_vjps(linear, {X: xv, Y: yv, Z: zv}, [1.0])
    assert grads == [
        pytest.approx(yv + math.sin(zv)),
        pytest.approx(xv),
        pytest.approx(xv * math.cos(zv)),
    ]
    # Subset and reordering of wrt.
    linear_zx = lin(g, [Z, X])
    assert both_vjps(linear_zx, {X: xv, Y: yv, Z: zv}, [2.0]) == [
        pytest.approx(2 * xv * math.cos(zv)),
        pytest.approx(2 * (yv + math.sin(zv))),
    ]


def test_aliases_chain_graphs() -> None:
    """A second graph's input ``u`` aliased to the first graph's output exp(x)."""
    u = Name("u")
    b1 = GraphBuilder()
    x = b1.add_input(X)
    g1 = build([emit(b1, Exp(), x)], b1)
    b2 = GraphBuilder()
    g2 = build([emit(b2, Sin(), b2.add_input(u))], b2)
    linear = linearize(
        [g1, g2], g2.output_keys(), [X], fresh_pass_id(), aliases={u: g1.output_keys()[0]}
    )
    xv = 0.3
    primals = {X: xv, u: math.exp(xv)}
    expected = math.cos(math.exp(xv)) * math.exp(xv)
    assert jvp_values(linear, primals, {X: 1.0}) == [pytest.approx(expected)]
    assert both_vjps(linear, primals, [1.0]) == [pytest.approx(expected)]


def test_deep_chain_no_recursion() -> None:
    """Linearize and transpose a 10k-op chain iteratively: (-1)^n."""
    n = 10_000
    b = GraphBuilder()
    cur = b.add_input(X)
    for _ in range(n):
        cur = emit(b, Neg(), cur)
    g = build([cur], b)
    linear = lin(g, [X])
    assert jvp_values(linear, {X: 1.0}, {X: 3.0}) == [3.0]
    assert vjp_values(linear, {X: 1.0}, [-2.0]) == [-2.0]


def test_input_key_is_value_key() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    assert b.global_key(x) == Input(X)

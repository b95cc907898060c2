"""Higher order: linearize linear graphs again (forward-over-forward), transpose the
linearization of a linearized graph (reverse-over-forward), linearize a transposed
graph (forward-over-reverse)."""

from __future__ import annotations

import cmath
import math
from collections.abc import Hashable

import pytest
from scalar_prims import Add, Conj, Exp, Mul, Sin
from scalar_runtime import emit, evaluate, jvp_values, output_key, vjp_values, vjp_values_graph

from tidu_compile.ad import LinearizedGraph, Name, fresh_pass_id, linear_transpose, linearize
from tidu_compile.graph import Graph, GraphBuilder

X, Y = Name("x"), Name("y")


def power(n: int) -> Graph:
    """x**n as a chain of n - 1 multiplications."""
    b = GraphBuilder()
    x = b.add_input(X)
    cur = x
    for _ in range(n - 1):
        cur = emit(b, Mul(), cur, x)
    b.set_outputs([cur])
    return b.build()


def nested_linearizations(graph: Graph, depth: int) -> list[tuple[LinearizedGraph, int]]:
    """Linearize ``graph`` wrt x, then its linear graph wrt x, ... (fresh pass ids)."""
    out: list[tuple[LinearizedGraph, int]] = []
    keys = graph.output_keys()
    current = graph
    for _ in range(depth):
        pass_id = fresh_pass_id()
        linear = linearize(current, keys, [X], pass_id)
        out.append((linear, pass_id))
        if linear.tangent_outputs[0] is None:
            break
        current, keys = linear.graph, [output_key(linear)]
    return out


def derivative_value(
    chain: list[tuple[LinearizedGraph, int]], order: int, x: float, seeds: list[float]
) -> float:
    """Value of the ``order``-th tangent output with tangent seeds ``seeds`` per pass."""
    linear, _ = chain[order - 1]
    primals: dict[Hashable, float] = {X: x}
    for (_, pass_id), seed in zip(chain[: order - 1], seeds, strict=False):
        primals[X.tangent_of(pass_id)] = seed
    (value,) = jvp_values(linear, primals, {X: seeds[order - 1]})
    return 0.0 if value is None else value


@pytest.mark.parametrize(
    ("n", "derivatives"),
    [
        (3, [lambda x: 3 * x**2, lambda x: 6 * x, lambda x: 6.0, lambda x: 0.0]),
        (4, [lambda x: 4 * x**3, lambda x: 12 * x**2, lambda x: 24 * x, lambda x: 24.0]),
    ],
)
def test_forward_over_forward_power(n: int, derivatives: list) -> None:
    chain = nested_linearizations(power(n), 4)
    pass_ids = [p for _, p in chain]
    assert len(set(pass_ids)) == len(pass_ids)
    for x in (-1.5, 0.5, 1.3):
        for order, expected in enumerate(derivatives, start=1):
            if order > len(chain):
                assert expected(x) == 0.0
                continue
            got = derivative_value(chain, order, x, [1.0] * order)
            assert got == pytest.approx(expected(x), abs=1e-12), (n, order, x)


def test_fourth_derivative_of_cube_is_structurally_zero() -> None:
    chain = nested_linearizations(power(3), 4)
    assert len(chain) == 4
    last, _ = chain[-1]
    assert last.tangent_outputs == (None,)
    assert not last.graph.operations


def test_forward_over_forward_is_multilinear_in_seeds() -> None:
    """The k-th nested tangent is f^(k)(x) times the product of the k seeds."""
    chain = nested_linearizations(power(4), 3)
    seeds = [0.5, -2.0, 1.5]
    x = 0.8
    assert derivative_value(chain, 2, x, seeds) == pytest.approx(12 * x**2 * 0.5 * -2.0)
    assert derivative_value(chain, 3, x, seeds) == pytest.approx(24 * x * 0.5 * -2.0 * 1.5)


def test_tangent_keys_of_nested_passes() -> None:
    chain = nested_linearizations(power(3), 3)
    for linear, pass_id in chain:
        ((raw, local_id),) = linear.tangent_inputs
        assert raw == X
        assert linear.graph.values[local_id].key.key == X.tangent_of(pass_id)


def _sin_exp() -> Graph:
    """f(x) = sin(exp(x)); f' = cos(e^x) e^x; f'' = e^x cos(e^x) - e^{2x} sin(e^x)."""
    b = GraphBuilder()
    b.set_outputs([emit(b, Sin(), emit(b, Exp(), b.add_input(X)))])
    return b.build()


def _f1(x: float) -> float:
    return math.cos(math.exp(x)) * math.exp(x)


def _f2(x: float) -> float:
    e = math.exp(x)
    return e * math.cos(e) - e * e * math.sin(e)


def test_reverse_over_forward_hvp() -> None:
    g = _sin_exp()
    p1 = fresh_pass_id()
    lin1 = linearize(g, g.output_keys(), [X], p1)
    dx1 = X.tangent_of(p1)
    # Linearize the JVP graph wrt x (dx1 is a primal input now), then transpose it.
    lin2 = linearize(lin1.graph, [output_key(lin1)], [X], fresh_pass_id())
    for x in (-0.3, 0.4, 1.1):
        v, u = 0.7, -1.3
        (hvp,) = vjp_values(lin2, {X: x, dx1: v}, [u])
        assert hvp == pytest.approx(_f2(x) * v * u)
        assert vjp_values_graph(lin2, {X: x, dx1: v}, [u]) == [pytest.approx(hvp)]


def test_reverse_over_forward_wrt_primal_and_tangent() -> None:
    """Transposing d(f'(x) dx) wrt (x, dx) gives (f''(x) dx u, f'(x) u)."""
    g = _sin_exp()
    p1 = fresh_pass_id()
    lin1 = linearize(g, g.output_keys(), [X], p1)
    dx1 = X.tangent_of(p1)
    lin2 = linearize(lin1.graph, [output_key(lin1)], [X, dx1], fresh_pass_id())
    x, v, u = 0.25, 2.0, 0.5
    assert vjp_values(lin2, {X: x, dx1: v}, [u]) == [
        pytest.approx(_f2(x) * v * u),
        pytest.approx(_f1(x) * u),
    ]


def test_reverse_over_forward_two_variables() -> None:
    """Hessian-vector product of f(x, y) = x*x*y + sin(y)*x."""
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    f = emit(
        b, Add(), emit(b, Mul(), emit(b, Mul(), x, x), y), emit(b, Mul(), emit(b, Sin(), y), x)
    )
    b.set_outputs([f])
    g = b.build()
    p1 = fresh_pass_id()
    lin1 = linearize(g, g.output_keys(), [X, Y], p1)
    lin2 = linearize(lin1.graph, [output_key(lin1)], [X, Y], fresh_pass_id())
    xv, yv = 0.6, -1.2
    vx, vy = 0.3, -0.8
    hess = [[2 * yv, 2 * xv + math.cos(yv)], [2 * xv + math.cos(yv), -math.sin(yv) * xv]]
    primals = {X: xv, Y: yv, X.tangent_of(p1): vx, Y.tangent_of(p1): vy}
    got = vjp_values(lin2, primals, [1.0])
    for row, value in zip(hess, got, strict=True):
        assert value == pytest.approx(row[0] * vx + row[1] * vy)


def test_forward_over_reverse() -> None:
    """Linearize the VJP graph ct -> f'(x) ct wrt x: f''(x) ct dx."""
    g = _sin_exp()
    lin1 = linearize(g, g.output_keys(), [X], fresh_pass_id())
    transposed = linear_transpose(lin1)
    ((seed_key, _),) = transposed.tangent_inputs
    x, ct, dx = 0.1, 1.5, -0.5
    assert vjp_values_graph(lin1, {X: x}, [ct]) == [pytest.approx(_f1(x) * ct)]
    lin2 = linearize(transposed.graph, [output_key(transposed)], [X], fresh_pass_id())
    assert jvp_values(lin2, {X: x, seed_key: ct}, {X: dx}) == [pytest.approx(_f2(x) * ct * dx)]


def test_forward_over_reverse_wrt_seed_is_the_gradient() -> None:
    g = _sin_exp()
    lin1 = linearize(g, g.output_keys(), [X], fresh_pass_id())
    transposed = linear_transpose(lin1)
    ((seed_key, _),) = transposed.tangent_inputs
    lin2 = linearize(transposed.graph, [output_key(transposed)], [seed_key], fresh_pass_id())
    x = -0.6
    assert jvp_values(lin2, {X: x, seed_key: 123.0}, {seed_key: 2.0}) == [
        pytest.approx(2.0 * _f1(x))
    ]


def test_transposing_twice_gives_back_the_jvp() -> None:
    """(J^T)^T = J, complex and multi-output included."""
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    first = emit(b, Sin(), emit(b, Exp(), emit(b, Mul(), x, emit(b, Conj(), y))))
    b.set_outputs([first, emit(b, Mul(), x, y)])
    g = b.build()
    lin1 = linearize(g, g.output_keys(), [X, Y], fresh_pass_id())
    twice = linear_transpose(linear_transpose(lin1))
    primals = {X: 0.3 + 0.2j, Y: -0.5 + 1.0j}
    v = {X: 0.7 - 0.1j, Y: 0.2 + 0.3j}
    data = dict(primals)
    for (seed, _), (raw, _) in zip(twice.tangent_inputs, lin1.tangent_inputs, strict=True):
        data[seed] = v[raw]
    env = evaluate(twice.graph, data)
    got = [env[twice.graph.values[t].key] for t in twice.tangent_outputs]
    expected = jvp_values(lin1, primals, v)
    assert got == [pytest.approx(e) for e in expected]
    # And against the analytic JVP of the first output.
    xv, yv = primals[X], primals[Y]
    inner = xv * yv.conjugate()
    d_inner = v[X] * yv.conjugate() + xv * v[Y].conjugate()
    assert got[0] == pytest.approx(cmath.cos(cmath.exp(inner)) * cmath.exp(inner) * d_inner)

"""Complex scalars: tidu's (PyTorch's) convention.

For ``y = f(z)``: ``ct_z = ct_y * conj(df/dz) + conj(ct_y) * df/dconj(z)``; for a real
loss the gradient is ``2 * dL/dconj(z)`` (``|z|^2`` gives ``2z``).
"""

from __future__ import annotations

import cmath
import random

import pytest
from scalar_prims import Add, Conj, Exp, Mul, Scale, Sin
from scalar_runtime import (
    ScalarExecutor,
    Tape,
    emit,
    evaluate,
    jvp_values,
    vjp_values,
    vjp_values_graph,
)

from tidu_compile.ad import Name, fresh_pass_id, linearize
from tidu_compile.eager import backward
from tidu_compile.graph import Graph, GraphBuilder

Z, W = Name("z"), Name("w")


def unary(op_chain: list) -> Graph:
    b = GraphBuilder()
    cur = b.add_input(Z)
    for op in op_chain:
        cur = emit(b, op, cur)
    b.set_outputs([cur])
    return b.build()


def abs2() -> Graph:
    b = GraphBuilder()
    z = b.add_input(Z)
    b.set_outputs([emit(b, Mul(), z, emit(b, Conj(), z))])
    return b.build()


def vjp_both(graph: Graph, primals: dict, ct: complex) -> complex:
    linear = linearize(graph, graph.output_keys(), [Z], fresh_pass_id())
    (a,) = vjp_values(linear, primals, [ct])
    (b,) = vjp_values_graph(linear, primals, [ct])
    assert a == pytest.approx(b)
    return a


def test_conj_jvp_and_vjp() -> None:
    g = unary([Conj()])
    linear = linearize(g, g.output_keys(), [Z], fresh_pass_id())
    z, dz, ct = 1.0 + 2.0j, 0.5 - 0.25j, -1.5 + 3.0j
    assert jvp_values(linear, {Z: z}, {Z: dz}) == [pytest.approx(dz.conjugate())]
    # df/dz = 0, df/dconj(z) = 1: ct_z = conj(ct_y).
    assert vjp_both(g, {Z: z}, ct) == pytest.approx(ct.conjugate())


@pytest.mark.parametrize("z", [1.0 + 2.0j, -0.5 + 0.1j, 3.0 + 0.0j, 0.0 - 1.0j])
def test_abs_squared_gradient_is_2z(z: complex) -> None:
    g = abs2()
    value = g.output_keys()[0]
    assert evaluate(g, {Z: z})[value] == pytest.approx(abs(z) ** 2)
    assert vjp_both(g, {Z: z}, 1.0 + 0.0j) == pytest.approx(2 * z)
    # A real seed works too.
    assert vjp_both(g, {Z: z}, 1.0) == pytest.approx(2 * z)


def test_abs_squared_jvp_is_real() -> None:
    g = abs2()
    linear = linearize(g, g.output_keys(), [Z], fresh_pass_id())
    z, dz = 0.3 - 1.2j, 0.7 + 0.4j
    (t,) = jvp_values(linear, {Z: z}, {Z: dz})
    # d|z|^2 = 2 Re(conj(z) dz)
    assert t == pytest.approx(2 * (z.conjugate() * dz).real)
    assert abs(t.imag) < 1e-15


def test_holomorphic_gradients_are_conjugated() -> None:
    z = 0.4 + 0.9j
    # z*z: ct_z = conj(2z)
    b = GraphBuilder()
    zi = b.add_input(Z)
    b.set_outputs([emit(b, Mul(), zi, zi)])
    assert vjp_both(b.build(), {Z: z}, 1.0) == pytest.approx((2 * z).conjugate())
    assert vjp_both(unary([Exp()]), {Z: z}, 1.0) == pytest.approx(cmath.exp(z).conjugate())
    assert vjp_both(unary([Sin()]), {Z: z}, 2.0j) == pytest.approx(2.0j * cmath.cos(z).conjugate())
    c = 2.0 - 3.0j
    assert vjp_both(unary([Scale(c)]), {Z: z}, 1.0) == pytest.approx(c.conjugate())


def test_general_formula_non_holomorphic() -> None:
    """f(z) = z^2 conj(z): df/dz = 2|z|^2, df/dconj(z) = z^2."""
    b = GraphBuilder()
    zi = b.add_input(Z)
    b.set_outputs([emit(b, Mul(), emit(b, Mul(), zi, zi), emit(b, Conj(), zi))])
    g = b.build()
    z, ct = 0.8 - 0.6j, 1.1 + 0.5j
    expected = ct * (2 * abs(z) ** 2) + ct.conjugate() * z**2
    assert vjp_both(g, {Z: z}, ct) == pytest.approx(expected)


def _re_inner(a: complex, b: complex) -> float:
    return (a.conjugate() * b).real


def test_complex_adjoint_consistency() -> None:
    """Re<J v, u> == Re<v, J^T u> for f(z, w) = (z*conj(w) + exp(z), sin(w)*z)."""
    b = GraphBuilder()
    z, w = b.add_input(Z), b.add_input(W)
    first = emit(b, Add(), emit(b, Mul(), z, emit(b, Conj(), w)), emit(b, Exp(), z))
    second = emit(b, Mul(), emit(b, Sin(), w), z)
    b.set_outputs([first, second])
    g = b.build()
    linear = linearize(g, g.output_keys(), [Z, W], fresh_pass_id())
    rng = random.Random(7)

    def rc() -> complex:
        return complex(rng.uniform(-1, 1), rng.uniform(-1, 1))

    for _ in range(5):
        primals = {Z: rc(), W: rc()}
        v = [rc(), rc()]
        u = [rc(), rc()]
        jv = jvp_values(linear, primals, {Z: v[0], W: v[1]})
        jtu = vjp_values(linear, primals, u)
        lhs = sum(_re_inner(a, b) for a, b in zip(jv, u, strict=True))
        rhs = sum(_re_inner(a, b) for a, b in zip(v, jtu, strict=True))
        assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


def test_abs_squared_through_the_tape() -> None:
    tape = Tape()
    executor = ScalarExecutor()
    z = tape.leaf(1.5 - 0.5j)
    y = tape.apply1(Mul(), z, tape.apply1(Conj(), z))
    grads = backward(y.key, y.trace, 1.0, executor)
    assert grads[z.key] == pytest.approx(2 * z.value)
    # z feeds two nodes: the two contributions were added by the executor.
    assert executor.add_calls == 1

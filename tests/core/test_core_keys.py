"""Structural value keys (O(1) hash, iterative equality, immutability) and ``resolve``."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import pytest
from scalar_prims import LIN1, Exp, Neg, Scale, Sin
from scalar_runtime import emit, jvp_values, output_key

from tidu_compile.ad import (
    CotangentKey,
    LinearizedGraph,
    Name,
    fresh_pass_id,
    linear_transpose,
    linearize,
)
from tidu_compile.graph import (
    Derived,
    External,
    GraphBuilder,
    Input,
    InputDef,
    Linearized,
    Local,
    OperationKey,
    Primary,
    ProducedDef,
    ValueKey,
    resolve,
)

X, Y = Name("x"), Name("y")
DEPTH = 100_000


def chain(depth: int, root: ValueKey, op: object = None) -> ValueKey:
    """Neg applied ``depth`` times; the first application uses ``op`` when given."""
    key = root
    for i in range(depth):
        key = Derived(
            OperationKey(op if (i == 0 and op is not None) else Neg(), (key,), Primary()), 0
        )
    return key


@pytest.fixture(scope="module")
def deep_pair() -> tuple[ValueKey, ValueKey]:
    return chain(DEPTH, Input(X)), chain(DEPTH, Input(X))


@dataclass(frozen=True)
class ConstHash:
    """An op whose hash ignores its tag, so keys differing only in it collide."""

    tag: str

    def __hash__(self) -> int:
        return 0


def test_hash_of_deep_key_is_constant_time(deep_pair: tuple[ValueKey, ValueKey]) -> None:
    deep, _ = deep_pair
    shallow = chain(1, Input(X))
    start = time.perf_counter()
    for _ in range(10_000):
        hash(deep)
    elapsed = time.perf_counter() - start
    # A recursive hash of 100k levels would take milliseconds per call.
    assert elapsed < 0.05
    assert hash(deep) == hash(deep)
    assert hash(deep) != hash(shallow)


def test_structural_equality_of_deep_chains(deep_pair: tuple[ValueKey, ValueKey]) -> None:
    a, b = deep_pair
    assert a is not b
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert a.operation == b.operation
    below = a.operation.inputs[0]  # the same chain one level shorter
    assert a != below and below == b.operation.inputs[0]
    assert a != Derived(OperationKey(Neg(), (Input(Y),), Primary()), 0)


def test_deep_inequality_found_at_the_bottom() -> None:
    """Equal hashes all the way down; only the first op differs: equality must walk."""
    a = chain(DEPTH, Input(X), ConstHash("a"))
    b = chain(DEPTH, Input(X), ConstHash("b"))
    assert hash(a) == hash(b)
    assert a != b
    short_a = chain(1000, Input(X), ConstHash("a"))
    assert short_a == chain(1000, Input(X), ConstHash("a"))
    assert short_a != chain(1000, Input(X), ConstHash("b"))


def test_equality_distinguishes_slot_role_and_inputs() -> None:
    op = OperationKey(Sin(), (Input(X),), Primary())
    assert Derived(op, 0) == Derived(OperationKey(Sin(), (Input(X),), Primary()), 0)
    assert Derived(op, 0) != Derived(op, 1)
    assert op != OperationKey(Sin(), (Input(X),), Linearized((True,)))
    assert op != OperationKey(Sin(), (Input(Y),), Primary())
    assert op != OperationKey(Exp(), (Input(X),), Primary())
    assert Input(X) != Derived(op, 0)
    assert Input(X) == Input(Name("x"))
    assert Input(X) != Input(Y)
    assert Input(X) != X


def test_keys_are_immutable() -> None:
    inp = Input(X)
    op = OperationKey(Sin(), (inp,), Primary())
    der = Derived(op, 0)
    with pytest.raises(AttributeError):
        inp.key = Y
    with pytest.raises(AttributeError):
        op.inputs = ()
    with pytest.raises(AttributeError):
        op.operation = Exp()
    with pytest.raises(AttributeError):
        der.output_slot = 1
    for frozen, name in (
        (Local(0), "id"),
        (External(inp), "key"),
        (Linearized((True,)), "active_mask"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, name, None)
    assert inp == Input(X) and der.output_slot == 0 and op.inputs == (inp,)


def test_graph_is_immutable() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    b.set_outputs([emit(b, Sin(), x)])
    g = b.build()
    with pytest.raises(AttributeError):
        g.outputs = ()
    assert isinstance(g.values, tuple) and isinstance(g.operations, tuple)
    # Building again after more ops does not change the first graph.
    emit(b, Exp(), x)
    assert len(g.operations) == 1


def test_key_attributes_cannot_be_deleted() -> None:
    inp = Input(X)
    der = Derived(OperationKey(Sin(), (inp,), Primary()), 0)
    for key, attribute in ((inp, "key"), (der, "output_slot"), (der.operation, "inputs")):
        with pytest.raises(AttributeError):
            delattr(key, attribute)


def test_name_tangent_keys() -> None:
    assert X.tangent_of(3) == Name("x", (3,))
    assert X.tangent_of(3).tangent_of(5) == Name("x", (3, 5))
    assert X.tangent_of(3) != X.tangent_of(4)
    assert X.tangent_of(3) != X
    assert fresh_pass_id() != fresh_pass_id()


# --------------------------------------------------------------------------- resolve


@dataclass(frozen=True)
class Tagged(Sin):
    """Sin with a label that takes no part in equality or hashing."""

    label: str = field(default="", compare=False)


def _graph_with(op: object, parent=None):
    b = GraphBuilder()
    if parent is not None:
        b.add_parent(parent)
    x = b.add_input(X)
    b.set_outputs([emit(b, op, x)])
    return b.build()


def test_resolve_parents_first_first_definition_wins() -> None:
    parent = _graph_with(Tagged("parent"))
    child = _graph_with(Tagged("child"), parent)
    key = child.output_keys()[0]
    assert key == parent.output_keys()[0]
    view = resolve(child)
    assert view.graphs == [parent, child]
    definition = view.resolve_value(key)
    assert isinstance(definition, ProducedDef)
    assert definition.operation.label == "parent"  # the parent's definition came first
    assert definition.input_keys == (Input(X),) and definition.output_slot == 0
    assert definition.role == Primary()
    assert view.resolve_value(Input(X)) == InputDef(Input(X))
    assert view.resolve_value(Input(Y)) is None
    assert key in view and Input(Y) not in view

    # Among roots, the first given wins.
    a, b = _graph_with(Tagged("a")), _graph_with(Tagged("b"))
    assert resolve([a, b]).resolve_value(key).operation.label == "a"
    assert resolve([b, a]).resolve_value(key).operation.label == "b"
    # A parent listed after its child is still resolved first, once.
    view = resolve([child, parent])
    assert view.graphs == [parent, child]
    assert view.resolve_value(key).operation.label == "parent"


def test_resolve_shared_grandparent_visited_once() -> None:
    root = _graph_with(Sin())
    left, right = _graph_with(Exp(), root), _graph_with(Neg(), root)
    b = GraphBuilder()
    b.add_parent(left)
    b.add_parent(right)
    top = b.build()
    view = resolve(top)
    assert [id(g) for g in view.graphs] == [id(root), id(left), id(right), id(top)]
    assert view.roots == [top]
    for g in (root, left, right):
        assert isinstance(view.resolve_value(g.output_keys()[0]), ProducedDef)


def test_resolve_linearized_graph_sees_primal_values() -> None:
    g = _graph_with(Sin())
    linear = linearize(g, g.output_keys(), [X], fresh_pass_id())
    view = resolve(linear.graph)
    assert view.graphs[0] is g
    assert isinstance(view.resolve_value(g.output_keys()[0]), ProducedDef)
    for node in linear.graph.operations:
        for ref in node.inputs:
            if isinstance(ref, External):
                assert ref.key in view


# --------------------------------------------------------------------------- cotangent keys


def _colliding_outputs() -> tuple[LinearizedGraph, float, float]:
    """A linear graph dx -> (c1 dx, c2 dx) whose two output keys agree in their low 16
    hash bits (found by search; string hashing is randomized per process)."""
    b = GraphBuilder()
    dx = b.add_input(X)
    seen: dict[int, tuple[int, float]] = {}
    for i in range(1, 20_000):
        c = float(i)
        (out,) = b.add_primitive(Scale(c), [dx], LIN1)
        low = hash(b.global_key(out)) & 0xFFFF
        if low in seen:
            first, c_first = seen[low]
            b.set_outputs([first, out])
            graph = b.build()
            return LinearizedGraph(graph, ((X, dx),), (first, out)), c_first, c
        seen[low] = (out, c)
    raise AssertionError("no collision found")


def test_cotangent_key_tangents_are_distinct() -> None:
    linear, c1, c2 = _colliding_outputs()
    transposed = linear_transpose(linear)
    (k1, _), (k2, _) = transposed.tangent_inputs
    assert isinstance(k1, CotangentKey) and k1 != k2
    pass_id = fresh_pass_id()
    # Linearize ct -> c1 ct1 + c2 ct2 with respect to both seeds.
    lin2 = linearize(transposed.graph, [output_key(transposed)], [k1, k2], pass_id)
    seed_keys = [lin2.graph.values[i].key for _, i in lin2.tangent_inputs]
    assert seed_keys[0] != seed_keys[1]
    primals = {X: 0.0, k1: 0.0, k2: 0.0}
    assert jvp_values(lin2, primals, {k1: 1.0, k2: 0.0}) == [c1]
    assert jvp_values(lin2, primals, {k1: 0.0, k2: 1.0}) == [c2]

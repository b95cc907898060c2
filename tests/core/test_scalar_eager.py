"""The eager tape with scalar operands and a scalar executor."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from scalar_prims import Add, Cos, Exp, Mul, Polar, Scale, Sin, SinCos, SumN
from scalar_runtime import ScalarExecutor, Tape, emit

from tidu_compile.ad import LinearizedGraph, Name
from tidu_compile.eager import (
    BackwardExecutor,
    EagerInput,
    EagerOutput,
    KeySource,
    RecordedGraph,
    Recorder,
    Trace,
    backward,
)
from tidu_compile.graph import GraphBuilder, Input


def test_nary_op_with_inputs_not_requiring_grad() -> None:
    tape = Tape()
    a, b, c = tape.leaf(1.0), tape.leaf(2.0, requires_grad=False), tape.leaf(3.0)
    y = tape.apply1(SumN(3), a, b, c)
    assert y.value == 6.0
    assert y.requires_grad and isinstance(y.trace, Trace)
    grads = backward(y.key, y.trace, 0.5, ScalarExecutor())
    assert grads[a.key] == 0.5 and grads[c.key] == 0.5
    assert b.key not in grads
    assert grads[y.key] == 0.5


def test_no_trace_when_no_input_requires_grad() -> None:
    tape = Tape()
    a, b = tape.leaf(1.0, requires_grad=False), tape.leaf(2.0, requires_grad=False)
    outs = tape.apply(Polar(), a, b)
    assert [o.trace for o in outs] == [None, None]
    assert [o.requires_grad for o in outs] == [False, False]
    assert outs[0].key != outs[1].key
    assert backward(outs[0].key, outs[0].trace, 1.0, ScalarExecutor()) == {outs[0].key: 1.0}
    # Downstream of a constant, with a differentiable input again: only x is reached.
    x = tape.leaf(0.5)
    z = tape.apply1(Mul(), outs[0], x)
    grads = backward(z.key, z.trace, 1.0, ScalarExecutor())
    assert grads[x.key] == pytest.approx(outs[0].value)
    assert outs[0].key not in grads


def test_multi_output_two_input_op_partially_differentiable() -> None:
    tape = Tape()
    r, t = tape.leaf(2.0, requires_grad=False), tape.leaf(0.6)
    px, py = tape.apply(Polar(), r, t)
    assert px.trace is py.trace and px.trace is not None
    assert (px.value, py.value) == (
        pytest.approx(2 * math.cos(0.6)),
        pytest.approx(2 * math.sin(0.6)),
    )
    executor = ScalarExecutor()
    grads = backward(px.key, px.trace, 1.0, executor)
    assert grads[t.key] == pytest.approx(-2 * math.sin(0.6))
    assert r.key not in grads
    assert executor.linearize_calls == [(0,)]
    grads = backward(py.key, py.trace, 3.0, executor)
    assert grads[t.key] == pytest.approx(3 * 2 * math.cos(0.6))


def test_seed_only_output_slot_one() -> None:
    tape = Tape()
    x = tape.leaf(0.8)
    s, c = tape.apply(SinCos(), x)
    executor = ScalarExecutor()
    grads = backward(c.key, c.trace, 2.0, executor)
    assert grads[x.key] == pytest.approx(-2.0 * math.sin(0.8))
    assert executor.linearize_calls == [(1,)]
    assert s.key not in grads


def test_seed_slot_one_then_continue_upstream() -> None:
    tape = Tape()
    x = tape.leaf(0.3)
    e = tape.apply1(Exp(), x)
    _, c = tape.apply(SinCos(), e)
    executor = ScalarExecutor()
    grads = backward(c.key, c.trace, 1.0, executor)
    ex = math.exp(0.3)
    assert grads[x.key] == pytest.approx(-math.sin(ex) * ex)
    assert grads[e.key] == pytest.approx(-math.sin(ex))
    assert executor.linearize_calls == [(1,), (0,)]


def test_accumulation_when_one_value_feeds_two_nodes() -> None:
    """a = exp(x) feeds sin and cos; d/dx sin(e^x) cos(e^x) = cos(2 e^x) e^x."""
    tape = Tape()
    x = tape.leaf(-0.2)
    a = tape.apply1(Exp(), x)
    y = tape.apply1(Mul(), tape.apply1(Sin(), a), tape.apply1(Cos(), a))
    executor = ScalarExecutor()
    grads = backward(y.key, y.trace, 1.0, executor)
    ea = math.exp(-0.2)
    assert grads[x.key] == pytest.approx(math.cos(2 * ea) * ea)
    assert grads[a.key] == pytest.approx(math.cos(2 * ea))
    assert executor.add_calls == 1  # the two contributions to a
    assert executor.transpose_calls == 4  # every node visited once


def test_same_value_twice_into_one_node() -> None:
    tape = Tape()
    x = tape.leaf(1.5)
    y = tape.apply1(Mul(), x, x)
    executor = ScalarExecutor()
    grads = backward(y.key, y.trace, 1.0, executor)
    assert grads[x.key] == pytest.approx(3.0)
    assert executor.add_calls == 1


def _multi_op_graph() -> RecordedGraph:
    """Inputs (a, x); outputs (exp(a*x) + x, a*x): several ops as one tape node."""
    b = GraphBuilder()
    a, x = b.add_input(Name("a")), b.add_input(Name("x"))
    ax = emit(b, Mul(), a, x)
    b.set_outputs([emit(b, Add(), emit(b, Exp(), ax), x), ax])
    graph = b.build()
    recorded = RecordedGraph.from_graph(graph)
    assert recorded.input_keys == [Name("a"), Name("x")]
    return recorded


def test_backward_on_multi_op_recorded_graph() -> None:
    tape = Tape()
    rg = _multi_op_graph()
    assert len(rg.graph.operations) == 3
    av, xv = 0.7, -1.1
    a, x = tape.leaf(av), tape.leaf(xv)
    y, ax = tape.apply_graph(rg, a, x)
    assert y.trace is ax.trace
    e = math.exp(av * xv)
    assert y.value == pytest.approx(e + xv)
    executor = ScalarExecutor()
    grads = backward(y.key, y.trace, 1.0, executor)
    assert grads[a.key] == pytest.approx(xv * e)
    assert grads[x.key] == pytest.approx(av * e + 1)
    assert executor.transpose_calls == 1
    # Seeding the second output continues through the same node.
    z = tape.apply1(Mul(), ax, y)
    grads = backward(z.key, z.trace, 1.0, executor)
    # z = (a x) (exp(a x) + x)
    assert grads[a.key] == pytest.approx(xv * (e + xv) + av * xv * xv * e)
    assert grads[x.key] == pytest.approx(av * (e + xv) + av * xv * (av * e + 1))


def test_retained_values_are_saved() -> None:
    rg = RecordedGraph.from_primitive(Exp(), [Name("u")])
    recorder = Recorder()
    key = Input(*recorder.fresh_input_keys(1))
    extra = {rg.output_keys[0]: 42.0}
    (out,) = recorder.record_graph(rg, [EagerInput(key, None, True, 0.0)], [1.0], extra)
    assert out.trace is not None
    assert out.trace.saved_values[Input(rg.input_keys[0])] == 0.0
    assert out.trace.saved_values[rg.output_keys[0]] == 42.0
    # The executor uses the retained output as the residual of exp.
    assert backward(out.key, out.trace, 1.0, ScalarExecutor())[key] == 42.0


def test_eager_output_fields() -> None:
    tape = Tape()
    x = tape.leaf(0.1)
    outs = tape.recorder.record_graph(
        RecordedGraph.from_primitive(SinCos(), [Input(Name("v"))]), [x.as_input()], [0.0, 1.0]
    )
    assert [o.output_slot for o in outs] == [0, 1]
    assert all(isinstance(o, EagerOutput) and isinstance(o.key, Input) for o in outs)
    assert outs[0].trace is outs[1].trace
    assert outs[0].trace.output_keys == (outs[0].key, outs[1].key)


def test_custom_key_source() -> None:
    class Letters(KeySource):
        def __init__(self) -> None:
            self.n = 0

        def fresh_input_key(self) -> Name:
            self.n += 1
            return Name(f"k{self.n}")

    tape = Tape(Recorder(Letters()))
    x = tape.leaf(2.0)
    y = tape.apply1(Mul(), x, x)
    assert x.key == Input(Name("k1")) and y.key == Input(Name("k2"))
    assert backward(y.key, y.trace, 1.0, ScalarExecutor())[Input(Name("k1"))] == 4.0


class MemoizingExecutor(ScalarExecutor):
    """Caches ``linearize_recorded_graph`` per (recorded graph, active slots)."""

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[tuple[RecordedGraph, tuple[int, ...]], LinearizedGraph] = {}
        self.misses = 0
        self.requests = 0

    def linearize_recorded_graph(
        self, graph: RecordedGraph, output_slots: Sequence[int], ctx: Any
    ) -> LinearizedGraph:
        self.requests += 1
        key = (graph, tuple(output_slots))
        if key not in self.cache:
            self.misses += 1
            self.cache[key] = super().linearize_recorded_graph(graph, output_slots, ctx)
        return self.cache[key]


def test_memoizing_executor_in_a_training_loop() -> None:
    rg = _multi_op_graph()
    sincos = RecordedGraph.from_primitive(SinCos(), [Name("v")])
    executor = MemoizingExecutor()
    tape = Tape()
    av = 0.5
    for step in range(6):
        xv = 0.1 * step - 0.2
        a, x = tape.leaf(av), tape.leaf(xv, requires_grad=False)
        y, _ = tape.apply_graph(rg, a, x)
        _, c = tape.apply_graph(sincos, y)
        grads = backward(c.key, c.trace, 1.0, executor)
        e = math.exp(av * xv)
        assert grads[a.key] == pytest.approx(-math.sin(e + xv) * xv * e)
        assert x.key not in grads
        av -= 0.1 * grads[a.key]
    assert executor.misses == 2  # one per recorded graph, whatever the step
    assert executor.requests == 12
    assert executor.linearize_calls == [(1,), (0,)]  # the base implementation, on misses only


def test_backward_on_long_tape() -> None:
    """A 3000-node tape is walked without recursion: d/dx of (x * 1.001^n)."""
    tape = Tape()
    x = tape.leaf(1.0)
    cur = x
    n = 3000
    for _ in range(n):
        cur = tape.apply1(Scale(1.001), cur)
    grads = backward(cur.key, cur.trace, 1.0, ScalarExecutor())
    assert grads[x.key] == pytest.approx(1.001**n)


def test_backward_from_leaf_and_plain_executor_subclass() -> None:
    class Minimal(BackwardExecutor):
        def execute_forward(self, graph, initial_data):
            return ScalarExecutor().execute_forward(graph, initial_data)

        def run_transposed_linear(self, linear, cotangent_out, external_data, ctx):
            return ScalarExecutor().run_transposed_linear(linear, cotangent_out, external_data, ctx)

        def add_operands(self, a, b):
            return a + b

    tape = Tape()
    x = tape.leaf(3.0)
    assert backward(x.key, None, 7.0, Minimal()) == {x.key: 7.0}
    y = tape.apply1(Exp(), x)
    assert backward(y.key, y.trace, 1.0, Minimal())[x.key] == pytest.approx(math.exp(3.0))

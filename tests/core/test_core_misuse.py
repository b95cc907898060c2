"""Misuse raises ValueError or TypeError with a message naming the argument."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from scalar_prims import LIN1, Add, Exp, Mul, Sin, SinCos
from scalar_runtime import EvalBuilder, ScalarExecutor, Tape, emit, evaluate

from tidu_compile.ad import (
    LinearizedGraph,
    Name,
    fresh_pass_id,
    linear_transpose_with_builder,
    linearize,
)
from tidu_compile.eager import EagerInput, RecordedGraph, Recorder, backward
from tidu_compile.graph import External, GraphBuilder, Input, Linearized, Local, Primary

X, Y = Name("x"), Name("y")


# --------------------------------------------------------------------------- builder


def test_add_operation_wrong_arity() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    with pytest.raises(ValueError, match="inputs"):
        b.add_operation(Mul(), [x], Primary())
    with pytest.raises(ValueError, match="inputs"):
        b.add_operation(Exp(), [x, x], Primary())
    with pytest.raises(ValueError, match="inputs"):
        b.add_primitive(Add(), [], Primary())


def test_add_operation_mask_length() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    with pytest.raises(ValueError, match="role"):
        b.add_operation(Mul(), [x, x], Linearized((True,)))


def test_add_operation_bad_inputs() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    with pytest.raises(ValueError, match="inputs"):
        b.add_operation(Exp(), [x + 5], Primary())
    with pytest.raises(ValueError, match="inputs"):
        b.add_operation(Exp(), [Local(-1)], Primary())
    with pytest.raises(TypeError, match="inputs"):
        b.add_operation(Exp(), ["x"], Primary())
    with pytest.raises(TypeError, match="inputs"):
        b.add_operation(Exp(), [True], Primary())
    with pytest.raises(TypeError, match="role"):
        b.add_operation(Exp(), [x], "primary")
    # Nothing was added by the failed calls.
    (y,) = b.add_operation(Exp(), [x], Primary())
    assert y == 1


def test_add_operation_accepts_refs() -> None:
    b = GraphBuilder()
    x = b.add_input(X)
    (y,) = b.add_operation(Sin(), [Local(x)], Primary())
    (z,) = b.add_operation(Mul(), [y, External(Input(Y))], Primary())
    b.set_outputs([z])
    g = b.build()
    assert g.operations[1].inputs == (Local(y), External(Input(Y)))
    assert evaluate(g, {X: 0.5, Y: 2.0})[g.output_keys()[0]] == pytest.approx(2 * 0.479425538604203)


def test_set_outputs_and_global_key_check_ids() -> None:
    b = GraphBuilder()
    b.add_input(X)
    with pytest.raises(ValueError, match="ids"):
        b.set_outputs([1])
    with pytest.raises(ValueError, match="local_id"):
        b.global_key(3)
    with pytest.raises(TypeError, match="add_parent"):
        b.add_parent("not a graph")


def test_linearized_mask_must_be_bools() -> None:
    with pytest.raises(TypeError, match="active_mask"):
        Linearized([True])
    with pytest.raises(TypeError, match="active_mask"):
        Linearized((1, 0))


# --------------------------------------------------------------------------- transforms


def _sin_graph():
    b = GraphBuilder()
    x = b.add_input(X)
    b.set_outputs([emit(b, Sin(), x)])
    return b.build()


def test_linearize_argument_checks() -> None:
    g = _sin_graph()
    with pytest.raises(TypeError, match="outputs"):
        linearize(g, ["not a key"], [X], fresh_pass_id())
    with pytest.raises(TypeError, match="wrt"):
        linearize(g, g.output_keys(), ["x"], fresh_pass_id())
    with pytest.raises(TypeError, match="aliases"):
        linearize(g, g.output_keys(), [X], fresh_pass_id(), aliases={Y: "x"})


def test_transpose_seed_count() -> None:
    g = _sin_graph()
    linear = linearize(g, g.output_keys(), [X], fresh_pass_id())
    builder = EvalBuilder(evaluate(linear.graph, {X: 0.1}))
    seed = builder.constant(1.0)
    with pytest.raises(ValueError, match="cotangent_seeds"):
        linear_transpose_with_builder(linear, builder, [seed, seed])
    with pytest.raises(ValueError, match="cotangent_seeds"):
        linear_transpose_with_builder(linear, builder, [])
    # A None seed is accepted and gives no cotangent.
    assert linear_transpose_with_builder(linear, builder, [None]) == [None]


# --------------------------------------------------------------------------- eager


def test_recorded_graph_slot_out_of_range() -> None:
    rg = RecordedGraph.from_primitive(SinCos(), [X])
    for slot in (2, -1, 10):
        with pytest.raises(ValueError, match="output_slots"):
            rg.linearize([slot])
    with pytest.raises(ValueError, match="output_slots"):
        rg.linearize([0, 2])
    linear = rg.linearize([1])
    assert len(linear.tangent_outputs) == 1


def test_recorded_graph_keys_must_match_graph_order() -> None:
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    s, c = b.add_operation(SinCos(), [emit(b, Mul(), x, y)], Primary())
    b.set_outputs([s, c])
    g = b.build()
    ins, outs = [X, Y], g.output_keys()
    assert RecordedGraph(g, ins, outs).input_keys == [X, Y]  # raw keys, as in tidu
    with pytest.raises(ValueError, match="raw input keys.*Input"):
        RecordedGraph(g, g.input_keys(), outs)  # value keys are not raw keys
    with pytest.raises(ValueError, match="input_keys"):
        RecordedGraph(g, list(reversed(ins)), outs)
    with pytest.raises(ValueError, match="input_keys"):
        RecordedGraph(g, ins[:1], outs)
    with pytest.raises(ValueError, match="output_keys"):
        RecordedGraph(g, ins, list(reversed(outs)))
    with pytest.raises(ValueError, match="output_keys"):
        RecordedGraph(g, ins, [*outs, outs[0]])
    with pytest.raises(TypeError, match="graph"):
        RecordedGraph("graph", ins, outs)


def test_record_graph_count_checks() -> None:
    rg = RecordedGraph.from_primitive(Sin(), [X])
    recorder = Recorder()
    key = Input(*recorder.fresh_input_keys(1))
    inp = EagerInput(key, None, True, 0.5)
    with pytest.raises(ValueError, match="outputs"):
        recorder.record_graph(rg, [inp], [0.1, 0.2])
    with pytest.raises(ValueError, match="outputs"):
        recorder.record_graph(rg, [inp], [])
    with pytest.raises(ValueError, match="inputs"):
        recorder.record_graph(rg, [inp, inp], [0.1])


class WrongCount(ScalarExecutor):
    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Any,
        ctx: Any,
    ) -> list:
        return [*super().run_transposed_linear(linear, cotangent_out, external_data, ctx), 0.0]


def test_executor_returning_wrong_number_of_cotangents() -> None:
    tape = Tape()
    x = tape.leaf(0.2)
    y = tape.apply1(Sin(), x)
    with pytest.raises(ValueError, match="run_transposed_linear"):
        backward(y.key, y.trace, 1.0, WrongCount())


def test_backward_argument_checks() -> None:
    tape = Tape()
    x = tape.leaf(0.2)
    y = tape.apply1(Sin(), x)
    with pytest.raises(TypeError, match="executor"):
        backward(y.key, y.trace, 1.0, object())
    with pytest.raises(ValueError, match="output_key"):
        backward(x.key, y.trace, 1.0, ScalarExecutor())


def test_eval_builder_checks_arity() -> None:
    """The test builder itself rejects misuse, so rule bugs cannot hide behind it."""
    builder = EvalBuilder()
    a = builder.constant(1.0)
    with pytest.raises(ValueError, match="inputs"):
        builder.add_primitive(Mul(), [a], LIN1)

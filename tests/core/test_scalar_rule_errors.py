"""Rule problems surface as ``ADRuleError`` from every transform; ``ctx`` reaches every
rule call."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from scalar_prims import LIN1, Add, Cos, Exp, Mul, RuleLog, Scalar, ScalarPrim, Sin, SinCos
from scalar_runtime import EvalBuilder, ScalarExecutor, Tape, emit, evaluate, vjp_values

from tidu_compile.ad import (
    ADRuleError,
    ADRuleKind,
    Name,
    fresh_pass_id,
    linear_transpose,
    linear_transpose_with_builder,
    linearize,
)
from tidu_compile.eager import backward
from tidu_compile.graph import External, Graph, GraphBuilder, Linearized, Local, Primary

X, Y = Name("x"), Name("y")


@dataclass(frozen=True)
class NoRules(ScalarPrim):
    """floor(x): no JVP rule at all."""

    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (float(math.floor(args[0].real)),)


@dataclass(frozen=True)
class Twice(ScalarPrim):
    """2x. ``bad_jvp`` / ``bad_transpose`` make its rules return the wrong count;
    ``no_transpose`` leaves the transpose rule undefined."""

    bad_jvp: bool = False
    bad_transpose: bool = False
    no_transpose: bool = False

    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (2 * args[0],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        if self.bad_jvp:
            return []
        return builder.add_primitive(self, [tangent_inputs[0]], LIN1)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        if self.no_transpose:
            return super().transpose_rule(builder, cotangent_outputs, inputs, role, ctx)
        (out,) = builder.add_primitive(Twice(), [cotangent_outputs[0]], LIN1)
        return [out, out] if self.bad_transpose else [out]


@dataclass(frozen=True)
class JvpReturnsNone(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        return None


@dataclass(frozen=True)
class LeakyMul(ScalarPrim):
    """x * y whose transpose also returns a cotangent for the residual operand."""

    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] * args[1],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        (out,) = builder.add_primitive(
            LeakyMul(),
            [tangent_inputs[0], External(primal_inputs[1])],
            Linearized((True, False)),
        )
        return [out]

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        (ct,) = cotangent_outputs
        (a,) = builder.add_primitive(Mul(), [ct, inputs[1]], Linearized((True, False)))
        return [a, a]


def one_op(op: ScalarPrim) -> Graph:
    b = GraphBuilder()
    x = b.add_input(X)
    b.set_outputs([emit(b, Exp(), emit(b, op, emit(b, Sin(), x)))])
    return b.build()


def lin(graph: Graph, ctx: object = None):
    return linearize(graph, graph.output_keys(), [X], fresh_pass_id(), ctx)


# --------------------------------------------------------------------------- errors


def test_missing_jvp_rule_raises_from_linearize() -> None:
    with pytest.raises(ADRuleError) as info:
        lin(one_op(NoRules()))
    err = info.value
    assert err.rule is ADRuleKind.JVP
    assert err.op == NoRules()
    assert "NoRules" in str(err) and "jvp" in str(err)


@pytest.mark.parametrize("op", [Twice(bad_jvp=True), JvpReturnsNone()])
def test_jvp_rule_wrong_count_raises_from_linearize(op: ScalarPrim) -> None:
    with pytest.raises(ADRuleError) as info:
        lin(one_op(op))
    assert info.value.rule is ADRuleKind.JVP
    assert info.value.op == op
    assert "expected 1" in info.value.message


def test_missing_transpose_rule_raises_from_transposes() -> None:
    op = Twice(no_transpose=True)
    linear = lin(one_op(op))
    with pytest.raises(ADRuleError) as info:
        linear_transpose(linear)
    assert info.value.rule is ADRuleKind.TRANSPOSE
    assert info.value.op == op
    assert "transpose" in str(info.value)
    with pytest.raises(ADRuleError):
        vjp_values(linear, {X: 0.5}, [1.0])


def test_transpose_rule_wrong_count_raises_from_transposes() -> None:
    op = Twice(bad_transpose=True)
    linear = lin(one_op(op))
    with pytest.raises(ADRuleError, match="returned 2 values, expected 1") as info:
        linear_transpose(linear)
    assert info.value.rule is ADRuleKind.TRANSPOSE
    builder = EvalBuilder(evaluate(linear.graph, {X: 0.5}))
    with pytest.raises(ADRuleError) as info:
        linear_transpose_with_builder(linear, builder, [builder.constant(1.0)])
    assert info.value.op == op


def test_cotangent_for_inactive_input_raises() -> None:
    b = GraphBuilder()
    x, y = b.add_input(X), b.add_input(Y)
    b.set_outputs([emit(b, LeakyMul(), x, y)])
    g = b.build()
    linear = linearize(g, g.output_keys(), [X], fresh_pass_id())
    with pytest.raises(ADRuleError, match="not linear") as info:
        linear_transpose(linear)
    assert info.value.rule is ADRuleKind.TRANSPOSE


def test_rule_errors_propagate_from_backward() -> None:
    tape = Tape()
    x = tape.leaf(0.3)
    y = tape.apply1(NoRules(), tape.apply1(Sin(), x))
    with pytest.raises(ADRuleError) as info:
        backward(y.key, y.trace, 1.0, ScalarExecutor())
    assert info.value.rule is ADRuleKind.JVP

    for op in (Twice(bad_transpose=True), Twice(no_transpose=True)):
        y = tape.apply1(op, x)
        with pytest.raises(ADRuleError) as info:
            backward(y.key, y.trace, 1.0, ScalarExecutor())
        assert info.value.rule is ADRuleKind.TRANSPOSE
        assert info.value.op == op

    y = tape.apply1(Twice(bad_jvp=True), x)
    with pytest.raises(ADRuleError):
        backward(y.key, y.trace, 1.0, ScalarExecutor())


def test_error_constructors() -> None:
    err = ADRuleError.unsupported(Exp(), ADRuleKind.JVP)
    assert isinstance(err, Exception)
    assert (err.op, err.rule) == (Exp(), ADRuleKind.JVP)
    assert "Exp" in str(err) and "jvp" in str(err)
    err = ADRuleError.invalid_input(Mul(), ADRuleKind.TRANSPOSE, "bad residual")
    assert (err.op, err.rule, err.message) == (Mul(), ADRuleKind.TRANSPOSE, "bad residual")
    assert "Mul" in str(err) and "transpose" in str(err) and "bad residual" in str(err)


def test_default_add_is_unsupported() -> None:
    """A primitive set without an addition op cannot accumulate cotangents."""
    from tidu_compile.ad import Primitive

    class Bare(Primitive):
        @property
        def input_count(self) -> int:
            return 1

    with pytest.raises(ADRuleError) as info:
        Bare.add()
    assert info.value.rule is ADRuleKind.TRANSPOSE


# --------------------------------------------------------------------------- ctx


def _program() -> Graph:
    """y = sin(x) * exp(x) + cos(x*x), and sincos(x)[1] as a second output."""
    b = GraphBuilder()
    x = b.add_input(X)
    first = emit(
        b,
        Add(),
        emit(b, Mul(), emit(b, Sin(), x), emit(b, Exp(), x)),
        emit(b, Cos(), emit(b, Mul(), x, x)),
    )
    _, c = b.add_operation(SinCos(), [x], Primary())
    b.set_outputs([first, c])
    return b.build()


def test_ctx_reaches_every_jvp_rule() -> None:
    g = _program()
    log = RuleLog()
    lin(g, ctx=log)
    assert len(log.calls) == len(g.operations)
    assert {type(op) for op in log.ops(ADRuleKind.JVP)} == {Add, Mul, Sin, Exp, Cos, SinCos}
    assert sorted(id(op) for op in log.ops(ADRuleKind.JVP)) == sorted(
        id(n.operation) for n in g.operations
    )


def _live_linear_ops(graph: Graph) -> int:
    """Linear ops of ``graph`` that some output depends on."""
    producer = {o: i for i, n in enumerate(graph.operations) for o in n.outputs}
    live: set[int] = set()
    stack = [producer[o] for o in graph.outputs if o in producer]
    while stack:
        i = stack.pop()
        if i in live:
            continue
        live.add(i)
        for ref in graph.operations[i].inputs:
            if isinstance(ref, Local) and ref.id in producer:
                stack.append(producer[ref.id])
    return sum(isinstance(graph.operations[i].role, Linearized) for i in live)


def test_ctx_reaches_every_transpose_rule() -> None:
    g = _program()
    linear = lin(g)
    n_linear = _live_linear_ops(linear.graph)
    # sincos's JVP built a tangent for sin too; only cos is an output, so that one
    # linear op is dead and never transposed.
    assert n_linear == sum(isinstance(n.role, Linearized) for n in linear.graph.operations) - 1

    log = RuleLog()
    linear_transpose(linear, log)
    assert log.count(ADRuleKind.TRANSPOSE) == n_linear == len(log.calls)

    log = RuleLog()
    vjp_values(linear, {X: 0.4}, [1.0, 1.0], ctx=log)
    assert log.count(ADRuleKind.TRANSPOSE) == n_linear == len(log.calls)


def test_ctx_reaches_rules_through_backward() -> None:
    tape = Tape()
    executor = ScalarExecutor()
    x = tape.leaf(0.4)
    a = tape.apply1(Exp(), x)
    y = tape.apply1(Mul(), tape.apply1(Sin(), a), a)
    log = RuleLog()
    grads = backward(y.key, y.trace, 1.0, executor, ctx=log)
    e = math.exp(0.4)
    assert grads[x.key] == pytest.approx((math.cos(e) * e + math.sin(e)) * e)
    # The executor saw the ctx on every call, and it reached the rules.
    assert executor.ctx_seen and all(c is log for c in executor.ctx_seen)
    assert len(executor.ctx_seen) == 6  # 3 nodes x (linearize + transpose)
    assert log.count(ADRuleKind.JVP) == 3
    assert {type(op) for op in log.ops(ADRuleKind.JVP)} == {Exp, Sin, Mul}
    assert log.count(ADRuleKind.TRANSPOSE, Mul) >= 3


def test_no_ctx_means_none() -> None:
    seen: list[object] = []

    @dataclass(frozen=True)
    class Spy(ScalarPrim):
        @property
        def input_count(self) -> int:
            return 1

        def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
            return (args[0],)

        def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
            seen.append(ctx)
            return [tangent_inputs[0]]

    lin(one_op(Spy()))
    marker = object()
    lin(one_op(Spy()), ctx=marker)
    assert seen == [None, marker]

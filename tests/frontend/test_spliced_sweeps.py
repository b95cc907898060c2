"""Sweeps seen before, as one spliced graph: forward mode (``frontend.spliced_tangents``)
and reverse mode with the graph kept (``frontend.spliced_cotangents``).

The first ``func.jvp`` or ``func.grad`` of a structure runs node by node; from the second
the JVPs or VJPs of all the visited nodes run as one graph, recorded as one node. Each
test checks the spliced answers against the ``ReferenceExecutor``'s (node by node, not
compiled) and that the splice did run (``stats.spliced_runs``), so a splice that stopped
happening, or one that answered differently from the per-node path, fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend import splicing

RNG = np.random.default_rng(7)
X = RNG.standard_normal(6)
Y = RNG.standard_normal(6)
VX = RNG.standard_normal(6)
VY = RNG.standard_normal(6)


@pytest.fixture
def compiled(compiled_only: CompiledExecutor) -> CompiledExecutor:
    """The conftest's compiled executor (no fallbacks, no errors), by a shorter name."""
    return compiled_only


def w1(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
    return tc.sum(tc.tanh(a * b + tc.exp(-a)) * b)


def _leaves(tree: Any) -> list[np.ndarray]:
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [np.asarray(tree.numpy() if isinstance(tree, tc.Tensor) else tree)]


def _reference(call: Callable[[], Any]) -> list[np.ndarray]:
    with tc.use_executor(tc.ReferenceExecutor()):
        return _leaves(call())


def _check_spliced(call: Callable[[], Any], executor: CompiledExecutor, runs: int = 3) -> None:
    """``call`` ``runs`` times: every answer equals the reference's, and from the second
    call on each call spliced."""
    expected = _reference(call)
    for run in range(runs):
        before = executor.stats.spliced_runs
        got = _leaves(call())
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14, err_msg=f"run {run}")
        if run > 0:
            assert executor.stats.spliced_runs > before, f"run {run} did not splice"


def test_hvp_of_w1_is_one_spliced_node(compiled: CompiledExecutor) -> None:
    def hvp() -> Any:
        return func.jvp(func.grad(w1, argnums=(0, 1)), (X, Y), (VX, VY))

    _check_spliced(hvp, compiled)
    before = compiled.stats.spliced_runs
    hvp()
    assert compiled.stats.spliced_runs == before + 2  # the gradient, its tangents: a graph each


def test_jvp_of_a_broadcasting_program_and_of_another_shape(compiled: CompiledExecutor) -> None:
    def f(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        return tc.sin(a[:, None] * b[None, :]) @ tc.cos(b)

    for n in (6, 4, 6):
        x, y = X[:n], Y[:n]
        _check_spliced(lambda x=x, y=y: func.jvp(f, (x, y), (VX[: len(x)], VY[: len(y)])),
                       compiled)  # fmt: skip


def test_structures_alternating_through_one_executor(compiled: CompiledExecutor) -> None:
    programs: list[Callable[[tc.Tensor], tc.Tensor]] = [
        lambda x: tc.exp(tc.sin(x)) * x,
        lambda x: tc.log(tc.cosh(x)) * x,
        lambda x: tc.exp(tc.sin(x)) + x,
    ]
    expected = [_reference(lambda p=p: func.jvp(p, (X,), (VX,))) for p in programs]
    for _ in range(3):
        for program, answer in zip(programs, expected, strict=True):
            got = _leaves(func.jvp(program, (X,), (VX,)))
            for g, e in zip(got, answer, strict=True):
                np.testing.assert_allclose(g, e, rtol=1e-12)
    assert compiled.stats.spliced_runs >= 2 * len(programs)


def test_outputs_that_are_inputs_or_do_not_depend_on_them(compiled: CompiledExecutor) -> None:
    def f(a: tc.Tensor, b: tc.Tensor) -> tuple[tc.Tensor, ...]:
        return a, tc.sin(tc.cos(b)) * b, tc.ones(3), b

    _check_spliced(lambda: func.jvp(f, (X, Y), (VX, VY)), compiled)
    _, (ta, _, tz, tb) = func.jvp(f, (X, Y), (VX, VY))
    np.testing.assert_array_equal(ta.numpy(), VX)
    np.testing.assert_array_equal(tb.numpy(), VY)
    np.testing.assert_array_equal(tz.numpy(), np.zeros(3))


def test_one_output_twice_and_a_primal_read_by_many_nodes(compiled: CompiledExecutor) -> None:
    def f(a: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
        u = tc.sin(a) * a + tc.exp(a) * a
        return u, u

    _check_spliced(lambda: func.jvp(f, (X,), (VX,)), compiled)


def test_constants_stay_apart(compiled: CompiledExecutor) -> None:
    """Every constant has the one tape key ``CONSTANT_KEY``: each is its own input of the
    spliced graph (merged, the second constant's value became the first's)."""

    def f(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        return tc.sum(3.0 * a * b**3 - 0.5 * b * b + 2.0 * a)

    _check_spliced(lambda: func.jvp(func.grad(f, argnums=(0, 1)), (X, Y), (VX, VY)),
                   compiled)  # fmt: skip
    _check_spliced(lambda: func.jvp(lambda a: tc.exp(2.0 * a) * 5.0, (X,), (VX,)), compiled)


def test_derivatives_through_the_spliced_node(compiled: CompiledExecutor) -> None:
    """Reverse over forward and forward over forward, through a spliced sweep: the node
    it records is differentiable as the per-node ones are."""

    def f(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.sin(x) * x * x)

    def grad_of_jvp() -> Any:
        return func.grad(lambda x: func.jvp(f, (x,), (VX,))[1])(X)

    def jvp_of_jvp() -> Any:
        return func.jvp(lambda x: func.jvp(f, (x,), (VX,))[1], (X,), (VY,))

    _check_spliced(grad_of_jvp, compiled)
    _check_spliced(jvp_of_jvp, compiled)
    second = (2 - X * X) * np.sin(X) + 4 * X * np.cos(X)  # f is a sum: H is diagonal
    np.testing.assert_allclose(grad_of_jvp().numpy(), second * VX, rtol=1e-12)


def test_a_custom_vjp_rule_refuses_forward_mode_every_time(compiled: CompiledExecutor) -> None:
    @tc.custom_vjp
    def scaled(x: tc.Tensor) -> tc.Tensor:
        return 2.0 * x

    scaled.defvjp(lambda x: (2.0 * x, None), lambda _, g: (2.0 * g,))
    for _ in range(3):
        with pytest.raises(TypeError, match="forward-mode.*custom_vjp function 'scaled'"):
            func.jvp(lambda x: tc.exp(scaled(tc.sin(x))), (X,), (VX,))
    assert compiled.stats.spliced_runs == 0


def test_no_splice_without_capture_or_for_too_many_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    def call() -> Any:
        return func.jvp(lambda x: tc.exp(tc.sin(tc.cos(x))), (X,), (VX,))

    plain = CompiledExecutor(False, capture=False)
    with tc.use_executor(plain):
        for _ in range(3):
            call()
    assert plain.stats.spliced_runs == 0
    monkeypatch.setattr(splicing, "MAX_NODES", 2)
    small = CompiledExecutor(False)
    with tc.use_executor(small):
        expected = _reference(call)
        for _ in range(3):
            np.testing.assert_allclose(_leaves(call())[1], expected[1], rtol=1e-12)
    assert small.stats.spliced_runs == 0


# ------------------------------------------------------------------ reverse mode


def test_gradient_of_w1_inside_an_outer_gradient(compiled: CompiledExecutor) -> None:
    """A plain ``func.grad`` is a backward of the tape (captured, not recorded); nested
    in another transform it keeps its graph, and that sweep is spliced."""
    hessian_row = func.grad(lambda a, b: func.grad(w1)(a, b)[2], argnums=(0, 1))
    _check_spliced(lambda: hessian_row(X, Y), compiled)


def test_fan_out_sums_contributions_in_the_graph(compiled: CompiledExecutor) -> None:
    def f(x: tc.Tensor) -> tc.Tensor:
        u = tc.sin(x)
        return tc.sum(u * x + tc.exp(u) * x * x + u)

    def gradient_and_hvp() -> Any:
        return func.jvp(func.grad(f), (X,), (VX,))

    _check_spliced(gradient_and_hvp, compiled)
    expected = np.cos(X) * X + np.sin(X) + np.exp(np.sin(X)) * np.cos(X) * X * X
    expected += 2 * np.exp(np.sin(X)) * X + np.cos(X)
    np.testing.assert_allclose(gradient_and_hvp()[0].numpy(), expected, rtol=1e-12)


def test_create_graph_with_inputs_the_output_itself_and_one_not_reached(
    compiled: CompiledExecutor,
) -> None:
    def grads() -> Any:
        x = tc.tensor(X, requires_grad=True)
        z = tc.tensor(Y, requires_grad=True)
        y = tc.sum(tc.exp(tc.sin(x)) * x)
        gx, gy, gz = tc.grad(y, [x, y, z], create_graph=True, allow_unused=True)
        assert gz is None
        (gxx,) = tc.grad(tc.sum(gx), [x])  # through the spliced node
        return gx, gy, gxx

    _check_spliced(grads, compiled)
    _, gy, _ = grads()
    assert gy.item() == 1.0


def test_tensor_backward_with_create_graph_and_inputs(compiled: CompiledExecutor) -> None:
    def grads() -> Any:
        x = tc.tensor(X, requires_grad=True)
        w = tc.tensor(Y, requires_grad=True)
        tc.sum(tc.tanh(x * w) * w).backward(create_graph=True, inputs=[x, w])
        return x.grad, w.grad

    _check_spliced(grads, compiled)


def test_a_custom_vjp_rule_is_what_the_spliced_graph_runs(compiled: CompiledExecutor) -> None:
    @tc.custom_vjp
    def halved_gradient(x: tc.Tensor) -> tc.Tensor:
        return tc.sin(x)

    halved_gradient.defvjp(lambda x: (tc.sin(x), x), lambda x, g: (0.5 * g * tc.cos(x),))
    f = lambda x: tc.sum(tc.exp(halved_gradient(x * x)))  # noqa: E731

    def gradient() -> Any:
        x = tc.tensor(X, requires_grad=True)
        return tc.grad(f(x), [x], create_graph=True)

    _check_spliced(gradient, compiled)
    expected = np.exp(np.sin(X * X)) * 0.5 * np.cos(X * X) * 2 * X  # the rule's, halved
    np.testing.assert_allclose(gradient()[0].numpy(), expected, rtol=1e-12)


def test_hvp_of_a_traced_function(compiled: CompiledExecutor) -> None:
    traced = tc.function(w1)
    _check_spliced(
        lambda: func.jvp(func.grad(traced, argnums=(0, 1)), (X, Y), (VX, VY)), compiled
    )

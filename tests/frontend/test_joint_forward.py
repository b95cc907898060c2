"""The joint forward (``frontend.joint_forward``): a recording ``@tc.function`` call of a
scalar loss on a ``CompiledExecutor`` computes the loss's gradient with it, and the tape
scales that gradient by the loss's cotangent instead of running the node's backward.

Every case is checked against the ``ReferenceExecutor`` (which keeps the general path),
and the paths around it are checked to take the general path: a second backward, another
executor, ``create_graph``, outputs it does not serve.
"""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


@pytest.fixture
def executor(compiled_only: CompiledExecutor) -> CompiledExecutor:
    return compiled_only


@tc.function
def mlp_loss(x: tc.Tensor, w: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
    hidden = tc.tanh(x @ w + b)
    return tc.sum(hidden * hidden) + 0.1 * tc.sum(tc.exp(-b))


def _arrays(seed: int, dtype: type = np.float64) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in ((5, 4), (4, 3), (3,))]


def _leaves(arrays: list[np.ndarray], needed: tuple[bool, ...] = (True,) * 3) -> list[tc.Tensor]:
    return [tc.tensor(a, requires_grad=n) for a, n in zip(arrays, needed, strict=True)]


def _reference_grads(arrays: list[np.ndarray], scale: float, needed: tuple[bool, ...]) -> list:
    with tc.use_executor(tc.ReferenceExecutor()):
        leaves = _leaves(arrays, needed)
        (mlp_loss(*leaves) * scale).backward()
    return [t.grad for t in leaves if t.requires_grad]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scale", [1.0, -2.5])
@pytest.mark.parametrize("needed", [(True, True, True), (False, True, False)])
def test_gradients_come_with_the_forward(
    executor: CompiledExecutor, dtype: type, scale: float, needed: tuple[bool, ...]
) -> None:
    """One program per signature computes loss and gradient; the backward compiles
    nothing (a seed other than 1 scales the gradient), and every step's gradients
    are the reference executor's, in the leaves' dtype."""
    for step in range(3):
        arrays = _arrays(step, dtype)
        leaves = _leaves(arrays, needed)
        loss = mlp_loss(*leaves)
        compiles = executor.stats.compiles
        loss.backward(np.asarray(scale, dtype))  # the seed: the node's own cotangent
        assert executor.stats.compiles == compiles  # nothing compiled for the backward
        want = _reference_grads(arrays, scale, needed)
        got = [t.grad for t in leaves if t.requires_grad]
        rtol = 1e-4 if dtype == np.float32 else 1e-12
        for g, w in zip(got, want, strict=True):
            assert g.dtype == dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
        assert all(t.grad is None for t in leaves if not t.requires_grad)
    assert executor.stats.joint_runs == 3
    assert executor.stats.compiles == 1  # the joint program, nothing else


def test_a_second_backward_takes_the_general_path(executor: CompiledExecutor) -> None:
    """The gradients are handed out once: with ``retain_graph`` a second backward fills
    in the node's kept values and runs its own backward program (both compiled then),
    adding the same gradient."""
    arrays = _arrays(1)
    leaves = _leaves(arrays)
    loss = mlp_loss(*leaves)
    loss.backward(retain_graph=True)
    first = [t.grad.copy() for t in leaves]
    compiles = executor.stats.compiles
    loss.backward()
    # the forward program (the values the general path keeps) and the node's backward
    assert executor.stats.compiles == compiles + 2
    for t, g in zip(leaves, first, strict=True):
        np.testing.assert_allclose(t.grad, 2 * g, rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()  # freed by the second: the joint path checks it too


def test_the_general_path_gives_the_same_values_and_gradients(executor: CompiledExecutor) -> None:
    """``joint_forward=False``: the forward program, then the backward node (two
    programs); the results agree with the joint ones to rounding."""
    arrays = _arrays(2)
    general = CompiledExecutor(False, joint_forward=False)
    results = []
    for chosen in (executor, general):
        with tc.use_executor(chosen):
            leaves = _leaves(arrays)
            loss = mlp_loss(*leaves)
            loss.backward()
        results.append([loss.numpy(), *(t.grad for t in leaves)])
    assert general.stats.joint_runs == 0 and general.stats.compiles == 2
    for j, g in zip(*results, strict=True):
        np.testing.assert_allclose(j, g, rtol=1e-12)


def test_another_executor_runs_the_backward_itself(executor: CompiledExecutor) -> None:
    """Gradients precomputed by one executor serve that executor's backward only."""
    arrays = _arrays(3)
    leaves = _leaves(arrays)
    loss = mlp_loss(*leaves)
    other = CompiledExecutor(False)
    got = tc.grad(loss, leaves, executor=other, retain_graph=True)
    assert other.stats.compiles == 1  # the node's backward program
    mine = tc.grad(loss, leaves)
    for g, w, m in zip(got, _reference_grads(arrays, 1.0, (True,) * 3), mine, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
        np.testing.assert_allclose(m, w, rtol=1e-12)


def test_an_input_changed_in_place_raises_as_on_the_general_path(
    executor: CompiledExecutor,
) -> None:
    leaves = _leaves(_arrays(4))
    loss = mlp_loss(*leaves)
    with tc.no_grad():
        leaves[1].add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_create_graph_differentiates_again(executor: CompiledExecutor) -> None:
    """A backward that records its work never takes the precomputed gradient: the
    gradient stays differentiable (a Hessian-vector product matches the reference)."""

    @tc.function
    def cubic(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(x * x * x + tc.sin(x))

    data = np.linspace(-1.0, 1.0, 6)
    results = []
    for chosen in (executor, tc.ReferenceExecutor()):
        with tc.use_executor(chosen):
            x = tc.tensor(data, requires_grad=True)
            (g,) = tc.grad(cubic(x), [x], create_graph=True)
            (hv,) = tc.grad(tc.sum(g * tc.tensor(data)), [x])
        results.append((g.numpy(), hv))
    np.testing.assert_allclose(results[0][0], 3 * data**2 + np.cos(data), rtol=1e-12)
    np.testing.assert_allclose(results[0][1], (6 * data - np.sin(data)) * data, rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_a_tape_around_the_node_is_right_and_not_captured(executor: CompiledExecutor) -> None:
    """Per-op work after the call (a regulariser) reaches the node with a cotangent of
    its own; the whole-tape capture leaves such tapes to the per-node path."""
    for step in range(3):
        arrays = _arrays(10 + step)
        leaves = _leaves(arrays)
        total = 3.0 * mlp_loss(*leaves) + tc.sum(leaves[1] * leaves[1])
        total.backward()
        with tc.use_executor(tc.ReferenceExecutor()):
            plain = _leaves(arrays)
            (3.0 * mlp_loss(*plain) + tc.sum(plain[1] * plain[1])).backward()
        for t, r in zip(leaves, plain, strict=True):
            np.testing.assert_allclose(t.grad, r.grad, rtol=1e-12)
    assert executor.stats.captured == 0 and executor.stats.joint_runs == 3


def test_outputs_it_does_not_serve_take_the_general_path(executor: CompiledExecutor) -> None:
    @tc.function
    def pair(x: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
        return tc.sum(tc.sin(x)), tc.sum(tc.cos(x))

    @tc.function
    def vector(x: tc.Tensor) -> tc.Tensor:
        return tc.tanh(x) * 2.0

    x = tc.tensor(np.linspace(0.0, 1.0, 5), requires_grad=True)
    first, second = pair(x)
    (first + second).backward()
    np.testing.assert_allclose(x.grad, np.cos(x.numpy()) - np.sin(x.numpy()), rtol=1e-12)
    x.grad = None
    vector(x).backward(np.ones(5))
    np.testing.assert_allclose(x.grad, 2.0 / np.cosh(x.numpy()) ** 2, rtol=1e-12)
    assert executor.stats.joint_runs == 0


def test_indices_are_checked_before_the_joint_program(executor: CompiledExecutor) -> None:
    """Integer index data (token ids) is range-checked with numpy first, as on the
    general path; in range, the gradient of the embedding is the reference's."""

    @tc.function
    def embedding_loss(table: tc.Tensor, ids: np.ndarray) -> tc.Tensor:
        return tc.sum(tc.tanh(table[ids]) ** 2)

    table = np.random.default_rng(5).standard_normal((6, 3))
    ids = np.array([0, 5, 5, 2])
    t = tc.tensor(table, requires_grad=True)
    embedding_loss(t, ids).backward()
    with tc.use_executor(tc.ReferenceExecutor()):
        r = tc.tensor(table, requires_grad=True)
        embedding_loss(r, ids).backward()
    np.testing.assert_allclose(t.grad, r.grad, rtol=1e-12)
    assert executor.stats.joint_runs == 1
    with pytest.raises(IndexError):
        embedding_loss(t, np.array([0, 6, 1, 2]))

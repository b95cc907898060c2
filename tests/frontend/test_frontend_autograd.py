"""The autograd API of the frontend: ``grad``, ``Tensor.backward``, ``no_grad``, tensor
creation and executor selection."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.frontend import get_default_executor

REF = tc.ReferenceExecutor


class CountingExecutor(tc.ReferenceExecutor):
    """A ``ReferenceExecutor`` that counts the nodes it runs backward."""

    def __init__(self) -> None:
        self.forward_calls = 0
        self.transposed_calls = 0

    def execute_forward(self, graph, initial_data):
        self.forward_calls += 1
        return super().execute_forward(graph, initial_data)

    def run_transposed_linear(self, linear, cotangent_out, external_data, ctx):
        self.transposed_calls += 1
        return super().run_transposed_linear(linear, cotangent_out, external_data, ctx)


@pytest.fixture
def reference_default() -> Iterator[None]:
    """Run ``Tensor.backward`` (which has no executor argument) on the reference executor."""
    with tc.use_executor(REF()):
        yield


@pytest.fixture
def restore_default_executor() -> Iterator[None]:
    previous = get_default_executor()
    try:
        yield
    finally:
        tc.set_default_executor(previous)


# --------------------------------------------------------------------------- grad


def test_grad_returns_none_for_an_input_with_no_path() -> None:
    x = tc.tensor([1.0, 2.0], requires_grad=True)
    y = tc.tensor([3.0, 4.0], requires_grad=True)
    c = tc.tensor([5.0, 6.0])
    unused = y * 2.0  # recorded, but not on the path to the output
    out = tc.sum(x * x)
    gx, gy, gc, gu = tc.grad(out, [x, y, c, unused], executor=REF())
    np.testing.assert_array_equal(gx, [2.0, 4.0])
    assert gy is None and gc is None and gu is None


def test_grad_for_intermediate_tensors() -> None:
    x = tc.tensor([1.0, -2.0, 3.0], requires_grad=True)
    h = x * 3.0
    k = tc.exp(h * 0.1)
    out = tc.sum(h**2 + k)
    gh, gx, gk = tc.grad(out, [h, x, k], executor=REF())
    hv = np.array([3.0, -6.0, 9.0])
    np.testing.assert_allclose(gh, 2 * hv + 0.1 * np.exp(0.1 * hv), rtol=1e-14)
    np.testing.assert_allclose(gx, 3.0 * gh, rtol=1e-14)
    np.testing.assert_allclose(gk, np.ones(3))
    (gout,) = tc.grad(out, [out], executor=REF())
    assert gout == 1.0


def test_grad_accepts_a_single_tensor_and_a_seed() -> None:
    x = tc.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x * x
    seed = np.array([[1.0, 0.0, 2.0], [0.0, -1.0, 0.5]])
    (g,) = tc.grad(y, x, seed=seed, executor=REF())
    np.testing.assert_allclose(g, 2 * x.numpy() * seed)
    (g2,) = tc.grad(y, [x], seed=tc.tensor(seed), executor=REF())
    np.testing.assert_array_equal(g, g2)


def test_grad_of_a_shared_subexpression_accumulates() -> None:
    x = tc.tensor(np.array([0.5, 1.5]), requires_grad=True)
    s = tc.sin(x)
    out = tc.sum(s * s + s)
    (g,) = tc.grad(out, [x], executor=REF())
    xv = x.numpy()
    np.testing.assert_allclose(g, (2 * np.sin(xv) + 1) * np.cos(xv), rtol=1e-14)


def test_non_scalar_output_without_seed_is_a_value_error() -> None:
    x = tc.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError, match="seed"):
        tc.grad(x * 2.0, [x], executor=REF())


@pytest.mark.parametrize("seed_shape", [(3, 2), (6,), (), (1, 2, 3)])
def test_seed_of_wrong_shape_is_a_value_error(seed_shape) -> None:
    x = tc.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError, match="seed"):
        tc.grad(x * 2.0, [x], seed=np.ones(seed_shape), executor=REF())


def test_output_without_gradients_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        tc.grad(tc.sum(tc.tensor([1.0, 2.0])), [], executor=REF())


@pytest.mark.parametrize("data", [np.arange(3), [1, 2], np.array([True, False]), 3])
def test_integer_or_bool_tensor_requiring_grad_is_a_type_error(data) -> None:
    with pytest.raises(TypeError):
        tc.tensor(data, requires_grad=True)
    assert tc.tensor(data).requires_grad is False  # fine without gradients


def test_integer_dtype_argument_requiring_grad_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        tc.tensor([1.0, 2.0], dtype=np.int32, requires_grad=True)


# --------------------------------------------------------------------------- backward


def test_backward_fills_grad_and_accumulates_over_two_calls(reference_default) -> None:
    x = tc.tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)
    w = tc.tensor(np.array([2.0, 3.0, 4.0]), requires_grad=True)
    assert x.grad is None
    loss = tc.sum(x * x * w)
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad, 2 * x.numpy() * w.numpy())
    np.testing.assert_allclose(w.grad, x.numpy() ** 2)
    assert isinstance(x.grad, np.ndarray) and x.grad.dtype == np.float64
    loss.backward()
    np.testing.assert_allclose(x.grad, 4 * x.numpy() * w.numpy())
    tc.sum(x).backward()  # a different loss accumulates too
    np.testing.assert_allclose(x.grad, 4 * x.numpy() * w.numpy() + 1)
    np.testing.assert_allclose(w.grad, 2 * x.numpy() ** 2)


def test_backward_with_seed_and_float32_leaf(reference_default) -> None:
    x = tc.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    y = x * 3.0
    y.backward(np.array([1.0, -1.0], np.float32))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, [3.0, -3.0])
    with pytest.raises(ValueError, match="seed"):
        y.backward()


def test_backward_leaves_non_leaf_grads_alone(reference_default) -> None:
    x = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = x * 2.0
    tc.sum(h * h).backward()
    assert h.grad is None
    np.testing.assert_allclose(x.grad, 8 * x.numpy())


# --------------------------------------------------------------------------- no_grad


def test_no_grad_records_nothing() -> None:
    x = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with tc.no_grad():
        y = tc.sum(tc.exp(x) * 2.0 + x)
        assert y.requires_grad is False
        with pytest.raises(ValueError):
            tc.grad(y, [x], executor=REF())
    np.testing.assert_allclose(y.item(), np.sum(np.exp([1.0, 2.0]) * 2 + [1.0, 2.0]))
    z = tc.sum(x * 2.0)  # recording resumes after the block
    assert z.requires_grad is True
    (g,) = tc.grad(z, [x], executor=REF())
    np.testing.assert_array_equal(g, [2.0, 2.0])


def test_no_grad_restores_state_after_an_exception() -> None:
    x = tc.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError), tc.no_grad():
        raise RuntimeError("boom")
    assert (x * 2.0).requires_grad is True


def test_no_grad_is_per_thread() -> None:
    x = tc.tensor([1.0], requires_grad=True)
    seen: list[bool] = []
    with tc.no_grad():
        worker = threading.Thread(target=lambda: seen.append((x * 2.0).requires_grad))
        worker.start()
        worker.join()
    assert seen == [True]


# --------------------------------------------------------------------------- tensor data


def test_tensor_copies_its_input() -> None:
    source = np.array([1.0, 2.0, 3.0])
    t = tc.tensor(source, requires_grad=True)
    loss = tc.sum(t * t)
    source[:] = 100.0  # after recording, before backward
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])
    (g,) = tc.grad(loss, [t], executor=REF())
    np.testing.assert_array_equal(g, [2.0, 4.0, 6.0])
    assert loss.item() == 14.0

    lst = [1.0, 2.0]
    c = tc.tensor(lst)
    lst[0] = 9.0
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])
    u = tc.tensor(t)  # a tensor of a tensor is a new leaf holding a copy
    assert u is not t and u.requires_grad is False
    np.testing.assert_array_equal(u.numpy(), t.numpy())


def test_numpy_is_read_only() -> None:
    t = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    a = t.numpy()
    assert a.flags.writeable is False
    with pytest.raises(ValueError):
        a[0] = 5.0
    out = t * 2.0
    with pytest.raises(ValueError):
        out.numpy()[1] = 0.0
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])
    copy = np.array(t.detach())
    copy[0] = 7.0  # np.array(tensor) is a writable copy (of a tensor without gradient)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    with pytest.raises(TypeError, match="requires gradients"):
        np.array(t)  # would drop the gradient (tests/frontend/test_array_protocol.py)


def test_numpy_constants_are_copied_onto_the_tape() -> None:
    """Mutating a numpy array used as an operand must not change the recorded gradient."""
    x = tc.tensor([1.0, 2.0], requires_grad=True)
    w = np.array([3.0, 4.0])
    loss = tc.sum(x * w)
    w[:] = 100.0
    np.testing.assert_array_equal(tc.grad(loss, [x], executor=REF())[0], [3.0, 4.0])

    v = np.array([3.0, 0.0])
    loss = tc.sum(tc.maximum(x, v))  # the mask is recomputed from saved data
    v[:] = -50.0
    np.testing.assert_array_equal(tc.grad(loss, [x], executor=REF())[0], [0.0, 1.0])

    f32 = tc.tensor(np.ones(2, np.float32), requires_grad=True)
    u = np.array([2.0, 5.0], np.float32)
    loss = tc.sum(u / f32)
    u[:] = 0.0
    np.testing.assert_array_equal(tc.grad(loss, [f32], executor=REF())[0], [-2.0, -5.0])


def test_numpy_view_cannot_be_made_writable() -> None:
    t = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(ValueError):
        t.numpy().flags.writeable = True
    with pytest.raises(ValueError):
        (t * 2.0).numpy().flags.writeable = True


def test_grad_results_are_independent_copies() -> None:
    x = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    loss = tc.sum(x * 3.0)
    (g1,) = tc.grad(loss, [x], executor=REF())
    g1[:] = 0.0
    (g2,) = tc.grad(loss, [x], executor=REF())
    np.testing.assert_array_equal(g2, [3.0, 3.0])


# --------------------------------------------------------------------------- executors


def _loss() -> tuple[tc.Tensor, tc.Tensor]:
    x = tc.tensor(np.array([0.5, -1.0]), requires_grad=True)
    return tc.sum(tc.tanh(x) * x), x


def test_explicit_executor_is_used() -> None:
    counting = CountingExecutor()
    loss, x = _loss()
    (g,) = tc.grad(loss, [x], executor=counting)
    assert counting.transposed_calls == 3 and counting.forward_calls == 3  # tanh, mul, sum
    xv = x.numpy()
    np.testing.assert_allclose(g, np.tanh(xv) + xv * (1 - np.tanh(xv) ** 2), rtol=1e-14)


def test_use_executor_selects_the_executor() -> None:
    outer, inner, explicit = CountingExecutor(), CountingExecutor(), CountingExecutor()
    loss, x = _loss()
    with tc.use_executor(outer) as chosen:
        assert chosen is outer
        assert get_default_executor() is outer
        tc.grad(loss, [x])
        assert outer.transposed_calls > 0
        with tc.use_executor(inner):
            tc.grad(loss, [x])
            loss.backward(retain_graph=True)
            tc.grad(loss, [x], executor=explicit)
        assert get_default_executor() is outer
    assert inner.transposed_calls == 2 * outer.transposed_calls
    assert explicit.transposed_calls == outer.transposed_calls
    assert get_default_executor() is not outer


def test_set_default_executor(restore_default_executor) -> None:
    counting = CountingExecutor()
    tc.set_default_executor(counting)
    assert get_default_executor() is counting
    loss, x = _loss()
    (g,) = tc.grad(loss, [x])
    assert counting.transposed_calls == 3
    loss.backward(retain_graph=True)
    assert counting.transposed_calls == 6
    np.testing.assert_allclose(x.grad, g)
    other = CountingExecutor()
    with tc.use_executor(other):  # the thread's use_executor wins over the default
        tc.grad(loss, [x])
    assert other.transposed_calls == 3 and counting.transposed_calls == 6


def test_executor_type_is_checked() -> None:
    loss, x = _loss()
    with pytest.raises(TypeError):
        tc.set_default_executor(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError), tc.use_executor("reference"):  # type: ignore[arg-type]
        pass
    with pytest.raises(TypeError):
        tc.grad(loss, [x], executor=object())  # type: ignore[arg-type]

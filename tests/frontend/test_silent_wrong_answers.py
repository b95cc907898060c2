"""Regression tests for the silent wrong answers of issue 9: each of these programs gave
a wrong result without an error before (every test here fails on the main branch as it
stood when the issue was filed); now each gives the right answer or a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc


def leaf(values: object) -> tc.Tensor:
    return tc.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# (1) numpy functions on a Tensor dropped the gradient (or failed on ``out``).


def test_np_exp_of_a_tensor_keeps_the_gradient() -> None:
    x = leaf([0.5, -1.0])
    np.testing.assert_allclose(tc.grad(tc.sum(np.exp(x)), [x])[0], np.exp(x.numpy()))


def test_np_sum_of_a_tensor_is_tidu_compiles_sum() -> None:
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    loss = np.sum(x * x)
    np.testing.assert_allclose(tc.grad(loss, [x])[0], 2 * x.numpy())


@pytest.mark.parametrize(
    ("name", "expected"),
    [("prod", lambda v: np.prod(v) / v), ("max", lambda v: (v == v.max()) * 1.0)],
)
def test_np_prod_and_max_never_give_a_zero_gradient(name, expected) -> None:  # type: ignore[no-untyped-def]
    """Before: numpy reduced the tensor through ``__array__``: a number, zero gradient.
    Now: tidu_compile's function of that name, or TypeError naming it until it exists."""
    x = leaf([0.5, 3.0, 2.0])
    try:
        y = getattr(np, name)(x)
    except TypeError as error:
        assert f"no {name!r}" in str(error)
        return
    np.testing.assert_allclose(tc.grad(y, [x])[0], expected(x.numpy()), rtol=1e-12)


# (2) ``x == 0.5`` was a Python bool.


def test_equality_is_elementwise_in_where() -> None:
    x = leaf([0.5, 1.0, 2.0])
    y = tc.where(x == 0.5, 0.0, x)
    np.testing.assert_array_equal(y.numpy(), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(tc.grad(tc.sum(y), [x])[0], [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(tc.where(x != 0.5, x, 0.0).numpy(), [0.0, 1.0, 2.0])


# (3) ``tc.tensor([a, 2 * a])`` detached ``a``.


@pytest.mark.parametrize(
    "make",
    [
        lambda a: tc.tensor([a, 2 * a]),
        lambda a: tc.tensor([[a], [a]]),
        lambda a: np.array([a, 2 * a]),
    ],
)
def test_tensors_inside_data_are_a_clear_error(make) -> None:  # type: ignore[no-untyped-def]
    a = leaf([1.5, 2.0])
    with pytest.raises(TypeError, match="stack|requires gradients"):
        make(a)


def test_a_list_of_tensors_as_an_operand_is_their_stack_keeping_the_gradient() -> None:
    """numpy's array-like: ``add([a, a], 1)`` is ``add(stack([a, a]), 1)`` (issue 21)."""
    a = leaf([1.5, 2.0])
    y = tc.add([a, a], 1.0)
    np.testing.assert_array_equal(y.numpy(), [[2.5, 3.0], [2.5, 3.0]])
    (g,) = tc.grad(tc.sum(y * np.array([[1.0, 2.0], [3.0, 4.0]])), [a])
    np.testing.assert_array_equal(g, [4.0, 6.0])


def test_tidu_numpy_array_of_tensors_stacks_them_keeping_the_gradient() -> None:
    """autograd's and JAX's ``np.array([a, 2 * a])``: a stack, differentiable."""
    import tidu_compile.numpy as tnp

    a = leaf([1.5, 2.0])
    b = tnp.array([[a, 2 * a], [a**2, tnp.ones(2)]])
    assert b.shape == (2, 2, 2)
    (g,) = tc.grad(tc.sum(b * np.arange(8.0).reshape(2, 2, 2)), [a])
    np.testing.assert_allclose(g, [0 + 2 * 2 + 4 * 2 * 1.5, 1 + 2 * 3 + 5 * 2 * 2.0])


# (4) ``@tc.function`` froze values read from traced tensors.


def test_item_inside_a_function_no_longer_freezes_the_value() -> None:
    @tc.function
    def loss(x: tc.Tensor) -> tc.Tensor:
        scale = x.item()  # frozen at trace time before
        return x * x * scale

    with pytest.raises(TypeError, match="item.*frozen into every later call"):  # TracedValueError
        loss(leaf(2.0))


def test_numpy_mask_from_an_input_no_longer_freezes() -> None:
    @tc.function
    def loss(x: tc.Tensor) -> tc.Tensor:
        mask = x.numpy() > 0  # a constant of the trace before
        return tc.sum(tc.where(mask, x, 0.0))

    with pytest.raises(TypeError, match="numpy.*traced"):
        loss(leaf([1.0, -1.0]))


def test_array_arguments_are_not_baked_into_the_trace() -> None:
    @tc.function
    def loss(w: tc.Tensor, data: np.ndarray) -> tc.Tensor:
        return tc.sum((w - data) ** 2)

    w = leaf([1.0, 2.0])
    first, second = np.array([0.0, 0.0]), np.array([3.0, -1.0])
    assert loss(w, first).item() == pytest.approx(5.0)
    assert loss(w, second).item() == pytest.approx(13.0)  # not the first call's data
    np.testing.assert_allclose(tc.grad(loss(w, second), [w])[0], 2 * (w.numpy() - second))


# (5) ``requires_grad = False`` after recording cut the path; complex outputs had no seed.


def test_requires_grad_switched_off_after_recording_is_refused_at_backward() -> None:
    x = leaf([1.0, 2.0])
    loss = tc.sum(x * x)
    x.requires_grad = False  # allowed on a leaf (PyTorch's), but the records are stale
    with pytest.raises(RuntimeError, match="has been modified by an inplace operation"):
        tc.grad(loss, [x])
    x.requires_grad = True
    np.testing.assert_allclose(tc.grad(tc.sum(x * x), [x])[0], [2.0, 4.0])


def test_grad_of_a_complex_output_needs_a_seed() -> None:
    z = tc.tensor(np.array([1 + 1j, 2 - 1j]), requires_grad=True)
    out = tc.sum(z * z)
    with pytest.raises(ValueError, match="complex.*real scalar"):
        tc.grad(out, [z])
    with pytest.raises(ValueError, match="complex"):
        out.backward()
    (g,) = tc.grad(out, [z], seed=np.array(1.0 + 0j))
    np.testing.assert_allclose(g, np.conj(2 * z.numpy()))

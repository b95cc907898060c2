"""A small MLP: ``sum((tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2)`` against a hand-derived
numpy gradient."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc


def _mlp_numpy(X, W1, b1, W2, b2, Y):  # noqa: N803 - math names
    """Loss and hand-derived gradients (reverse mode by hand), in float64."""
    X, W1, b1, W2, b2, Y = (np.asarray(a, dtype=np.float64) for a in (X, W1, b1, W2, b2, Y))
    A = np.tanh(X @ W1 + b1)  # noqa: N806
    R = A @ W2 + b2 - Y  # noqa: N806
    loss = np.sum(R**2)
    dR = 2 * R  # noqa: N806
    dW2 = A.T @ dR  # noqa: N806
    db2 = dR.sum(axis=0)
    dZ = (dR @ W2.T) * (1 - A**2)  # noqa: N806
    dW1 = X.T @ dZ  # noqa: N806
    db1 = dZ.sum(axis=0)
    dX = dZ @ W1.T  # noqa: N806
    return loss, [dX, dW1, db1, dW2, db2]


def _data(dtype):
    rng = np.random.default_rng(42)
    n, d, h, o = 5, 4, 6, 3
    shapes = [(n, d), (d, h), (h,), (h, o), (o,), (n, o)]
    return [(0.7 * rng.standard_normal(s)).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-4)])
def test_mlp_gradient_matches_hand_derived(dtype, rtol) -> None:
    arrays = _data(dtype)
    X, W1, b1, W2, b2 = (tc.tensor(a, requires_grad=True) for a in arrays[:5])  # noqa: N806
    Y = tc.tensor(arrays[5])  # noqa: N806
    loss = tc.sum((tc.tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2)
    assert loss.shape == () and loss.dtype == dtype

    expected_loss, expected = _mlp_numpy(*arrays)
    np.testing.assert_allclose(loss.item(), expected_loss, rtol=rtol)
    grads = tc.grad(loss, [X, W1, b1, W2, b2], executor=tc.ReferenceExecutor())
    names = ["X", "W1", "b1", "W2", "b2"]
    for name, a, g, e in zip(names, arrays[:5], grads, expected, strict=True):
        assert g is not None and g.dtype == dtype and g.shape == a.shape, name
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * np.abs(e).max(), err_msg=name)


def test_mlp_gradient_step_decreases_the_loss() -> None:
    arrays = _data(np.float64)
    params = [tc.tensor(a, requires_grad=True) for a in arrays[1:5]]
    X, Y = tc.tensor(arrays[0]), tc.tensor(arrays[5])  # noqa: N806

    def loss_of(p):
        W1, b1, W2, b2 = p  # noqa: N806
        return tc.sum((tc.tanh(X @ W1 + b1) @ W2 + b2 - Y) ** 2)

    before = loss_of(params)
    grads = tc.grad(before, params, executor=tc.ReferenceExecutor())
    stepped = [tc.tensor(p.numpy() - 0.01 * g, requires_grad=True) for p, g in
               zip(params, grads, strict=True)]  # fmt: skip
    assert loss_of(stepped).item() < before.item()

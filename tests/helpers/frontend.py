"""Gradient checks of frontend functions against numpy and central finite differences."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import tidu_compile as tc
from helpers.numeric import (
    assert_grad_close,
    central_difference_grad,
    grad_tolerance,
    random_array,
    widen_dtype,
)


def check_frontend_grad(
    fn: Callable[..., tc.Tensor],
    np_fn: Callable[..., np.ndarray],
    arrays: Sequence[np.ndarray],
    seed: int = 0,
    executor: tc.BackwardExecutor | None = None,
) -> list[np.ndarray | None]:
    """Check ``fn`` (on tensors) against ``np_fn`` (on arrays): value, then gradient.

    The gradient is of ``L = Re(sum(conj(w) * fn(x...)))`` for a fixed random ``w``
    (never uniform: it tells the axes of a result apart), computed with ``executor``
    (default: a ``ReferenceExecutor``) and compared with central differences of
    ``np_fn`` in double precision. Returns the gradients.
    """
    rng = np.random.default_rng(seed)
    tensors = [tc.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*tensors)
    expected = np.asarray(np_fn(*arrays))
    assert isinstance(out, tc.Tensor)
    assert out.shape == expected.shape, f"shape {out.shape}, numpy gives {expected.shape}"
    assert out.dtype == expected.dtype, f"dtype {out.dtype}, numpy gives {expected.dtype}"
    tol = grad_tolerance(*(a.dtype for a in arrays), out.dtype)
    np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol)

    w = random_array(rng, out.shape, out.dtype)
    loss = tc.real(tc.sum(np.conj(w) * out))
    grads = tc.grad(loss, tensors, executor=executor or tc.ReferenceExecutor())

    wide_w = w.astype(widen_dtype(w.dtype))

    def numpy_loss(values: list[np.ndarray]) -> float:
        return float(np.sum(np.conj(wide_w) * np_fn(*values)).real)

    wide = [a.astype(widen_dtype(a.dtype)) for a in arrays]
    for i, (a, g) in enumerate(zip(arrays, grads, strict=True)):
        assert g is not None, f"no gradient for input {i}"
        assert g.dtype == a.dtype and g.shape == a.shape, f"input {i}: {g.dtype}{g.shape}"
        assert_grad_close(g, central_difference_grad(numpy_loss, wide, i), tol, f"input {i}")
    return grads

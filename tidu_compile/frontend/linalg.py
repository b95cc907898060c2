"""Contractions: ``matmul`` with numpy's 1-d and batched rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.promotion import astype, broadcast_to, float_dtype
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = ["matmul"]


def matmul(a: Any, b: Any) -> Tensor:
    """numpy's matmul: 1-d operands are vectors, leading dims broadcast as batch dims."""
    a_t, b_t = (as_tensor(a), as_tensor(b))
    if a_t.ndim == 0 or b_t.ndim == 0:
        raise ValueError("matmul: operands must have at least one dimension (use * for scalars)")
    dtype = float_dtype(np.result_type(a_t.dtype, b_t.dtype))
    a_t, b_t = astype(a_t, dtype), astype(b_t, dtype)
    k_a = a_t.shape[-1]
    k_b = b_t.shape[0] if b_t.ndim == 1 else b_t.shape[-2]
    if k_a != k_b:
        raise ValueError(
            f"matmul: contracted dimensions differ: {a_t.shape} @ {b_t.shape} ({k_a} != {k_b})"
        )
    if a_t.ndim == 1 or b_t.ndim == 1:
        lhs_c = (a_t.ndim - 1,)
        rhs_c = (0,) if b_t.ndim == 1 else (b_t.ndim - 2,)
        op = ops.DotGeneral(lhs_c, rhs_c, (), (), a_t.shape, b_t.shape)
        return apply1(op, a_t, b_t)
    try:
        batch = np.broadcast_shapes(a_t.shape[:-2], b_t.shape[:-2])
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions do not broadcast: {a_t.shape} @ {b_t.shape}"
        ) from None
    a_t = broadcast_to(a_t, batch + a_t.shape[-2:])
    b_t = broadcast_to(b_t, batch + b_t.shape[-2:])
    nb = len(batch)
    batch_dims = tuple(range(nb))
    op = ops.DotGeneral((nb + 1,), (nb,), batch_dims, batch_dims, a_t.shape, b_t.shape)
    return apply1(op, a_t, b_t)

"""Contractions: ``matmul`` with numpy's 1-d and batched rules, ``dot`` and ``outer``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.fast_ops import matmul_up_to_2d
from tidu_compile.frontend.promotion import astype, broadcast_to, contraction_dtype
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = ["dot", "matmul", "outer"]


def matmul(a: Any, b: Any) -> Tensor:
    """numpy's matmul: 1-d operands are vectors, leading dims broadcast as batch dims."""
    fast = matmul_up_to_2d(a, b)
    if fast is not None:
        return fast
    a_t, b_t = (as_tensor(a), as_tensor(b))
    if a_t.ndim == 0 or b_t.ndim == 0:
        raise ValueError("matmul: operands must have at least one dimension (use * for scalars)")
    a_t, b_t = _same_dtype(a_t, b_t)
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


def _same_dtype(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    dtype = contraction_dtype(a.dtype, b.dtype)
    return astype(a, dtype), astype(b, dtype)


def dot(a: Any, b: Any) -> Tensor:
    """numpy's ``dot``: a product with a 0-d operand; otherwise the sum over the last
    axis of ``a`` and the second-to-last of ``b`` (the last, for 1-d ``b``), the result
    having ``a``'s other axes then ``b``'s (no batching, unlike ``matmul``)."""
    a_t, b_t = _same_dtype(as_tensor(a), as_tensor(b))
    if a_t.ndim == 0 or b_t.ndim == 0:
        return a_t * b_t
    b_axis = max(b_t.ndim - 2, 0)
    if a_t.shape[-1] != b_t.shape[b_axis]:
        raise ValueError(
            f"dot: shapes {a_t.shape} and {b_t.shape} not aligned: "
            f"{a_t.shape[-1]} (dim {a_t.ndim - 1}) != {b_t.shape[b_axis]} (dim {b_axis})"
        )
    op = ops.DotGeneral((a_t.ndim - 1,), (b_axis,), (), (), a_t.shape, b_t.shape)
    return apply1(op, a_t, b_t)


def outer(a: Any, b: Any) -> Tensor:
    """numpy's ``outer``: ``a`` and ``b`` flattened, ``result[i, j] = a[i] * b[j]``."""
    return reshape(a, (-1, 1)) * reshape(b, (1, -1))

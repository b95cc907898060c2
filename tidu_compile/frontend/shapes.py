"""Shape functions: ``reshape`` and ``transpose`` (``broadcast_to`` is in ``promotion``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.promotion import tracked
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = ["reshape", "transpose"]


def reshape(x: Any, shape: Any) -> Tensor:
    """Row-major reshape; one dimension may be -1."""
    x = as_tensor(x)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    try:
        target = np.empty(x.shape, dtype=np.bool_).reshape(shape).shape
    except ValueError:
        raise ValueError(f"reshape: cannot reshape array of shape {x.shape} to {shape}") from None
    if target == x.shape:
        return x
    if not tracked(x):
        return Tensor(x.numpy().reshape(target))
    return apply1(ops.Reshape(target, x.shape), x)


def transpose(x: Any, axes: Any = None) -> Tensor:
    """Permute dimensions (default: reverse them)."""
    x = as_tensor(x)
    if axes is None:
        perm = tuple(reversed(range(x.ndim)))
    else:
        axes = tuple(axes)
        if any(not isinstance(a, (int, np.integer)) or not -x.ndim <= a < x.ndim for a in axes):
            raise ValueError(f"transpose: axes {axes} out of range for {x.ndim} dims")
        perm = tuple(int(a) % x.ndim for a in axes)
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError(
                f"transpose: axes {tuple(axes)} are not a permutation of {x.ndim} dims"
            )
    if perm == tuple(range(x.ndim)):
        return x
    if not tracked(x):
        return Tensor(np.transpose(x.numpy(), perm))
    return apply1(ops.Transpose(perm), x)

"""Reductions: ``sum`` and ``mean`` with numpy's ``axis`` and ``keepdims``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.promotion import unary_input
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import Tensor, apply1

__all__ = ["mean", "normalize_axes", "sum"]


def normalize_axes(axis: Any, ndim: int, name: str = "axis") -> tuple[int, ...]:
    """numpy's ``axis`` argument (None, an int or a tuple; negative counts from the end)
    as sorted non-negative axes; out-of-range or repeated axes are errors."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (int, np.integer, tuple, list)):
        raise TypeError(f"{name}: expected None, an int or a tuple of ints, got {axis!r}")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    normalized = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise ValueError(f"{name}: {a!r} is out of range for an array of rank {ndim}")
        normalized.append(int(a) % ndim if ndim else 0)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{name}: repeated axis in {axis!r}")
    return tuple(sorted(normalized))


def keep_dims(result: Tensor, shape: tuple[int, ...], axes: tuple[int, ...]) -> Tensor:
    """``result`` (reduced over ``axes`` of ``shape``) with those axes back as size 1."""
    return reshape(result, tuple(1 if d in axes else s for d, s in enumerate(shape)))


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Sum over ``axis`` (None: all axes; int or tuple)."""
    x = unary_input(x)
    axes = normalize_axes(axis, x.ndim)
    result = apply1(ops.ReduceSum(axes, x.shape), x) if axes else x
    return keep_dims(result, x.shape, axes) if keepdims else result


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (None: all axes; int or tuple)."""
    x = unary_input(x)
    axes = normalize_axes(axis, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    total = sum(x, axis, keepdims)
    return apply1(ops.Scale(1.0 / count if count else math.nan), total)  # numpy: empty -> nan



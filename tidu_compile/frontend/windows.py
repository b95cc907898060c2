"""Sliding windows as one ``Gather`` of constant positions (no primitive of their own).

A window of ``k`` elements along a dimension of ``n``, taken every ``stride`` elements
with the taps ``dilation`` apart, reads the positions::

    positions[o, j] = o * stride + j * dilation      o < (n - (k - 1) * dilation - 1) // stride + 1

so ``windows(x, axes, ...)`` is ``Gather(axis, index_count=len(axes))`` with one such
(broadcast) index array per dimension: ``y[..., o1, o2, j1, j2, ...] = x[..., o1 * s1 +
j1 * d1, o2 * s2 + j2 * d2, ...]``. Its transpose is the ``ScatterAdd`` of the gather
(the overlapping windows' cotangents add up), its derivative the same gather: both come
from the existing rules, and compile (a gather reads through its kernel's operand map).

``sliding_window_view`` is numpy's (``numpy.lib.stride_tricks``), here a copy: tensors
are immutable, so a view and a copy cannot be told apart.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.frontend.gather import gather
from tidu_compile.frontend.shapes import transpose
from tidu_compile.frontend.tensor import Tensor, as_tensor

__all__ = ["sliding_window_view"]


def output_size(size: int, window: int, stride: int = 1, dilation: int = 1) -> int:
    """How many windows of ``window`` taps ``dilation`` apart fit in ``size`` elements,
    one every ``stride``."""
    span = (window - 1) * dilation + 1
    return 0 if span > size else (size - span) // stride + 1


def windows(
    x: Tensor,
    axis: int,
    window: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
) -> Tensor:
    """The windows over the ``len(window)`` dimensions from ``axis``: those dimensions
    of ``x`` become ``(o1, ..., ok, j1, ..., jk)`` (window positions, then taps); one
    ``Gather``. Whatever follows them (channels, last) is copied in runs: a gather that
    reads a whole channel vector per index is ~4x faster than one reading a single
    element per index (measured: the windows of a ``(64, 16, 30, 30)`` NCHW tensor read
    in place, 37 ms; of the same tensor channels last, 8 ms)."""
    rank = len(window)
    outs = [
        output_size(x.shape[axis + d], window[d], stride[d], dilation[d]) for d in range(rank)
    ]
    grid = np.ix_(*(np.arange(n) for n in outs), *(np.arange(k) for k in window))
    shape = (*outs, *window)
    positions = [
        np.ascontiguousarray(
            np.broadcast_to(grid[d] * stride[d] + grid[rank + d] * dilation[d], shape),
            dtype=np.int64,
        )
        for d in range(rank)
    ]
    return gather(x, axis, positions)


def _normalized(window_shape: Any, axis: Any, ndim: int) -> tuple[list[int], list[int]]:
    """numpy's checks of ``window_shape`` and ``axis``, with its messages."""
    shape = [operator.index(w) for w in np.atleast_1d(np.asarray(window_shape, dtype=object))]
    if any(w < 0 for w in shape):
        raise ValueError("`window_shape` cannot contain negative values")
    if axis is None:
        if len(shape) != ndim:
            raise ValueError(
                f"Since axis is `None`, must provide window_shape for all dimensions of "
                f"`x`; got {len(shape)} window_shape elements and `x.ndim` is {ndim}."
            )
        return shape, list(range(ndim))
    axes = [axis] if isinstance(axis, int | np.integer) else list(axis)
    if len(axes) != len(shape):
        raise ValueError(
            f"Must provide matching length window_shape and axis; got {len(shape)} "
            f"window_shape elements and {len(axes)} axes elements."
        )
    for a in axes:
        if not -ndim <= operator.index(a) < ndim:
            raise np.exceptions.AxisError(operator.index(a), ndim)
    return shape, [operator.index(a) % ndim for a in axes]


def sliding_window_view(
    x: Any, window_shape: Any, axis: Any = None, *, subok: bool = False, writeable: bool = False
) -> Tensor:
    """numpy's ``sliding_window_view``: ``x.shape[a]`` becomes ``x.shape[a] - w + 1`` for
    each ``(a, w)`` of ``zip(axis, window_shape)`` and the windows' dimensions are
    appended in that order (an axis may repeat). One ``Gather`` and one ``Transpose``
    per window dimension."""
    del subok  # tensors have no subclasses to keep
    if writeable:
        raise ValueError(
            "sliding_window_view: writeable=True is not available: tensors are immutable"
        )
    t = as_tensor(x)
    shape, axes = _normalized(window_shape, axis, t.ndim)
    for a, w in zip(axes, shape, strict=True):
        if t.shape[a] < w:
            raise ValueError("window shape cannot be larger than input array shape")
    for a, w in zip(axes, shape, strict=True):
        t = windows(t, a, [w], [1], [1])  # (..., n - w + 1, w, ...): the taps move last
        t = transpose(t, [d for d in range(t.ndim) if d != a + 1] + [a + 1])
    return t

"""Joining and splitting: ``concatenate``, ``stack`` and friends, ``split`` and friends.

Every joining function is one ``Concatenate`` (after reshapes that add the stacking
dimension); every piece of a split is one ``Slice``. Dtypes promote as in numpy; when
no input is recorded, numpy computes the result directly.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.indexing import window
from tidu_compile.frontend.promotion import astype, constant, tracked
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor, contains_tensor

__all__ = [
    "append", "array_split", "column_stack", "concatenate", "dstack", "hsplit", "hstack",
    "split", "stack", "vsplit", "vstack",
]  # fmt: skip


def _tensors(arrays: Any, name: str) -> list[Tensor]:
    if isinstance(arrays, Tensor | np.ndarray) and np.ndim(arrays) == 0:
        raise ValueError(f"{name}: zero-dimensional arrays cannot be concatenated")
    values = [as_tensor(v) if contains_tensor(v) else v for v in arrays]
    if not values:
        raise ValueError(f"{name}: need at least one array to concatenate")
    dtype = np.result_type(*(v.dtype if isinstance(v, Tensor) else np.asarray(v) for v in values))
    return [astype(v, dtype) if isinstance(v, Tensor) else constant(v, dtype) for v in values]


def _axis(axis: Any, ndim: int, name: str) -> int:
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an int, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def concatenate(arrays: Sequence[Any], axis: Any = 0) -> Tensor:
    """Join arrays along an existing axis (``axis=None``: flatten them first)."""
    tensors = _tensors(arrays, "concatenate")
    if axis is None:
        tensors = [reshape(t, (t.size,)) for t in tensors]
        axis = 0
    first = tensors[0]
    if first.ndim == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = _axis(axis, first.ndim, "concatenate")
    for i, t in enumerate(tensors):
        if t.ndim != first.ndim:
            raise ValueError(
                f"concatenate: all the input arrays must have the same number of dimensions, "
                f"but array 0 has {first.ndim} and array {i} has {t.ndim}"
            )
        for d in range(first.ndim):
            if d != axis and t.shape[d] != first.shape[d]:
                raise ValueError(
                    f"concatenate: array {i} has size {t.shape[d]} in dimension {d}, array 0 "
                    f"has {first.shape[d]}; only dimension {axis} may differ"
                )
    if not any(tracked(t) for t in tensors):
        return Tensor(np.concatenate([t.numpy() for t in tensors], axis=axis))
    pieces = [t for t in tensors if t.shape[axis]]  # empty pieces add nothing
    if len(pieces) == 1:
        return pieces[0]
    if not pieces:
        return Tensor(np.concatenate([t.numpy() for t in tensors], axis=axis))
    return apply1(ops.Concatenate(axis, tuple(t.shape for t in pieces)), *pieces)


def stack(arrays: Sequence[Any], axis: Any = 0) -> Tensor:
    """Join arrays of one shape along a new axis."""
    tensors = [as_tensor(a) for a in arrays]
    if not tensors:
        raise ValueError("stack: need at least one array to stack")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ValueError(f"stack: all input arrays must have the same shape, array 0 has "
                             f"{shape} and array {i} has {t.shape}")  # fmt: skip
    axis = _axis(axis, len(shape) + 1, "stack")
    expanded = shape[:axis] + (1,) + shape[axis:]
    return concatenate([reshape(t, expanded) for t in tensors], axis)


def _at_least(t: Tensor, ndim: int) -> Tensor:
    if t.ndim >= ndim:
        return t
    if ndim == 1:
        return reshape(t, (1,))
    if ndim == 2:
        return reshape(t, (1, *t.shape) if t.ndim == 1 else (1, 1))
    shape = {0: (1, 1, 1), 1: (1, t.size, 1), 2: (*t.shape, 1)}[t.ndim]
    return reshape(t, shape)


def hstack(arrays: Sequence[Any]) -> Tensor:
    """Join along the second axis (the first, for 1-d arrays)."""
    tensors = [_at_least(as_tensor(a), 1) for a in arrays]
    if not tensors:
        raise ValueError("hstack: need at least one array to concatenate")
    return concatenate(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(arrays: Sequence[Any]) -> Tensor:
    """Join along the first axis, 1-d arrays as rows."""
    return concatenate([_at_least(as_tensor(a), 2) for a in arrays], 0)


def dstack(arrays: Sequence[Any]) -> Tensor:
    """Join along the third axis (arrays of fewer dimensions are expanded as in numpy)."""
    return concatenate([_at_least(as_tensor(a), 3) for a in arrays], 2)


def column_stack(arrays: Sequence[Any]) -> Tensor:
    """Join 1-d arrays as columns (2-d arrays as they are) along the second axis."""
    columns = []
    for a in arrays:
        t = as_tensor(a)
        columns.append(reshape(t, (t.size, 1)) if t.ndim < 2 else t)
    return concatenate(columns, 1)


def append(arr: Any, values: Any, axis: Any = None) -> Tensor:
    """``arr`` with ``values`` appended (``axis=None``: both flattened)."""
    return concatenate([arr, values], axis)


def _boundaries(size: int, sections: Any, name: str, even: bool) -> list[int]:
    """Split points of an axis of ``size``: from a section count, or given indices."""
    if isinstance(sections, int | np.integer):
        count = int(sections)
        if count <= 0:
            raise ValueError(f"{name}: number sections must be larger than 0")
        if even and size % count:
            raise ValueError(f"{name}: array split does not result in an equal division")
        base, extra = divmod(size, count)
        sizes = [base + 1] * extra + [base] * (count - extra)
        return list(np.cumsum([0, *sizes]))
    points = [operator.index(p) for p in sections]
    return [0, *points, size]


def array_split(x: Any, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """Split into sections (uneven allowed: the first ones one larger) or at indices."""
    return _split(x, indices_or_sections, axis, "array_split", even=False)


def split(x: Any, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """Split into equal sections, or at the given indices (numpy's rules)."""
    return _split(x, indices_or_sections, axis, "split", even=True)


def _split(x: Any, sections: Any, axis: Any, name: str, even: bool) -> list[Tensor]:
    t = as_tensor(x)
    if t.ndim == 0:
        raise ValueError(f"{name}: cannot split a zero-dimensional array")
    axis = _axis(axis, t.ndim, name)
    size = t.shape[axis]
    points = _boundaries(size, sections, name, even)
    pieces = []
    for first, last in zip(points[:-1], points[1:], strict=True):
        start, stop, _ = slice(first, last).indices(size)
        count = max(stop - start, 0)
        starts = [0] * t.ndim
        starts[axis] = start if count else 0
        counts = list(t.shape)
        counts[axis] = count
        pieces.append(window(t, starts, [1] * t.ndim, counts))
    return pieces


def hsplit(x: Any, indices_or_sections: Any) -> list[Tensor]:
    """Split along the second axis (the first, for 1-d arrays)."""
    t = as_tensor(x)
    if t.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(t, indices_or_sections, 1 if t.ndim > 1 else 0)


def vsplit(x: Any, indices_or_sections: Any) -> list[Tensor]:
    """Split along the first axis (arrays of 2 or more dimensions)."""
    t = as_tensor(x)
    if t.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(t, indices_or_sections, 0)

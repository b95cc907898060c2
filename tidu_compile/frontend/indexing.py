"""Basic indexing: a key of ints, slices, ``None`` and ``...`` resolved to a window.

``x[key]`` (``Tensor.__getitem__``, in ``tensor_methods``) with a basic key (ints,
slices with any step, ``None``, ``...``) is one ``Slice`` of the elements it keeps
(``window``) plus a ``Reshape`` that drops the integer-indexed dimensions and adds the
new ones; a key that keeps everything records nothing::

    x[1:, ::-2, 0]   ->  Slice(start=(1, 5, 0), step=(1, -2, 1), shape=(3, 3, 1)) + Reshape

Advanced indexing (integer arrays, lists, integer tensors, boolean masks) is a
``Gather`` (``frontend.gather``). Indices out of range raise ``IndexError`` here, at
record time, as numpy does.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.promotion import tracked
from tidu_compile.frontend.tensor import Tensor, apply1

__all__ = ["BasicIndex", "basic_index", "is_basic_key", "normalize_key", "window"]


def normalize_key(key: Any) -> tuple[Any, ...]:
    """``key`` as a tuple (numpy treats a non-tuple key as a 1-tuple)."""
    return key if isinstance(key, tuple) else (key,)


def _is_integer(item: Any) -> bool:
    if isinstance(item, bool | np.bool_):
        return False
    try:
        operator.index(item)
    except TypeError:
        return False
    return not isinstance(item, np.ndarray | Tensor) or np.ndim(item) == 0


def is_basic_key(key: tuple[Any, ...]) -> bool:
    """Only ints, slices, ``None`` and ``...``: numpy's basic indexing (no copy)."""
    return all(
        item is None or item is Ellipsis or isinstance(item, slice) or _is_integer(item)
        for item in key
    )


@dataclass(frozen=True)
class BasicIndex:
    """A basic key resolved against a shape: the window it reads (``start``, ``step``,
    ``counts`` per dimension) and the result shape (integer dims dropped, ``None``
    dims added)."""

    start: tuple[int, ...]
    step: tuple[int, ...]
    counts: tuple[int, ...]
    shape: tuple[int, ...]


def _expand_ellipsis(key: tuple[Any, ...], ndim: int) -> tuple[Any, ...]:
    ellipses = sum(1 for item in key if item is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for item in key if item is not None and item is not Ellipsis)
    if used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed"
        )
    if ellipses == 0:
        return key + (slice(None),) * (ndim - used)
    position = key.index(Ellipsis)
    return key[:position] + (slice(None),) * (ndim - used) + key[position + 1 :]


def basic_index(shape: Sequence[int], key: tuple[Any, ...]) -> BasicIndex:
    """Resolve a basic key (``is_basic_key``) against ``shape``, as numpy does."""
    key = _expand_ellipsis(key, len(shape))
    start, step, counts, result = [], [], [], []
    dim = 0
    for item in key:
        if item is None:
            result.append(1)
            continue
        size = shape[dim]
        if isinstance(item, slice):
            first, stop, stride = item.indices(size)
            count = len(range(first, stop, stride))
            start.append(first if count else 0)
            step.append(stride if count else 1)
            counts.append(count)
            result.append(count)
        else:
            index = operator.index(item)
            if not -size <= index < size:
                raise IndexError(
                    f"index {index} is out of bounds for axis {dim} with size {size}"
                )
            start.append(index % size)
            step.append(1)
            counts.append(1)
        dim += 1
    return BasicIndex(tuple(start), tuple(step), tuple(counts), tuple(result))


def window(x: Tensor, start: Sequence[int], step: Sequence[int], counts: Sequence[int]) -> Tensor:
    """``x`` read at ``start + step * i`` (``counts`` elements per dimension): a ``Slice``
    when ``x`` is recorded, a numpy view otherwise; ``x`` itself for the whole array."""
    start, step, counts = tuple(start), tuple(step), tuple(counts)
    if counts == x.shape and all(s == 1 for s in step):
        return x
    if not tracked(x):
        return Tensor(x.numpy()[ops.python_slices(start, step, counts)])
    return apply1(ops.Slice(start, step, counts, x.shape), x)

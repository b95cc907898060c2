"""Functional updates, spelled as in JAX: ``x.at[key].set(v)`` and ``x.at[key].add(v)``.

Tensors are immutable (item assignment raises ``TypeError``); these return a new
tensor. ``v`` broadcasts to the shape of ``x[key]`` and takes ``x``'s dtype.

* a basic key (ints, slices, ``None``, ``...``): ``add`` is ``x + Pad(v)``; ``set`` is
  ``where(mask, Pad(v), x)`` with the constant mask of the window;
* an advanced key (``frontend.gather``): ``add`` is ``x + ScatterAdd(v)`` (repeated
  indices add up); ``set`` writes, for a position indexed twice, the last value (as
  numpy's ``x[key] = v`` does): ``where(mask, ScatterAdd(v[last]), x)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import binary, where
from tidu_compile.frontend.gather import numpy_shape, scatter
from tidu_compile.frontend.indexing import basic_index, is_basic_key, normalize_key
from tidu_compile.frontend.promotion import astype, broadcast_to, tracked
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = ["IndexUpdates", "embed"]


def embed(
    v: Tensor, start: tuple[int, ...], step: tuple[int, ...], shape: tuple[int, ...]
) -> Tensor:
    """``v`` placed at ``start + step * i`` in zeros of ``shape`` (a ``Pad``)."""
    if v.shape == shape and all(s == 1 for s in step):
        return v
    if not tracked(v):
        return Tensor(ops.Pad(start, step, shape, v.shape).evaluate(v.numpy())[0])
    return apply1(ops.Pad(start, step, shape, v.shape), v)


def _updates(x: Tensor, v: Any, shape: tuple[int, ...]) -> Tensor:
    """``v`` as a tensor of ``x``'s dtype broadcast to ``shape``."""
    v = as_tensor(v)
    if v.dtype.kind == "c" and x.dtype.kind != "c":
        raise TypeError(f"at[...]: complex updates for a tensor of dtype {x.dtype}")
    return broadcast_to(astype(v, x.dtype), shape)


class IndexUpdates:
    """``x.at``: index it (``x.at[key]``) to get the update methods."""

    __slots__ = ("_x",)

    def __init__(self, x: Tensor) -> None:
        self._x = x

    def __getitem__(self, key: Any) -> _IndexedUpdate:
        return _IndexedUpdate(self._x, normalize_key(key))


class _IndexedUpdate:
    __slots__ = ("_key", "_x")

    def __init__(self, x: Tensor, key: tuple[Any, ...]) -> None:
        self._x, self._key = x, key

    def add(self, values: Any) -> Tensor:
        """A copy of ``x`` with ``values`` added at ``key`` (repeated indices add up)."""
        return binary(ops.Add, self._x, self._scattered(values)[0])

    def set(self, values: Any) -> Tensor:
        """A copy of ``x`` with ``values`` at ``key`` (the last one, where indexed twice)."""
        placed, mask = self._scattered(values, last_only=True)
        return where(mask, placed, self._x)

    def _scattered(self, values: Any, last_only: bool = False) -> tuple[Tensor, np.ndarray]:
        """``values`` placed in zeros of ``x``'s shape, and the mask of the positions."""
        x, key = self._x, self._key
        if not is_basic_key(key):
            return scatter(x, key, _updates(x, values, numpy_shape(x, key)), last_only)
        index = basic_index(x.shape, key)
        v = reshape(_updates(x, values, index.shape), index.counts)
        mask = np.zeros(x.shape, dtype=bool)
        mask[ops.python_slices(index.start, index.step, index.counts)] = True
        return embed(v, index.start, index.step, x.shape), mask

"""``r_`` and ``c_``: numpy's concatenation by index syntax, on tensors.

``r_[x, c, 1:10]`` concatenates along the first axis: tensors and arrays as they are,
numbers as 1-element arrays, slices as ``numpy.r_`` makes them (``arange``, or
``linspace`` for a complex step, constants). A leading string ``"axis[,ndmin[,trans1d]]"``
sets the axis, the least number of dimensions and where a lower-dimensional piece's
axes go (numpy's meaning: ``c_`` is ``r_["-1,2,0", ...]``, so 1-d pieces become
columns). The matrix directives ``"r"`` and ``"c"`` are refused. Gradients flow
through the pieces (one ``concatenate``).
"""

from __future__ import annotations

from typing import Any

import numpy

from tidu_compile.frontend import FUNCTIONS
from tidu_compile.frontend.tensor import Tensor

__all__ = ["c_", "r_"]


class AxisConcatenator:
    """``self[pieces]``: the pieces, each given at least ``ndmin`` dimensions, joined
    along ``axis`` (numpy's ``AxisConcatenator``)."""

    def __init__(self, axis: int, ndmin: int, trans1d: int) -> None:
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key: Any) -> Tensor:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            axis, ndmin, trans1d = _directive(items[0], ndmin, trans1d)
            items = items[1:]
        pieces = [_piece(item, ndmin, trans1d) for item in items]
        return FUNCTIONS["concatenate"](pieces, axis=axis)

    def __len__(self) -> int:
        return 0


def _directive(spec: str, ndmin: int, trans1d: int) -> tuple[int, int, int]:
    try:
        numbers = [int(part) for part in spec.split(",")]
    except ValueError:
        raise TypeError(f"r_/c_: the directive {spec!r} is not supported (matrix "
                        "results); give 'axis[,ndmin[,trans1d]]'") from None  # fmt: skip
    defaults = [0, ndmin, trans1d]
    axis, ndmin, trans1d = numbers + defaults[len(numbers):]
    return axis, ndmin, trans1d


def _piece(item: Any, ndmin: int, trans1d: int) -> Any:
    """``item`` as numpy's ``AxisConcatenator`` makes it: at least ``ndmin`` dimensions,
    new axes first, then the original ones moved to ``trans1d``."""
    if isinstance(item, slice):
        return Tensor(numpy.r_[item])
    piece = FUNCTIONS["array"](item)
    item_ndim = piece.ndim
    if item_ndim >= max(ndmin, 1):
        return piece
    target = max(ndmin, 1)
    piece = FUNCTIONS["reshape"](piece, (1,) * (target - item_ndim) + piece.shape)
    if trans1d != -1 and item_ndim > 0:
        k1, k2 = trans1d, target - item_ndim
        k1 = k1 + k2 + 1 if k1 < 0 else k1
        order = [*range(k1), *range(k2, target), *range(k1, k2)]
        piece = FUNCTIONS["transpose"](piece, order)
    return piece


r_ = AxisConcatenator(0, 1, -1)
c_ = AxisConcatenator(-1, 2, 0)

"""``norm``: numpy's ``linalg.norm`` for vectors and matrices, as reductions.

========================  ===========================================================
ord                       norm
========================  ===========================================================
None (``axis=None``)      the 2-norm of all elements (any rank), ``sqrt(sum(|x|^2))``
vector: None, 2           ``sqrt(sum(|x|^2))``, with gradient 0 at 0 (below)
vector: 1, inf, -inf      ``sum(|x|)``, ``max(|x|)``, ``min(|x|)``
vector: 0                 the count of nonzero elements (no gradient)
vector: other p           ``sum(|x|^p)^(1/p)``, gradient 0 at 0
matrix: None, 'fro'       ``sqrt(sum(|x|^2))`` over both axes
matrix: 1, -1, inf, -inf  max/min over columns of the column sums of ``|x|`` (1, -1),
                          over rows of the row sums (inf, -inf)
matrix: 2, -2, 'nuc'      the largest, smallest and sum of the singular values (``svd``;
                          real matrices; the gradient is ``u vᵀ`` of a simple one)
========================  ===========================================================

``|x|`` of a complex element is its modulus (``|x|^2 = Re(x conj(x))``). The 2-norm
(and a p-norm) of an all-zero slice has gradient 0, the minimum-norm subgradient (as
PyTorch; the formula ``x / |x|`` gives NaN there, as JAX); ``abs`` gives max, min and
the 1-norm gradient 0 at a zero element (``abs'(0) = 0``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import compare, conj, real, where
from tidu_compile.frontend.factorizations import svdvals
from tidu_compile.frontend.formulas import absolute
from tidu_compile.frontend.promotion import astype, unary_input
from tidu_compile.frontend.reductions import keep_dims, max, min, normalize_axes, sum
from tidu_compile.frontend.shapes import moveaxis
from tidu_compile.frontend.tensor import Tensor, apply1

__all__ = ["norm"]


def _squares(x: Tensor) -> Tensor:
    return real(x * conj(x)) if x.dtype.kind == "c" else x * x


def _root(total: Tensor, power: float) -> Tensor:
    """``total ** (1 / power)``, 0 with gradient 0 where ``total`` is 0."""
    zero = compare("eq", total, 0.0)
    safe = where(zero, 1.0, total)
    root = apply1(ops.Sqrt(), safe) if power == 2 else apply1(ops.Pow(1.0 / power), safe)
    return where(zero, 0.0, root)


def _vector_norm(x: Tensor, ord: Any, axis: int) -> Tensor:
    if ord is None or ord == 2:
        return _root(sum(_squares(x), axis), 2)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    if ord == math.inf:
        return max(absolute(x), axis)
    if ord == -math.inf:
        return min(absolute(x), axis)
    if ord == 0:
        nonzero = compare("ne", x, 0.0)
        return sum(astype(where(nonzero, 1.0, 0.0), real(x).dtype), axis)
    if ord == 1:
        return sum(absolute(x), axis)
    return _root(sum(apply1(ops.Pow(float(ord)), absolute(x)), axis), float(ord))


def _matrix_norm(x: Tensor, ord: Any, rows: int, columns: int) -> Tensor:
    if ord in (None, "fro"):
        return _root(sum(_squares(x), (rows, columns)), 2)
    if ord in (2, -2, "nuc"):
        values = svdvals(moveaxis(x, (rows, columns), (-2, -1)))
        if ord == "nuc":
            return sum(values, -1)
        return max(values, -1) if ord == 2 else min(values, -1)
    if ord in (1, -1):
        sums, over = sum(absolute(x), rows), columns - (columns > rows)
    elif ord in (math.inf, -math.inf):
        sums, over = sum(absolute(x), columns), rows - (rows > columns)
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    return max(sums, over) if ord > 0 else min(sums, over)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A002 - numpy's name
    """The vector or matrix norm of ``x`` over ``axis`` (numpy's ``linalg.norm``; see
    the module docstring for the orders)."""
    x = unary_input(x)
    if axis is None and ord is None:
        axes = tuple(range(x.ndim))
        result = _root(sum(_squares(x)), 2)
        return keep_dims(result, x.shape, axes) if keepdims else result
    if axis is None:
        if x.ndim not in (1, 2):
            raise ValueError(f"norm: improper number of dimensions ({x.ndim}) to norm")
        order = tuple(range(x.ndim))
    else:
        given = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        order = tuple(normalize_axes(a, x.ndim)[0] for a in given)
        normalize_axes(order, x.ndim)  # repeated axes are an error
    if len(order) == 1:
        result = _vector_norm(x, ord, order[0])
    elif len(order) == 2:
        result = _matrix_norm(x, ord, *order)
    else:
        raise ValueError(f"norm: axis {axis!r} names {len(order)} axes; it takes 1 or 2")
    return keep_dims(result, x.shape, tuple(sorted(order))) if keepdims else result

"""Products with numpy's signatures: ``dot``, ``inner``, ``outer``, ``vdot``,
``tensordot`` (one ``DotGeneral`` each: one BLAS call), ``kron`` (a broadcast product)
and ``cross`` (products of components)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import conj
from tidu_compile.frontend.joining import stack
from tidu_compile.frontend.promotion import astype, contraction_dtype
from tidu_compile.frontend.shapes import reshape, transpose
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = ["cross", "dot", "inner", "kron", "outer", "tensordot", "vdot"]


def promoted(*values: Any) -> list[Tensor]:
    """``values`` as tensors of the dtype their contraction computes in
    (``promotion.contraction_dtype``: integers stay exact)."""
    tensors = [as_tensor(v) for v in values]
    dtype = contraction_dtype(*(t.dtype for t in tensors))
    return [astype(t, dtype) for t in tensors]


def contract(a: Tensor, b: Tensor, a_axes: tuple[int, ...], b_axes: tuple[int, ...]) -> Tensor:
    """Sum over ``a_axes`` of ``a`` paired with ``b_axes`` of ``b``; the result has
    ``a``'s other dimensions, then ``b``'s (one ``DotGeneral``)."""
    for i, j in zip(a_axes, b_axes, strict=True):
        if a.shape[i] != b.shape[j]:
            raise ValueError(
                f"shapes {a.shape} and {b.shape} not aligned: {a.shape[i]} (dim {i}) != "
                f"{b.shape[j]} (dim {j})"
            )
    return apply1(ops.DotGeneral(a_axes, b_axes, (), (), a.shape, b.shape), a, b)


def tensordot(a: Any, b: Any, axes: Any = 2) -> Tensor:
    """Sum over the last ``axes`` dimensions of ``a`` and the first of ``b`` (or over the
    two given sequences of axes)."""
    x, y = promoted(a, b)
    if isinstance(axes, int | np.integer):
        n = int(axes)
        if n < 0 or n > min(x.ndim, y.ndim):
            raise ValueError(f"tensordot: axes={n} does not fit shapes {x.shape} and {y.shape}")
        a_axes, b_axes = tuple(range(x.ndim - n, x.ndim)), tuple(range(n))
    else:
        first, second = axes
        first = [first] if isinstance(first, int | np.integer) else list(first)
        second = [second] if isinstance(second, int | np.integer) else list(second)
        if len(first) != len(second):
            raise ValueError("tensordot: the axes sequences must have the same length")
        a_axes = tuple(operator.index(i) % x.ndim for i in first)
        b_axes = tuple(operator.index(i) % y.ndim for i in second)
    return contract(x, y, a_axes, b_axes)


def dot(a: Any, b: Any) -> Tensor:
    """numpy's ``dot``: a product for 0-d operands, else a sum over the last axis of
    ``a`` and the second-to-last of ``b`` (the last, for a vector)."""
    x, y = promoted(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return contract(x, y, (x.ndim - 1,), (max(y.ndim - 2, 0),))


def inner(a: Any, b: Any) -> Tensor:
    """Sum over the last axes of ``a`` and ``b`` (a product for 0-d operands)."""
    x, y = promoted(a, b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return contract(x, y, (x.ndim - 1,), (y.ndim - 1,))


def outer(a: Any, b: Any) -> Tensor:
    """The outer product of the flattened arrays."""
    x, y = promoted(a, b)
    return contract(reshape(x, (x.size,)), reshape(y, (y.size,)), (), ())


def vdot(a: Any, b: Any) -> Tensor:
    """``sum(conj(a) * b)`` of the flattened arrays."""
    x, y = promoted(a, b)
    if x.size != y.size:
        raise ValueError(f"vdot: vectors have different lengths ({x.size} and {y.size})")
    x = conj(x) if x.dtype.kind == "c" else x  # (numpy conjugates bools to int8)
    return contract(reshape(x, (x.size,)), reshape(y, (y.size,)), (0,), (0,))


def kron(a: Any, b: Any) -> Tensor:
    """The Kronecker product: blocks ``a[i, j] * b`` (numpy's shapes)."""
    x, y = promoted(a, b)
    ndim = max(x.ndim, y.ndim)
    x = reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    y = reshape(y, (1,) * (ndim - y.ndim) + y.shape)
    spread_x = tuple(v for s in x.shape for v in (s, 1))
    spread_y = tuple(v for s in y.shape for v in (1, s))
    blocks = reshape(x, spread_x) * reshape(y, spread_y)
    return reshape(blocks, tuple(p * q for p, q in zip(x.shape, y.shape, strict=True)))


def _components(t: Tensor, axis: int) -> tuple[list[Tensor], int]:
    """The components of vectors along ``axis`` (moved last), and their count."""
    axis = operator.index(axis) % t.ndim
    t = transpose(t, [d for d in range(t.ndim) if d != axis] + [axis])
    n = t.shape[-1]
    if n not in (2, 3):
        raise ValueError(
            "cross: incompatible dimensions for cross product (dimension must be 2 or 3)"
        )
    return [t[..., i] for i in range(n)], n


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Tensor:  # fmt: skip
    """The cross product of vectors of 2 or 3 components (numpy's rules)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = promoted(a, b)
    (u, nu), (v, nv) = _components(x, axisa), _components(y, axisb)
    if nu == 2 and nv == 2:
        return u[0] * v[1] - u[1] * v[0]
    zero = Tensor(np.zeros((), dtype=x.dtype))
    u0, u1, u2 = u if nu == 3 else [*u, zero]
    v0, v1, v2 = v if nv == 3 else [*v, zero]
    result = stack([u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0], axis=-1)
    return transpose(result, _move_last(result.ndim, axisc))


def _move_last(ndim: int, target: int) -> list[int]:
    """The permutation moving the last axis to ``target``."""
    target = operator.index(target) % ndim
    order = list(range(ndim - 1))
    order.insert(target, ndim - 1)
    return order

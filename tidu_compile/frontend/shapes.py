"""Shape functions, numpy's names and rules, all through ``Reshape``, ``Transpose`` and
``BroadcastInDim`` (so each is differentiable): ``reshape``, ``transpose``,
``expand_dims``, ``squeeze``, ``ravel``/``flatten``, ``swapaxes``, ``moveaxis``,
``atleast_1d/2d/3d`` and ``broadcast_arrays`` (``broadcast_to`` is in ``promotion``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.promotion import broadcast_to, tracked
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "expand_dims", "flatten",
    "moveaxis", "ravel", "reshape", "squeeze", "swapaxes", "transpose",
]  # fmt: skip


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


def _axes(axis: Any, ndim: int, name: str) -> tuple[int, ...]:
    """numpy's ``axis`` (an int or a sequence of ints, negative from the end) for an
    array of rank ``ndim``, as non-negative axes in the given order."""
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if any(not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim for a in axes):
        raise ValueError(f"{name}: axis {axis!r} is out of range for an array of rank {ndim}")
    normalized = tuple(int(a) % ndim for a in axes)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{name}: repeated axis in {axis!r}")
    return normalized


def expand_dims(a: Any, axis: Any) -> Tensor:
    """``a`` with new axes of size 1 at ``axis`` (an int or a tuple, positions in the result)."""
    a = as_tensor(a)
    count = 1 if isinstance(axis, (int, np.integer)) else len(tuple(axis))
    new = set(_axes(axis, a.ndim + count, "expand_dims"))
    sizes = iter(a.shape)
    return reshape(a, tuple(1 if d in new else next(sizes) for d in range(a.ndim + count)))


def squeeze(a: Any, axis: Any = None) -> Tensor:
    """``a`` without its axes of size 1 (all of them, or those of ``axis``, which must
    have size 1)."""
    a = as_tensor(a)
    if axis is None:
        axes = tuple(d for d, size in enumerate(a.shape) if size == 1)
    else:
        axes = _axes(axis, a.ndim, "squeeze")
        if any(a.shape[d] != 1 for d in axes):
            raise ValueError(
                f"squeeze: cannot squeeze axis {axis!r} of shape {a.shape}: its size is not one"
            )
    return reshape(a, tuple(size for d, size in enumerate(a.shape) if d not in axes))


def ravel(a: Any) -> Tensor:
    """``a`` as a 1-d tensor, in row-major order."""
    return reshape(a, (-1,))


def flatten(a: Any) -> Tensor:
    """``a`` as a 1-d tensor, in row-major order (numpy's ``ndarray.flatten``)."""
    return reshape(a, (-1,))


def swapaxes(a: Any, axis1: int, axis2: int) -> Tensor:
    """``a`` with axes ``axis1`` and ``axis2`` exchanged."""
    a = as_tensor(a)
    (first,), (second,) = _axes(axis1, a.ndim, "swapaxes"), _axes(axis2, a.ndim, "swapaxes")
    perm = list(range(a.ndim))
    perm[first], perm[second] = perm[second], perm[first]
    return transpose(a, perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Tensor:
    """``a`` with the axes ``source`` moved to positions ``destination`` (the others keep
    their order)."""
    a = as_tensor(a)
    src = _axes(source, a.ndim, "moveaxis (source)")
    dst = _axes(destination, a.ndim, "moveaxis (destination)")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes")
    rest = iter(d for d in range(a.ndim) if d not in src)
    placed = dict(zip(dst, src, strict=True))
    return transpose(a, [placed[d] if d in placed else next(rest) for d in range(a.ndim)])


def _atleast(arys: tuple[Any, ...], rank: int) -> Any:
    """numpy's ``atleast_<rank>d``: 0-d -> (1,)*rank; 1-d ``(n,)`` -> ``(1, n)`` and
    ``(1, n, 1)``; 2-d ``(m, n)`` -> ``(m, n, 1)`` at rank 3."""
    results = []
    for value in arys:
        a = as_tensor(value)
        if a.ndim >= rank:
            results.append(a)
            continue
        if a.ndim == 0:
            shape: tuple[int, ...] = (1,) * rank
        elif a.ndim == 1:
            shape = (1, a.shape[0]) if rank == 2 else (1, a.shape[0], 1)
        else:
            shape = (*a.shape, 1)
        results.append(reshape(a, shape))
    return results[0] if len(results) == 1 else tuple(results)


def atleast_1d(*arys: Any) -> Any:
    """Each argument with at least one dimension (one tensor, or a tuple for several)."""
    return _atleast(arys, 1)


def atleast_2d(*arys: Any) -> Any:
    """Each argument with at least two dimensions (a 1-d ``(n,)`` becomes ``(1, n)``)."""
    return _atleast(arys, 2)


def atleast_3d(*arys: Any) -> Any:
    """Each argument with at least three dimensions (``(n,)`` -> ``(1, n, 1)``,
    ``(m, n)`` -> ``(m, n, 1)``)."""
    return _atleast(arys, 3)


def broadcast_arrays(*args: Any) -> tuple[Tensor, ...]:
    """The arguments broadcast to their common shape (dtypes kept)."""
    tensors = [as_tensor(a) for a in args]
    try:
        shape = np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:
        shapes = " ".join(str(t.shape) for t in tensors)
        raise ValueError(f"broadcast_arrays: shapes {shapes} do not broadcast together") from None
    return tuple(broadcast_to(t, shape) for t in tensors)

"""Array manipulation with numpy's signatures, built from slices, pads, gathers, scans:

=====================  ============================================================
function               recorded as
=====================  ============================================================
flip, roll, diff       ``Slice`` (reversed; two pieces ``Concatenate``-d; differences)
pad                    ``Pad`` (constant mode), ``Gather`` along each axis (the others)
tril, triu             ``where`` with a constant mask
diagonal, trace, diag  ``Gather`` at ``(i, i + k)`` (``diag`` of a vector: a strided
                       ``Pad`` of the flattened matrix)
tile, repeat           ``BroadcastInDim`` + ``Reshape`` (``Gather`` for per-element
                       repeat counts)
cumsum, cumprod        ``CumSum``, ``CumProd``
logcumsumexp           ``LogCumSumExp`` (``jax.lax.cumlogsumexp``; not numpy's)
sort                   ``Gather`` of the stable ``Argsort`` permutation
=====================  ============================================================
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import where
from tidu_compile.frontend.gather import gather, take_along_axis
from tidu_compile.frontend.indexing import window
from tidu_compile.frontend.joining import concatenate
from tidu_compile.frontend.promotion import accumulated, broadcast_to, tracked, unary_input
from tidu_compile.frontend.reductions import sum as total
from tidu_compile.frontend.shapes import reshape, transpose
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = [
    "cumprod", "cumsum", "diag", "diagonal", "diff", "flip", "logcumsumexp", "pad",
    "repeat", "roll", "sort", "tile", "trace", "tril", "triu",
]  # fmt: skip


def _axis(axis: Any, ndim: int, name: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def _along(x: Tensor, axis: int, start: int, count: int, step: int = 1) -> Tensor:
    """``count`` elements of ``x`` along ``axis`` from ``start`` by ``step``."""
    starts = [0] * x.ndim
    steps = [1] * x.ndim
    counts = list(x.shape)
    starts[axis], steps[axis], counts[axis] = (start, step, count) if count else (0, 1, 0)
    return window(x, starts, steps, counts)


# --------------------------------------------------------------------------- reordering


def flip(m: Any, axis: Any = None) -> Tensor:
    """Reverse the order of elements along ``axis`` (None: every axis)."""
    x = as_tensor(m)
    axes = range(x.ndim) if axis is None else [axis] if isinstance(axis, int) else axis
    flipped = {_axis(a, x.ndim, "flip") for a in axes}
    starts = [s - 1 if d in flipped and s else 0 for d, s in enumerate(x.shape)]
    steps = [-1 if d in flipped and s else 1 for d, s in enumerate(x.shape)]
    return window(x, starts, steps, x.shape)


def roll(a: Any, shift: Any, axis: Any = None) -> Tensor:
    """Rotate elements along ``axis`` by ``shift`` (None: of the flattened array)."""
    x = as_tensor(a)
    if axis is None:
        return reshape(roll(reshape(x, (x.size,)), shift, 0), x.shape)
    shifts = [shift] if isinstance(shift, int | np.integer) else list(shift)
    axes = [axis] if isinstance(axis, int | np.integer) else list(axis)
    if len(shifts) == 1:
        shifts *= len(axes)
    if len(shifts) != len(axes):
        raise ValueError("roll: shift and axis must have the same length")
    for s, ax in zip(shifts, axes, strict=True):
        ax = _axis(ax, x.ndim, "roll")
        n = x.shape[ax]
        k = int(s) % n if n else 0
        if k:
            x = concatenate([_along(x, ax, n - k, k), _along(x, ax, 0, n - k)], ax)
    return x


def diff(a: Any, n: int = 1, axis: int = -1) -> Tensor:
    """The ``n``-th discrete difference along ``axis``."""
    x = as_tensor(a)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    axis = _axis(axis, x.ndim, "diff")
    for _ in range(n):
        size = x.shape[axis]
        if size == 0:
            break
        x = _along(x, axis, 1, size - 1) - _along(x, axis, 0, size - 1)
    return x


def sort(a: Any, axis: Any = -1) -> Tensor:
    """Sorted values along ``axis`` (None: of the flattened array); the gradient goes
    back through the (stable) permutation."""
    x = unary_input(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    axis = _axis(axis, x.ndim, "sort")
    if not tracked(x):
        return Tensor(np.sort(x.numpy(), axis=axis, kind="stable"))
    if x.dtype.kind == "c":  # numpy's lexicographic order: by the imaginary part, then the real
        by_imag = apply1(ops.Argsort(axis), apply1(ops.Imag(), x))
        real_part = take_along_axis(apply1(ops.Real(), x), by_imag, axis)
        order = take_along_axis(by_imag, apply1(ops.Argsort(axis), real_part), axis)
    else:
        order = apply1(ops.Argsort(axis), x)  # recorded inside a @tc.function: not frozen
    return take_along_axis(x, order, axis)


# --------------------------------------------------------------------------- scans


def cumsum(a: Any, axis: Any = None) -> Tensor:
    """Cumulative sum along ``axis`` (None: of the flattened array); integers and bool
    exactly, in numpy's dtypes (as ``sum``)."""
    x = accumulated(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    if x.ndim == 0:
        return reshape(x, (1,))
    return apply1(ops.CumSum(_axis(axis, x.ndim, "cumsum")), x)


def cumprod(a: Any, axis: Any = None) -> Tensor:
    """Cumulative product along ``axis`` (None: of the flattened array); exact
    gradients where the array has zeros. Integers and bool exactly, as ``cumsum``."""
    x = accumulated(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    if x.ndim == 0:
        return reshape(x, (1,))
    return apply1(ops.CumProd(_axis(axis, x.ndim, "cumprod"), x.shape), x)


def logcumsumexp(x: Any, axis: Any = 0, reverse: bool = False) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow (from the end when
    ``reverse``), as ``jax.lax.cumlogsumexp``; integers and bool become float64."""
    t = unary_input(x)
    return apply1(ops.LogCumSumExp(_axis(axis, t.ndim, "logcumsumexp"), t.shape, reverse), t)


# --------------------------------------------------------------------------- padding


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Tensor:
    """numpy's ``pad`` in the modes that copy: ``constant``, ``edge``, ``wrap``,
    ``reflect``, ``symmetric``. A constant pad is one ``Pad``; the other modes are one
    ``Gather`` per padded axis at the positions numpy's ``pad`` gives ``arange(n)``."""
    x = as_tensor(array)
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    except ValueError:
        raise ValueError(f"pad: pad_width {pad_width!r} does not fit {x.ndim} dims") from None
    if (widths < 0).any():
        raise ValueError("pad: index can't contain negative values")
    if mode == "constant":
        shape = tuple(int(s + lo + hi) for s, (lo, hi) in zip(x.shape, widths, strict=True))
        values = np.broadcast_to(np.asarray(constant_values), (x.ndim, 2))
        single = np.unique(values).size == 1
        fill = complex(values.flat[0]) if x.dtype.kind == "c" else float(values.flat[0].real)
        starts = tuple(int(w) if n else 0 for w, n in zip(widths[:, 0], x.shape, strict=True))
        op = ops.Pad(starts, (1,) * x.ndim, shape, x.shape, fill if single else 0.0)
        placed = apply1(op, x) if tracked(x) else Tensor(op.evaluate(x.numpy())[0])
        if single:
            return placed
        border = np.pad(np.zeros(x.shape, x.dtype), widths, constant_values=constant_values)
        return placed + border
    if mode not in ("edge", "wrap", "reflect", "symmetric"):
        raise ValueError(f"pad: mode {mode!r} is not supported (constant, edge, wrap, "
                         "reflect, symmetric)")  # fmt: skip
    for axis in range(x.ndim):
        lo, hi = (int(w) for w in widths[axis])
        if lo or hi:
            positions = np.pad(np.arange(x.shape[axis]), (lo, hi), mode=mode)  # type: ignore[call-overload]
            x = gather(x, axis, [positions])
    return x


# --------------------------------------------------------------------------- triangles, diagonals


def _triangle(m: Any, k: int, lower: bool) -> Tensor:
    x = as_tensor(m)
    if x.ndim < 2:
        raise ValueError("tril/triu: the input must have at least 2 dimensions")
    rows, cols = x.shape[-2:]
    mask = np.tri(rows, cols, k - (0 if lower else 1), dtype=bool)
    mask = mask if lower else ~mask
    return where(np.broadcast_to(mask, x.shape), x, np.zeros((), dtype=x.dtype))


def tril(m: Any, k: int = 0) -> Tensor:
    """The lower triangle (elements below the ``k``-th diagonal zeroed above it)."""
    return _triangle(m, k, True)


def triu(m: Any, k: int = 0) -> Tensor:
    """The upper triangle (zeros below the ``k``-th diagonal)."""
    return _triangle(m, k, False)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The ``offset`` diagonal of the ``axis1``/``axis2`` planes, as the last axis."""
    x = as_tensor(a)
    if x.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions")
    a1, a2 = _axis(axis1, x.ndim, "diagonal"), _axis(axis2, x.ndim, "diagonal")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    rest = [d for d in range(x.ndim) if d not in (a1, a2)]
    x = transpose(x, [*rest, a1, a2])
    rows, cols = x.shape[-2:]
    first_row, first_col = max(-offset, 0), max(offset, 0)
    length = max(min(rows - first_row, cols - first_col), 0)
    steps = np.arange(length)
    return gather(x, x.ndim - 2, [steps + first_row, steps + first_col])


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The sum of the ``offset`` diagonal."""
    return total(diagonal(a, offset, axis1, axis2), axis=-1)


def diag(v: Any, k: int = 0) -> Tensor:
    """A 1-d array's square matrix with it on the ``k``-th diagonal; a 2-d array's
    ``k``-th diagonal."""
    x = as_tensor(v)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError("diag: input must be 1- or 2-d")
    n = x.shape[0] + abs(k)
    if x.shape[0] == 0:
        return Tensor(np.zeros((n, n), dtype=x.dtype))
    start = k if k >= 0 else -k * n
    op = ops.Pad((start,), (n + 1,), (n * n,), x.shape)
    flat = apply1(op, x) if tracked(x) else Tensor(op.evaluate(x.numpy())[0])
    return reshape(flat, (n, n))


# --------------------------------------------------------------------------- repetition


def tile(a: Any, reps: Any) -> Tensor:
    """``a`` repeated ``reps`` times along each axis."""
    x = as_tensor(a)
    reps = (int(reps),) if isinstance(reps, int | np.integer) else tuple(int(r) for r in reps)
    ndim = max(x.ndim, len(reps))
    reps = (1,) * (ndim - len(reps)) + reps
    x = reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    interleaved = tuple(v for r, s in zip(reps, x.shape, strict=True) for v in (r, s))
    spread = tuple(v for s in x.shape for v in (1, s))
    grown = broadcast_to(reshape(x, spread), interleaved)
    return reshape(grown, tuple(r * s for r, s in zip(reps, x.shape, strict=True)))


def repeat(a: Any, repeats: Any, axis: Any = None) -> Tensor:
    """Each element repeated ``repeats`` times (a count, or one per element)."""
    x = as_tensor(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    axis = _axis(axis, x.ndim, "repeat")
    counts = np.asarray(repeats)
    if counts.ndim == 0:
        r = int(counts)
        if r < 0:
            raise ValueError("repeat: negative dimensions are not allowed")
        shape = x.shape[: axis + 1] + (1,) + x.shape[axis + 1 :]
        target = x.shape[: axis + 1] + (r,) + x.shape[axis + 1 :]
        grown = broadcast_to(reshape(x, shape), target)
        final = x.shape[:axis] + (x.shape[axis] * r,) + x.shape[axis + 1 :]
        return reshape(grown, final)
    counts = np.broadcast_to(counts, (x.shape[axis],))
    return gather(x, axis, [np.repeat(np.arange(x.shape[axis]), counts)])


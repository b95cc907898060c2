"""Advanced indexing with numpy's rules, as ``Gather`` and ``ScatterAdd``.

``x[key]`` with integer arrays, lists, integer tensors or boolean masks (given as
constants) in ``key``: the slices in ``key`` are applied first (one ``Slice``); the
advanced indices, broadcast together to a shape ``B``, then index their dimensions with
one ``Gather`` (after a ``Transpose`` that brings them together when a slice separates
them, as numpy then puts ``B`` first); a final ``Reshape`` adds the ``None`` dimensions::

    logp[np.arange(n), labels]   ->  Gather(axis=0, index_count=2)      (one value per row)
    x[:, [2, 0, 2]]              ->  Gather(axis=1, index_count=1)      (repeated columns)
    x[mask]                      ->  Gather of mask.nonzero()

Index arrays are integer data: an index out of range raises ``IndexError`` here; inside a
``@tc.function`` an integer tensor argument used as an index stays an input of the
trace (it must then already have the broadcast shape; boolean masks must be constants).
``take``, ``take_along_axis`` and ``x.at[key]`` with such keys are built the same way.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import where
from tidu_compile.frontend.indexing import window
from tidu_compile.frontend.promotion import tracked
from tidu_compile.frontend.shapes import reshape, transpose
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor, apply1, apply_op, as_tensor

__all__ = ["advanced_index", "numpy_shape", "scatter", "take", "take_along_axis"]

Index = np.ndarray | Tensor
"""An integer index array: a constant (numpy) or a traced integer tensor."""


def _traced(value: Any) -> bool:
    """An integer or bool tensor the current ``@tc.function`` trace already knows: its
    data changes between calls, so it must stay an op input (no numpy on it)."""
    capture = current_capture()
    return capture is not None and isinstance(value, Tensor) and id(value) in capture.ids


def _numpy_item(item: Any) -> Any:
    """A key item as numpy sees it (tensors as arrays: a traced integer tensor's values
    of the call being traced, used for shapes and range checks only)."""
    if isinstance(item, Tensor):
        return item._data
    if isinstance(item, list):
        array = np.asarray(item)
        return array.astype(np.intp) if array.size == 0 else array  # numpy: [] is an index
    return item


def _as_index(item: Any, what: str) -> Index:
    """An integer index array (or a traced integer tensor) from a key item."""
    if isinstance(item, Tensor) and _traced(item):
        if item.dtype.kind not in "iu":
            raise TypeError(
                f"{what}: a {item.dtype} tensor argument of a tidu_compile.function cannot "
                "index (boolean masks give data-dependent shapes): pass integer indices, or "
                "close over the mask as a constant"
            )
        return item
    array = np.asarray(_numpy_item(item))
    if array.dtype.kind not in "iub" and not (array.size == 0 and array.dtype.kind == "f"):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
            "integer or boolean arrays are valid indices"
        )
    return array.astype(np.int64)


def _split_key(key: tuple[Any, ...], ndim: int) -> list[Any]:
    """The key with the ellipsis expanded and every boolean mask replaced by its
    ``nonzero()`` index arrays (one per dimension it covers)."""
    items: list[Any] = []
    for item in key:
        value = _numpy_item(item) if not _traced(item) else item
        if isinstance(value, np.ndarray) and value.dtype == bool:
            if value.ndim == 0:
                raise IndexError("a scalar boolean index is not supported; use None and a mask")
            items.extend(value.nonzero())
        elif isinstance(value, bool | np.bool_):
            raise IndexError("a scalar boolean index is not supported; use None and a mask")
        else:
            items.append(item)
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed"
        )
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    ellipsis = [p for p, i in enumerate(items) if i is Ellipsis]
    if ellipsis:
        items[ellipsis[0] : ellipsis[0] + 1] = [slice(None)] * (ndim - used)
    else:
        items += [slice(None)] * (ndim - used)
    return items


def _broadcast(indices: list[Index], what: str) -> tuple[list[Index], tuple[int, ...]]:
    """Index arrays broadcast to one shape (a traced tensor must have it already)."""
    try:
        shape = np.broadcast_shapes(*(i.shape for i in indices))
    except ValueError:
        shapes = " ".join(str(i.shape) for i in indices)
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes "
            f"{shapes}"
        ) from None
    out: list[Index] = []
    for index in indices:
        if isinstance(index, Tensor):
            if index.shape != shape:
                raise TypeError(
                    f"{what}: an integer tensor argument of a tidu_compile.function must have "
                    f"the broadcast index shape {shape} (it has {index.shape})"
                )
            out.append(index)
        else:
            out.append(np.ascontiguousarray(np.broadcast_to(index, shape)))
    return out, shape


def _check_range(indices: Sequence[Index], sizes: Sequence[int], axes: Sequence[int]) -> None:
    """numpy's ``IndexError`` for an index outside ``-size .. size-1``.

    A traced integer tensor (an index argument of a ``tidu_compile.function``) is checked
    on the values of the call being traced; later calls with new values are checked when
    the forward evaluates the ``Gather`` (numpy's indexing raises the same error)."""
    for index, size, axis in zip(indices, sizes, axes, strict=True):
        values = index._data if isinstance(index, Tensor) else index
        bad = values[(values < -size) | (values >= size)]
        if bad.size:
            raise IndexError(
                f"index {bad.flat[0]} is out of bounds for axis {axis} with size {size}"
            )


def gather(x: Tensor, axis: int, indices: Sequence[Index]) -> Tensor:
    """``x`` at the positions ``indices`` (one array of one shape per dimension from
    ``axis``): one ``Gather``."""
    index_shape = tuple(indices[0].shape)
    sizes = x.shape[axis : axis + len(indices)]
    _check_range(indices, sizes, range(axis, axis + len(indices)))
    tensors = [i if isinstance(i, Tensor) else Tensor(i) for i in indices]
    op = ops.Gather(axis, x.shape, index_shape, len(indices))
    if not tracked(x) and not any(_traced(t) for t in tensors):
        return Tensor(op.evaluate(x.numpy(), *(t.numpy() for t in tensors))[0])
    return apply1(op, x, *tensors)


def _resolve(x: Tensor, key: tuple[Any, ...], what: str) -> tuple[Tensor, int, list[Index]]:
    """Apply the slices of an advanced key and bring its advanced dimensions together:
    the tensor, the first advanced dimension and the broadcast index arrays."""
    items = _split_key(key, x.ndim)
    dims = [i for i in items if i is not None]  # one per dimension of x
    starts, steps, counts = [], [], []
    advanced: list[tuple[int, Any]] = []
    for d, item in enumerate(dims):
        if isinstance(item, slice):
            first, stop, stride = item.indices(x.shape[d])
            count = len(range(first, stop, stride))
            starts.append(first if count else 0)
            steps.append(stride if count else 1)
            counts.append(count)
        else:
            advanced.append((d, item))
            starts.append(0)
            steps.append(1)
            counts.append(x.shape[d])
    part = window(x, starts, steps, counts)
    indices, _ = _broadcast([_as_index(i, what) for _, i in advanced], what)
    where = [p for p, item in enumerate(items) if not isinstance(item, slice) and item is not None]
    axes = [d for d, _ in advanced]
    if where == list(range(where[0], where[-1] + 1)):  # adjacent: B stands where they are
        return part, axes[0], indices
    rest = [d for d in range(part.ndim) if d not in axes]  # else numpy puts B first
    return transpose(part, axes + rest), 0, indices


def numpy_shape(x: Tensor, key: tuple[Any, ...]) -> tuple[int, ...]:
    """The shape numpy gives ``x[key]`` (a dry run on a broadcast view: ``x``'s values
    are not read, so ``x`` may be traced)."""
    dummy = np.broadcast_to(np.empty((), dtype=np.int8), x.shape)
    return dummy[tuple(_numpy_item(i) for i in key)].shape


def advanced_index(x: Tensor, key: tuple[Any, ...]) -> Tensor:
    """``x[key]`` for a key with integer arrays or boolean masks (see the module
    docstring)."""
    if not tracked(x) and not any(_traced(item) for item in key):
        return Tensor(np.asarray(x.numpy()[tuple(_numpy_item(i) for i in key)]))
    part, axis, indices = _resolve(x, key, "indexing")
    result = gather(part, axis, indices)
    shape = numpy_shape(x, key)  # the same elements in order; None adds 1s
    return reshape(result, shape) if result.shape != shape else result


def take(a: Any, indices: Any, axis: Any = None, mode: str = "raise") -> Tensor:
    """Elements of ``a`` at ``indices`` along ``axis`` (``None``: of the flattened array).
    ``mode``: ``raise`` (out of range is an ``IndexError``), ``wrap`` or ``clip``."""
    x = as_tensor(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    axis = operator.index(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"take: axis {axis} is out of bounds for an array of dimension {x.ndim}")
    axis %= x.ndim
    index = _as_index(indices, "take")
    if mode != "raise":
        if isinstance(index, Tensor):
            raise TypeError(f"take: mode={mode!r} needs constant indices")
        size = x.shape[axis]
        index = np.mod(index, size) if mode == "wrap" else np.clip(index, 0, size - 1)
    return gather(x, axis, [index])


def take_along_axis(arr: Any, indices: Any, axis: Any) -> Tensor:
    """``arr`` at ``indices`` along ``axis``, one index per position (numpy's rules)."""
    x = as_tensor(arr)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    index = _as_index(indices, "take_along_axis")
    if index.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis: indices have {index.ndim} dimensions, the array has {x.ndim}"
        )
    axis = operator.index(axis) % x.ndim
    grids: list[Index] = []
    for d in range(x.ndim):
        if d == axis:
            grids.append(index)
        else:
            shape = [1] * x.ndim
            shape[d] = x.shape[d]
            grids.append(np.arange(x.shape[d]).reshape(shape))
    grids, _ = _broadcast(grids, "take_along_axis")
    return gather(x, 0, grids)


def scatter(
    x: Tensor, key: tuple[Any, ...], values: Tensor, last_only: bool
) -> tuple[Tensor, np.ndarray]:
    """``values`` (of the shape of ``x[key]``) summed into zeros of ``x``'s shape at the
    positions ``key`` selects, and the mask of those positions (``x.at[key]``).

    With ``last_only`` a position indexed twice gets only its last value (numpy's
    ``x[key] = values``). Keys are constants: the positions are computed by numpy.
    """
    if any(_traced(item) for item in key):
        raise TypeError(
            "x.at[key]: inside a tidu_compile.function the key must be constant (an index "
            "tensor argument cannot be resolved to positions at trace time)"
        )
    numpy_key = tuple(_numpy_item(i) for i in key)
    positions = np.arange(x.size).reshape(x.shape)[numpy_key]
    flat = positions.reshape(-1)
    mask = np.zeros(x.size, dtype=bool)
    mask[flat] = True
    updates = reshape(values, (flat.size,))
    if last_only and np.unique(flat).size != flat.size:
        _, first_of_reversed = np.unique(flat[::-1], return_index=True)
        keep = np.zeros(flat.size, dtype=bool)
        keep[flat.size - 1 - first_of_reversed] = True
        updates = where(keep, updates, np.zeros((), dtype=x.dtype))
    op = ops.ScatterAdd(0, (x.size,), (flat.size,), 1)
    if not tracked(updates):
        placed = Tensor(op.evaluate(updates.numpy(), flat)[0])
    else:
        (placed,) = apply_op(op, [updates, Tensor(flat.astype(np.int64))])
    return reshape(placed, x.shape), mask.reshape(x.shape)

"""Indexing primitives: strided slices and their adjoint, the embedding ``Pad``; gathers
at integer positions and their adjoint, ``ScatterAdd``.

Both describe the same index map, one dimension at a time: element ``i`` of the slice
is element ``start + step * i`` of the big array (``step`` may be negative; a dimension
with no element has ``start = 0, step = 1``)::

    Slice(start=(1,), step=(2,), shape=(3,), operand_shape=(7,))   x[1:7:2]
    Pad(start=(1,), step=(2,), shape=(7,), operand_shape=(3,))      zeros(7); y[1:7:2] = x

=====================  ============================================================
op                     transpose
=====================  ============================================================
slice                  pad with 0 (the embedding of the cotangent)
pad(value)             slice (for value 0; a nonzero pad value is affine, not linear)
gather                 scatter_add (repeated indices add up)
scatter_add            gather
=====================  ============================================================

``Gather`` and ``ScatterAdd`` take their integer index arrays (int32 or int64) as
inputs after the data, so a new index array reuses the compiled code; indices are not
differentiated.

Ops carry the static shapes their transposes need, as the structural ops do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.ops.base import (
    ALL_DTYPES,
    COMPLEX_DTYPES,
    DIFFERENTIABLE_DTYPES,
    INTEGER_DTYPES,
    TensorOp,
    TensorType,
    linear,
    primitive,
)
from tidu_compile.ops.batching import Batcher, BatchRuleResult, materialized, moved

__all__ = [
    "INDEX_DTYPES", "Gather", "IndexedOp", "Pad", "ScatterAdd", "Slice", "check_strided_window",
    "python_slices",
]  # fmt: skip


def python_slices(
    start: Sequence[int], step: Sequence[int], counts: Sequence[int]
) -> tuple[slice, ...]:
    """The Python slices that read ``counts[d]`` elements from ``start[d]`` by ``step[d]``."""
    slices = []
    for first, stride, count in zip(start, step, counts, strict=True):
        if count == 0:
            slices.append(slice(0, 0))
            continue
        last = first + stride * (count - 1)
        stop = last + (1 if stride > 0 else -1)
        slices.append(slice(first, None if stop < 0 else stop, stride))
    return tuple(slices)


def check_strided_window(
    name: str,
    start: Sequence[int],
    step: Sequence[int],
    counts: Sequence[int],
    big_shape: Sequence[int],
) -> None:
    """Every element ``start + step * i`` (``i < counts``) lies inside ``big_shape``."""
    rank = len(big_shape)
    if not len(start) == len(step) == len(counts) == rank:
        raise ValueError(
            f"{name}: start {tuple(start)}, step {tuple(step)} and shape {tuple(counts)} need "
            f"one entry per dimension of {tuple(big_shape)}"
        )
    for d, (first, stride, count, size) in enumerate(
        zip(start, step, counts, big_shape, strict=True)
    ):
        if count < 0:
            raise ValueError(f"{name}: dimension {d} has a negative size {count}")
        if stride == 0:
            raise ValueError(f"{name}: dimension {d} has step 0")
        if count == 0:
            if (first, stride) != (0, 1):
                raise ValueError(f"{name}: an empty dimension ({d}) takes start 0 and step 1")
            continue
        last = first + stride * (count - 1)
        if not (0 <= first < size and 0 <= last < size):
            raise ValueError(
                f"{name}: dimension {d} reads indices {first}..{last} (step {stride}), "
                f"outside 0..{size - 1}"
            )


def _check_operand(op: TensorOp, t: TensorType, expected: tuple[int, ...]) -> None:
    op.check_arity([t])
    if t.shape != tuple(expected):
        raise ValueError(f"{op!r}: operand has shape {t.shape}, expected {tuple(expected)}")
    op.check_dtype(t, ALL_DTYPES)  # integer and bool data move too (no tangent)


def batch_strided(
    op: Any, b: Batcher, inputs: list[int], dims: list[int | None]
) -> BatchRuleResult:
    """``Slice`` and ``Pad`` batched: the whole of one more leading axis."""
    x = moved(b, inputs[0], dims[0])  # type: ignore[arg-type]
    batched = replace(op, start=(0, *op.start), step=(1, *op.step), shape=(b.size, *op.shape),
                      operand_shape=(b.size, *op.operand_shape))  # fmt: skip
    return [b.add1(batched, [x])], [0]


@primitive
class Slice(TensorOp):
    """``x[start :: step]`` with ``shape[d]`` elements per dimension (rank kept):
    ``y[i] = x[start + step * i]``. The transpose embeds: ``Pad`` with 0."""

    start: tuple[int, ...]
    step: tuple[int, ...]
    shape: tuple[int, ...]
    operand_shape: tuple[int, ...]
    input_count = 1


    batch_rule = batch_strided

    def __post_init__(self) -> None:
        check_strided_window("Slice", self.start, self.step, self.shape, self.operand_shape)

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        _check_operand(self, inputs[0], self.operand_shape)
        return (TensorType(tuple(self.shape), inputs[0].dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (arrays[0][python_slices(self.start, self.step, self.shape)],)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """By index arrays, ``start + step * i``."""
        return (arrays[0][_index_arrays(self.start, self.step, self.shape)],)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        pad = Pad(self.start, self.step, self.operand_shape, self.shape)
        return [linear(b, pad, [cts[0]], (True,))]


@primitive
class Pad(TensorOp):
    """Embed ``x`` in an array of ``shape`` filled with ``value``:
    ``y[start + step * i] = x[i]``. Linear for ``value == 0``; its transpose slices."""

    start: tuple[int, ...]
    step: tuple[int, ...]
    shape: tuple[int, ...]
    operand_shape: tuple[int, ...]
    value: complex | float = 0.0
    input_count = 1


    batch_rule = batch_strided

    def __post_init__(self) -> None:
        check_strided_window("Pad", self.start, self.step, self.operand_shape, self.shape)

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        _check_operand(self, inputs[0], self.operand_shape)
        if complex(self.value).imag != 0 and inputs[0].dtype not in COMPLEX_DTYPES:
            raise TypeError(f"{self!r}: a complex pad value for a {inputs[0].dtype} operand")
        return (TensorType(tuple(self.shape), inputs[0].dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        out = np.full(self.shape, self.value, dtype=x.dtype)
        out[python_slices(self.start, self.step, self.operand_shape)] = x
        return (out,)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """By index arrays, ``start + step * i``."""
        out = np.full(self.shape, self.value, dtype=arrays[0].dtype)
        out[_index_arrays(self.start, self.step, self.operand_shape)] = arrays[0]
        return (out,)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        zero_pad = Pad(self.start, self.step, self.shape, self.operand_shape)
        return [linear(b, zero_pad, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        if self.value != 0:
            raise ADRuleError.invalid_input(
                self, ADRuleKind.TRANSPOSE, "a pad with a nonzero value is not linear"
            )
        window = Slice(self.start, self.step, self.operand_shape, self.shape)
        return [linear(b, window, [cts[0]], (True,))]


def _index_arrays(start: Sequence[int], step: Sequence[int], counts: Sequence[int]) -> Any:
    """The open mesh of the elements ``start + step * i`` (``np.ix_``)."""
    ranges = (f + s * np.arange(n) for f, s, n in zip(start, step, counts, strict=True))
    return np.ix_(*ranges)


# ------------------------------------------------------------------ gather / scatter-add

INDEX_DTYPES = ("int32", "int64")


def _check_indices(op: TensorOp, indices: Sequence[TensorType], shape: tuple[int, ...]) -> None:
    for i, t in enumerate(indices, start=1):
        if t.dtype not in INDEX_DTYPES:
            raise TypeError(f"{op!r}: index input {i} has dtype {t.dtype}; expected int32 or int64")
        if t.shape != shape:
            raise ValueError(f"{op!r}: index input {i} has shape {t.shape}, expected {shape}")


@dataclass(frozen=True)
class IndexedOp(TensorOp):
    """Shared by ``Gather`` and ``ScatterAdd``: ``index_count`` integer arrays of
    ``index_shape`` index dimensions ``axis .. axis + index_count - 1`` of the big array
    (``big_shape``); in the small one, those dimensions become ``index_shape``."""

    #: The data's dtypes: every one for a gather, no bool for a scatter-add (a sum).
    data_dtypes: ClassVar[tuple[str, ...]] = ALL_DTYPES

    axis: int
    big_shape: tuple[int, ...]
    index_shape: tuple[int, ...]
    index_count: int


    def batch_rule(self, b, inputs, dims):
        """Indices the same for every example: the batch axis is one more leading axis
        of the data. Batched indices: one more index array, ``iota(B)``, for the batch
        axis, put just before the indexed ones (``axis``), where the result has it."""
        data, indices = inputs[0], inputs[1:]
        if all(d is None for d in dims[1:]):
            batched = replace(self, axis=self.axis + 1, big_shape=(b.size, *self.big_shape))
            return [b.add1(batched, [moved(b, data, dims[0]), *indices])], [0]
        axis = self.axis
        data = moved(b, materialized(b, data, dims[0]), 0, axis)
        index_shape = (b.size, *self.index_shape)
        iota = np.broadcast_to(np.arange(b.size, dtype=np.int64).reshape(
            (b.size,) + (1,) * len(self.index_shape)), index_shape)  # fmt: skip
        batched_indices = [materialized(b, i, d) for i, d in zip(indices, dims[1:], strict=True)]
        batched = replace(self, big_shape=(*self.big_shape[:axis], b.size, *self.big_shape[axis:]),
                          index_shape=index_shape, index_count=self.index_count + 1)  # fmt: skip
        iota_id = b.constant(np.ascontiguousarray(iota))
        return [b.add1(batched, [data, iota_id, *batched_indices])], [axis]

    def __post_init__(self) -> None:
        name = type(self).__name__
        if self.index_count < 1 or not 0 <= self.axis <= len(self.big_shape) - self.index_count:
            raise ValueError(
                f"{name}: {self.index_count} index arrays from axis {self.axis} do not fit "
                f"an array of shape {self.big_shape}"
            )
        indexed = self.big_shape[self.axis : self.axis + self.index_count]
        if 0 in indexed and math.prod(self.index_shape) > 0:
            raise ValueError(f"{name}: indexing an empty dimension of {self.big_shape}")

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return 1 + self.index_count

    @property
    def small_shape(self) -> tuple[int, ...]:
        big, axis = self.big_shape, self.axis
        return big[:axis] + self.index_shape + big[axis + self.index_count :]

    def where(self, indices: Sequence[np.ndarray]) -> tuple[Any, ...]:
        """The numpy key of the indexed elements (IndexError for an index out of range)."""
        for d, index in enumerate(indices):
            size = self.big_shape[self.axis + d]
            if index.size == 1 and -size <= index.item() < size:  # a token id: no reductions
                continue
            if index.size and (index.min() < -size or index.max() >= size):
                bad = index[(index < -size) | (index >= size)].flat[0]
                raise IndexError(
                    f"index {bad} is out of bounds for axis {self.axis + d} with size {size}"
                )
        return (slice(None),) * self.axis + tuple(indices)

    def check_inputs(self, inputs: Sequence[TensorType], data_shape: tuple[int, ...]) -> None:
        self.check_arity(inputs)
        if inputs[0].shape != data_shape:
            raise ValueError(
                f"{self!r}: input 0 has shape {inputs[0].shape}, expected {data_shape}"
            )
        self.check_dtype(inputs[0], self.data_dtypes)
        _check_indices(self, inputs[1:], self.index_shape)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """Element by element, in Python: a gather copies, a scatter-add adds."""
        data, indices = arrays[0], [np.asarray(i) for i in arrays[1:]]
        big, gather = self.big_shape, isinstance(self, Gather)
        out = np.zeros(self.small_shape if gather else big, data.dtype)
        for b in np.ndindex(*self.index_shape):
            at = tuple(int(i[b]) % big[self.axis + k] for k, i in enumerate(indices))
            big_key = (slice(None),) * self.axis + at
            small_key = (slice(None),) * self.axis + b
            if gather:
                out[small_key] = data[big_key]
            else:
                out[big_key] += data[small_key]
        return (out,)


@primitive
class Gather(IndexedOp):
    """Elements at integer positions: ``y[p, b, q] = x[p, i1[b], ..., ik[b], q]`` (the
    ``ik`` are inputs 1..k, negative values count from the end). The transpose
    scatters-adds: ``ScatterAdd``."""

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_inputs(inputs, self.big_shape)
        return (TensorType(self.small_shape, inputs[0].dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x, indices = arrays[0], arrays[1:]
        return (np.asarray(x[self.where(indices)], order="C"),)  # 0-d stays 0-d

    def jvp_rule(self, b, xs, ys, ts, ctx):
        mask = (True,) + (False,) * self.index_count
        return [linear(b, self, [ts[0], *xs[1:]], mask)]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        scatter = ScatterAdd(self.axis, self.big_shape, self.index_shape, self.index_count)
        mask = (True,) + (False,) * self.index_count
        return [linear(b, scatter, [cts[0], *inputs[1:]], mask)] + [None] * self.index_count


@primitive
class ScatterAdd(IndexedOp):
    """Sum updates into zeros of ``big_shape`` at integer positions:
    ``y[p, i1[b], ..., ik[b], q] += u[p, b, q]`` (repeated positions add up). The
    transpose gathers: ``Gather``."""

    data_dtypes = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_inputs(inputs, self.small_shape)
        return (TensorType(self.big_shape, inputs[0].dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        u, indices = arrays[0], arrays[1:]
        out = np.zeros(self.big_shape, dtype=u.dtype)
        np.add.at(out, self.where(indices), u)
        return (out,)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        mask = (True,) + (False,) * self.index_count
        return [linear(b, self, [ts[0], *xs[1:]], mask)]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        gather = Gather(self.axis, self.big_shape, self.index_shape, self.index_count)
        mask = (True,) + (False,) * self.index_count
        return [linear(b, gather, [cts[0], *inputs[1:]], mask)] + [None] * self.index_count

"""Joining primitives: ``Concatenate`` (its transpose slices the cotangent apart).

``Concatenate(axis=0, operand_shapes=((2, 3), (4, 3)))`` joins a 2x3 and a 4x3 array
into a 6x3 one; its cotangent ``ct`` gives ``ct[0:2]`` and ``ct[2:6]`` (``Slice``).
The op takes one input per operand shape (``input_count`` is an instance property).
"""

from __future__ import annotations

import numpy as np

from tidu_compile.ops.base import (
    ALL_DTYPES,
    TensorOp,
    TensorType,
    active,
    apply,
    linear,
    primitive,
)
from tidu_compile.ops.batching import all_materialized
from tidu_compile.ops.elementwise import FullLike
from tidu_compile.ops.indexing import Slice

__all__ = ["Concatenate"]


@primitive
class Concatenate(TensorOp):
    """Join the inputs along ``axis`` (all other dimensions equal)."""

    axis: int
    operand_shapes: tuple[tuple[int, ...], ...]


    def batch_rule(self, b, inputs, dims):
        joined = all_materialized(b, inputs, dims)
        shapes = tuple((b.size, *shape) for shape in self.operand_shapes)
        return [b.add1(Concatenate(self.axis + 1, shapes), joined)], [0]

    def __post_init__(self) -> None:
        if not self.operand_shapes:
            raise ValueError("Concatenate: needs at least one operand")
        first = self.operand_shapes[0]
        if not 0 <= self.axis < len(first):
            raise ValueError(f"Concatenate: axis {self.axis} is out of range for rank {len(first)}")
        for i, shape in enumerate(self.operand_shapes):
            rest = shape[: self.axis] + shape[self.axis + 1 :]
            if len(shape) != len(first) or rest != first[: self.axis] + first[self.axis + 1 :]:
                raise ValueError(
                    f"Concatenate: operand {i} has shape {shape}, operand 0 has {first}; "
                    f"only dimension {self.axis} may differ"
                )

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return len(self.operand_shapes)

    @property
    def shape(self) -> tuple[int, ...]:
        first = self.operand_shapes[0]
        total = sum(s[self.axis] for s in self.operand_shapes)
        return first[: self.axis] + (total,) + first[self.axis + 1 :]

    def offsets(self) -> tuple[int, ...]:
        """Where each operand starts along ``axis``."""
        starts, position = [], 0
        for shape in self.operand_shapes:
            starts.append(position)
            position += shape[self.axis]
        return tuple(starts)

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        for i, (t, shape) in enumerate(zip(inputs, self.operand_shapes, strict=True)):
            if t.shape != shape:
                raise ValueError(f"{self!r}: input {i} has shape {t.shape}, expected {shape}")
            if t.dtype != inputs[0].dtype:
                raise TypeError(
                    f"{self!r}: input {i} has dtype {t.dtype}, input 0 has {inputs[0].dtype}"
                )
        self.check_dtype(inputs[0], ALL_DTYPES)  # integer and bool data join too
        return (TensorType(self.shape, inputs[0].dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.concatenate(arrays, axis=self.axis),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.concatenate(arrays, axis=self.axis),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        pieces = [
            t if t is not None else apply(b, FullLike(0.0), [x])
            for x, t in zip(xs, ts, strict=True)
        ]
        return [linear(b, self, pieces, tuple(t is not None for t in ts))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        shape = self.shape
        out: list[int | None] = []
        for i, (offset, piece) in enumerate(zip(self.offsets(), self.operand_shapes, strict=True)):
            if not active(role, i):
                out.append(None)
                continue
            start = tuple(offset if d == self.axis and piece[d] else 0 for d in range(len(shape)))
            window = Slice(start, (1,) * len(shape), piece, shape)
            out.append(linear(b, window, [cts[0]], (True,)))
        return out

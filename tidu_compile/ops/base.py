"""Shared machinery of the standard tensor primitives.

Every op is a frozen dataclass subclassing ``TensorOp`` and defines, in one block:
``input_count`` (and ``output_count`` if not 1), ``infer_types`` (output types from input
types, raising a clear error on mismatch), ``evaluate`` (numpy), ``jvp_rule`` and
``transpose_rule``. Rules build with primitives through the helpers below, so linear and
transposed graphs are graphs of this same op set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind, Primitive, PrimitiveBuilder
from tidu_compile.graph import (
    Derived,
    External,
    Input,
    Linearized,
    Primary,
    PrimitiveValue,
    Role,
    ValueKey,
)

__all__ = [
    "FLOAT_DTYPES",
    "COMPLEX_DTYPES",
    "DIFFERENTIABLE_DTYPES",
    "TensorType",
    "TensorOp",
    "Ref",
    "type_of",
    "apply",
    "linear",
    "add_tangents",
    "real_dtype_of",
    "complex_dtype_of",
]

FLOAT_DTYPES = ("float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")
DIFFERENTIABLE_DTYPES = FLOAT_DTYPES + COMPLEX_DTYPES

#: What the rule helpers accept as an operand: a builder id, a value ref, or a primal
#: value key as ``jvp_rule`` receives it (wrapped as ``External(key)`` here).
Ref = PrimitiveValue | int | ValueKey


@dataclass(frozen=True, slots=True)
class TensorType:
    """Static type of a tensor value: shape and numpy dtype name."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"{'x'.join(map(str, self.shape)) or '()'}:{self.dtype}"


def type_of(array: Any) -> TensorType:
    """The ``TensorType`` of a numpy array (or anything with shape and dtype)."""
    return TensorType(tuple(int(d) for d in array.shape), np.dtype(array.dtype).name)


def real_dtype_of(dtype: str) -> str:
    return {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)


def complex_dtype_of(dtype: str) -> str:
    return {"float32": "complex64", "float64": "complex128"}.get(dtype, dtype)


class TensorOp(Primitive):
    """Base of the standard primitives (frozen dataclasses on numpy arrays)."""

    input_count: ClassVar[int]  # type: ignore[misc]
    output_count: ClassVar[int] = 1  # type: ignore[misc]
    #: False for ops with no derivative (compare); their JVP gives no tangent.
    differentiable: ClassVar[bool] = True

    @classmethod
    def add(cls) -> Primitive:
        from tidu_compile.ops.elementwise import Add

        return Add()

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        raise NotImplementedError(f"{type(self).__name__}.infer_types")

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError(f"{type(self).__name__}.evaluate")

    # ---------------------------------------------------------------- checks

    def check_arity(self, inputs: Sequence[TensorType]) -> None:
        if len(inputs) != self.input_count:
            raise ValueError(f"{self!r} takes {self.input_count} inputs, got {len(inputs)}")

    def check_same_types(self, inputs: Sequence[TensorType]) -> TensorType:
        """All inputs share one type; return it."""
        self.check_arity(inputs)
        first = inputs[0]
        for i, t in enumerate(inputs[1:], start=1):
            if t.shape != first.shape:
                raise ValueError(
                    f"{self!r}: input {i} has shape {t.shape}, input 0 has {first.shape} "
                    "(broadcast explicitly)"
                )
            if t.dtype != first.dtype:
                raise TypeError(
                    f"{self!r}: input {i} has dtype {t.dtype}, input 0 has {first.dtype}"
                )
        return first

    def check_dtype(self, t: TensorType, allowed: Sequence[str], argument: str = "input") -> None:
        if t.dtype not in allowed:
            raise TypeError(
                f"{self!r}: {argument} has dtype {t.dtype}; expected one of {', '.join(allowed)}"
            )


# ------------------------------------------------------------------- rule helpers


def refs(inputs: Sequence[Ref]) -> list[PrimitiveValue | int]:
    """``inputs`` as builder operands: a value key ``k`` becomes ``External(k)``."""
    return [External(v) if isinstance(v, Input | Derived) else v for v in inputs]


def apply(builder: PrimitiveBuilder, op: TensorOp, inputs: Sequence[Ref]) -> int:
    """Add a residual (primal) op with one output; returns its id."""
    return builder.add_primitive(op, refs(inputs), Primary())[0]


def linear(
    builder: PrimitiveBuilder, op: TensorOp, inputs: Sequence[Ref], mask: Sequence[bool]
) -> int:
    """Add an op that is linear in the inputs where ``mask`` is True; returns its id."""
    return builder.add_primitive(op, refs(inputs), Linearized(tuple(mask)))[0]


def add_tangents(builder: PrimitiveBuilder, a: int | None, b: int | None) -> int | None:
    """``a + b`` of two tangents, either of which may be absent."""
    if a is None:
        return b
    if b is None:
        return a
    from tidu_compile.ops.elementwise import Add

    return linear(builder, Add(), [a, b], (True, True))


def active(role: Role, index: int) -> bool:
    return isinstance(role, Linearized) and role.active_mask[index]


def no_transpose(op: TensorOp) -> ADRuleError:
    return ADRuleError.invalid_input(op, ADRuleKind.TRANSPOSE, "op is not linear in any input")

"""Shape primitives and contractions: all linear, each transposed by its adjoint.

=====================  ===========================================================
op                     transpose
=====================  ===========================================================
broadcast_in_dim       reduce_sum over the broadcast dims (then reshape)
reduce_sum             broadcast_in_dim back to the operand shape
reshape                reshape back
transpose(perm)        transpose(inverse perm)
dot_general            dot_general of the cotangent with conj(other operand)
=====================  ===========================================================

Ops carry the static shapes their transposes need (``operand_shape``), so rules never
need type information at build time; their dialect ops read those from their types
(``ops.ir_fields``). Reshape, transpose and dot_general run as numpy library calls
between kernels; broadcasts and reductions fuse into kernels (as operand and result maps).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import ClassVar, NamedTuple

import numpy as np

from tidu_compile.ops.base import (
    ALL_DTYPES,
    DIFFERENTIABLE_DTYPES,
    INTEGER_DTYPES,
    TensorOp,
    TensorType,
    active,
    apply,
    linear,
    primitive,
)
from tidu_compile.ops.batching import materialized, moved
from tidu_compile.ops.complex_ops import Conj
from tidu_compile.ops.elementwise import Add
from tidu_compile.ops.ir_fields import printed_as, shape_of_operand, shape_of_result

#: What ``DotGeneral`` contracts: floats and complex values on BLAS, integers and bools
#: exactly (numpy's matmul loops: a bool product is an or of ands).
CONTRACTION_DTYPES = (*DIFFERENTIABLE_DTYPES, *INTEGER_DTYPES, "bool")

#: What the layout ops (``BroadcastInDim``, ``Reshape``, ``Transpose``) move: values to
#: differentiate, and integer and bool values (indices, masks, counts), which inside a
#: ``tidu_compile.function`` must stay in the traced graph. Integer and bool values
#: carry no tangent.
LAYOUT_DTYPES = ALL_DTYPES


def _check_operand_shape(op: TensorOp, t: TensorType, expected: tuple[int, ...]) -> None:
    if t.shape != tuple(expected):
        raise ValueError(f"{op!r}: operand has shape {t.shape}, expected {tuple(expected)}")


def _moved_type(
    op: TensorOp,
    inputs: tuple[TensorType, ...],
    operand_shape: tuple[int, ...],
    shape: tuple[int, ...],
) -> tuple[TensorType, ...]:
    """A layout op's result type: ``shape`` of the operand's dtype (checked: arity,
    ``operand_shape`` and a ``LAYOUT_DTYPES`` dtype)."""
    op.check_arity(inputs)
    _check_operand_shape(op, inputs[0], operand_shape)
    op.check_dtype(inputs[0], LAYOUT_DTYPES)
    return (TensorType(tuple(shape), inputs[0].dtype),)


@primitive
class BroadcastInDim(TensorOp):
    """Operand dim ``i`` becomes result dim ``broadcast_dimensions[i]`` (size 1 or equal)."""

    shape: tuple[int, ...] = shape_of_result()
    broadcast_dimensions: tuple[int, ...] = printed_as("dims")
    operand_shape: tuple[int, ...] = shape_of_operand()
    input_count = 1


    def batch_rule(self, b, inputs, dims):
        x = materialized(b, inputs[0], dims[0])
        batched = BroadcastInDim((b.size, *self.shape),
                                 (0, *(d + 1 for d in self.broadcast_dimensions)),
                                 (b.size, *self.operand_shape))  # fmt: skip
        return [b.add1(batched, [x])], [0]

    def __post_init__(self) -> None:
        dims, rank = self.broadcast_dimensions, len(self.shape)
        if len(dims) != len(self.operand_shape):
            raise ValueError(
                f"BroadcastInDim: broadcast_dimensions {dims} must have one entry per "
                f"operand dim {self.operand_shape}"
            )
        if list(dims) != sorted(set(dims)) or any(not 0 <= d < rank for d in dims):
            raise ValueError(
                f"BroadcastInDim: broadcast_dimensions {dims} must increase within 0..{rank - 1}"
            )
        for size, d in zip(self.operand_shape, dims, strict=True):
            if size not in (1, self.shape[d]):
                raise ValueError(
                    f"BroadcastInDim: operand dim of size {size} cannot broadcast to "
                    f"{self.shape[d]} (result dim {d})"
                )

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        return _moved_type(self, inputs, self.operand_shape, self.shape)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        expanded = [1] * len(self.shape)
        for size, d in zip(self.operand_shape, self.broadcast_dimensions, strict=True):
            expanded[d] = size
        return (np.broadcast_to(arrays[0].reshape(expanded), self.shape),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        expanded = [1] * len(self.shape)
        for size, d in zip(self.operand_shape, self.broadcast_dimensions, strict=True):
            expanded[d] = size
        return (np.broadcast_to(arrays[0].reshape(expanded), self.shape),)

    def summed_dims(self) -> tuple[int, ...]:
        """Result dims that the transpose sums over."""
        kept = {
            d
            for size, d in zip(self.operand_shape, self.broadcast_dimensions, strict=True)
            if size == self.shape[d]
        }
        return tuple(d for d in range(len(self.shape)) if d not in kept)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        axes = self.summed_dims()
        ct = cts[0]
        if axes:
            ct = linear(b, ReduceSum(axes, tuple(self.shape)), [ct], (True,))
        reduced = tuple(s for d, s in enumerate(self.shape) if d not in axes)
        if reduced != tuple(self.operand_shape):
            ct = linear(b, Reshape(tuple(self.operand_shape), reduced), [ct], (True,))
        return [ct]


@dataclass(frozen=True)
class Reduction(TensorOp):
    """Base of the reductions over ``axes`` (sorted, unique), which the result drops:
    ``ReduceSum`` here, ``ReduceMax``, ``ReduceMin`` and ``ReduceProd`` in
    ``ops.reductions``. A subclass gives ``allowed_dtypes``, ``combiner``, ``evaluate``,
    its ``oracle`` and its rules; its dialect op (``tidu.<mnemonic> %x, axes = [0]``)
    fuses into kernels, combining its elements by ``combiner``."""

    axes: tuple[int, ...]
    operand_shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    allowed_dtypes: ClassVar[tuple[str, ...]] = DIFFERENTIABLE_DTYPES
    #: How the elements combine, from what identity (``dialects.tidu_reduce.COMBINERS``):
    #: ``add`` (0), ``max`` (-inf), ``min`` (+inf) or ``mul`` (1).
    combiner: ClassVar[str]


    def batch_rule(self, b, inputs, dims):
        x = moved(b, inputs[0], dims[0])
        axes = tuple(a + 1 for a in self.axes)
        batched = replace(self, axes=axes, operand_shape=(b.size, *self.operand_shape))
        return [b.add1(batched, [x])], [0]

    def __post_init__(self) -> None:
        rank = len(self.operand_shape)
        if list(self.axes) != sorted(set(self.axes)) or any(
            not 0 <= a < rank for a in self.axes
        ):
            raise ValueError(
                f"{type(self).__name__}: axes {self.axes} must increase within 0..{rank - 1}"
            )

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(s for d, s in enumerate(self.operand_shape) if d not in self.axes)

    def kept_dims(self) -> tuple[int, ...]:
        """The operand dims the result keeps, in order."""
        return tuple(d for d in range(len(self.operand_shape)) if d not in self.axes)

    def broadcast_back(self) -> BroadcastInDim:
        """The broadcast of a result-shaped value back to the operand shape."""
        return BroadcastInDim(tuple(self.operand_shape), self.kept_dims(), self.shape)

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        _check_operand_shape(self, inputs[0], self.operand_shape)
        self.check_dtype(inputs[0], self.allowed_dtypes)
        return (TensorType(self.shape, inputs[0].dtype),)


@primitive
class ReduceSum(Reduction):
    """Sum over ``axes`` (sorted, unique), removing them; integers sum exactly in their
    own dtype (the frontend widens them first, as numpy's ``sum``)."""

    allowed_dtypes = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES
    combiner = "add"

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        return (np.asarray(np.sum(x, axis=self.axes, dtype=x.dtype), dtype=x.dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.sum(arrays[0], axis=self.axes),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, self.broadcast_back(), [cts[0]], (True,))]


@primitive
class Reshape(TensorOp):
    """Row-major reshape to ``shape``."""

    shape: tuple[int, ...] = shape_of_result()
    operand_shape: tuple[int, ...] = shape_of_operand()
    input_count = 1
    library_call = True


    def batch_rule(self, b, inputs, dims):
        x = moved(b, inputs[0], dims[0])
        batched = Reshape((b.size, *self.shape), (b.size, *self.operand_shape))
        return [b.add1(batched, [x])], [0]

    def __post_init__(self) -> None:
        if math.prod(self.shape) != math.prod(self.operand_shape):
            raise ValueError(
                f"Reshape: cannot reshape {self.operand_shape} "
                f"({math.prod(self.operand_shape)} elements) to {self.shape}"
            )

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        return _moved_type(self, inputs, self.operand_shape, self.shape)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (arrays[0].reshape(self.shape),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.reshape(arrays[0], self.shape),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, Reshape(self.operand_shape, self.shape), [cts[0]], (True,))]


@primitive
class Transpose(TensorOp):
    """Result dim ``i`` is operand dim ``permutation[i]``."""

    permutation: tuple[int, ...]
    input_count = 1
    library_call = True


    def batch_rule(self, b, inputs, dims):
        x = moved(b, inputs[0], dims[0])
        return [b.add1(Transpose((0, *(p + 1 for p in self.permutation))), [x])], [0]

    def __post_init__(self) -> None:
        if sorted(self.permutation) != list(range(len(self.permutation))):
            raise ValueError(f"Transpose: {self.permutation} is not a permutation")

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        t = inputs[0]
        if t.ndim != len(self.permutation):
            raise ValueError(f"{self!r}: operand has shape {t.shape}, rank {t.ndim}")
        self.check_dtype(t, LAYOUT_DTYPES)
        return (TensorType(tuple(t.shape[p] for p in self.permutation), t.dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.transpose(arrays[0], self.permutation),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.transpose(arrays[0], self.permutation),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        inverse = tuple(int(i) for i in np.argsort(self.permutation))
        return [linear(b, Transpose(inverse), [cts[0]], (True,))]


class _MatmulViews(NamedTuple):
    """A contraction as one (batched) matmul: each operand transposed (``None``: as it
    is) and reshaped to ``[batch..., M, K]`` and ``[batch..., K, N]``; ``outer`` when
    ``K == 1`` (a broadcast multiply); ``shape`` the result's."""

    lhs_order: tuple[int, ...] | None
    lhs_view: tuple[int, ...]
    rhs_order: tuple[int, ...] | None
    rhs_view: tuple[int, ...]
    out_view: tuple[int, ...]
    outer: bool
    shape: tuple[int, ...]


@primitive
class DotGeneral(TensorOp):
    """Contraction with JAX's dimension numbers; result dims: batch, lhs free, rhs free.

    ``matmul(A[m,k], B[k,n])`` is ``DotGeneral((1,), (0,), (), (), (m, k), (k, n))``.
    """

    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    input_count = 2
    allowed_dtypes: ClassVar[tuple[str, ...]] = CONTRACTION_DTYPES
    library_call = True  # one BLAS call (integers and bools: numpy's matmul loops)


    def batch_rule(self, b, inputs, dims):
        """Both batched: one more batch dimension (first of the result). One batched:
        one more free dimension of that side, where the result puts that side's."""
        (lhs, rhs), (lhs_dim, rhs_dim) = inputs, dims
        shift = lambda ds: tuple(d + 1 for d in ds)  # noqa: E731
        lhs_shape, rhs_shape = self.lhs_shape, self.rhs_shape
        lhs_contracting, rhs_contracting = self.lhs_contracting, self.rhs_contracting
        lhs_batch, rhs_batch = self.lhs_batch, self.rhs_batch
        if lhs_dim is not None:
            lhs, lhs_shape = moved(b, lhs, lhs_dim), (b.size, *lhs_shape)
            lhs_contracting, lhs_batch = shift(lhs_contracting), shift(lhs_batch)
        if rhs_dim is not None:
            rhs, rhs_shape = moved(b, rhs, rhs_dim), (b.size, *rhs_shape)
            rhs_contracting, rhs_batch = shift(rhs_contracting), shift(rhs_batch)
        if lhs_dim is not None and rhs_dim is not None:
            lhs_batch, rhs_batch, out = (0, *lhs_batch), (0, *rhs_batch), 0
        elif lhs_dim is not None:
            out = len(self.lhs_batch)
        else:
            out = len(self.lhs_shape) - len(self.lhs_contracting)
        batched = DotGeneral(lhs_contracting, rhs_contracting, lhs_batch, rhs_batch,
                             lhs_shape, rhs_shape)  # fmt: skip
        return [b.add1(batched, [lhs, rhs])], [out]

    def __post_init__(self) -> None:
        # Rank check first: the size check below indexes the shapes with these dims.
        for name, dims, rank in (
            ("lhs", self.lhs_contracting + self.lhs_batch, len(self.lhs_shape)),
            ("rhs", self.rhs_contracting + self.rhs_batch, len(self.rhs_shape)),
        ):
            if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
                raise ValueError(f"DotGeneral: {name} dims {dims} repeat or exceed rank {rank}")
        pairs = [(self.lhs_contracting, self.rhs_contracting), (self.lhs_batch, self.rhs_batch)]
        for lhs_dims, rhs_dims in pairs:
            if len(lhs_dims) != len(rhs_dims):
                raise ValueError(f"DotGeneral: {lhs_dims} and {rhs_dims} differ in length")
            for l_dim, r_dim in zip(lhs_dims, rhs_dims, strict=True):
                if self.lhs_shape[l_dim] != self.rhs_shape[r_dim]:
                    raise ValueError(
                        f"DotGeneral: lhs dim {l_dim} (size {self.lhs_shape[l_dim]}) does not "
                        f"match rhs dim {r_dim} (size {self.rhs_shape[r_dim]})"
                    )

    def free_dims(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        lhs = self.lhs_contracting + self.lhs_batch
        rhs = self.rhs_contracting + self.rhs_batch
        return (
            tuple(d for d in range(len(self.lhs_shape)) if d not in lhs),
            tuple(d for d in range(len(self.rhs_shape)) if d not in rhs),
        )

    @property
    def shape(self) -> tuple[int, ...]:
        lhs_free, rhs_free = self.free_dims()
        return (
            tuple(self.lhs_shape[d] for d in self.lhs_batch)
            + tuple(self.lhs_shape[d] for d in lhs_free)
            + tuple(self.rhs_shape[d] for d in rhs_free)
        )

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        lhs, rhs = inputs
        _check_operand_shape(self, lhs, self.lhs_shape)
        _check_operand_shape(self, rhs, self.rhs_shape)
        if lhs.dtype != rhs.dtype:
            raise TypeError(f"{self!r}: lhs has dtype {lhs.dtype}, rhs has {rhs.dtype}")
        self.check_dtype(lhs, self.allowed_dtypes, "lhs")
        return (TensorType(self.shape, lhs.dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """One BLAS call: operands as (batch, free, contracted) views, no copies if 2-d.

        ``lhs`` is viewed as ``[B, M, K]`` and ``rhs`` as ``[B, K, N]`` by transposing
        (a strided view numpy hands to BLAS with a transpose flag) and reshaping.
        """
        return (self.evaluate_into(None, *arrays),)

    @functools.cached_property
    def matmul_views(self) -> _MatmulViews:
        """How ``evaluate_into`` views the operands, computed once per op (a small
        program runs its contractions at every call: ~2 us of Python each, not ~15)."""
        lhs_free, rhs_free = self.free_dims()
        batch = tuple(self.lhs_shape[d] for d in self.lhs_batch)
        m = math.prod(self.lhs_shape[d] for d in lhs_free)
        k = math.prod(self.lhs_shape[d] for d in self.lhs_contracting)
        n = math.prod(self.rhs_shape[d] for d in rhs_free)
        lhs_order = self.lhs_batch + lhs_free + self.lhs_contracting
        rhs_order = self.rhs_batch + self.rhs_contracting + rhs_free
        return _MatmulViews(
            None if lhs_order == tuple(range(len(lhs_order))) else lhs_order, (*batch, m, k),
            None if rhs_order == tuple(range(len(rhs_order))) else rhs_order, (*batch, k, n),
            (*batch, m, n), k == 1, self.shape,
        )  # fmt: skip

    def evaluate_into(self, out: np.ndarray | None, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """``evaluate``, writing into ``out`` (C-contiguous, of the result's shape and
        dtype) when given: compiled plans pass recycled memory (``compiler.buffers``)."""
        lhs_order, lhs_view, rhs_order, rhs_view, out_view, outer, shape = self.matmul_views
        lhs, rhs = np.asarray(lhs), np.asarray(rhs)
        a = (lhs if lhs_order is None else lhs.transpose(lhs_order)).reshape(lhs_view)
        b = (rhs if rhs_order is None else rhs.transpose(rhs_order)).reshape(rhs_view)
        # Nothing contracted (an outer product per batch, as per-example gradients have
        # them): a broadcast multiply, ~3x numpy's batched matmul with K = 1.
        product = np.multiply if outer else np.matmul
        if out is not None and out.dtype == lhs.dtype == rhs.dtype:
            product(a, b, out=out.reshape(out_view))
            return out
        return np.asarray(product(a, b).reshape(shape), dtype=lhs.dtype)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        dx, dy = ts
        left = linear(b, self, [dx, xs[1]], (True, False)) if dx is not None else None
        right = linear(b, self, [xs[0], dy], (False, True)) if dy is not None else None
        if left is None or right is None:
            return [left if right is None else right]
        return [linear(b, Add(), [left, right], (True, True))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        out: list[int | None] = [None, None]
        for side in (0, 1):
            if active(role, side):
                other = apply(b, Conj(), [inputs[1 - side]])
                out[side] = self._transpose_side(b, cts[0], other, side)
        return out

    def _transpose_side(self, b, ct: int, other, side: int) -> int:  # type: ignore[no-untyped-def]
        """Cotangent of one operand: ``dot_general(ct, conj(other))`` then a transpose.

        Follows JAX's ``_dot_general_transpose_lhs``; the rhs case swaps the operands.
        """
        if side == 0:
            x_contract, y_contract = self.lhs_contracting, self.rhs_contracting
            x_batch, y_batch = self.lhs_batch, self.rhs_batch
            x_shape, y_shape = self.lhs_shape, self.rhs_shape
        else:
            x_contract, y_contract = self.rhs_contracting, self.lhs_contracting
            x_batch, y_batch = self.rhs_batch, self.lhs_batch
            x_shape, y_shape = self.rhs_shape, self.lhs_shape
        x_kept = [d for d in range(len(x_shape)) if d not in x_contract + x_batch]
        y_kept = [d for d in range(len(y_shape)) if d not in y_contract + y_batch]
        n_batch = len(x_batch)
        if side == 0:  # result layout: batch, x free, y free
            ans_y = tuple(range(n_batch + len(x_kept), n_batch + len(x_kept) + len(y_kept)))
        else:  # result layout: batch, y free (lhs), x free (rhs)
            ans_y = tuple(range(n_batch, n_batch + len(y_kept)))
        ans_batch = tuple(range(n_batch))
        x_contract_by_y = [x_contract[i] for i in np.argsort(y_contract)]
        identity = list(range(len(x_shape)))
        if list(x_batch) + x_contract_by_y + x_kept == identity:
            # dot(conj(other), ct) already has x's layout (batch, then what y contracted,
            # then x's free dims): the transpose folds into the operand order (BLAS reads
            # both operands through transposed views). The rhs of a batched matmul.
            dot = DotGeneral(tuple(y_kept), ans_y, tuple(y_batch), ans_batch, tuple(y_shape),
                             self.shape)  # fmt: skip
            return linear(b, dot, [other, ct], (False, True))
        dot = DotGeneral(ans_y, tuple(y_kept), ans_batch, y_batch, self.shape, tuple(y_shape))
        x_bar = linear(b, dot, [ct, other], (True, False))
        out_axes = tuple(int(i) for i in np.argsort(list(x_batch) + x_kept + x_contract_by_y))
        if out_axes != tuple(identity):
            x_bar = linear(b, Transpose(out_axes), [x_bar], (True,))
        return x_bar

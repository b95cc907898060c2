"""Contractions inside native loops: one strided product routine per dtype, no BLAS call.

A ``DotGeneral`` is a numpy (BLAS) call between kernels in a plan; inside a native loop
(``compiler.native_loop``) the driver calls ``@tidu_loop_dot_<dtype>`` instead, a
routine of the driver's own module whose only parameters are the extents and element
strides of the product (constants at each call, where it is inlined), so the body's
program stays the one a per-iteration call runs (no kernel more to compile)::

    out[b, m, n] = sum_k lhs[b * lhs_b + m * lhs_m + k * lhs_k]
                       * rhs[b * rhs_b + n * rhs_n + k * rhs_k]      out row-major (B, M, N)

(products summed in order of ``k``, from 0.0). ``strided_product`` reads the numbers off
a ``DotGeneral``: its batch, lhs free, rhs free and contracted dimensions, each group
merged into one strided dimension; a group whose dimensions are not adjacent in memory,
in order, cannot be (``None``: the loop calls the body's plan per iteration instead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tidu_compile.ops.structural import DotGeneral

__all__ = ["DOT_DTYPES", "StridedProduct", "dot_routine", "strided_product"]

#: The element types the routine is written for (LLVM's name of each).
DOT_DTYPES = {"float32": "float", "float64": "double"}


@dataclass(frozen=True)
class StridedProduct:
    """The arguments of ``@tidu_loop_dot_<dtype>`` after its three pointers."""

    batch: int
    rows: int
    columns: int
    depth: int
    lhs_strides: tuple[int, int, int]  # per batch, row, step of depth
    rhs_strides: tuple[int, int, int]  # per batch, column, step of depth

    def arguments(self) -> str:
        values = (self.batch, self.rows, self.columns, self.depth, *self.lhs_strides,
                  *self.rhs_strides)  # fmt: skip
        return ", ".join(f"i64 {v}" for v in values)


def _merged(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[int, int] | None:
    """The extent and element stride of ``dims`` of a row-major array of ``shape`` seen
    as one dimension, or None when they are not adjacent in memory, in order."""
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    for first, second in zip(dims, dims[1:], strict=False):
        if strides[first] != strides[second] * shape[second]:
            return None
    extent = math.prod(shape[d] for d in dims)
    return extent, (strides[dims[-1]] if dims else 0)


def strided_product(op: DotGeneral) -> StridedProduct | None:
    """``op`` as the routine's arguments, or None (see the module docstring)."""
    lhs_free, rhs_free = op.free_dims()
    groups = [
        _merged(op.lhs_shape, op.lhs_batch), _merged(op.lhs_shape, lhs_free),
        _merged(op.lhs_shape, op.lhs_contracting), _merged(op.rhs_shape, op.rhs_batch),
        _merged(op.rhs_shape, rhs_free), _merged(op.rhs_shape, op.rhs_contracting),
    ]  # fmt: skip
    if any(g is None for g in groups):
        return None
    (batch, lhs_b), (rows, lhs_m), (depth, lhs_k), (_, rhs_b), (columns, rhs_n), (_, rhs_k) = (
        groups  # type: ignore[misc]
    )
    return StridedProduct(batch, rows, columns, depth, (lhs_b, lhs_m, lhs_k),
                          (rhs_b, rhs_n, rhs_k))  # fmt: skip


def dot_routine(dtype: str, inline: bool = True) -> str:
    """The LLVM IR of ``@tidu_loop_dot_<dtype>``: loops over the batch, the rows, the
    columns and the depth. It is ``internal`` and ``alwaysinline``: each driver holds it
    and inlines it at every call, where the extents and strides are constants, so LLVM
    specializes and vectorizes each product. ``inline=False``: ``noinline``, one routine
    of runtime extents for all calls (a plan driver's dozens of products would cost O3
    seconds inlined, ``compiler.native_plan``)."""
    t = DOT_DTYPES[dtype]
    attribute = "alwaysinline" if inline else "noinline"
    return f"""define internal void @tidu_loop_dot_{dtype}(ptr noalias %out, ptr noalias %a,
    ptr noalias %b, i64 %B, i64 %M, i64 %N, i64 %K, i64 %a.sb, i64 %a.sm, i64 %a.sk,
    i64 %b.sb, i64 %b.sn, i64 %b.sk) {attribute} {{
entry:
  %empty = icmp eq i64 %B, 0
  %no.rows = icmp eq i64 %M, 0
  %no.columns = icmp eq i64 %N, 0
  %no.output.1 = or i1 %empty, %no.rows
  %no.output = or i1 %no.output.1, %no.columns
  %no.depth = icmp eq i64 %K, 0
  br i1 %no.output, label %exit, label %batch
batch:
  %bi = phi i64 [ 0, %entry ], [ %bi.next, %batch.end ]
  %a.b = mul i64 %bi, %a.sb
  %b.b = mul i64 %bi, %b.sb
  br label %row
row:
  %m = phi i64 [ 0, %batch ], [ %m.next, %row.end ]
  %a.m = mul i64 %m, %a.sm
  %a.row = add i64 %a.b, %a.m
  %out.row.1 = mul i64 %bi, %M
  %out.row.2 = add i64 %out.row.1, %m
  %out.row = mul i64 %out.row.2, %N
  br label %column
column:
  %n = phi i64 [ 0, %row ], [ %n.next, %store ]
  %b.n = mul i64 %n, %b.sn
  %b.column = add i64 %b.b, %b.n
  br i1 %no.depth, label %store, label %depth
depth:
  %k = phi i64 [ 0, %column ], [ %k.next, %depth ]
  %acc = phi {t} [ 0.0, %column ], [ %acc.next, %depth ]
  %a.k = mul i64 %k, %a.sk
  %a.at = add i64 %a.row, %a.k
  %b.k = mul i64 %k, %b.sk
  %b.at = add i64 %b.column, %b.k
  %a.p = getelementptr {t}, ptr %a, i64 %a.at
  %b.p = getelementptr {t}, ptr %b, i64 %b.at
  %a.v = load {t}, ptr %a.p
  %b.v = load {t}, ptr %b.p
  %product = fmul {t} %a.v, %b.v
  %acc.next = fadd {t} %acc, %product
  %k.next = add i64 %k, 1
  %k.done = icmp eq i64 %k.next, %K
  br i1 %k.done, label %store, label %depth
store:
  %sum = phi {t} [ 0.0, %column ], [ %acc.next, %depth ]
  %out.at = add i64 %out.row, %n
  %out.p = getelementptr {t}, ptr %out, i64 %out.at
  store {t} %sum, ptr %out.p
  %n.next = add i64 %n, 1
  %n.done = icmp eq i64 %n.next, %N
  br i1 %n.done, label %row.end, label %column
row.end:
  %m.next = add i64 %m, 1
  %m.done = icmp eq i64 %m.next, %M
  br i1 %m.done, label %batch.end, label %row
batch.end:
  %bi.next = add i64 %bi, 1
  %b.done = icmp eq i64 %bi.next, %B
  br i1 %b.done, label %exit, label %batch
exit:
  ret void
}}"""

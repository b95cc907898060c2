"""Ties in the op table: which ops a tie decides, and their inputs with ties.

A *selection* (``helpers.ties``: each result element is one of its candidates) shares
a tie's cotangent equally (JAX's ``1/k``); an *index* op (argmax, argsort: integers
from floats) names tied elements by numpy's rule (the first one; the stable order).
Which ops are which is found by probing the op itself (``is_selection``,
``is_index_op``), not by a list: a new reduction or selection of the table gets its
tie cases (``op_cases.tie_twins``) without a line here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from helpers import random_array
from helpers.ties import (
    draw_tied,
    enough_ties,
    reduced_size,
    shared_pair_gradient,
    shared_reduction_gradient,
    slice_hits,
)

from tidu_compile import ops
from tidu_compile.ops import TensorOp
from tidu_compile.ops.structural import Reduction


def _is_pair(op: TensorOp) -> bool:
    return isinstance(op, ops.Elementwise) and op.input_count == 2


def _counts(op: TensorOp, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, int] | None:
    """A selection's ``TieCounts`` (``helpers.ties``); None for an op that is not a
    binary elementwise op or a reduction."""
    (z,) = op.evaluate(*xs)
    if _is_pair(op):
        return (xs[0] == z).astype(np.int64) + (xs[1] == z), 2
    if isinstance(op, Reduction):
        hit, _ = slice_hits(xs[0], np.expand_dims(z, op.axes), op.axes)
        return np.sum(hit, axis=op.axes), reduced_size(op.operand_shape, op.axes)
    return None


def is_selection(op: TensorOp) -> bool:
    """Whether every result element of ``op`` is one of its candidates, on random inputs
    without ties (a reduction probed over one axis of 32 elements)."""
    if isinstance(op, Reduction):
        probe: TensorOp = dataclasses.replace(op, axes=(0,), operand_shape=(32,))
    elif _is_pair(op):
        probe = op
    else:
        return False
    if "float64" not in type(op).allowed_dtypes:  # type: ignore[attr-defined]
        return False
    domain = getattr(type(op), "domain", "normal")
    rng = np.random.default_rng(0)
    xs = [random_array(rng, (32,), "float64", domain) for _ in range(op.input_count)]
    found = _counts(probe, xs)
    return found is not None and bool(np.all(found[0] >= 1))


def is_index_op(op: TensorOp, xs: Sequence[np.ndarray]) -> bool:
    """Whether ``op`` gives integers from one float input along an ``axis``."""
    if op.input_count != 1 or op.differentiable or not hasattr(op, "axis"):
        return False
    (y,) = op.evaluate(*xs)
    return xs[0].dtype.kind == "f" and np.asarray(y).dtype.kind == "i"


def tie_counts(op: TensorOp, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, int]:
    """Per result element, how many of its candidates are tied (equal to the result, or
    for an index op to the element it names; for a permutation, the most repeated value
    of its slice), and how many candidates it has."""
    found = None if is_index_op(op, xs) else _counts(op, xs)
    if found is not None:
        return found
    axis = op.axis  # type: ignore[attr-defined]
    x = xs[0]
    (y,) = op.evaluate(*xs)
    if y.shape == x.shape:  # a permutation
        return np.apply_along_axis(_most_repeated, axis, x), x.shape[axis]
    named = np.take_along_axis(x, np.expand_dims(y, axis), axis)
    return np.sum(x == named, axis=axis), x.shape[axis]


def _most_repeated(values: np.ndarray) -> int:
    return int(np.max(np.unique(values, return_counts=True)[1]))


def has_ties(op: TensorOp, xs: Sequence[np.ndarray]) -> bool:
    return enough_ties(*tie_counts(op, xs))


def tied_inputs(
    op: TensorOp, shapes: Sequence[tuple[int, ...]], dtype: str, rng: np.random.Generator
) -> list[np.ndarray]:
    """Inputs of ``op`` with ties (``helpers.ties.draw_tied``)."""
    return draw_tied(rng, shapes, dtype, lambda xs: tie_counts(op, xs))


def can_tie(op: TensorOp, shapes: Sequence[tuple[int, ...]]) -> bool:
    """Whether a result element of ``op`` on ``shapes`` has two candidates or more."""
    if isinstance(op, Reduction):
        return reduced_size(op.operand_shape, op.axes) >= 2
    axis = getattr(op, "axis", None)
    return axis is None or shapes[0][axis] >= 2


def shared_gradient(
    op: TensorOp, xs: Sequence[np.ndarray], cotangent: np.ndarray
) -> list[np.ndarray]:
    """The gradient of ``sum(cotangent * op(xs))`` by JAX's convention (``1/k`` to each
    of ``k`` tied candidates)."""
    (z,) = op.evaluate(*xs)
    if isinstance(op, Reduction):
        kept = np.expand_dims(z, op.axes)
        back = np.expand_dims(cotangent, op.axes)
        return [shared_reduction_gradient(xs[0], kept, op.axes, back)]
    assert _is_pair(op), f"{op!r} is not a selection"
    gx, gy = shared_pair_gradient(xs[0], xs[1], z, cotangent)
    return [gx.astype(xs[0].dtype), gy.astype(xs[1].dtype)]

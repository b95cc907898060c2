"""Ties in the op table: which ops a tie decides, inputs with ties, JAX's convention.

A *selection* gives, for each result element, one of the input elements it chooses
from (its candidates): ``maximum(x, y)`` from ``x[i]`` and ``y[i]``, ``reduce_max``
from a slice. At a tie of ``k`` candidates equal to the result, JAX's convention
(``lax._balanced_eq``, ``_reduce_chooser_jvp_rule``) shares the result's cotangent
equally: ``1/k`` to each. Central differences cannot check it: they give ``1/2`` to
each of ``k >= 3`` tied elements (one side moves the maximum, the other does not).
An *index* op (argmax, argsort: integers from floats) names tied elements by numpy's
rule (the first one; the stable order).

Which ops are which is found by probing the op itself (``is_selection``,
``is_index_op``), not by a list: a new reduction or selection of the table gets its
tie cases (``op_cases.tie_twins``) without a line here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from helpers import random_array

from tidu_compile import ops
from tidu_compile.ops import TensorOp
from tidu_compile.ops.structural import Reduction

#: The values of tied inputs: few, so that equal elements are common; exact in f32.
LEVELS = (-1.5, -0.5, 0.5, 1.0)


def _hits(op: TensorOp, xs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray] | None:
    """For a selection: per input, where an element equals its result element; and per
    result element (broadcast back to the inputs' shape), how many candidates do. None
    for an op that is not a binary elementwise op or a reduction."""
    (z,) = op.evaluate(*xs)
    if isinstance(op, ops.Elementwise) and op.input_count == 2:
        hits = [np.asarray(x == z) for x in xs]
        return hits, hits[0].astype(np.int64) + hits[1]
    if isinstance(op, Reduction):
        hit = np.asarray(xs[0] == np.expand_dims(z, op.axes))
        count = np.broadcast_to(np.sum(hit, axis=op.axes, keepdims=True), hit.shape)
        return [hit], count
    return None


def is_selection(op: TensorOp) -> bool:
    """Whether every result element of ``op`` is one of its candidates, on random inputs
    without ties (a reduction probed over one axis of 32 elements)."""
    if isinstance(op, Reduction):
        probe: TensorOp = dataclasses.replace(op, axes=(0,), operand_shape=(32,))
    elif isinstance(op, ops.Elementwise) and op.input_count == 2:
        probe = op
    else:
        return False
    if "float64" not in type(op).allowed_dtypes:  # type: ignore[attr-defined]
        return False
    domain = getattr(type(op), "domain", "normal")
    rng = np.random.default_rng(0)
    xs = [random_array(rng, (32,), "float64", domain) for _ in range(op.input_count)]
    found = _hits(probe, xs)
    return found is not None and bool(np.all(found[1] >= 1))


def is_index_op(op: TensorOp, xs: Sequence[np.ndarray]) -> bool:
    """Whether ``op`` gives integers from one float input along an ``axis``."""
    if op.input_count != 1 or op.differentiable or not hasattr(op, "axis"):
        return False
    (y,) = op.evaluate(*xs)
    return xs[0].dtype.kind == "f" and np.asarray(y).dtype.kind == "i"


def tie_counts(op: TensorOp, xs: Sequence[np.ndarray]) -> tuple[np.ndarray, int]:
    """Per result element, how many of its candidates are tied (equal to the result, or
    for an index op equal to the element it names; for a permutation, the most repeated
    value of its slice), and how many candidates it has."""
    found = _hits(op, xs) if not is_index_op(op, xs) else None
    if found is not None:
        hits, count = found
        if isinstance(op, Reduction):
            return np.sum(hits[0], axis=op.axes), _reduced(op)
        return count, 2
    axis = op.axis  # type: ignore[attr-defined]
    x = xs[0]
    (y,) = op.evaluate(*xs)
    if y.shape == x.shape:  # a permutation: the most repeated value of each slice
        return np.apply_along_axis(_most_repeated, axis, x), x.shape[axis]
    named = np.take_along_axis(x, np.expand_dims(y, axis), axis)
    return np.sum(x == named, axis=axis), x.shape[axis]


def _most_repeated(values: np.ndarray) -> int:
    return int(np.max(np.unique(values, return_counts=True)[1]))


def has_ties(op: TensorOp, xs: Sequence[np.ndarray]) -> bool:
    """Whether the inputs test the tie rule: some result element ties ``min(3,
    candidates)`` of them (so ``1/k`` is not ``1/2``), and, where there are several,
    some result element has no tie (so a rule that ignores the values fails; unless
    there are more candidates than ``LEVELS``)."""
    counts, candidates = tie_counts(op, xs)
    tied = bool(np.any(counts >= min(3, candidates)))
    some_untied = counts.size == 1 or candidates > len(LEVELS) or bool(np.any(counts == 1))
    return tied and some_untied


def tied_inputs(
    op: TensorOp, shapes: Sequence[tuple[int, ...]], dtype: str, rng: np.random.Generator
) -> list[np.ndarray]:
    """Inputs of ``op`` drawn from ``LEVELS`` until they have ties (``has_ties``)."""
    for _ in range(1000):
        xs = [rng.choice(LEVELS, shape).astype(dtype) for shape in shapes]
        if has_ties(op, xs):
            return xs
    raise AssertionError(f"{op!r}: no inputs with ties for shapes {list(shapes)}")


def _reduced(op: Reduction) -> int:
    return int(np.prod([op.operand_shape[a] for a in op.axes]))


def can_tie(op: TensorOp, shapes: Sequence[tuple[int, ...]]) -> bool:
    """Whether a result element of ``op`` on ``shapes`` has two candidates or more."""
    if isinstance(op, Reduction):
        return _reduced(op) >= 2
    axis = getattr(op, "axis", None)
    return axis is None or shapes[0][axis] >= 2


def shared_gradient(
    op: TensorOp, xs: Sequence[np.ndarray], cotangent: np.ndarray
) -> list[np.ndarray]:
    """The gradient of ``Re(sum(conj(cotangent) * op(xs)))`` by JAX's convention: each of
    the ``k`` candidates equal to a result element gets ``1/k`` of its cotangent."""
    found = _hits(op, xs)
    assert found is not None, f"{op!r} is not a selection"
    hits, count = found
    back = np.expand_dims(cotangent, op.axes) if isinstance(op, Reduction) else cotangent
    return [(back * hit / count).astype(x.dtype) for hit, x in zip(hits, xs, strict=True)]

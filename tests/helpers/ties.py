"""Inputs with ties, and JAX's convention for the gradient of a selection at a tie.

A *selection* gives, for each result element, one of the input elements it chooses
from (its candidates): ``maximum(x, y)`` from ``x[i]`` and ``y[i]``, ``max(x, axis)``
from a slice. At a tie of ``k`` candidates equal to the result, JAX's convention
(``lax._balanced_eq``, ``_reduce_chooser_jvp_rule``) shares the result's cotangent
equally: ``1/k`` to each. Central differences cannot check it: they give ``1/2`` to
each of ``k >= 3`` tied elements (one side moves the maximum, the other does not).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: The values of tied inputs: few, so that equal elements are common; exact in f32.
LEVELS = (-1.5, -0.5, 0.5, 1.0)

#: Per result element, how many of its candidates are tied, and how many it has.
TieCounts = Callable[[list[np.ndarray]], tuple[np.ndarray, int]]


def enough_ties(counts: np.ndarray, candidates: int) -> bool:
    """Whether inputs test a tie rule: some result element ties ``min(3, candidates)``
    candidates (so ``1/k`` is not ``1/2``) and, where there are several, some has no tie
    (so a rule that ignores the values fails; unless there are more candidates than
    ``LEVELS``)."""
    counts = np.asarray(counts)
    tied = bool(np.any(counts >= min(3, candidates)))
    some_untied = counts.size == 1 or candidates > len(LEVELS) or bool(np.any(counts == 1))
    return tied and some_untied


def draw_tied(
    rng: np.random.Generator, shapes: Sequence[tuple[int, ...]], dtype: object, counts: TieCounts
) -> list[np.ndarray]:
    """Arrays of ``shapes`` drawn from ``LEVELS`` until ``enough_ties(*counts(arrays))``."""
    for _ in range(1000):
        arrays = [rng.choice(LEVELS, shape).astype(dtype) for shape in shapes]
        if enough_ties(*counts(arrays)):
            return arrays
    raise AssertionError(f"no inputs with ties for shapes {list(shapes)}")


def slice_hits(
    x: np.ndarray, kept: np.ndarray, axes: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """For a reduction over ``axes`` with result ``kept`` (``keepdims`` form): where an
    element equals its slice's result, and how many of its slice do (broadcast)."""
    hit = np.asarray(x == kept)
    count = np.broadcast_to(np.sum(hit, axis=axes, keepdims=True), hit.shape)
    return hit, count


def reduced_size(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """The number of elements of each slice of a reduction over ``axes``."""
    return int(np.prod([shape[a] for a in axes]))


def shared_reduction_gradient(
    x: np.ndarray, kept: np.ndarray, axes: tuple[int, ...], cotangent_kept: np.ndarray
) -> np.ndarray:
    """JAX's gradient of ``sum(cotangent * reduce(x, axes))`` for a selecting reduction
    with result ``kept`` and cotangent ``cotangent_kept`` (both in ``keepdims`` form)."""
    hit, count = slice_hits(x, kept, axes)
    return (cotangent_kept * hit / count).astype(x.dtype)


def shared_pair_gradient(
    x: np.ndarray, y: np.ndarray, z: np.ndarray, cotangent: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """JAX's gradient of ``sum(cotangent * f(x, y))`` for an elementwise selection ``f``
    with result ``z`` (``x`` and ``y`` broadcast to it): ``1/2`` each at a tie. Each
    gradient is summed back to its operand's shape."""
    hx, hy = np.asarray(x == z), np.asarray(y == z)
    count = hx.astype(np.int64) + hy
    gx, gy = (_sum_to(cotangent * h / count, np.shape(v)) for h, v in ((hx, x), (hy, y)))
    return gx, gy


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``g`` summed over the dimensions that broadcasting added to ``shape``."""
    lead = g.ndim - len(shape)
    grown = [lead + d for d, n in enumerate(shape) if n == 1 and g.shape[lead + d] != 1]
    return np.sum(g, axis=(*range(lead), *grown)).reshape(shape)

"""Indexing, joining and einsum steps of the gradient fuzzer (``fuzz_programs``).

Each step draws its key, pieces or subscripts at run time from its seed and the shapes
it meets (the pool's shapes depend on the steps before), so one program gives the same
steps at every dtype and on plain arrays:

* ``index``: a basic key (ints, strided and reversed slices, ``None``, ``...``), an
  advanced one (integer arrays with repeated and negative indices, a boolean mask), or
  an ``.at[key].add`` / ``.set`` update;
* ``join``: ``concatenate`` / ``stack`` of two values (flattened when they do not fit)
  and a ``split`` whose pieces are weighted differently;
* ``einsum``: random subscripts over one or two values: permutations, diagonals of equal
  extents, sums, contractions of equal extents, outer products.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

import tidu_compile as tc

__all__ = ["INDEXING_KINDS", "indexing_step"]

INDEXING_KINDS = ("index", "join", "einsum")


def indexing_step(kind: str, a: tc.Tensor, b: tc.Tensor, seed: int) -> tc.Tensor:
    """The result of one indexing step on pool values ``a`` and ``b``."""
    rng = np.random.default_rng(seed)
    if kind == "index":
        return _index(a, rng)
    if kind == "join":
        return _join(a, b, rng)
    if kind == "einsum":
        return _einsum(a, b, rng)
    raise AssertionError(kind)


# ------------------------------------------------------------------ index


def _basic_key(shape: tuple[int, ...], rng: np.random.Generator) -> tuple[Any, ...]:
    key: list[Any] = []
    for size in shape:
        choice = rng.integers(4)
        if choice == 0:
            key.append(int(rng.integers(-size, size)))
        elif choice == 1:
            step = int(rng.choice([-2, -1, 1, 2, 3]))
            start = int(rng.integers(-size, size))
            key.append(slice(start, None, step))  # never empty: it starts inside
        else:
            key.append(slice(None))
    if key and key[-1] == slice(None) and rng.random() < 0.5:
        key[-1] = Ellipsis
    if rng.random() < 0.3:
        key.insert(int(rng.integers(len(key) + 1)), None)
    return tuple(key)


def _advanced_key(shape: tuple[int, ...], rng: np.random.Generator) -> tuple[Any, ...]:
    if rng.random() < 0.2:  # a boolean mask over the first dimension (never empty)
        mask = rng.random(shape[0]) < 0.6
        mask[int(rng.integers(shape[0]))] = True
        return (mask,)
    count = int(rng.integers(1, 5))
    dims = sorted(rng.choice(len(shape), int(rng.integers(1, min(2, len(shape)) + 1)),
                             replace=False))  # fmt: skip
    key: list[Any] = [slice(None)] * len(shape)
    for d in dims:
        values = rng.integers(-shape[d], shape[d], count)
        values[-1] = values[0]  # a repeated index
        key[d] = values
    return tuple(key)


def _index(a: tc.Tensor, rng: np.random.Generator) -> tc.Tensor:
    if a.ndim == 0:
        return a[None] * 1.5
    mode = rng.random()
    if mode < 0.5:
        return a[_basic_key(a.shape, rng)]
    key = _advanced_key(a.shape, rng)
    if mode < 0.8:
        return a[key]
    update = tc.tanh(a[key] * 0.5) if a.dtype.kind != "c" else a[key] * 0.5
    return a.at[key].add(update) if rng.random() < 0.5 else a.at[key].set(update)


# ------------------------------------------------------------------ join


def _join(a: tc.Tensor, b: tc.Tensor, rng: np.random.Generator) -> tc.Tensor:
    if a.dtype != b.dtype:
        b = b * (1.0 + 0j) if a.dtype.kind == "c" else tc.real(b)
    if a.ndim and a.shape == b.shape and rng.random() < 0.4:
        joined = tc.stack([a, b * 0.5], axis=int(rng.integers(a.ndim + 1)))
    elif a.ndim and a.ndim == b.ndim and a.shape[1:] == b.shape[1:]:
        joined = tc.concatenate([a, b * 0.5], axis=0)
    else:
        joined = tc.concatenate([tc.reshape(a, (-1,)), tc.reshape(b, (-1,)) * 0.5])
    if rng.random() < 0.5 and joined.shape[0] >= 2:  # split it again, weigh the pieces
        pieces = tc.array_split(joined, int(rng.integers(2, min(joined.shape[0], 3) + 1)))
        return tc.concatenate([p * (1.0 + 0.5 * i) for i, p in enumerate(pieces)])
    return joined


# ------------------------------------------------------------------ einsum


def _einsum(a: tc.Tensor, b: tc.Tensor, rng: np.random.Generator) -> tc.Tensor:
    letters = iter(string.ascii_lowercase)
    sizes: dict[str, int] = {}

    def labels(shape: tuple[int, ...], reusable: list[str], reuse: float) -> list[str]:
        """A label per dimension: sometimes one of ``reusable`` of the same extent."""
        out: list[str] = []
        for size in shape:
            same = [k for k in reusable if sizes[k] == size]
            if same and rng.random() < reuse:
                out.append(str(rng.choice(same)))
            else:
                label = next(letters)
                sizes[label] = size
                out.append(label)
        return out

    la: list[str] = []
    for size in a.shape:  # a label repeated within a is a diagonal
        la.extend(labels((size,), la, 0.25))
    operands, terms = [a], ["".join(la)]
    if rng.random() < 0.6 and b.ndim <= 3:
        if b.dtype != a.dtype:
            b = b * (1.0 + 0j) if a.dtype.kind == "c" else tc.real(b)
        operands.append(b)
        terms.append("".join(labels(b.shape, list(dict.fromkeys(la)), 0.6)))
    seen = list(dict.fromkeys("".join(terms)))
    keep = [k for k in seen if rng.random() < 0.6]
    output = "".join(rng.permutation(keep)) if keep else ""
    spec = ",".join(terms) + "->" + output
    result = tc.einsum(spec, *operands)
    return result * 0.5 if result.ndim else result * 0.1

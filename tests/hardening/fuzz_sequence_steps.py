"""The steps of the sequence fuzzer (``fuzz_sequences``): one row per kind of step.

A row is ``draw(rng, a, b) -> params`` and ``apply(a, b, params) -> Tensor``: ``a`` and
``b`` are pool values, ``params`` the step's static parameters, hashable (tuples of
ints, floats, strings and None), so that in ``@tc.function`` mode they are static
arguments of the traced function and part of its trace key. ``draw`` only picks values;
whether they fit the shapes met is found by running the step on the reference (a step
whose kept parameters no longer fit a new shape draws new ones).

What the rows cover, and the parameters the sequences vary:

* ``slice``: basic keys, starts, stops and steps positive and negative (``x[1:]``,
  ``x[1:-1]``, ``x[::-2]``), integers and ``None``;
* ``pad``: widths ``w``, ``(w,)``, ``(lo, hi)`` and per axis, 0 included; every mode;
* ``concat``: two or three parts, equal (``a``, a flip, another value) and unequal
  (``a[k:]`` along the axis), or ``stack``;
* ``split``: ``array_split`` into sections or at indices, the pieces joined again in
  reverse order;
* ``gather``: ``take`` (1-d and 2-d index arrays) and advanced keys, always with a
  repeated index; ``scatter``: ``.at[key].add`` / ``.set`` on such keys;
* ``reduce``: ``sum``, ``mean``, ``max``, ``min``, ``prod``, ``var``, ``logsumexp``
  over each axis, all axes or a pair, with ``keepdims``; ``cumulative``: ``cumsum``,
  ``cumprod``;
* ``transpose``, ``reshape`` (flatten, add or drop a 1, merge or split dimensions),
  ``broadcast`` (a new leading dimension, a 1 stretched);
* ``where`` (a data mask), ``matmul`` (Gram products, with the other value), ``einsum``
  (``fuzz_indexing``'s random subscripts), ``table`` (every elementwise op of the op
  table, ``fuzz_table``), ``binary`` (broadcasting), ``reorder`` (``flip``, ``roll``,
  ``diff``, ``tile``, ``repeat``, ``tril``, ``triu``, ``diagonal``, ``trace``, ``sort``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from fuzz_indexing import indexing_step
from fuzz_table import TABLE_OPS, table_step

import tidu_compile as tc

__all__ = ["KINDS", "WEIGHTS", "Kind"]

Rng = np.random.Generator
Params = tuple[Any, ...]


class Kind(NamedTuple):
    draw: Callable[[Rng, tc.Tensor, tc.Tensor], Params]
    apply: Callable[[tc.Tensor, tc.Tensor, Params], tc.Tensor]


def _pick(rng: Rng, options: tuple[Any, ...]) -> Any:
    return options[int(rng.integers(len(options)))]


def _axis(rng: Rng, a: tc.Tensor) -> int:
    """An axis of ``a``, negative one time in three (0 for a 0-d value)."""
    if a.ndim == 0:
        return 0
    axis = int(rng.integers(a.ndim))
    return axis - a.ndim if rng.random() < 0.33 else axis


def _along(a: tc.Tensor, axis: int, item: Any) -> tc.Tensor:
    return a[(slice(None),) * (axis % a.ndim) + (item,)]


def _fit(b: tc.Tensor, a: tc.Tensor) -> tc.Tensor:
    """``b`` if it broadcasts against ``a``, else its mean (a scalar)."""
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return tc.mean(b)
    return b


# ------------------------------------------------------------------ slices and pads

_STARTS = (None, 0, 1, 2, -1, -2)
_STOPS = (None, 1, 2, 3, -1, -2)
_STEPS = (None, 1, 2, 3, -1, -2)


def _draw_slice(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    key: list[Any] = []
    for size in a.shape:
        u = rng.random()
        if u < 0.15 and a.ndim > 1:
            key.append(("i", _pick(rng, (0, 1, -1, size - 1))))
        elif u < 0.4:
            key.append(("s", None, None, None))
        else:
            key.append(("s", _pick(rng, _STARTS), _pick(rng, _STOPS), _pick(rng, _STEPS)))
    if rng.random() < 0.2:
        key.insert(int(rng.integers(len(key) + 1)), ("n",))
    return tuple(key)


def _apply_slice(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    if a.ndim == 0:
        return a * 1.5
    key = tuple(slice(*p[1:]) if p[0] == "s" else p[1] if p[0] == "i" else None for p in params)
    return a[key]


_PAD_MODES = ("constant", "constant", "constant", "edge", "wrap", "reflect", "symmetric")


def _draw_pad(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    form = _pick(rng, ("int", "one", "pair", "pair", "axes"))
    width = (0, 1, 2, 3)
    if form == "int":
        widths: Any = _pick(rng, width)
    elif form == "one":
        widths = (_pick(rng, width),)
    elif form == "pair":
        widths = (_pick(rng, width), _pick(rng, width))
    else:
        widths = tuple((_pick(rng, width), _pick(rng, width)) for _ in range(a.ndim))
    return widths, _pick(rng, _PAD_MODES), _pick(rng, (0.0, 0.0, 0.5))


def _apply_pad(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    widths, mode, value = params
    if mode == "constant":
        return tc.pad(a, widths, constant_values=value)
    return tc.pad(a, widths, mode=mode)


# ------------------------------------------------------------------ joining


def _draw_concat(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    if rng.random() < 0.2:
        return ("stack", _axis(rng, a) if a.ndim else 0, int(rng.integers(2, 4)))
    parts = tuple(_pick(rng, ("same", "flip", "cut1", "cut2", "cut1", "other"))
                  for _ in range(int(rng.integers(1, 3))))  # fmt: skip
    return ("concat", _axis(rng, a), parts)


def _part(a: tc.Tensor, b: tc.Tensor, axis: int, part: str) -> tc.Tensor:
    if part == "same":
        return a
    if part == "flip":
        return tc.flip(a, axis)
    if part == "other":
        return b if b.ndim == a.ndim else tc.flip(a, axis)
    return _along(a, axis, slice(int(part[-1]), None))  # unequal: a[k:] along the axis


def _apply_concat(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    if params[0] == "stack" or a.ndim == 0:
        count = params[2] if params[0] == "stack" else 2
        return tc.stack([a] * count, axis=params[1])
    _, axis, parts = params
    return tc.concatenate([a, *(_part(a, b, axis, p) for p in parts)], axis=axis)


def _draw_split(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    if rng.random() < 0.5:
        return (_axis(rng, a), int(rng.integers(1, 4)))
    points = sorted({int(p) for p in rng.integers(0, 4, int(rng.integers(1, 3)))})
    return (_axis(rng, a), tuple(points))


def _apply_split(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    axis, sections = params
    pieces = tc.array_split(a, list(sections) if isinstance(sections, tuple) else sections, axis)
    return tc.concatenate(pieces[::-1], axis=axis)


# ------------------------------------------------------------------ gathers, scatters

_INDICES = (0, 1, -1, 2, -2, 3)


def _draw_gather(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    count = int(rng.integers(1, 5))
    values = [_pick(rng, _INDICES) for _ in range(count)]
    values.append(values[0])  # a repeated index, always
    form = _pick(rng, ("take", "take", "take2d", "key"))
    return (form, _axis(rng, a), tuple(values))


def _key(a: tc.Tensor, params: Params) -> tuple[Any, ...]:
    _, axis, values = params
    return (slice(None),) * (axis % a.ndim) + (np.array(values),)


def _apply_gather(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    if a.ndim == 0:
        return tc.stack([a, a])
    form, axis, values = params
    if form == "key":
        return a[_key(a, params)]
    index = np.array(values)
    if form == "take2d":
        index = np.stack([index, index[::-1]])
    return tc.take(a, index, axis=axis)


def _draw_scatter(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, ("add", "set")), *_draw_gather(rng, a, b)[1:])


def _apply_scatter(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    if a.ndim == 0:
        return a * a
    key = _key(a, params)
    update = a[key]
    return a.at[key].add(update) if params[0] == "add" else a.at[key].set(update)


# ------------------------------------------------------------------ reductions

_REDUCTIONS: dict[str, Callable[..., tc.Tensor]] = {
    "sum": tc.sum, "mean": tc.mean, "max": tc.max, "min": tc.min, "prod": tc.prod,
    "var": tc.var, "logsumexp": tc.logsumexp,
}  # fmt: skip


def _draw_reduce(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    u = rng.random()
    axis: Any = None if u < 0.2 or a.ndim == 0 else _axis(rng, a)
    if u > 0.85 and a.ndim >= 2:
        axis = (0, a.ndim - 1)
    name = _pick(rng, ("sum", "mean", "max", "min", "prod", "sum", "mean", "max", "var",
                       "logsumexp"))  # fmt: skip
    return (name, axis, bool(rng.integers(2)))


def _apply_reduce(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    name, axis, keepdims = params
    return _REDUCTIONS[name](a, axis=axis, keepdims=keepdims)


def _draw_cumulative(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, ("cumsum", "cumprod")), None if rng.random() < 0.2 else _axis(rng, a))


def _apply_cumulative(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    name, axis = params
    return (tc.cumsum if name == "cumsum" else tc.cumprod)(a, axis=axis)


# ------------------------------------------------------------------ layout


def _draw_transpose(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return tuple(int(i) for i in rng.permutation(a.ndim)) if rng.random() < 0.8 else ("T",)


def _apply_transpose(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    return a.T if params == ("T",) else tc.transpose(a, params)


def _draw_reshape(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    form = _pick(rng, ("flat", "expand", "squeeze", "merge", "split"))
    return (form, int(rng.integers(a.ndim + 1)), _pick(rng, (2, 3)))


def _apply_reshape(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    form, where, k = params
    shape = list(a.shape)
    if form == "flat" or a.ndim == 0:
        return tc.reshape(a, (-1,))
    if form == "expand":
        return tc.expand_dims(a, where)
    if form == "squeeze":
        return tc.squeeze(a) if 1 in shape else tc.reshape(a, (*shape, 1))
    if form == "merge" and a.ndim >= 2:
        return tc.reshape(a, (shape[0] * shape[1], *shape[2:]))
    d = where % a.ndim
    if shape[d] % k:
        return tc.reshape(a, (*shape[:d], 1, *shape[d:]))
    return tc.reshape(a, (*shape[:d], k, shape[d] // k, *shape[d + 1 :]))


def _draw_broadcast(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, ("lead", "stretch")), _pick(rng, (1, 2, 3)))


def _apply_broadcast(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    form, k = params
    if form == "lead" or a.ndim == 0:
        return tc.broadcast_to(a, (k, *a.shape))
    shape = list(a.shape)
    ones = [d for d, s in enumerate(shape) if s == 1]
    if ones:
        shape[ones[0]] = k + 1
        return tc.broadcast_to(a, tuple(shape))
    return tc.broadcast_to(a[..., None], (*shape, k))


# ------------------------------------------------------------------ data-dependent, products


def _draw_where(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, (-0.5, 0.0, 0.3)), _pick(rng, ("scaled", "other", "zero")),
            bool(rng.integers(2)))  # fmt: skip


def _apply_where(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    threshold, other, flip = params
    mask = (a > threshold) if not flip else (a <= threshold)
    if other == "other":
        return tc.where(mask, a, _fit(b, a))
    return tc.where(mask, a, a * 0.2 if other == "scaled" else 0.0)


def _draw_matmul(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, ("gram", "gramT", "other")),)


def _apply_matmul(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    if a.ndim == 0:
        return a * a
    if a.ndim == 1:
        return tc.matmul(a, a) if params[0] != "other" or b.shape != a.shape else a @ b
    swapped = tc.swapaxes(a, -1, -2)
    if params[0] == "other" and b.ndim >= 1:
        inner = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if inner == a.shape[-1]:
            try:
                return tc.matmul(a, b)
            except ValueError:  # batch dimensions that do not broadcast
                pass
    return tc.matmul(swapped, a) if params[0] == "gramT" else tc.matmul(a, swapped)


def _draw_einsum(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (int(rng.integers(1 << 20)),)


def _apply_einsum(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    return indexing_step("einsum", a, b, params[0])


def _draw_table(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, tuple(sorted(TABLE_OPS))),)


def _apply_table(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    return table_step(params[0], a, b)


_BINARY: dict[str, Callable[[tc.Tensor, tc.Tensor], tc.Tensor]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1.5),
    "maximum": tc.maximum,
    "scale": lambda a, b: a * 2.5,
}


def _draw_binary(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, tuple(_BINARY)),)


def _apply_binary(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    return _BINARY[params[0]](a, a if params[0] == "scale" else _fit(b, a))


_REORDER = ("flip", "roll", "diff", "tile", "repeat", "tril", "triu", "diagonal", "trace",
            "sort")  # fmt: skip


def _draw_reorder(rng: Rng, a: tc.Tensor, b: tc.Tensor) -> Params:
    return (_pick(rng, _REORDER), _axis(rng, a), _pick(rng, (-1, 0, 1, 2)))


def _apply_reorder(a: tc.Tensor, b: tc.Tensor, params: Params) -> tc.Tensor:
    name, axis, k = params
    if a.ndim == 0:
        return a * 3.0
    if name == "flip":
        return tc.flip(a, axis)
    if name == "roll":
        return tc.roll(a, k, axis)
    if name == "diff":
        return tc.diff(a, axis=axis)
    if name == "tile":
        return tc.tile(a, (abs(k) + 1,) if k % 2 else (abs(k) + 1, 1))
    if name == "repeat":
        return tc.repeat(a, abs(k) + 1, axis=axis)
    if name == "sort":
        return tc.sort(a, axis=axis)
    if a.ndim < 2:
        return tc.outer(a, a[::-1])
    if name == "tril":
        return tc.tril(a, k)
    if name == "triu":
        return tc.triu(a, k)
    if name == "diagonal":
        return tc.diagonal(a, k)
    return tc.trace(a, k)


#: kind -> its row.
KINDS: dict[str, Kind] = {
    "slice": Kind(_draw_slice, _apply_slice),
    "pad": Kind(_draw_pad, _apply_pad),
    "concat": Kind(_draw_concat, _apply_concat),
    "split": Kind(_draw_split, _apply_split),
    "gather": Kind(_draw_gather, _apply_gather),
    "scatter": Kind(_draw_scatter, _apply_scatter),
    "reduce": Kind(_draw_reduce, _apply_reduce),
    "cumulative": Kind(_draw_cumulative, _apply_cumulative),
    "transpose": Kind(_draw_transpose, _apply_transpose),
    "reshape": Kind(_draw_reshape, _apply_reshape),
    "broadcast": Kind(_draw_broadcast, _apply_broadcast),
    "where": Kind(_draw_where, _apply_where),
    "matmul": Kind(_draw_matmul, _apply_matmul),
    "einsum": Kind(_draw_einsum, _apply_einsum),
    "table": Kind(_draw_table, _apply_table),
    "binary": Kind(_draw_binary, _apply_binary),
    "reorder": Kind(_draw_reorder, _apply_reorder),
}

#: How often each kind is drawn (the structural ops, where extents and offsets are
#: baked, most often).
WEIGHTS: dict[str, float] = {
    "slice": 3, "pad": 3, "concat": 2, "split": 1.5, "gather": 2, "scatter": 0.5, "reduce": 1.5,
    "cumulative": 1, "transpose": 0.7, "reshape": 0.7, "broadcast": 1, "where": 1, "matmul": 1,
    "einsum": 0.5, "table": 0.3, "binary": 1, "reorder": 1.5,
}  # fmt: skip

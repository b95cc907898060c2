"""Sequences of random programs of one structure, for the sequence fuzzer.

A stale kernel shows only when one executor serves several programs of the same
structure: a training loop meeting a new batch size, a slice taken with other bounds,
a pad of other widths. A ``Sequence`` is a ``Template`` (input shapes written with
named extents ``b``, ``n``, ``m``, and a list of steps over a pool of values, drawn
from ``fuzz_sequence_steps.KINDS``) and 3-6 ``Variant``s of it, each with its own
extents and each step's static parameters. From one variant to the next, one thing
changes, named in ``Variant.change``:

* ``batch``: ``b`` takes a new value (a new batch size);
* ``equal``: one extent takes another's value (equal extents: another shape class);
* ``one``: one extent becomes 1 (a broadcast, a no-op transpose);
* ``shapes``: every extent is drawn again;
* ``params``: the extents stay, some steps draw new parameters (offsets, pad widths,
  slice bounds, indices, axes);
* ``nudge``: the extents stay, one integer among the parameters moves by one (or
  between ``None`` and 1 or -1): ``pad(x, 3)`` then ``pad(x, (3, 2))``, ``x[1:]`` then
  ``x[1:-1]``, the programs closest to each other that differ;
* ``both``: new extents and new parameters;
* ``revisit``: the extents and parameters of an earlier variant (not the last), with a
  new batch size: a program of a class that now has several representatives.

Parameters are kept across a change of extents when they still fit (``x[1:-1]`` stays
``x[1:-1]``: the slice's resolved bounds move with the shape), else drawn again; a
step that finds no parameters that fit becomes ``a * 1.25``. Everything is decided by
the sequence's seed. The program's output is the last pool value; the gradients are
taken with a random cotangent seed of the output's shape (all-ones seeds hide bugs).
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fuzz_sequence_steps import KINDS, WEIGHTS

import tidu_compile as tc

__all__ = ["SKIP", "Step", "Template", "Variant", "Sequence", "make_sequence"]

Shape = tuple[int, ...]
Params = tuple[Any, ...]
#: The parameters of a step that found none that fit: it computes ``a * 1.25``.
SKIP: Params = ("skip",)

_NAMES = ("b", "n", "m")
_FIRST_INPUTS: tuple[tuple[str, ...], ...] = (("b", "n"), ("b",), ("b", "n", "m"), ("n", "b"))
_MORE_INPUTS: tuple[tuple[Any, ...], ...] = (("n",), ("b", "n"), ("b", 1), ("n", "b"), ())
_CHANGES = ("batch", "equal", "one", "shapes", "params", "nudge", "both", "revisit")
_CHANGE_P = (0.28, 0.06, 0.06, 0.03, 0.06, 0.27, 0.06, 0.18)
_COUNT_P = (0.65, 0.18, 0.1, 0.07)


@dataclass(frozen=True)
class Step:
    """A step of ``kind`` on pool values ``a`` and ``b`` (indices taken mod the pool)."""

    kind: str
    a: int
    b: int


@dataclass(frozen=True)
class Template:
    """What all variants of a sequence share: the dtype, the input shapes by extent
    name, the steps."""

    dtype: str
    inputs: tuple[tuple[Any, ...], ...]
    steps: tuple[Step, ...]

    def shapes(self, dims: dict[str, int]) -> list[Shape]:
        return [tuple(dims[d] if isinstance(d, str) else d for d in s) for s in self.inputs]

    def run(self, inputs: Seq[tc.Tensor], params: Seq[Params]) -> tc.Tensor:
        """The program on ``inputs`` with each step's ``params``: the last pool value."""
        pool = list(inputs)
        for step, p in zip(self.steps, params, strict=True):
            a, b = pool[step.a % len(pool)], pool[step.b % len(pool)]
            pool.append(a * 1.25 if p == SKIP else KINDS[step.kind].apply(a, b, p))
        return pool[-1]

    def draw(
        self, inputs: Seq[tc.Tensor], rng: np.random.Generator, keep: Seq[Params | None]
    ) -> tuple[Params, ...]:
        """Each step's parameters: ``keep[i]`` if it fits the values the step meets,
        else freshly drawn ones that fit (run on the reference, without gradients)."""
        pool = list(inputs)
        chosen: list[Params] = []
        with tc.no_grad(), tc.use_executor(tc.ReferenceExecutor()), np.errstate(all="ignore"):
            for step, kept in zip(self.steps, keep, strict=True):
                a, b = pool[step.a % len(pool)], pool[step.b % len(pool)]
                kind = KINDS[step.kind]
                candidates = [kept] if kept is not None and kept != SKIP else []
                candidates += [kind.draw(rng, a, b) for _ in range(8)]
                for params in candidates:
                    try:
                        value = kind.apply(a, b, params)
                    except (ValueError, TypeError, IndexError):
                        continue
                    if value.dtype.kind in "fc" and value.size:
                        break
                else:
                    params, value = SKIP, a * 1.25
                chosen.append(params)
                pool.append(value)
        return tuple(chosen)

    def describe(self) -> str:
        steps = "; ".join(f"{s.kind}({s.a},{s.b})" for s in self.steps)
        return f"dtype={self.dtype} inputs={list(self.inputs)} steps: {steps}"


@dataclass(frozen=True)
class Variant:
    """One program of a sequence: its extents, each step's parameters, its data."""

    change: str
    dims: tuple[tuple[str, int], ...]
    params: tuple[Params, ...]
    data_seed: int

    def arrays(self, template: Template) -> list[np.ndarray]:
        rng = np.random.default_rng(self.data_seed)
        return [rng.standard_normal(s).astype(template.dtype)
                for s in template.shapes(dict(self.dims))]  # fmt: skip

    def cotangent(self, shape: Shape, dtype: np.dtype) -> np.ndarray:
        """A random cotangent seed (never all ones: a uniform seed hides misplaced
        elements)."""
        rng = np.random.default_rng(self.data_seed + 1)
        return np.asarray(rng.standard_normal(shape)).astype(dtype)

    def describe(self, template: Template) -> str:
        shapes = template.shapes(dict(self.dims))
        return f"[{self.change}] shapes={shapes} params={list(self.params)}"


@dataclass
class Sequence:
    seed: int
    template: Template
    variants: list[Variant]
    #: The ``@tc.function`` of the template, one per sequence (its traces are reused
    #: across variants, as a training loop reuses them).
    _function: Any = field(default=None, repr=False)

    def function(self) -> Any:
        if self._function is None:
            template = self.template

            def program(*inputs: tc.Tensor, params: tuple[Params, ...]) -> tc.Tensor:
                return template.run(inputs, params)

            self._function = tc.function(program)
        return self._function

    def fresh(self) -> Sequence:
        """The same sequence with a new ``@tc.function`` (no traces yet)."""
        return Sequence(self.seed, self.template, self.variants)

    def describe(self) -> str:
        lines = [f"seed={self.seed} {self.template.describe()}"]
        lines += [f"  v{i} {v.describe(self.template)}" for i, v in enumerate(self.variants)]
        return "\n".join(lines)


def _new_dims(rng: np.random.Generator) -> dict[str, int]:
    values = rng.choice(np.arange(2, 7), size=len(_NAMES), replace=False)
    return dict(zip(_NAMES, (int(v) for v in values), strict=True))


def _changed(
    dims: dict[str, int], change: str, used: list[str], rng: np.random.Generator
) -> dict[str, int]:
    """``dims`` after ``change`` (``equal`` and ``one`` pick among the ``used`` names)."""
    dims = dict(dims)
    if change == "batch":
        dims["b"] = int(rng.choice([v for v in range(2, 9) if v != dims["b"]]))
    elif change == "equal" and len(used) >= 2:
        first, second = (str(n) for n in rng.choice(used, 2, replace=False))
        dims[second] = dims[first]
    elif change == "one":
        dims[str(rng.choice(used))] = 1
    elif change in ("shapes", "both"):
        dims = _new_dims(rng)
    return dims


def _leaves(params: Any, path: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    """The paths of the integers (and Nones) in nested ``params``."""
    if isinstance(params, tuple):
        return [p for i, v in enumerate(params) for p in _leaves(v, (*path, i))]
    if params is None or (isinstance(params, int) and not isinstance(params, bool)):
        return [path]
    return []


def _replaced(params: Any, path: tuple[int, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    return (*params[:head], _replaced(params[head], rest, value), *params[head + 1 :])


def _nudged(params: tuple[Params, ...], rng: np.random.Generator) -> list[Params | None]:
    """``params`` with one integer moved by one (a None becomes 1 or -1, a 1 or -1
    sometimes None): the step's other parameters kept."""
    steps = [(i, _leaves(p)) for i, p in enumerate(params) if _leaves(p)]
    if not steps:
        return list(params)
    step, leaves = steps[int(rng.integers(len(steps)))]  # a step, then one of its integers
    path = leaves[int(rng.integers(len(leaves)))]
    value: Any = params[step]
    for i in path:
        value = value[i]
    if value is None:
        new: Any = int(rng.choice([1, -1]))
    elif value in (1, -1) and rng.random() < 0.3:
        new = None
    else:
        new = value + int(rng.choice([1, -1]))
        new = value + 1 if new < 0 <= value and rng.random() < 0.5 else new
    out: list[Params | None] = list(params)
    out[step] = _replaced(params[step], path, new)
    return out


def make_template(rng: np.random.Generator, length: int | None = None) -> Template:
    dtype = "float32" if rng.random() < 0.2 else "float64"
    inputs: list[tuple[Any, ...]] = [_FIRST_INPUTS[int(rng.integers(len(_FIRST_INPUTS)))]]
    for _ in range(int(rng.choice([0, 1, 2], p=[0.5, 0.35, 0.15]))):
        inputs.append(_MORE_INPUTS[int(rng.integers(len(_MORE_INPUTS)))])
    kinds = sorted(KINDS)
    weights = np.array([WEIGHTS[k] for k in kinds])
    count = length if length is not None else int(rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))
    steps = []
    for i in range(count):
        pool = len(inputs) + i
        a = pool - 1 if rng.random() < 0.75 else int(rng.integers(pool))
        steps.append(Step(str(rng.choice(kinds, p=weights / weights.sum())), a,
                          int(rng.integers(pool))))  # fmt: skip
    return Template(dtype, tuple(inputs), tuple(steps))


def make_sequence(seed: int, length: int | None = None, variants: int | None = None) -> Sequence:
    """The sequence of ``seed``: a template and 3-6 variants (``variants`` to force)."""
    rng = np.random.default_rng(seed)
    template = make_template(rng, length)
    count = variants if variants is not None else int(rng.choice([3, 4, 5, 6], p=_COUNT_P))
    dims = _new_dims(rng)
    used = sorted({d for shape in template.inputs for d in shape if isinstance(d, str)})
    out: list[Variant] = []
    previous: tuple[Params | None, ...] = (None,) * len(template.steps)
    for index in range(count):
        change = "first" if index == 0 else str(rng.choice(_CHANGES, p=_CHANGE_P))
        if change == "equal" and len(used) < 2 or change == "revisit" and index < 2:
            change = "batch"
        keep: list[Params | None] = list(previous)
        if change == "revisit":
            earlier = out[int(rng.integers(index - 1))]
            dims, keep = _changed(dict(earlier.dims), "batch", used, rng), list(earlier.params)
        else:
            dims = _changed(dims, change, used, rng)
        if change == "nudge":
            keep = _nudged(previous, rng)  # type: ignore[arg-type]
        elif change in ("params", "both"):
            redraw = [rng.random() < 0.5 for _ in keep]
            if keep and not any(redraw):
                redraw[int(rng.integers(len(keep)))] = True
            keep = [None if r else k for k, r in zip(keep, redraw, strict=True)]
        elif change in ("equal", "one", "shapes"):
            keep = [None if rng.random() < 0.2 else k for k in keep]
        data_seed = int(rng.integers(1 << 30))
        variant = Variant(change, tuple(sorted(dims.items())), (), data_seed)
        inputs = [tc.tensor(a) for a in variant.arrays(template)]
        params = template.draw(inputs, np.random.default_rng(data_seed), keep)
        out.append(Variant(change, variant.dims, params, data_seed))
        previous = params
    return Sequence(seed, template, out)

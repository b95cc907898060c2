"""A seeded generator of random tensor programs for differential testing.

A program starts from a few inputs and applies random frontend operations to random
values of a pool: unary math (kept in its domain), binary ops with numpy broadcasting
(row, column and scalar operands), fan-out (a value reused several times), the
two-output ``sincos``, Python constants, reductions and matrix products. Its loss is the
sum of a few pool values, so many nodes receive cotangents from several consumers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import tidu_compile as tc

Shape = tuple[int, ...]


@dataclass(frozen=True)
class RandomProgram:
    seed: int
    input_arrays: tuple[np.ndarray, ...]
    function: Callable[..., tc.Tensor]


def _safe_unary(rng: np.random.Generator) -> Callable[[tc.Tensor], tc.Tensor]:
    choices: list[Callable[[tc.Tensor], tc.Tensor]] = [
        lambda x: tc.tanh(x),
        lambda x: tc.sin(x),
        lambda x: tc.cos(x),
        lambda x: tc.exp(tc.tanh(x)),
        lambda x: tc.log(x * x + 1.0),
        lambda x: tc.sqrt(x * x + 0.5),
        lambda x: -x,
        lambda x: x ** 2,
        lambda x: x * 0.5 + 1.0,
        lambda x: tc.maximum(x, 0.1),
        lambda x: tc.where(x.numpy() > 0, x, x * 0.2),
        lambda x: 1.0 / (x * x + 1.0),
        lambda x: tc.sincos(x)[0] * tc.sincos(x)[1],
    ]
    return choices[rng.integers(len(choices))]


def _binary(rng: np.random.Generator) -> Callable[[tc.Tensor, tc.Tensor], tc.Tensor]:
    choices: list[Callable[[tc.Tensor, tc.Tensor], tc.Tensor]] = [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: a / (b * b + 1.0),
        lambda a, b: tc.maximum(a, b),
    ]
    return choices[rng.integers(len(choices))]


def make_program(seed: int, dtype: type = np.float64, steps: int = 12) -> RandomProgram:
    """A random program of about ``steps`` operations on 2-d and 1-d inputs."""
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    shapes: list[Shape] = [(rows, cols), (rows, cols), (cols,), (rows, 1)]
    arrays = tuple(rng.standard_normal(s).astype(dtype) for s in shapes)
    plan = [int(x) for x in rng.integers(0, 1 << 30, size=steps)]

    def function(*inputs: tc.Tensor) -> tc.Tensor:
        pool = list(inputs)
        for step_seed in plan:
            step = np.random.default_rng(step_seed)
            kind = step.integers(5)
            a = pool[step.integers(len(pool))]
            if kind <= 1:
                pool.append(_safe_unary(step)(a))
            elif kind == 2:
                b = pool[step.integers(len(pool))]
                try:
                    pool.append(_binary(step)(a, b))
                except ValueError:  # shapes that do not broadcast: use a reduction instead
                    pool.append(tc.sum(b) * a)
            elif kind == 3 and a.ndim == 2:
                axis = int(step.integers(2))
                pool.append(tc.mean(a, axis=axis, keepdims=bool(step.integers(2))))
            elif kind == 4 and a.ndim == 2:
                other = pool[step.integers(len(pool))]
                if other.ndim == 2 and other.shape[0] == a.shape[1]:
                    pool.append(tc.tanh(a @ other))
                else:
                    pool.append(tc.tanh(a @ a.T))
            else:
                pool.append(a * 2.0)
        chosen = [pool[i] for i in rng.choice(len(pool), size=min(3, len(pool)), replace=False)]
        loss = tc.sum(chosen[0])
        for value in chosen[1:]:
            loss = loss + tc.sum(value)
        return loss

    return RandomProgram(seed, arrays, function)

"""Running a fuzzed ``Sequence`` through one compiled executor, against the reference.

``check(sequence, mode, executor)`` runs every variant of the sequence, in order (or
in the ``order`` given), through ``executor``: per-op (each frontend op a tape node,
its backward a compiled program) or as one ``@tc.function`` (the sequence's traced
function, compiled forward and backward). Each variant's output and the gradients of
``<cotangent, output>`` with respect to every input must match the
``ReferenceExecutor``'s, per-op and untraced (a stale trace would be stale on both if
the reference ran the same function). A mismatch or an exception is a finding; the
message names the sequence's seed, the mode, the variant and what changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fuzz_sequences import Sequence, Variant

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

__all__ = [
    "MODES", "Outcome", "check", "check_twice", "compare", "reference_outcome", "run_variant",
]

MODES = ("per-op", "function")


@dataclass(frozen=True)
class Outcome:
    value: np.ndarray
    grads: tuple[np.ndarray | None, ...]


def run_variant(
    sequence: Sequence, variant: Variant, mode: str, executor: tc.BackwardExecutor
) -> Outcome:
    """The output and input gradients of ``variant`` on ``executor`` in ``mode``."""
    template = sequence.template
    inputs = [tc.tensor(a, requires_grad=True) for a in variant.arrays(template)]
    with tc.use_executor(executor), np.errstate(all="ignore"):
        if mode == "function":
            output = sequence.function()(*inputs, params=variant.params)
        else:
            output = template.run(inputs, variant.params)
        value = np.array(output.numpy())
        seed = variant.cotangent(output.shape, output.dtype)
        grads = tc.grad(output, inputs, seed=seed, executor=executor)
    return Outcome(value, tuple(None if g is None else np.array(g) for g in grads))


def reference_outcome(sequence: Sequence, variant: Variant) -> Outcome:
    return run_variant(sequence, variant, "per-op", tc.ReferenceExecutor())


def _close(actual: np.ndarray, expected: np.ndarray, tol: float) -> str | None:
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return f"{actual.shape} {actual.dtype}, expected {expected.shape} {expected.dtype}"
    finite = np.isfinite(expected)
    if not np.array_equal(np.isfinite(actual), finite) or not np.array_equal(
        np.isnan(actual), np.isnan(expected)
    ):
        return f"non-finite entries differ: {actual.ravel()} vs {expected.ravel()}"
    if not np.array_equal(actual[~finite], expected[~finite]):
        return "infinite entries differ"
    scale = max(1.0, float(np.max(np.abs(expected[finite]), initial=0.0)))
    error = float(np.max(np.abs(actual[finite] - expected[finite]), initial=0.0)) / scale
    if error > tol:
        return (f"error {error:.3g} > {tol:g}: {actual.ravel()[:8]} vs "
                f"{expected.ravel()[:8]}")  # fmt: skip
    return None


def compare(got: Outcome, expected: Outcome, dtype: str) -> str | None:
    """None when ``got`` matches ``expected``, else what differs."""
    tol = 2e-4 if dtype == "float32" else 1e-9
    problem = _close(got.value, expected.value, tol)
    if problem:
        return f"output: {problem}"
    for i, (g, e) in enumerate(zip(got.grads, expected.grads, strict=True)):
        if (g is None) != (e is None):
            return f"gradient {i}: {g} vs {e}"
        if g is not None and e is not None:
            problem = _close(g, e, tol)
            if problem:
                return f"gradient {i}: {problem}"
    return None


def check(
    sequence: Sequence,
    mode: str,
    executor: tc.BackwardExecutor,
    references: dict[int, Outcome],
    order: Iterable[int] | None = None,
    label: str = "",
) -> list[str]:
    """The findings of running ``sequence``'s variants (indices ``order``, default all
    in order) through ``executor`` in ``mode``; ``references`` caches the reference's
    outcomes by variant index."""
    failures = []
    for index in order if order is not None else range(len(sequence.variants)):
        variant = sequence.variants[index]
        where = (f"seed={sequence.seed} {mode}{label} v{index} "
                 f"{variant.describe(sequence.template)}")  # fmt: skip
        if index not in references:
            try:
                references[index] = reference_outcome(sequence, variant)
            except Exception as error:  # noqa: BLE001 - the reference's own bug: a finding
                failures.append(f"{where}: the reference raised {type(error).__name__}: {error}")
                continue
        try:
            got = run_variant(sequence, variant, mode, executor)
        except Exception as error:  # noqa: BLE001 - any crash is a finding
            failures.append(f"{where}: {type(error).__name__}: {error}")
            continue
        problem = compare(got, references[index], sequence.template.dtype)
        if problem:
            failures.append(f"{where}: {problem}")
    return failures


def check_twice(sequence: Sequence, mode: str, cache: Path) -> tuple[list[str], int, int]:
    """``check`` on a fresh executor over the disk cache ``cache``, then on a second one
    over the same cache (and a fresh ``@tc.function``) with the variants in reverse
    order: programs served by what the first left on disk. Returns the findings, the
    compiles and the generic hits (programs served by another program's code)."""
    first = CompiledExecutor(cache, background=False)
    references: dict[int, Outcome] = {}
    found = check(sequence, mode, first, references)
    second = CompiledExecutor(cache, background=False)
    backwards = reversed(range(len(sequence.variants)))
    found += check(sequence.fresh(), mode, second, references, backwards, " replay")
    compiles = first.stats.compiles + second.stats.compiles
    return found, compiles, first.stats.generic_hits + second.stats.generic_hits

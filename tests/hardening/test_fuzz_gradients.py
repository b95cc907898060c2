"""Fuzzing gradients: compiled == reference, and reference == finite differences.

Runs ``PROGRAMS`` seeded random programs (``fuzz_programs``; ``TIDU_FUZZ_SCALE``
multiplies the count, see ``fuzz_report``) and reports what it tried. Per program:

1. compiled vs reference gradients at the program's dtype;
2. the same with NaN/inf in the inputs: the IEEE results must agree (``equal_nan``) and
   no new kernel may be compiled (non-finite values never change which kernel runs);
   the program's gradients while pending too (``helpers.pending``: node by node, then
   as one whole-tape program, by numpy) against the reference;
3. reference gradients vs central differences, in double precision. A mismatch where
   two step sizes disagree with each other is a kink (``maximum``, ``where``, a branch
   cut) met by the perturbation, not a bug: it is counted as skipped.

Reproduce a failure with ``TIDU_FUZZ_SEED=<seed> TIDU_FUZZ_SCALE=0``.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from fuzz_programs import FuzzProgram, Step, make_program, wide_dtype
from fuzz_report import FuzzCounts, case_count, first_seed, timeout_seconds
from fuzz_table import TABLE_OPS
from helpers.numeric import central_difference_grad
from helpers.pending import never_compiling_executor

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


def gradients(
    program: FuzzProgram, executor: tc.BackwardExecutor, arrays: list[np.ndarray]
) -> list[np.ndarray]:
    inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
    with tc.use_executor(executor):  # recorded on it too: a joint forward's gradients
        loss = program.run(inputs)
    grads = tc.grad(loss, inputs, executor=executor)
    return [np.zeros_like(a) if g is None else g for a, g in zip(arrays, grads, strict=True)]


def mismatch(actual: list[np.ndarray], expected: list[np.ndarray], tol: float) -> str | None:
    """None when every gradient is close (relative to its largest magnitude), else why."""
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if a.shape != e.shape or a.dtype != e.dtype:
            return f"input {i}: {a.shape} {a.dtype}, expected {e.shape} {e.dtype}"
        finite = np.isfinite(e)
        if not np.array_equal(np.isfinite(a), finite):
            return f"input {i}: non-finite entries differ: {a} vs {e}"
        if not np.array_equal(np.isnan(a), np.isnan(e)):
            return f"input {i}: NaN entries differ"
        if not np.array_equal(a[~finite], e[~finite], equal_nan=True):
            return f"input {i}: infinite entries differ"
        scale = max(1.0, float(np.max(np.abs(e[finite]), initial=0.0)))
        error = float(np.max(np.abs(a[finite] - e[finite]), initial=0.0)) / scale
        if error > tol:
            return f"input {i}: error {error:.3g} > {tol:g} (relative to {scale:.3g})"
    return None


def tolerance(dtype: str) -> float:
    return 5e-3 if dtype in ("float32", "complex64") else 1e-8


def finite_differences(program: FuzzProgram, arrays: list[np.ndarray], step: float) -> list:
    def loss(values: list[np.ndarray]) -> float:
        with tc.no_grad():
            return float(program.run([tc.tensor(v) for v in values]).item())

    return [central_difference_grad(loss, arrays, i, step) for i in range(len(arrays))]


class Executors:
    """The fuzzers' compiled executors: one with whole-backward capture, for every
    ``CAPTURED_EVERY``-th program (all of them with ``TIDU_FUZZ_SCALE`` > 1: a captured
    program is one more compile per program), one node by node for the others."""

    CAPTURED_EVERY = 3

    def __init__(self) -> None:
        self.capturing = CompiledExecutor(cache_dir=False)
        self.per_node = CompiledExecutor(cache_dir=False, capture=False)

    def for_program(self, program: FuzzProgram) -> CompiledExecutor:
        every = 1 if case_count(1) > 1 else self.CAPTURED_EVERY
        return self.capturing if program.seed % every == 0 else self.per_node

    @property
    def fallbacks(self) -> int:
        return self.capturing.stats.fallbacks + self.per_node.stats.fallbacks


#: Every program's pending runs (it compiles nothing; its caches are bounded).
PENDING = never_compiling_executor(capture=True)


def check_program(program: FuzzProgram, executor: CompiledExecutor, counts: FuzzCounts) -> None:
    reference = tc.ReferenceExecutor()
    arrays = program.arrays()
    expected = gradients(program, reference, arrays)
    # Twice: node by node, then (with capture, a tape of several nodes) as its captured
    # whole-backward program (executors.capture), which the non-finite inputs below then
    # run too.
    path_names = ("per-node", "captured" if executor.capture is not None else "per-node")
    for path in path_names:
        got = gradients(program, executor, arrays)
        counts.inputs += 1
        problem = mismatch(got, expected, tolerance(program.dtype))
        if problem:
            counts.fail(f"compiled ({path}) vs reference: {problem} [{program.describe()}]")

    # While a worker would compile it: its programs by numpy, node by node, then (a tape
    # of several nodes) as one whole-tape program.
    for path in ("per-node", "whole tape"):
        got = gradients(program, PENDING, arrays)
        counts.inputs += 1
        problem = mismatch(got, expected, tolerance(program.dtype))
        if problem:
            counts.fail(f"pending ({path}) vs reference: {problem} [{program.describe()}]")

    # Non-finite inputs: IEEE results on both paths, and the very same kernels.
    poisoned = [a.copy() for a in arrays]
    rng = np.random.default_rng(program.seed)
    for a in poisoned:
        if a.size:
            a.flat[int(rng.integers(a.size))] = rng.choice([np.nan, np.inf, -np.inf])
    compiles = executor.stats.compiles
    with np.errstate(all="ignore"):
        expected_nf = gradients(program, reference, poisoned)
        got_nf = gradients(program, executor, poisoned)
    counts.inputs += 1
    if executor.stats.compiles != compiles:
        counts.fail(f"non-finite inputs compiled new kernels [{program.describe()}]")
    problem = mismatch(got_nf, expected_nf, tolerance(program.dtype))
    if problem:
        counts.fail(f"non-finite compiled vs reference: {problem} [{program.describe()}]")

    # Reference vs central differences, in double precision.
    wide = program.arrays(wide_dtype(program.dtype))
    reference_wide = gradients(program, reference, wide)
    numeric = finite_differences(program, wide, 1e-6)
    counts.inputs += 1
    numeric = [n.astype(r.dtype) if r.dtype.kind == "c" else n.real.astype(r.dtype)
               for n, r in zip(numeric, reference_wide, strict=True)]  # fmt: skip
    problem = mismatch(reference_wide, numeric, 1e-5)
    if problem:
        coarse = finite_differences(program, wide, 1e-4)
        coarse = [c.astype(r.dtype) if r.dtype.kind == "c" else c.real.astype(r.dtype)
                  for c, r in zip(coarse, reference_wide, strict=True)]  # fmt: skip
        if mismatch(numeric, coarse, 1e-4):
            counts.skipped += 1  # the loss is not smooth at this point: no verdict
        else:
            counts.fail(f"reference vs finite differences: {problem} [{program.describe()}]")


#: Programs per CI run (about 0.5-1 s each here; ``TIDU_FUZZ_SCALE`` multiplies them).
PROGRAMS = 16


@pytest.mark.timeout(timeout_seconds(240))
def test_fuzz_compiled_reference_and_finite_differences() -> None:
    counts = FuzzCounts("gradient fuzzer")
    executors = Executors()
    start, total = first_seed(), case_count(PROGRAMS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a compile fallback is a finding
        warnings.filterwarnings("ignore", category=RuntimeWarning, module="numpy")
        warnings.filterwarnings("ignore", "invalid value|overflow|divide by zero")
        for seed in range(start, start + total):
            program = make_program(seed)
            try:
                check_program(program, executors.for_program(program), counts)
            except Exception as error:  # noqa: BLE001 - any crash is a finding
                counts.fail(f"{type(error).__name__}: {error} [{program.describe()}]")
            counts.programs += 1
    counts.finish()
    print(counts.line(), f"compiles={executors.capturing.stats.compiles}"
          f"+{executors.per_node.stats.compiles}")  # fmt: skip
    assert counts.programs == total and counts.inputs == 6 * total
    assert not counts.failures, "\n".join(counts.failures[:10])
    assert counts.skipped <= max(2, counts.programs // 5), "too many non-smooth programs"


#: The op-table fuzzer runs in this many tests (every ``SHARDS``-th op each), so that
#: pytest-xdist spreads it over its workers instead of one worker running all of it.
SHARDS = 3


@pytest.mark.timeout(timeout_seconds(240))
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_op_of_the_table_is_fuzzed(shard: int) -> None:
    """Each parameterless elementwise op of the op table in one seeded program, as its
    last step and part of the loss: a new table op is fuzzed with no edit here."""
    counts = FuzzCounts("op-table fuzzer")
    executors = Executors()
    table = sorted(TABLE_OPS)
    for number, name in list(enumerate(table))[shard::SHARDS]:
        base = make_program(10_000 + number, steps=2)
        program = dataclasses.replace(
            base,
            steps=[*base.steps, Step("table", (len(base.steps), 1), (name,))],
            losses=(*base.losses, -1),  # the last value is in the loss
        )
        try:
            check_program(program, executors.for_program(program), counts)
        except Exception as error:  # noqa: BLE001 - any crash is a finding
            counts.fail(f"{name}: {type(error).__name__}: {error} [{program.describe()}]")
        counts.programs += 1
    counts.finish()
    print(counts.line(), f"ops={counts.programs} of {len(table)}")
    assert counts.programs == len(table[shard::SHARDS]) and len(table) >= 40
    assert not counts.failures, "\n".join(counts.failures[:10])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_each_dtype_gets_programs(dtype: str) -> None:
    """The generator really covers every dtype, sincos, composites and matmul."""
    programs = [make_program(seed, dtype=dtype) for seed in range(40)]
    assert all(p.dtype == dtype for p in programs)
    kinds = {s.kind for p in programs for s in p.steps}
    assert {"unary", "binary", "table", "constant", "reduce", "matmul", "shape", "sincos",
            "index", "join", "einsum"} <= kinds
    assert any(p.composite for p in programs)
    assert any(p.whole for p in programs) == (dtype in ("float32", "float64"))
    counts = FuzzCounts(f"smoke {dtype}")
    check_program(programs[1], CompiledExecutor(cache_dir=False), counts)
    assert not counts.failures, counts.failures

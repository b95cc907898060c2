"""Fuzzing loops: random scan, while-loop and cond bodies from the op table.

Each seeded case builds a body of three op-table steps (``fuzz_table.table_step``: any
parameterless elementwise op of the table with a derivative, ``SMOOTH_OPS``, its inputs
mapped into its domain; a piecewise-constant op met at a step, as ``x // x`` is in a
loop's first iteration, turns the compiled math's last-bit differences into different
answers, which the op table checks on its own) and runs
it as one of: a scan (forward or reverse) and its gradient, a while loop counting a
random number of iterations (none included), or a scan whose body holds a cond. The
``CompiledExecutor`` (blocking compiles) must agree with the ``ReferenceExecutor``,
with no fallback; how many loops ran as one kernel and how many on the driver is
reported (a body step that is a library call keeps its driver, as documented).
``TIDU_FUZZ_SCALE`` multiplies the count; ``TIDU_FUZZ_SEED=<seed> TIDU_FUZZ_SCALE=0``
reruns one case.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_report import FuzzCounts, case_count, first_seed, timeout_seconds
from fuzz_table import SMOOTH_OPS, table_step

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor
from tidu_compile.executors import native_loops

#: Cases per CI run (~0.5 s each here).
CASES = 9

KINDS = ("scan", "while", "cond")


def _case(seed: int) -> tuple[str, Callable[[], list[np.ndarray]]]:
    """The case of ``seed``: its description and what it computes."""
    rng = np.random.default_rng(seed)
    names = [str(n) for n in rng.choice(SMOOTH_OPS, 3)]
    kind = KINDS[seed % len(KINDS)]
    reverse, trips = bool(rng.integers(0, 2)), int(rng.integers(0, 6))
    weights, rows = rng.standard_normal(4) * 0.5, rng.standard_normal((5, 4))

    def body(h: tc.Tensor, g: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
        a = table_step(names[0], h + x, x)  # x in every body, whatever the arity
        b = table_step(names[1], g, a)
        return tc.tanh(a * 0.5 + table_step(names[2], b, h) * 0.25), tc.tanh(b)

    def run() -> list[np.ndarray]:
        w, xs = tc.tensor(weights, requires_grad=True), tc.tensor(rows, requires_grad=True)
        if kind == "while":
            def step(c: tuple[tc.Tensor, ...]) -> tuple[tc.Tensor, ...]:
                h, g, n = c
                return (*body(h, g, w), n + 1)

            init = (tc.tensor(weights), tc.tensor(rows[0]), tc.tensor(np.int64(0)))
            h, g, n = tc.while_loop(lambda c: c[2] < trips, step, init)
            return [v.detach().numpy() for v in (h, g, n)]

        def row(c: tuple[tc.Tensor, tc.Tensor], x: tc.Tensor) -> tuple[Any, tc.Tensor]:
            h, g = c
            if kind == "cond":
                h = tc.cond(tc.sum(x) > 0.0, lambda v: v * w, lambda v: tc.sin(v), h)
            h2, g2 = body(h, g, x + w)
            return (h2, g2), tc.sum(h2 * g2)

        (h, g), ys = tc.scan(row, (tc.zeros(4), tc.ones(4)), xs, reverse=reverse)
        grads = tc.grad(tc.sum(ys) + tc.sum(h * g), [w, xs])
        return [*(v.detach().numpy() for v in (h, g, ys)), *grads]

    return f"seed {seed}: {kind} of {', '.join(names)} (reverse={reverse}, trips={trips})", run


@pytest.mark.timeout(timeout_seconds(240))
def test_random_loop_bodies_agree_with_the_reference() -> None:
    counts = FuzzCounts("loop fuzzer")
    start, total = first_seed(), case_count(CASES)
    kernels = drivers = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a compile fallback is a finding
        warnings.filterwarnings("ignore", category=RuntimeWarning, module="numpy")
        for seed in range(start, start + total):
            described, run = _case(seed)
            compiled = CompiledExecutor(cache_dir=False, background=False)
            try:
                with tc.use_executor(compiled):
                    got = run()
                with tc.use_executor(ReferenceExecutor()):
                    want = run()
                assert compiled.stats.fallbacks == 0, compiled.stats.errors
                for g, w in zip(got, want, strict=True):
                    np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
            except Exception as error:  # noqa: BLE001 - any crash is a finding
                counts.fail(f"{described}: {type(error).__name__}: {error}")
            runners = native_loops._RUNNERS.get(compiled, {}).values()
            kernels += sum(isinstance(r, native_loops._LoopKernelRunner) for r in runners)
            drivers += compiled.stats.loop_drivers
            counts.programs += 1
    counts.finish()
    print(counts.line(), f"loop kernels={kernels} drivers={drivers}")
    assert counts.programs == total
    assert not counts.failures, "\n".join(counts.failures[:10])
    assert kernels > drivers, "most random bodies should run as one loop kernel"

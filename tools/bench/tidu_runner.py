"""The tidu side of the benchmark: record once, time ``tc.grad``, measure compile times.

* ``run_tidu``: records the forward once, then with a fresh ``CompiledExecutor`` on an
  empty cache directory times the first ``tc.grad`` call (cold: compile + run) and the
  warm calls (the backward); cold compile time = first call - warm median. Then the full
  step: recording the forward (for ``@tc.function``, the traced graph run as one
  compiled program by the same executor) and ``tc.grad``, each time anew.
* ``run_warm_disk``: a fresh subprocess (``python -m tidu_compile.tools.bench.tidu_runner
  SPEC``) records the same forward and times the first call of a new executor on the
  same cache directory (in-memory caches empty, artifacts on disk); warm-from-disk time =
  first call - warm median.

Both processes first compile a tiny unrelated graph with a memory-only executor
(``process_warmup``) so that one-time process costs (LLVM initialization, xDSL contexts)
are reported once, separately, instead of landing on whichever workload runs first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tidu_compile.tools.bench.row import Workload
from tidu_compile.tools.bench.timing import Policy, measure
from tidu_compile.tools.bench.workloads import find_workload

__all__ = ["main", "process_warmup", "record", "run_tidu", "run_warm_disk"]

#: Warm calls timed by the warm-from-disk child (it only needs a baseline to subtract).
WARM_DISK_POLICY = Policy(min_time=0.2, min_runs=3, max_runs=20)


def record(workload: Workload, arrays: Sequence[np.ndarray]) -> tuple[Any, list[Any], list[Any]]:
    """Record the workload's forward once: ``(loss, differentiated inputs, all inputs)``."""
    import tidu_compile as tc

    tensors = [tc.tensor(a, requires_grad=i in workload.grad_inputs)
               for i, a in enumerate(arrays)]  # fmt: skip
    loss = workload.tidu_loss(*tensors)
    return loss, [tensors[i] for i in workload.grad_inputs], tensors


def process_warmup() -> float:
    """Compile and run a tiny graph on a memory-only executor; the seconds it took."""
    import tidu_compile as tc
    from tidu_compile.executors.compiled import CompiledExecutor

    start = time.perf_counter()
    x = tc.tensor(np.linspace(-1.0, 1.0, 3), requires_grad=True)
    tc.grad(tc.sum(tc.tanh(x) * x), [x], executor=CompiledExecutor(cache_dir=False))
    return time.perf_counter() - start


def _stats(executor: Any) -> dict[str, Any]:
    stats = executor.stats
    return {
        "compiles": stats.compiles,
        "memory_hits": stats.memory_hits,
        "disk_hits": stats.disk_hits,
        "fallbacks": stats.fallbacks,
        "compile_seconds": stats.compile_seconds,
        "disk_seconds": getattr(stats, "disk_seconds", 0.0),
        "stage_seconds": dict(getattr(stats, "stage_seconds", {}) or {}),
        "errors": list(getattr(stats, "errors", []) or [])[:5],
    }


def run_tidu(
    workload: Workload, arrays: Sequence[np.ndarray], policy: Policy, cache_dir: Path
) -> dict[str, Any]:
    """Cold first call and warm timing of ``tc.grad`` with a new executor on ``cache_dir``.

    Returns ``timing`` (a ``Timing`` of the backward), ``step_timing`` (forward and
    backward), ``grads`` (numpy arrays), ``first_call_seconds``, ``cold_seconds`` and the
    executor's ``stats`` (a dict).
    """
    import tidu_compile as tc
    from tidu_compile.executors.compiled import CompiledExecutor

    loss, wrt, tensors = record(workload, arrays)
    executor = CompiledExecutor(cache_dir=cache_dir)

    def backward() -> list[Any]:
        return tc.grad(loss, wrt, executor=executor)

    def step() -> list[Any]:
        with tc.use_executor(executor):  # a @tc.function forward runs on it too
            return tc.grad(workload.tidu_loss(*tensors), wrt)

    start = time.perf_counter()
    backward()
    first = time.perf_counter() - start
    timing = measure(backward, policy)
    grads = backward()
    return {
        "timing": timing,
        "step_timing": measure(step, policy),
        "grads": grads,
        "first_call_seconds": first,
        "cold_seconds": max(first - timing.median, 0.0),
        "stats": _stats(executor),
    }


def run_warm_disk(workload: Workload, seed: int, cache_dir: Path) -> dict[str, Any]:
    """Warm-from-disk compile time of ``workload`` measured in a fresh subprocess.

    Returns the child's JSON (``warm_disk_seconds``, ``first_call_seconds``,
    ``warm_median``, ``stats``, ``process_warmup_seconds``) or ``{"error": ...}``.
    """
    spec = {"workload": workload.key, "seed": seed, "cache_dir": str(cache_dir)}
    command = [sys.executable, "-m", "tidu_compile.tools.bench.tidu_runner", json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = [line for line in done.stderr.splitlines() if line.strip()][-3:]
        return {"error": f"exit status {done.returncode}: " + " | ".join(tail)}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Child entry point of ``run_warm_disk``: prints one JSON line."""
    import tidu_compile as tc
    from tidu_compile.executors.compiled import CompiledExecutor

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m tidu_compile.tools.bench.tidu_runner SPEC_JSON", file=sys.stderr)
        return 2
    spec = json.loads(args[0])
    warmup = process_warmup()
    workload = find_workload(spec["workload"])
    loss, wrt, _ = record(workload, workload.make_inputs(int(spec["seed"])))
    executor = CompiledExecutor(cache_dir=Path(spec["cache_dir"]))

    def backward() -> list[Any]:
        return tc.grad(loss, wrt, executor=executor)

    start = time.perf_counter()
    backward()
    first = time.perf_counter() - start
    timing = measure(backward, WARM_DISK_POLICY)
    print(json.dumps({
        "warm_disk_seconds": max(first - timing.median, 0.0),
        "first_call_seconds": first,
        "warm_median": timing.median,
        "process_warmup_seconds": warmup,
        "stats": _stats(executor),
    }), flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Memory: a long training loop keeps RSS flat, and the in-memory caches keep their bounds.

The loop trains a small MLP with per-op tape nodes for 3,000 iterations (about 5 s;
``TIDU_HARDENING_LONG=1``: 50,000). After a warm-up, resident memory may not grow by
more than a few MiB, and no cache, index or engine may grow at all.
"""

from __future__ import annotations

import gc
import os
import resource
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzz_programs import make_program

import tidu_compile as tc
from tidu_compile.backend.engine import get_engine
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend.tensor import LEAVES, recorded_graph_for

LONG = bool(os.environ.get("TIDU_HARDENING_LONG"))
ITERATIONS = 50_000 if LONG else 2_000
WARMUP = 300
PAGE = resource.getpagesize()


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE


def sizes(executor: CompiledExecutor) -> dict[str, int]:
    return {
        "plans": len(executor.memory),
        "plan bytes": executor.memory.total_bytes,
        "linearizations": len(executor._linearizations),  # noqa: SLF001
        "by linear": len(executor._entries_by_linear),  # noqa: SLF001
        "engine symbols": len(get_engine()._defined),  # noqa: SLF001
        "one-op graphs": recorded_graph_for.cache_info().currsize,
        "leaves": len(LEAVES),
        "errors": len(executor.stats.errors),
    }


def train(executor: CompiledExecutor, iterations: int, samples: list[int]) -> float:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 1))
    params = [rng.standard_normal((4, 8)) * 0.5, np.zeros(8), rng.standard_normal((8, 1)) * 0.5]
    loss_value = np.inf
    for iteration in range(iterations):
        w1, b1, w2 = (tc.tensor(p, requires_grad=True) for p in params)
        hidden = tc.tanh(tc.tensor(x) @ w1 + b1)
        loss = tc.mean((hidden @ w2 - y) ** 2)
        grads = tc.grad(loss, [w1, b1, w2], executor=executor)
        params = [p - 0.05 * g for p, g in zip(params, grads, strict=True)]
        loss_value = float(loss.item())
        if iteration % 100 == 99:
            gc.collect()
            samples.append(rss_bytes())
    return loss_value


@pytest.mark.timeout(1500 if LONG else 300)  # ~10 s alone, ~40 s on a loaded machine
def test_training_loop_keeps_memory_flat() -> None:
    executor = CompiledExecutor(cache_dir=False)
    samples: list[int] = []
    first_loss = train(executor, 1, [])
    train(executor, WARMUP, samples)
    gc.collect()
    warm_sizes, warm_rss = sizes(executor), rss_bytes()
    compiles = executor.stats.compiles
    samples.clear()
    last_loss = train(executor, ITERATIONS, samples)
    gc.collect()
    end_sizes, end_rss = sizes(executor), rss_bytes()
    growth = end_rss - warm_rss
    half = samples[len(samples) // 2]
    print(f"RSS after warm-up {warm_rss / 2**20:.1f} MiB, after {ITERATIONS} iterations "
          f"{end_rss / 2**20:.1f} MiB (growth {growth / 2**10:.0f} KiB; second half "
          f"{(end_rss - half) / 2**10:.0f} KiB); caches {end_sizes}")  # fmt: skip
    assert last_loss < first_loss  # it trained
    assert executor.stats.compiles == compiles  # nothing new compiled after the warm-up
    assert end_sizes == warm_sizes, (warm_sizes, end_sizes)
    assert growth < 4 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB"
    assert end_rss - half < 2 * 2**20, "RSS still growing in the second half"


def _run_programs(executor: CompiledExecutor, seeds: range, check: Any = None) -> None:
    for seed in seeds:
        program = make_program(seed, dtype="float64")
        arrays = program.arrays()
        inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
        got = tc.grad(program.run(inputs), inputs, executor=executor)
        inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
        want = tc.grad(program.run(inputs), inputs, executor=tc.ReferenceExecutor())
        for g, w in zip(got, want, strict=True):
            assert (g is None) == (w is None)
            if g is not None:
                np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)
        if check is not None:
            check()


def test_entry_bound_is_respected() -> None:
    executor = CompiledExecutor(cache_dir=False, memory_entries=5)

    def check() -> None:
        assert len(executor.memory) <= 5 and len(executor._linearizations) <= 5  # noqa: SLF001
        assert len(executor._entries_by_linear) <= 5  # noqa: SLF001

    _run_programs(executor, range(12), check)
    assert executor.stats.compiles > 5


def test_byte_bound_is_respected_and_evicted_plans_come_back_from_disk(tmp_path: Path) -> None:
    # The per-node plan cache (capture=False: a second run would add captured programs,
    # which executors.capture bounds by count, not by these bytes)
    probe = CompiledExecutor(cache_dir=False, capture=False)
    _run_programs(probe, range(3))
    typical = probe.memory.total_bytes // max(1, len(probe.memory))
    bound = 3 * typical
    executor = CompiledExecutor(tmp_path, memory_bytes=bound, capture=False)
    assert executor.memory.max_bytes == bound

    def check() -> None:
        assert executor.memory.total_bytes <= bound
        assert len(executor.memory) <= 6

    _run_programs(executor, range(3), check)
    _run_programs(executor, range(3), check)  # again: evicted plans are disk hits now
    assert executor.stats.disk_hits > 0
    assert executor.stats.compiles == probe.stats.compiles  # never compiled twice


def test_memory_cache_validates_its_bounds() -> None:
    from tidu_compile.compiler.cache import MemoryCache

    for bad in (0, -1, 1.5, "3"):
        with pytest.raises(ValueError, match="max_entries"):
            MemoryCache(bad)  # type: ignore[arg-type]
    for bad_bytes in (-1, 2.0):
        with pytest.raises(ValueError, match="max_bytes"):
            MemoryCache(4, max_bytes=bad_bytes)  # type: ignore[arg-type]
    evicted: list[str] = []
    cache = MemoryCache(10, lambda k, v: evicted.append(k), max_bytes=10, size_of=len)
    cache.put("a", "xxxx")
    cache.put("b", "xxxx")
    cache.put("c", "xxxx")  # 12 bytes > 10: "a" goes
    assert evicted == ["a"] and cache.total_bytes == 8 and cache.get("a") is None
    cache.put("big", "x" * 11)  # larger than the bound on its own: not kept
    assert cache.get("big") is None and cache.total_bytes <= 10
    cache.discard("c")
    assert "c" in evicted and cache.get("c") is None
    with pytest.raises(TypeError, match="cache_dir"):
        CompiledExecutor(cache_dir=3)  # type: ignore[arg-type]

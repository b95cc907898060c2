"""Eight threads, different backward passes, one ``CompiledExecutor``.

Every thread must get exactly the gradients a single thread gets (bit for bit: the same
kernels run), and no program may be compiled twice (single flight), over a few thousand
iterations. The interpreter's switch interval is shortened so threads interleave often.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzz_programs import make_program

import tidu_compile as tc
from tidu_compile.compiler import pipeline
from tidu_compile.executors.compiled import CompiledExecutor

THREADS = 8
ITERATIONS = 320  # per thread: 2,560 backward passes in all


@tc.function
def composite(x: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
    return tc.sum(tc.tanh(x @ w) * tc.exp(-(x @ w)))


def _workloads() -> list[tuple[str, Callable[[list[tc.Tensor]], tc.Tensor], list[np.ndarray]]]:
    rng = np.random.default_rng(0)
    work: list[tuple[str, Callable[[list[tc.Tensor]], tc.Tensor], list[np.ndarray]]] = []
    for seed in (3, 11, 17, 29, 42):  # fuzz programs of several dtypes (float64, complex...)
        program = make_program(seed)
        work.append((f"fuzz{seed}", program.run, program.arrays()))
    work.append(("composite", lambda t: composite(*t),
                 [rng.standard_normal((4, 3)), rng.standard_normal((3, 5))]))  # fmt: skip
    work.append(("mlp", lambda t: tc.sum((tc.tanh(t[0] @ t[1]) @ t[2]) ** 2),
                 [rng.standard_normal((6, 4)), rng.standard_normal((4, 8)),
                  rng.standard_normal((8, 2))]))  # fmt: skip
    work.append(("float32", lambda t: tc.mean(tc.sin(t[0]) * tc.cos(t[1]) + t[0] * t[1]),
                 [rng.standard_normal((5, 7)).astype(np.float32),
                  rng.standard_normal((7,)).astype(np.float32)]))  # fmt: skip
    return work


WORK = _workloads()


def rtol(array: np.ndarray) -> float:
    return 2e-4 if array.dtype in (np.float32, np.complex64) else 1e-9


def gradients(executor: tc.BackwardExecutor, index: int) -> list[np.ndarray]:
    _, function, arrays = WORK[index]
    inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
    return [g for g in tc.grad(function(inputs), inputs, executor=executor) if g is not None]


@pytest.fixture
def fast_switching() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@pytest.mark.timeout(300)  # ~10 s alone, ~40 s on a loaded machine
def test_eight_threads_match_one_thread_and_compile_each_program_once(
    fast_switching: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Node by node (capture=False): which backward of a structure runs captured depends
    # on how the threads interleave, and bit-for-bit equality is per path (the captured
    # program fuses across nodes). Shared captured programs: test_executor_cache.
    single = CompiledExecutor(cache_dir=False, capture=False)
    expected = [gradients(single, i) for i in range(len(WORK))]
    reference = [gradients(tc.ReferenceExecutor(), i) for i in range(len(WORK))]
    for got, ref in zip(expected, reference, strict=True):
        for g, r in zip(got, ref, strict=True):
            np.testing.assert_allclose(g, r, rtol=rtol(g))

    compiled_digests: Counter[str] = Counter()
    real = pipeline.compile_program

    def counting(program: Any, digest: str, *rest: Any) -> Any:
        compiled_digests[digest] += 1
        return real(program, digest, *rest)

    monkeypatch.setattr(pipeline, "compile_program", counting)
    shared = CompiledExecutor(cache_dir=False, capture=False)
    failures: list[str] = []
    done = Counter[int]()
    start = threading.Barrier(THREADS)

    def worker(thread: int) -> None:
        start.wait()
        for iteration in range(ITERATIONS):
            index = (thread + iteration) % len(WORK)  # every thread walks every workload
            try:
                got = gradients(shared, index)
            except Exception as error:  # noqa: BLE001
                failures.append(f"thread {thread}: {type(error).__name__}: {error}")
                return
            if len(got) != len(expected[index]) or not all(
                np.array_equal(g, e) for g, e in zip(got, expected[index], strict=True)
            ):
                failures.append(f"thread {thread} iteration {iteration}: {WORK[index][0]} differs")
            done[thread] += 1

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not failures, failures[:5]
    assert sum(done.values()) == THREADS * ITERATIONS
    duplicates = {d: n for d, n in compiled_digests.items() if n > 1}
    assert not duplicates, f"compiled more than once: {duplicates}"
    lowered = shared.stats.compiles + shared.stats.generic_hits  # each program once
    assert lowered == single.stats.compiles + single.stats.generic_hits == len(compiled_digests)
    assert shared.stats.compiles == single.stats.compiles  # and each kernel text once
    assert shared.stats.errors == [] and shared.stats.fallbacks == single.stats.fallbacks == 0


def test_threads_with_a_tiny_cache_still_agree(fast_switching: None, tmp_path: Path) -> None:
    """Constant eviction under contention (evicted plans come back from disk): answers
    stay right and the bounds hold."""
    shared = CompiledExecutor(tmp_path, memory_entries=3)
    expected = [gradients(tc.ReferenceExecutor(), i) for i in range(len(WORK))]
    failures: list[str] = []

    def worker(thread: int) -> None:
        for iteration in range(12):
            index = (thread * 3 + iteration) % len(WORK)
            try:
                got = gradients(shared, index)
                for g, e in zip(got, expected[index], strict=True):
                    np.testing.assert_allclose(g, e, rtol=rtol(g))
            except Exception as error:  # noqa: BLE001
                failures.append(f"thread {thread}: {type(error).__name__}: {error}")
            # Read without the cache's lock, a put may be caught between its insert and
            # its eviction: at most one extra entry per thread is transient, not growth.
            if len(shared.memory) > 3 + 4 or len(shared._linearizations) > 3 + 4:  # noqa: SLF001
                failures.append("a cache grew past its bound")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not failures, failures[:5]
    assert len(shared.memory) <= 3 and len(shared._linearizations) <= 3  # noqa: SLF001

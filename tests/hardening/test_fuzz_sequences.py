"""The sequence fuzzer: programs of one structure through one executor, never a stale kernel.

Each case is a ``fuzz_sequences.Sequence``: a random program and 3-6 variants of it
that keep its structure and change extents (a batch size, equal extents, an extent 1)
or static parameters (slice bounds, pad widths, offsets, indices, axes). Per sequence:

1. ONE ``CompiledExecutor(cache_dir, background=False)`` runs every variant in order,
   per-op or as one ``@tc.function`` (``sequence_check``); every output and gradient
   must match the ``ReferenceExecutor``'s;
2. a second executor on the same disk cache (and a fresh ``@tc.function``) runs them
   again in reverse order: programs whose artifacts, or their kernels' object code,
   come from disk;
3. across processes (``sequence_worker``): a first interpreter fills a disk cache,
   two more load it and run the same sequences, in order and in reverse order.

Fresh kernel outputs are filled with NaN (``buffers.DEBUG_FILL``, the
``TIDU_COMPILE_DEBUG_FILL=nan`` mode), so an element a kernel never writes cannot pass
for a number. Counts per CI run: ``SEQUENCES`` per mode (``TIDU_FUZZ_SCALE`` multiplies
them, ``TIDU_FUZZ_SEED`` moves the seeds: see ``fuzz_report``). Per-op sequences take the
even seeds from the first, function ones the odd seeds: reproduce a failure of seed
``s`` with ``TIDU_FUZZ_SEED=s TIDU_FUZZ_SCALE=0`` (per-op) or ``TIDU_FUZZ_SEED=s-1``
(function), which the chunk 0 tests run, and shrink it with
``python tests/hardening/fuzz_sequence_shrink.py s <mode>``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_report import FuzzCounts, case_count, first_seed, timeout_seconds
from fuzz_sequence_steps import KINDS
from fuzz_sequences import make_sequence
from sequence_check import MODES, check, check_twice, reference_outcome

from tidu_compile.compiler import buffers
from tidu_compile.executors.compiled import CompiledExecutor

#: Sequences per mode per CI run (90 in all, the fewest whose seeds cover every kind of
#: step and change; ``TIDU_FUZZ_SCALE=10`` runs 900;
#: a function-mode sequence costs about
#: twice as much: it compiles a forward and a backward program per new trace), and the
#: tests each mode's are shared among (for pytest-xdist).
SEQUENCES = {"per-op": 60, "function": 30}
CHUNKS = 5
#: Sequences per mode of the cross-process test.
PROCESS_SEQUENCES = 4

_WORKER = Path(__file__).resolve().parent / "sequence_worker.py"


def _seeds(mode: str, chunk: int, total: int) -> list[int]:
    """Chunk ``chunk``'s seeds: per-op the even offsets from the first seed, function
    the odd ones, dealt round-robin among the chunks."""
    offset = MODES.index(mode)
    return [first_seed() + 2 * i + offset for i in range(chunk, total, CHUNKS)]


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Plans bound during the test fill fresh outputs with NaN."""
    monkeypatch.setattr(buffers, "DEBUG_FILL", True)
    yield




def _chunks() -> list[Any]:
    return [pytest.param(mode, chunk, id=f"{mode}-{chunk}")
            for mode in MODES for chunk in range(CHUNKS)]  # fmt: skip


@pytest.mark.timeout(timeout_seconds(300))
@pytest.mark.parametrize(("mode", "chunk"), _chunks())
def test_sequences_match_the_reference(
    mode: str, chunk: int, tmp_path: Path, poisoned: None
) -> None:
    counts = FuzzCounts(f"sequence fuzzer ({mode}, chunk {chunk})")
    seeds = _seeds(mode, chunk, case_count(SEQUENCES[mode]))
    compiles = served = 0  # served: programs run on another program's code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for seed in seeds:
            sequence = make_sequence(seed)
            found, compiled, reused = check_twice(sequence, mode, tmp_path / f"cache-{seed}")
            compiles, served = compiles + compiled, served + reused
            counts.programs += 1
            counts.inputs += 2 * len(sequence.variants)
            for failure in found:
                counts.fail(failure)
    counts.finish()
    print(counts.line(), f"compiles={compiles} generic hits={served}")
    assert counts.programs == len(seeds)
    assert not counts.failures, "\n".join(counts.failures[:10])


@pytest.mark.timeout(timeout_seconds(300))
def test_sequences_across_processes(tmp_path: Path) -> None:
    """A first process fills a disk cache; two fresh interpreters load it and run the
    same sequences (in order, then in reverse order), with NaN-filled outputs."""
    count = case_count(PROCESS_SEQUENCES)
    items = [f"{mode}:{first_seed() + 1000 + 2 * i + MODES.index(mode)}"
             for mode in MODES for i in range(count)]  # fmt: skip
    cache = tmp_path / "cache"
    env = dict(os.environ, TIDU_COMPILE_DEBUG_FILL="nan")
    counts = FuzzCounts("sequence fuzzer (across processes)")
    reports = []
    for order in ("forward", "forward", "reverse"):
        run = subprocess.run(
            [sys.executable, str(_WORKER), str(cache), order, *items],
            capture_output=True, text=True, env=env, timeout=timeout_seconds(240),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert report["debug_fill"] is True and report["sequences"] == len(items)
        reports.append(report)
        counts.programs += report["sequences"]
        for failure in report["failures"]:
            counts.fail(f"{order} process {len(reports)}: {failure}")
    counts.finish()
    print(counts.line(), [r["stats"] for r in reports])
    assert reports[0]["stats"]["compiles"] > 0
    assert reports[1]["stats"]["disk_hits"] > 0 and reports[2]["stats"]["disk_hits"] > 0
    assert not counts.failures, "\n".join(counts.failures[:10])


def test_the_generator_covers_the_op_table_and_the_changes() -> None:
    """Every kind of step and of change appears in a CI run's sequences (seeds 0-59,
    whatever ``TIDU_FUZZ_SEED`` says: a seed chosen to reproduce one failure need not
    cover them), and variants really differ from the ones before them."""
    sequences = [make_sequence(i) for i in range(60)]  # all run in CI
    kinds = {s.kind for q in sequences for s in q.template.steps}
    assert kinds == set(KINDS), set(KINDS) - kinds
    changes = {v.change for q in sequences for v in q.variants}
    assert changes == {"first", "batch", "equal", "one", "shapes", "params", "nudge", "both",
                       "revisit"}  # fmt: skip
    assert all(3 <= len(q.variants) <= 6 for q in sequences)
    pairs = [(a, b) for q in sequences for a, b in zip(q.variants, q.variants[1:], strict=False)]
    moved = sum(a.params != b.params or a.dims != b.dims for a, b in pairs)
    assert moved >= 0.8 * len(pairs), (moved, len(pairs))


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_for_another_variant_is_a_finding(mode: str) -> None:
    """The checker fails a variant given another variant's answers (what a stale
    kernel or trace computes), and passes it given its own."""
    sequence = make_sequence(first_seed() + 7)
    executor = CompiledExecutor(False, background=False)
    stale = {1: reference_outcome(sequence, sequence.variants[0])}
    assert check(sequence, mode, executor, stale, order=[1])
    assert not check(sequence, mode, executor, {}, order=[1])

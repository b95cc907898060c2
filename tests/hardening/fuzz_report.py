"""How many cases the fuzzers run, and what they report; ``conftest.py`` prints the counts.

Each fuzzer runs a fixed number of seeded cases per run (its CI count), so what a run
covers is the same on a fast and a slow machine. ``TIDU_FUZZ_SCALE=k`` multiplies every
count (``10`` fuzzes ten times as long; the fuzzers' timeouts grow with it; ``0`` runs
one case each), ``TIDU_FUZZ_SEED`` sets the first seed (default 0): a failure names its
seed, and ``TIDU_FUZZ_SEED=<seed> TIDU_FUZZ_SCALE=0`` runs just that case.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

SCALE_ENV = "TIDU_FUZZ_SCALE"
SEED_ENV = "TIDU_FUZZ_SEED"


def scale() -> float:
    text = os.environ.get(SCALE_ENV)
    value = float(text) if text else 1.0
    if value < 0:
        raise ValueError(f"{SCALE_ENV}: expected a number >= 0, got {text!r}")
    return value


def case_count(ci_count: int) -> int:
    """The number of cases to run: ``ci_count`` times the scale, at least one."""
    return max(1, round(ci_count * scale()))


def timeout_seconds(ci_seconds: float) -> float:
    """A fuzzer's timeout: generous at scale 1, growing with a larger scale."""
    return ci_seconds * max(1.0, scale())


def first_seed() -> int:
    return int(os.environ.get(SEED_ENV, "0"))


@dataclass
class FuzzCounts:
    """What one fuzzer tried and what failed (failures carry a reproduction hint)."""

    name: str
    programs: int = 0
    inputs: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    def fail(self, message: str) -> None:
        self.failures.append(message)

    def finish(self) -> None:
        self.seconds = time.perf_counter() - self.started
        REPORTS[self.name] = self

    def line(self) -> str:
        return (f"{self.name}: programs tried={self.programs} inputs tried={self.inputs} "
                f"skipped={self.skipped} failures={len(self.failures)} "
                f"in {self.seconds:.1f}s")  # fmt: skip


#: Every fuzzer's counts of this session, by name.
REPORTS: dict[str, FuzzCounts] = {}

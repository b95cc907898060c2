"""The adaptive timer: repeat a call until enough time or runs are collected, keep the median.

A measurement is at least ``min_runs`` runs, goes on until the runs add up to
``min_time`` seconds, and stops at ``max_runs`` whatever the time. A fixed count
(``--repeat N``) sets all three. ``warmup`` calls run first and are not counted; the
garbage collector is off while the timed calls run (as in ``timeit``).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Policy", "Timing", "interleaved", "measure", "summarize"]


@dataclass(frozen=True)
class Timing:
    """Summary of one measurement, in seconds."""

    median: float
    minimum: float
    maximum: float
    runs: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: ``median``, ``min``, ``max`` (seconds) and ``runs``."""
        return {"median": self.median, "min": self.minimum, "max": self.maximum,
                "runs": self.runs}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Timing:
        """The inverse of ``to_json``."""
        return cls(float(data["median"]), float(data["min"]), float(data["max"]),
                   int(data["runs"]))  # fmt: skip


@dataclass(frozen=True)
class Policy:
    """When a measurement stops (see the module docstring)."""

    min_time: float = 0.5
    min_runs: int = 5
    max_runs: int = 50
    warmup: int = 1

    def __post_init__(self) -> None:
        if self.min_runs < 1:
            raise ValueError(f"min_runs: must be >= 1, got {self.min_runs}")
        if self.max_runs < self.min_runs:
            raise ValueError(f"max_runs: must be >= min_runs, got {self.max_runs}")
        if self.min_time < 0 or self.warmup < 0:
            raise ValueError("min_time and warmup: must be >= 0")

    @classmethod
    def default(cls) -> Policy:
        """~0.5 s or at least 5 runs, at most 50."""
        return cls()

    @classmethod
    def quick(cls) -> Policy:
        """For tests and smoke runs: ~0.05 s or at least 3 runs, at most 10."""
        return cls(min_time=0.05, min_runs=3, max_runs=10)

    @classmethod
    def fixed(cls, runs: int) -> Policy:
        """Exactly ``runs`` timed runs."""
        return cls(min_time=0.0, min_runs=runs, max_runs=runs)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the fields."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Policy:
        """The inverse of ``to_json``."""
        return cls(**data)


def summarize(samples: Sequence[float]) -> Timing:
    """Median, minimum and maximum of ``samples`` (seconds); ``ValueError`` if empty."""
    if not samples:
        raise ValueError("samples: need at least one time")
    return Timing(statistics.median(samples), min(samples), max(samples), len(samples))


def measure(
    call: Callable[[], object],
    policy: Policy | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Time ``call()`` under ``policy`` (default: ``Policy.default()``)."""
    policy = policy or Policy.default()
    for _ in range(policy.warmup):
        call()
    samples: list[float] = []
    total = 0.0
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        while len(samples) < policy.max_runs:
            start = clock()
            call()
            elapsed = clock() - start
            samples.append(elapsed)
            total += elapsed
            if len(samples) >= policy.min_runs and total >= policy.min_time:
                break
    finally:
        if enabled:
            gc.enable()
    return summarize(samples)


def interleaved(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds per call of each callable, called in turn ``rounds`` times after
    one untimed call each (so load changes affect all of them alike)."""
    for call in calls.values():
        call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}

"""Time budgets and counts of the fuzzers; ``conftest.py`` prints the counts at the end.

``TIDU_FUZZ_SECONDS`` sets each fuzzer's budget (default 20 s in CI; raise it to fuzz
longer on demand), ``TIDU_FUZZ_SEED`` the first seed (default 0).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

DEFAULT_SECONDS = 20.0


def budget_seconds(default: float = DEFAULT_SECONDS) -> float:
    text = os.environ.get("TIDU_FUZZ_SECONDS")
    return float(text) if text else default


def first_seed() -> int:
    return int(os.environ.get("TIDU_FUZZ_SEED", "0"))


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

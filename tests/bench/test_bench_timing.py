"""The adaptive timer: statistics and the stopping rule (with a fake clock, no real timing)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tidu_compile.tools.bench.timing import Policy, Timing, measure, summarize


def test_summarize_odd_and_even_counts() -> None:
    assert summarize([3.0, 1.0, 2.0]) == Timing(2.0, 1.0, 3.0, 3)
    assert summarize([4.0, 1.0, 3.0, 2.0]) == Timing(2.5, 1.0, 4.0, 4)
    assert summarize([0.5]) == Timing(0.5, 0.5, 0.5, 1)


def test_summarize_rejects_empty() -> None:
    with pytest.raises(ValueError, match="samples"):
        summarize([])


def test_timing_json_round_trip() -> None:
    timing = Timing(0.25, 0.125, 1.5, 7)
    data = timing.to_json()
    assert data == {"median": 0.25, "min": 0.125, "max": 1.5, "runs": 7}
    assert Timing.from_json(data) == timing


def fake(durations: list[float]) -> tuple[Callable[[], object], Callable[[], float], list[int]]:
    """A call whose n-th timed run lasts ``durations[n]`` on a fake clock."""
    now = [0.0]
    calls = [0]

    def clock() -> float:
        return now[0]

    def call() -> None:
        now[0] += durations[min(calls[0], len(durations) - 1)]
        calls[0] += 1

    return call, clock, calls


def test_stops_after_min_runs_when_time_is_reached() -> None:
    call, clock, calls = fake([1.0])  # every run 1 s: 5 runs pass 0.5 s
    timing = measure(call, Policy(min_time=0.5, min_runs=5, max_runs=50, warmup=0), clock)
    assert timing.runs == 5 and calls[0] == 5
    assert timing.median == timing.minimum == timing.maximum == 1.0


def test_runs_until_min_time() -> None:
    call, clock, calls = fake([0.01])
    timing = measure(call, Policy(min_time=0.5, min_runs=5, max_runs=500, warmup=0), clock)
    assert timing.runs == 50  # 50 x 0.01 s reaches 0.5 s
    assert timing.median == pytest.approx(0.01)


def test_caps_at_max_runs() -> None:
    call, clock, _ = fake([1e-6])
    timing = measure(call, Policy(min_time=0.5, min_runs=5, max_runs=50, warmup=0), clock)
    assert timing.runs == 50


def test_warmup_is_not_counted() -> None:
    call, clock, calls = fake([100.0, 100.0, 1.0, 2.0, 3.0])
    timing = measure(call, Policy(min_time=0.0, min_runs=3, max_runs=3, warmup=2), clock)
    assert calls[0] == 5
    assert timing == Timing(2.0, 1.0, 3.0, 3)


def test_fixed_and_presets() -> None:
    assert Policy.fixed(7) == Policy(min_time=0.0, min_runs=7, max_runs=7)
    call, clock, _ = fake([0.001])
    assert measure(call, Policy.fixed(7), clock).runs == 7
    assert Policy.quick().max_runs < Policy.default().max_runs
    assert Policy.from_json(Policy.quick().to_json()) == Policy.quick()


@pytest.mark.parametrize(
    "kwargs", [{"min_runs": 0}, {"min_runs": 5, "max_runs": 4}, {"min_time": -1.0}]
)
def test_policy_validation(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Policy(**kwargs)  # type: ignore[arg-type]


def test_measure_real_clock_smoke() -> None:
    timing = measure(lambda: sum(range(100)), Policy.fixed(3))
    assert timing.runs == 3 and 0 <= timing.minimum <= timing.median <= timing.maximum

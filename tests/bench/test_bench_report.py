"""Formatting of times, ratios and the report."""

from __future__ import annotations

import json

from tidu_compile.tools.bench.report import (
    format_ratio,
    format_report,
    format_time,
    format_timing,
    json_safe,
    machine_info,
    ratio,
)


def test_format_time_units() -> None:
    assert format_time(1.5) == "1.5 s"
    assert format_time(0.0123) == "12.3 ms"
    assert format_time(4.56e-5) == "45.6 us"
    assert format_time(7e-9) == "7 ns"
    assert format_time(None) == "-"
    assert format_time(float("nan")) == "-"


def test_format_timing_uses_the_median_unit() -> None:
    assert format_timing({"median": 0.0123, "min": 0.0119, "max": 0.1}) == "12.3 ms [11.9-100]"
    assert format_timing(None) == "-"


def test_ratio() -> None:
    assert ratio({"median": 1.0}, {"median": 4.0}) == 0.25
    assert ratio(None, {"median": 4.0}) is None
    assert ratio({"median": 1.0}, None) is None
    assert format_ratio(0.25) == "0.25"
    assert format_ratio(None) == "-"
    assert format_ratio(0.001) == "1.0e-03"


def test_json_safe_makes_strict_json() -> None:
    data = json_safe({"a": [float("inf"), 1.0], "b": {"c": float("nan")}, "d": (1, "x")})
    assert data == {"a": ["inf", 1.0], "b": {"c": "nan"}, "d": [1, "x"]}
    json.dumps(data, allow_nan=False)


def test_machine_info() -> None:
    info = machine_info({"torch": {"threads": 3}})
    assert info["cores"] and info["cpu"] and info["numpy"]
    assert info.get("torch_threads") == 3


def test_report_shows_fail_and_na_rows() -> None:
    timing = {"median": 2e-3, "min": 1e-3, "max": 3e-3, "runs": 5}
    document = {
        "workloads": [
            {"workload": "W1 n=1e3", "status": "FAIL", "tidu": timing, "numpy": timing,
             "ratios": {"numpy": 1.0}, "compile": None},
            {"workload": "W2 c", "status": "n/a",
             "note": "n/a (composite recording not available)"},
        ],
        "peers": {"torch": {"status": "not installed"}, "jax": {"status": "disabled"}},
        "failures": ["W1 n=1e3: relative error {'x': '1e-2'} > rtol 1e-06"],
        "machine": {"cpu": "CPU", "cores": 2},
    }  # fmt: skip
    text = format_report(document)
    assert "FAIL 2 ms [1-3]" in text
    assert "n/a (composite recording not available)" in text
    assert "n/a (not installed)" in text
    assert "GRADIENT CHECK FAILED" in text
    assert "machine: CPU, 2 cores" in text

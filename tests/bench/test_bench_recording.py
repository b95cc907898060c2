"""``tidu-compile bench --workload recording``: every chain is checked against numpy's
value and the table reports microseconds per op (no speed assertions)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from tidu_compile.tools.bench import main, recording


def test_recording_bench_runs_checks_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "recording.json"
    args = argparse.Namespace(kernels=False, hvp=False, workload="recording", quick=True,
                              json=str(out))  # fmt: skip
    assert main.command(args) == 0
    document = json.loads(out.read_text())
    rows = {row["name"]: row for row in document["rows"]}
    assert document["ops"] == 90 and {"numpy 0-d", "tidu_compile"} <= set(rows)
    assert all(row["error"] <= 1e-12 and row["us_per_op"] > 0 for row in rows.values())
    printed = capsys.readouterr().out
    assert "us/op" in printed and "tidu_compile" in printed


def test_the_tidu_chain_is_recorded_op_by_op() -> None:
    """The timed tidu chain records every op (a chain that skipped the tape would be
    timed as if recording were free)."""
    call = recording._calls(4)["tidu_compile"]
    assert call() == pytest.approx(recording._calls(4)["numpy 0-d"](), rel=1e-15)

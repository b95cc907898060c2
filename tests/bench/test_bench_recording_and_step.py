"""``tidu-compile bench --workload recording`` and ``--workload step``: every result is
checked against numpy's and the tables report times (no speed assertions)."""

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


def test_step_bench_runs_checks_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "step.json"
    args = argparse.Namespace(kernels=False, hvp=False, workload="step", quick=True,
                              json=str(out))  # fmt: skip
    assert main.command(args) == 0
    document = json.loads(out.read_text())
    names = [row["name"] for row in document["rows"]]
    assert names[:3] == ["numpy by hand", "tidu @tc.function", "tidu value_and_grad"]
    assert all(row["relative_error"] <= 1e-9 and row["seconds"] > 0 for row in document["rows"])
    assert "value_and_grad" in capsys.readouterr().out

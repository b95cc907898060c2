"""``tidu-compile bench --optim`` checks where every optimizer ends against Adam in float64
numpy and prints the table (no speed assertions)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from tidu_compile.tools.bench import main, optim


def test_optim_bench_runs_checks_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "optim.json"
    args = argparse.Namespace(kernels=False, hvp=False, optim=True, quick=True, json=str(out))
    assert main.command(args) == 0
    document = json.loads(out.read_text())
    assert document["parameters"] == 1_000_640
    assert document["rows"][0]["name"] == "tidu Adam"
    assert all(row["relative_error"] < 1e-5 and row["seconds"] > 0 for row in document["rows"])
    assert "Adam.step() over 1,000,640" in capsys.readouterr().out


def test_the_check_would_catch_a_wrong_step() -> None:
    """Two steps of the tidu optimizer are two steps of numpy's Adam, not one or three."""
    rng = np.random.default_rng(3)
    start = [rng.standard_normal((4, 3)).astype(np.float32)]
    grads = [rng.standard_normal((4, 3)).astype(np.float32)]
    stepper = optim._tidu(start, grads)
    stepper.step()
    stepper.step()
    (got,) = stepper.values()
    for steps, close in ((1, False), (2, True), (3, False)):
        (expected,) = optim._numpy_adam(start, grads, steps)
        assert np.allclose(got, expected, rtol=0, atol=1e-6) is close

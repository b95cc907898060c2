"""``tidu-compile bench --conv`` checks every gradient against the reference executor
and prints one table per layer (no speed assertions)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from tidu_compile.tools.bench import conv, main


def test_conv_bench_runs_checks_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "conv.json"
    args = argparse.Namespace(kernels=False, hvp=False, conv=True, quick=True, json=str(out))
    assert main.command(args) == 0
    document = json.loads(out.read_text())
    assert len(document["layers"]) == 2
    for layer in document["layers"]:
        names = [row["name"] for row in layer["rows"]]
        assert names[:2] == ["tidu per-op", "tidu @tc.function"]
        assert all(row["relative_error"] < 1e-4 and row["seconds"] > 0 for row in layer["rows"])
    printed = capsys.readouterr().out
    assert "conv2d SAME forward + backward" in printed and "tidu @tc.function" in printed


def test_the_reference_check_would_catch_a_wrong_gradient() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    ex, ew = conv._expected(x, w)
    gx, gw = conv._tidu_calls(x, w)["tidu per-op"]()
    np.testing.assert_allclose(gx, ex, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw, ew, rtol=1e-4, atol=1e-4)
    assert np.max(np.abs(1.01 * gw - ew)) / np.max(np.abs(ew)) > 1e-4

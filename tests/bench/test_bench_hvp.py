"""``tidu-compile bench --hvp`` checks every Hessian-vector product against a central
difference and prints the table (no speed assertions)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from tidu_compile.tools.bench import hvp, main


def test_hvp_bench_runs_checks_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hvp.json"
    args = argparse.Namespace(kernels=False, hvp=True, quick=True, json=str(out))
    assert main.command(args) == 0
    document = json.loads(out.read_text())
    names = [row["name"] for row in document["rows"]]
    assert names[:2] == ["tidu per-op", "tidu @tc.function"]
    assert all(row["relative_error"] < 1e-6 and row["seconds"] > 0 for row in document["rows"])
    printed = capsys.readouterr().out
    assert "Hessian-vector product" in printed and "tidu @tc.function" in printed


def test_the_difference_check_would_catch_a_wrong_hvp() -> None:
    """The expected product is the central difference of the hand gradient: a product
    off by a factor is far outside the tolerance ``command`` applies."""
    rng = np.random.default_rng(1)
    x, y, vx, vy = (rng.standard_normal(50) for _ in range(4))
    ex, ey = hvp._expected(x, y, vx, vy)
    (hx, hy) = hvp._tidu_calls(x, y, vx, vy)["tidu per-op"]()
    np.testing.assert_allclose(hx, ex, rtol=1e-6, atol=1e-8)
    assert np.max(np.abs(1.01 * hy - ey)) / np.max(np.abs(ey)) > 1e-6

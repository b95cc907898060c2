"""``tidu-compile bench --loops``: the child measures the RNN's compile and step time
(gradients equal to the reference's, nothing on the reference path, what checkpoint
saves), and the table prints what the document holds."""

from __future__ import annotations

import pytest
from tidu_compile.tools.bench import loops


def test_the_rnn_child_compiles_checks_and_measures_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loops, "STEP_BUDGET", 0.0)
    ours = loops._tidu_child("rnn")
    assert ours["fallbacks"] == 0 and ours["compiles"] >= 1
    assert ours["relative_error"] <= 1e-12
    assert ours["seconds"] > ours["step_seconds"] > 0
    # the 1000 carries of width 16 (f64) the tape keeps unless checkpointed
    assert ours["saved_bytes"] - ours["checkpoint_saved_bytes"] == loops.RNN_STEPS * 16 * 8
    document = {"cpu": "x", "rows": [{"program": "rnn", "tidu": ours,
                                      "jax": {"error": "not installed"}}]}  # fmt: skip
    table = loops.format_loops(document)
    assert f"rnn         {ours['seconds']:.2f} s / {ours['step_seconds'] * 1e3:.2f} ms" in table
    assert "not installed" in table and "checkpoint=True" in table

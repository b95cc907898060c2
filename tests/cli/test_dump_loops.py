"""``tidu-compile dump`` of a program with a loop: the scan is one op at every stage
(``Scan(...)`` in the graphs, ``tidu.scan`` in the dialect stages); at ``loops`` a body
with a contraction stays a library step for the native driver, marked with why
(``tidu.loop_driver``), and a body of kernels is one ``scf.for`` kernel
(``tests/compiler/test_scan_kernels.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TARGET = """
import tidu_compile as tc


@tc.function
def rnn(w, xs):
    h, _ = tc.scan(lambda h, x: (tc.tanh(h @ w + x), None), tc.zeros(3), xs)
    return tc.sum(h)
"""


@pytest.mark.parametrize(
    ("stage", "expected"),
    [("graph", "Scan(body=Body("), ("transposed", "reverse=True"), ("tidu", "tidu.scan"),
     ("loops", 'tidu.loop_driver = "the body has a library step: DotGeneral"')],
)  # fmt: skip
def test_a_scan_is_one_op_at_every_stage(tmp_path: Path, stage: str, expected: str) -> None:
    path = tmp_path / "loop_model.py"
    path.write_text(TARGET)
    result = subprocess.run(
        [sys.executable, "-m", "tidu_compile.tools.cli", "dump", f"{path}:rnn",
         "--input", "w=3x3:f64", "--input", "xs=5x3:f64", "--stage", stage],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
    if stage == "loops":  # the reverse scan only: the forward's history is read, not rerun
        assert result.stdout.count("= tidu.scan ") == 1

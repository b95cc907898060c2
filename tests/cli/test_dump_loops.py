"""``tidu-compile dump`` of a program with a loop: the scan is one op at every stage
(``Scan(...)`` in the graphs, ``tidu.scan`` in ``tidu``); at ``loops`` it is one kernel,
an ``scf.for`` over the body's kernels and its contraction (``tidu-lower-control``,
``tests/compiler/test_scan_kernels.py``); a cond's is one ``scf.if`` kernel."""

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
     ("loops", "func.func @node0_s0(")],
)  # fmt: skip
def test_a_scan_is_one_op_then_one_kernel(tmp_path: Path, stage: str, expected: str) -> None:
    path = tmp_path / "loop_model.py"
    path.write_text(TARGET)
    result = subprocess.run(
        [sys.executable, "-m", "tidu_compile.tools.cli", "dump", f"{path}:rnn",
         "--input", "w=3x3:f64", "--input", "xs=5x3:f64", "--stage", stage],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
    if stage == "loops":  # the reverse scan only (the forward's history is read), a kernel
        assert "tidu.scan" not in result.stdout
        assert result.stdout.count("func.call @node0_s0(") == 1
        kernel = result.stdout[result.stdout.index("func.func @node0_s0(") :]
        assert "attributes {tidu.kernel}" in kernel.splitlines()[0] and "scf.for" in kernel


COND_TARGET = """
import tidu_compile as tc


@tc.function
def pick(x, w):
    y = tc.cond(tc.sum(w) > 0.0, lambda v: tc.sin(v) * w, lambda v: v * v, x)
    return tc.sum(y)
"""


def test_the_backward_of_a_cond_is_one_kernel_of_scf_if(tmp_path: Path) -> None:
    """The cond of the branches' VJPs is one ``scf.if`` kernel at ``loops``
    (``tests/compiler/test_loop_kernels.py``); a while loop is forward only, so a
    backward holds none."""
    path = tmp_path / "cond_model.py"
    path.write_text(COND_TARGET)
    result = subprocess.run(
        [sys.executable, "-m", "tidu_compile.tools.cli", "dump", f"{path}:pick",
         "--input", "x=3:f64", "--input", "w=3:f64", "--stage", "loops"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "tidu.cond" not in result.stdout and result.stdout.count("func.call @node0_c0(") == 1
    kernel = result.stdout[result.stdout.index("func.func @node0_c0(") :]
    assert "attributes {tidu.kernel}" in kernel.splitlines()[0] and "scf.if" in kernel

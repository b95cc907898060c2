"""``tidu-lower-control``: a scan of a compiled program whose body is all kernels is ONE
kernel, an ``scf.for`` over the body's inlined kernels (``passes.tidu_lower_control``).

The backward node of a scan holds the reverse scan of its body's VJP: its ``loops``
stage shows the scan kernel, every stage verifies down to ``llvm``, and the compiled
gradients (carries that swap, a carry that is an ``xs`` row, reverse scans) agree with
the reference, the forward scan run as its own program (``native_loops.loop_program``:
one scan kernel too) and no driver built; a second process is
served the backward's scan kernel from the disk cache. A body with a library step
it has no loops for (a cumulative sum) keeps its ``tidu.scan``, marked with why, for the driver.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tidu_compile.tools.dump import backward_nodes

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor
from tidu_compile.compiler.stages import RunOptions, walk

XS = np.random.default_rng(5).standard_normal((5, 3))


def _swapping(reverse: bool) -> Callable[[tc.Tensor], tc.Tensor]:
    def loss(xs: tc.Tensor) -> tc.Tensor:
        def step(carry: tuple[tc.Tensor, ...], x: tc.Tensor) -> tuple[Any, tc.Tensor]:
            a, b, last = carry
            turned = tc.reshape(tc.transpose(tc.reshape(b, (1, 3))), (3,))  # copying loops
            return (turned * 0.5, tc.sin(a) + x, x), a * b

        (a, b, last), ys = tc.scan(step, (tc.ones(3), tc.zeros(3), tc.zeros(3)), xs,
                                   reverse=reverse)  # fmt: skip
        return tc.sum(a * b) + tc.sum(ys * ys) + tc.sum(last)

    return loss


def _loops_text(loss: tc.Tensor, last: str = "loops") -> str:
    (node,) = [n for n in backward_nodes(loss) if "Scan" in str(n.recorded.graph)]
    return str(walk(node.program(), "program", last, RunOptions(function="node")))


RNN_CHECKS = """
CHECK:       func.call @node_s0(
CHECK-NOT:   tidu.scan
CHECK-LABEL: func.func @node_s0(
CHECK-SAME:  attributes {tidu.kernel}
CHECK:       arith.constant 4 : index
CHECK-NEXT:  %[[ROW:[0-9]+]] = arith.subi %{{.*}}, %{{.*}} : index
CHECK:       scf.for {{.*}} iter_args(
CHECK-NEXT:  memref.load %{{.*}}[%[[ROW]], %{{.*}}] : memref<5x3xf64>
CHECK-NEXT:  memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<3x3xf64>
CHECK-NEXT:  arith.mulf
CHECK-NEXT:  arith.addf
CHECK-NEXT:  scf.yield
CHECK:       func.call @tidu_math_tanh_f64(
CHECK:       memref.store %{{.*}}, %{{.*}}[%[[ROW]], %{{.*}}] : memref<5x3xf64>
CHECK:       func.return
"""


def test_the_backward_scan_is_one_kernel_of_scf_for(tmp_path: Path) -> None:
    """``h = tanh(h @ w + x)`` forward: its backward is a reverse scan, row ``4 - t``,
    the contraction a loop nest reading row ``4 - t`` of the stacked operand, the body's
    kernel inlined, the ``xs`` cotangent stored into its row (filecheck)."""
    w = tc.tensor(np.eye(3) * 0.5, requires_grad=True)
    h, _ = tc.scan(lambda h, x: (tc.tanh(h @ w + x), None), tc.zeros(3), tc.tensor(XS))
    # here, not at the top: the disk script imports this module without tests/ on its path
    from helpers.filecheck import check_text  # noqa: PLC0415

    check_text(tmp_path, _loops_text(tc.sum(h)), RNN_CHECKS)


def test_every_stage_verifies_to_llvm() -> None:
    walked = _loops_text(_swapping(False)(tc.tensor(XS, requires_grad=True)), "llvm")
    assert "llvm.func" in walked and "tidu.scan" not in walked and "scf.for" not in walked


def test_a_body_with_a_cumulative_sum_stays_on_the_driver_and_says_why() -> None:
    w = tc.tensor(XS[0], requires_grad=True)
    h, _ = tc.scan(lambda h, x: (tc.cumsum(h * w, axis=0) + x, None), tc.ones(3),
                   tc.tensor(XS))  # fmt: skip
    text = _loops_text(tc.sum(h))
    assert 'tidu.loop_driver = "the body has a library step: CumSum"' in text


@pytest.mark.parametrize("reverse", [False, True])
def test_compiled_gradients_through_scan_kernels_agree(reverse: bool) -> None:
    from tidu_compile.executors.native_loops import _RUNNERS, _LoopKernelRunner

    def run() -> list[np.ndarray]:
        xs = tc.tensor(XS, requires_grad=True)
        (g,) = tc.grad(_swapping(reverse)(xs), [xs])
        return [np.asarray(g)]

    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(compiled):
        got = run()
    with tc.use_executor(ReferenceExecutor()):
        want = run()
    assert compiled.stats.fallbacks == 0, compiled.stats.errors
    runners = list(_RUNNERS.get(compiled, {}).values())  # the forward scan: its own program
    assert len(runners) == 1 and isinstance(runners[0], _LoopKernelRunner)
    assert compiled.stats.loop_drivers == 0  # the backward's scan: a kernel of its node
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)


SECOND_PROCESS = """
import sys
import numpy as np
import tidu_compile as tc
sys.path.insert(0, {here!r})
from test_scan_kernels import XS, _swapping

executor = tc.CompiledExecutor(cache_dir={cache!r}, background=False)
xs = tc.tensor(XS, requires_grad=True)
(g,) = tc.grad(_swapping(True)(xs), [xs], executor=executor)
np.save({out!r}, np.asarray(g))
print(executor.stats.compiles, executor.stats.disk_hits)
"""


def test_the_scan_kernel_is_served_from_disk_in_a_second_process(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = CompiledExecutor(cache_dir=cache, background=False)
    xs = tc.tensor(XS, requires_grad=True)
    (want,) = tc.grad(_swapping(True)(xs), [xs], executor=first)
    assert first.stats.compiles >= 1 and first.stats.fallbacks == 0
    out = tmp_path / "g.npy"
    script = SECOND_PROCESS.format(here=str(Path(__file__).parent), cache=str(cache), out=str(out))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    compiles, disk_hits = map(int, result.stdout.split())
    assert compiles == 0 and disk_hits >= 1
    np.testing.assert_array_equal(np.load(out), np.asarray(want))

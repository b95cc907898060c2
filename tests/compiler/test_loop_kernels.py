"""``tidu-lower-control`` on while loops and conds: a ``tidu.while_loop`` whose test and
body are all kernels is ONE kernel, an ``scf.while`` (condition region: the test's
kernels and a load of its flag; body region: the body's kernels and the carry copies);
a ``tidu.cond`` whose branches are all kernels is ONE kernel, an ``scf.if``. The
``llvm`` stage lowers ``scf.while`` with ``tidu-convert-scf-to-cf``
(``tests/passes/filecheck/tidu-convert-scf-to-cf.mlir``).

Every case runs on a ``CompiledExecutor`` and on the ``ReferenceExecutor``, which must
agree, the compiled one with no driver (``stats.loop_drivers == 0``) and no fallback:
swapped carries, integer and bool carries, zero iterations, consts of the test and of
the body, a loop-invariant step made once before the kernel, a contraction in the body,
a while loop in a scan's body and a scan in a while loop's body, a cond in a scan's body
and the gradient through a cond.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.filecheck import check_text
from tidu_compile.tools.dump import backward_nodes

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor
from tidu_compile.compiler.stages import RunOptions, walk
from tidu_compile.executors import native_loops
from tidu_compile.frontend import control_flow

RNG = np.random.default_rng(11)
W = RNG.standard_normal((4, 4)) * 0.3
XS = RNG.standard_normal((5, 4))


def _values(*tensors: Any) -> list[np.ndarray]:
    return [t.detach().numpy() if isinstance(t, tc.Tensor) else np.asarray(t) for t in tensors]


def _both(run: Callable[[], list[Any]]) -> CompiledExecutor:
    """``run`` on both executors (``test_native_loop._both``: equal results, no fallback),
    every loop the compiled one ran a loop kernel, no driver; the compiled executor."""
    from test_native_loop import _both as on_both_executors  # noqa: PLC0415

    compiled = on_both_executors(run)
    assert compiled.stats.loop_drivers == 0
    runners = list(native_loops._RUNNERS.get(compiled, {}).values())
    assert all(isinstance(r, native_loops._LoopKernelRunner) for r in runners), runners
    return compiled


# ------------------------------------------------------------- values, both executors


@pytest.mark.parametrize("start", [1.0, 500.0])  # several iterations, and none
def test_swapped_integer_and_bool_carries_and_consts_of_test_and_body(start: float) -> None:
    def run() -> list[Any]:
        limit, w = tc.tensor(60.0), tc.tensor(np.abs(W[0]))

        def test(c: tuple[tc.Tensor, ...]) -> tc.Tensor:
            return tc.sum(c[0]) < limit

        def step(c: tuple[tc.Tensor, ...]) -> tuple[tc.Tensor, ...]:
            a, b, n, seen = c
            return b, a * 2.0 + w, n + 1, tc.maximum(seen, b > 3.0)

        init = (tc.full(4, start), tc.ones(4), tc.tensor(np.int64(0)), tc.zeros(4, dtype="bool"))
        return _values(*tc.while_loop(test, step, init))

    compiled = _both(run)
    assert len(native_loops._RUNNERS[compiled]) == 1


def test_a_contraction_and_a_loop_invariant_step_in_the_body() -> None:
    def run() -> list[Any]:
        w = tc.tensor(W)

        def step(c: tuple[tc.Tensor, tc.Tensor]) -> tuple[tc.Tensor, tc.Tensor]:
            h, n = c
            return tc.tanh(h @ tc.transpose(w) + 0.5), n + 1  # the transpose: made once

        return _values(*tc.while_loop(lambda c: c[1] < 9, step, (tc.zeros(4), tc.tensor(0))))

    _both(run)


def test_fori_loop_with_tensor_bounds_is_a_while_kernel() -> None:
    def run() -> list[Any]:
        total = tc.fori_loop(tc.tensor(np.int64(2)), tc.tensor(np.int64(7)),
                             lambda i, y: y * 0.5 + i, tc.tensor(1.0))  # fmt: skip
        return _values(total)

    _both(run)


def test_a_while_loop_in_a_scan_body_and_a_scan_in_a_while_body() -> None:
    def run() -> list[Any]:
        def row(c: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
            grown = tc.while_loop(lambda v: tc.sum(v * v) < 40.0, lambda v: v * 1.5 + 0.1,
                                  c + tc.abs(x))  # fmt: skip
            return grown * 0.1, tc.sum(grown)

        final, ys = tc.scan(row, tc.ones(4), tc.tensor(XS))

        def inner(c: tuple[tc.Tensor, tc.Tensor]) -> tuple[tc.Tensor, tc.Tensor]:
            h, n = c
            h, _ = tc.scan(lambda h, x: (tc.sin(h) + x, None), h, tc.tensor(XS))
            return h, n + 1

        h, n = tc.while_loop(lambda c: c[1] < 3, inner, (tc.zeros(4), tc.tensor(0)))
        return _values(final, ys, h, n)

    _both(run)


def test_a_cond_in_a_scan_body_and_the_gradient_through_a_cond() -> None:
    def run() -> list[Any]:
        xs = tc.tensor(XS, requires_grad=True)

        def step(c: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, None]:
            return tc.cond(tc.sum(x) > 0.0, lambda h: tc.sin(h) + x, lambda h: h * x, c), None

        final, _ = tc.scan(step, tc.ones(4), xs)
        w = tc.tensor(W[0], requires_grad=True)
        picked = tc.cond(tc.sum(w) > 0.0, lambda v: tc.exp(v) * 2.0, lambda v: v * v, w)
        return [*_values(final), *tc.grad(tc.sum(final) + tc.sum(picked), [xs, w])]

    _both(run)


# ------------------------------------------------------------------- the loops stage


def _primitive(monkeypatch: pytest.MonkeyPatch, run: Callable[[], Any]) -> Any:
    """The control-flow primitive ``run`` applies (its last one)."""
    seen: list[Any] = []
    real = control_flow.apply_op

    def recording(op: Any, inputs: Any) -> Any:
        seen.append(op)
        return real(op, inputs)

    monkeypatch.setattr(control_flow, "apply_op", recording)
    with tc.use_executor(ReferenceExecutor()):
        run()
    return seen[-1]


WHILE_CHECKS = """
CHECK:       func.call @node_w0(
CHECK-NOT:   tidu.while_loop
CHECK-LABEL: func.func @node_w0(
CHECK-SAME:  attributes {tidu.kernel}
CHECK:       scf.while () : () -> () {
CHECK:         memref.load %{{.*}}[%{{.*}}] : memref<3xf64>
CHECK:         arith.addf
CHECK:         %[[GO:.*]] = memref.load %{{.*}}[] : memref<i1>
CHECK-NEXT:    scf.condition(%[[GO]])
CHECK-NEXT:  } do {
CHECK:         arith.mulf
CHECK:         scf.yield
CHECK-NEXT:  }
CHECK-NEXT:  func.return
"""


def test_a_while_loop_is_one_kernel_of_scf_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``while sum(v) < 50: v = v * 1.5``: the test's reduction and the flag's load in the
    condition region, the step in the body region; every stage verifies to ``llvm``,
    where no ``scf`` is left."""
    loop = _primitive(monkeypatch, lambda: tc.while_loop(
        lambda v: tc.sum(v) < 50.0, lambda v: v * 1.5, tc.ones(3)))  # fmt: skip
    program = native_loops.loop_program(loop)
    check_text(tmp_path, str(walk(program, "program", "loops", RunOptions())), WHILE_CHECKS)
    lowered = str(walk(program, "program", "llvm", RunOptions()))
    assert "llvm.cond_br" in lowered and "scf." not in lowered


COND_CHECKS = """
CHECK:       func.call @node_c0(
CHECK-NOT:   tidu.cond
CHECK-LABEL: func.func @node_c0(
CHECK-SAME:  attributes {tidu.kernel}
CHECK:       %[[PRED:.*]] = memref.load %{{.*}}[] : memref<i1>
CHECK-NEXT:  scf.if %[[PRED]] {
CHECK:         func.call @tidu_math_sin_f64(
CHECK:       } else {
CHECK-NOT:     tidu_math_sin
CHECK:         arith.mulf
CHECK-NOT:     scf.if
CHECK:         func.return
"""


def test_the_backward_of_a_scan_holding_a_cond_is_one_kernel() -> None:
    """The reverse scan of the body's VJP holds the cond's VJP: its ``scf.if`` kernel is
    inlined into the scan kernel, an ``scf.if`` in the ``scf.for``."""
    xs = tc.tensor(XS, requires_grad=True)

    def step(c: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, None]:
        return tc.cond(tc.sum(x) > 0.0, lambda h: tc.sin(h) * x, lambda h: h * x, c), None

    final, _ = tc.scan(step, tc.ones(4), xs)
    (node,) = [n for n in backward_nodes(tc.sum(final)) if "Scan" in str(n.recorded.graph)]
    text = str(walk(node.program(), "program", "loops", RunOptions(function="node")))
    assert "tidu.cond" not in text and "tidu.scan" not in text, text
    scan_kernel = text[text.index("func.func @node_s0(") :]
    assert "scf.if" in scan_kernel[scan_kernel.index("scf.for") :]


def test_a_cond_of_kernels_is_one_kernel_of_scf_if(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cond = _primitive(monkeypatch, lambda: tc.cond(tc.tensor(True), lambda h: tc.sin(h),
                                                   lambda h: h * 3.0, tc.ones(3)))  # fmt: skip
    from tidu_compile.compiler.program import compilable
    from tidu_compile.compiler.ssa_program import ArgSource, Instr, NodeProgram
    from tidu_compile.ops.base import TensorType

    types = (TensorType((), "bool"), TensorType((3,), "float64"), TensorType((3,), "float64"))
    program = compilable(NodeProgram((ArgSource("saved", 0), ArgSource("saved", 1)), types,
                                     (Instr(cond, (0, 1), (2,)),), (2,)))  # fmt: skip
    check_text(tmp_path, str(walk(program, "program", "loops", RunOptions())), COND_CHECKS)
    assert "scf." not in str(walk(program, "program", "llvm", RunOptions()))

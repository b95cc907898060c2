"""``backend.llvm_text``: the LLVM IR the executor compiles, written straight from the
``kernels`` stage, is the ``llvm`` stage's (xDSL's passes, then ``convert_module``) but
for the numbers of local names: on every op of the op table (its forward program, and
its backward node's where it has a gradient), on scans, conds and while loops, and on
whole programs. Plus its IR test (filecheck), its errors, and the walk's route.
"""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.filecheck import check_text
from tidu_compile.passes.errors import LoweringError
from tidu_compile.tools.dump import backward_nodes
from xdsl.parser import Parser

import tidu_compile as tc
from tidu_compile.backend.jit import kernels_ir_text, llvm_ir_text
from tidu_compile.backend.llvm_text import emit_module
from tidu_compile.compiler.program import UnsupportedNode, graph_program
from tidu_compile.compiler.stages import (
    RunOptions,
    lower_to_llvm_dialect,
    tidu_context,
    walk,
)
from tidu_compile.eager import RecordedGraph
from tidu_compile.frontend.tensor import apply_op
from tidu_compile.ops.base import TensorType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ops"))
from op_cases import CASES, Case  # noqa: E402

_NAME = re.compile(r'%"(\.\d+)"|^(\.\d+):', re.MULTILINE)


def normalized(text: str) -> str:
    """``text`` with each function's local names numbered in order of appearance, runs of
    spaces as one, and fastmath flags in one order (xDSL keeps them in a set)."""
    return "\n".join(_renumbered(chunk) for chunk in re.split(r"\n(?=define |declare )", text))


def _renumbered(chunk: str) -> str:
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        key = match.group(1) or match.group(2)
        new = names.setdefault(key, f"n{len(names)}")
        return f'%"{new}"' if match.group(1) else f"{new}:"

    chunk = re.sub(r" +", " ", _NAME.sub(rename, chunk))
    return chunk.replace("contract reassoc", "reassoc contract").strip()


def assert_same_llvm_ir(kernels: object) -> None:
    """The emitter's LLVM IR of a ``kernels``-stage module is the ``llvm`` stage's."""
    module = kernels.module  # type: ignore[attr-defined]
    emitted = kernels_ir_text(module, vector_math=False)
    lowered = lower_to_llvm_dialect(module.clone(), verify_each=False)
    assert normalized(emitted) == normalized(llvm_ir_text(lowered, vector_math=False))


def _kernels(program: object) -> object:
    return walk(program, "program", "kernels", RunOptions(verify_each=False))


def _one_per_name(cases: list[Case]) -> list[Case]:
    seen: dict[str, Case] = {}
    for case in cases:
        seen.setdefault(case.name, case)
    return list(seen.values())


@pytest.mark.parametrize("case", _one_per_name(CASES), ids=lambda c: c.id)
def test_every_op_emits_the_llvm_stages_ir(case: Case) -> None:
    types = [TensorType(a.shape, a.dtype) for a in case.args]
    graph = RecordedGraph.from_primitive(case.op, [f"x{i}" for i in range(len(types))])
    with contextlib.suppress(UnsupportedNode):  # run by numpy (a zero-size value)
        assert_same_llvm_ir(_kernels(graph_program(graph, types)))
    if not case.differentiable or any(a.dtype not in ("float64", "float32") for a in case.args):
        return
    inputs = [tc.tensor(x, requires_grad=True) for x in case.inputs(np.random.default_rng(0))]
    outputs = [o for o in apply_op(case.op, inputs)
               if o.requires_grad and np.issubdtype(o.dtype, np.floating)]  # fmt: skip
    if not outputs:
        return
    loss = outputs[0].sum()
    for extra in outputs[1:]:
        loss = loss + extra.sum()
    for node in backward_nodes(loss):
        try:
            program = node.program()
        except UnsupportedNode:
            continue
        assert_same_llvm_ir(_kernels(program))


def test_whole_programs_emit_the_llvm_stages_ir() -> None:
    """A GRU-like step (slices, matmuls, reductions, math functions) as one program."""

    @tc.function
    def step(h: tc.Tensor, w: tc.Tensor, u: tc.Tensor) -> tc.Tensor:
        for _ in range(3):
            g = h @ w + tc.tanh(h @ u)
            z = 1.0 / (1.0 + tc.exp(-g[:4]))
            h = z * h + (1.0 - z) * tc.log1p(tc.abs(g[4:]))
        return tc.sum(tc.maximum(h, 0.0) ** 2)

    rng = np.random.default_rng(1)
    h = tc.tensor(rng.standard_normal(4), requires_grad=True)
    w, u = (tc.tensor(rng.standard_normal((4, 8)), requires_grad=True) for _ in range(2))
    nodes = backward_nodes(step(h, w, u))
    assert nodes
    for node in nodes:
        assert_same_llvm_ir(_kernels(node.program()))


KERNEL = """
func.func @k(%x: memref<?x4xf64> {llvm.noalias}, %y: memref<?xf64> {llvm.noalias},
             %lo: index, %hi: index) attributes {tidu.kernel} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f64
  scf.for %i = %lo to %hi step %c1 {
    %v = memref.load %x[%i, %c2] : memref<?x4xf64>
    %dead = memref.load %x[%i, %c1] : memref<?x4xf64>
    %m = arith.maximumf %v, %zero : f64
    %positive = arith.cmpf ogt, %v, %zero : f64
    %r = scf.if %positive -> (f64) {
      %e = math.exp %m : f64
      scf.yield %e : f64
    } else {
      scf.yield %m : f64
    }
    memref.store %r, %y[%i] : memref<?xf64>
  }
  func.return
}
"""

KERNEL_CHECKS = r"""
CHECK:      define void @"k"(ptr noalias %[[X:"\.[0-9]+"]], ptr noalias %{{"\.[0-9]+"}},
CHECK-SAME:   i64 %[[LO:"\.[0-9]+"]], i64 %[[HI:"\.[0-9]+"]])
CHECK-NEXT: {
CHECK-NEXT: [[ENTRY:\.[0-9]+]]:
CHECK-NEXT:   br label %"[[HEAD:\.[0-9]+]]"
CHECK-NEXT: [[HEAD]]:
CHECK-NEXT:   %[[I:"\.[0-9]+"]] = phi  i64 [%[[LO]], %"[[ENTRY]]"],
CHECK-SAME:   [%[[NEXT:"\.[0-9]+"]], %"[[LATCH:\.[0-9]+]]"]
CHECK-NEXT:   %[[TEST:"\.[0-9]+"]] = icmp slt i64 %[[I]], %[[HI]]
CHECK-NEXT:   br i1 %[[TEST]], label %"[[BODY:\.[0-9]+]]", label %"[[END:\.[0-9]+]]"
CHECK-NEXT: [[BODY]]:
CHECK-NEXT:   %[[ROW:"\.[0-9]+"]] = mul i64 %[[I]], 4
CHECK-NEXT:   %[[AT:"\.[0-9]+"]] = add i64 %[[ROW]], 2
CHECK-NEXT:   %[[BYTES:"\.[0-9]+"]] = mul i64 %[[AT]], 8
CHECK-NEXT:   %[[P:"\.[0-9]+"]] = getelementptr inbounds i8, ptr %[[X]], i64 %[[BYTES]]
CHECK-NEXT:   %[[V:"\.[0-9]+"]] = load double, ptr %[[P]]
CHECK-NEXT:   fcmp ogt double %[[V]], 0x0
CHECK:        fcmp uno double %[[V]], 0x0
CHECK:        %[[POS:"\.[0-9]+"]] = fcmp ogt double %[[V]], 0x0
CHECK-NEXT:   br i1 %[[POS]], label %"[[THEN:\.[0-9]+]]", label %"[[ELSE:\.[0-9]+]]"
CHECK-NEXT: [[THEN]]:
CHECK-NEXT:   call double @"llvm.exp.f64"(double
CHECK-NEXT:   br label %"[[JOIN:\.[0-9]+]]"
CHECK-NEXT: [[ELSE]]:
CHECK-NEXT:   br label %"[[JOIN]]"
CHECK-NEXT: [[JOIN]]:
CHECK-NEXT:   %[[R:"\.[0-9]+"]] = phi  double
CHECK-NEXT:   br label %"[[LATCH]]"
CHECK-NEXT: [[LATCH]]:
CHECK-NEXT:   mul i64 %[[I]], 8
CHECK-NEXT:   getelementptr inbounds i8
CHECK-NEXT:   store double %[[R]], ptr
CHECK-NEXT:   %[[NEXT]] = add i64 %[[I]], 1
CHECK-NEXT:   br label %"[[HEAD]]"
CHECK-NEXT: [[END]]:
CHECK-NEXT:   ret void
CHECK-NEXT: }
CHECK:      declare double @"llvm.exp.f64"(double
"""


def test_a_kernel_as_llvm_ir(tmp_path: Path) -> None:
    """A loop over rows, a 2-d load (the dead one left out), a NaN-propagating maximum,
    an ``scf.if`` with a result (its join block's phi) and a math intrinsic."""
    module = Parser(tidu_context(), KERNEL).parse_module()
    check_text(tmp_path, emit_module(module, "x86_64-unknown-linux-gnu", ""), KERNEL_CHECKS)


def test_the_same_llvm_ir_as_the_llvm_stage_on_the_filecheck_kernel() -> None:
    module = Parser(tidu_context(), KERNEL).parse_module()
    emitted = emit_module(module, "t", "")
    lowered = lower_to_llvm_dialect(module.clone(), verify_each=True)
    from xdsl.backend.llvm.convert import convert_module

    assert normalized(emitted) == normalized(str(convert_module(
        lowered, fallback_target_triple="t")))  # fmt: skip


@pytest.mark.parametrize(("body", "op"), [
    ("%q = arith.floordivsi %n, %n : i64", "arith.floordivsi"),
    ('%q = "test.op"(%n) : (i64) -> i64', "test.op"),
])  # fmt: skip
def test_an_op_without_a_row_names_itself_and_the_stage(body: str, op: str) -> None:
    text = f"func.func @f(%n: i64) -> i64 {{\n  {body}\n  func.return %q : i64\n}}"
    context = tidu_context()
    context.allow_unregistered = True
    module = Parser(context, text).parse_module()
    with pytest.raises(LoweringError, match=rf"llvm-ir: cannot lower '{re.escape(op)}'"):
        emit_module(module, "t", "")


def test_a_dynamic_inner_extent_is_refused_by_name() -> None:
    text = """func.func @f(%x: memref<4x?xf64>, %i: index) -> f64 {
      %v = memref.load %x[%i, %i] : memref<4x?xf64>
      func.return %v : f64
    }"""
    module = Parser(tidu_context(), text).parse_module()
    with pytest.raises(LoweringError, match=r"memref<4x\?xf64>: only dimension 0 may be dynamic"):
        emit_module(module, "t", "")


def _program() -> object:
    x = tc.tensor(np.linspace(0.1, 1.0, 8), requires_grad=True)
    (node, *_) = backward_nodes(tc.sum(tc.tanh(x) * x))
    return node.program()


def test_a_walk_through_kernels_skips_the_llvm_stage() -> None:
    seconds: dict[str, float] = {}
    ir = walk(_program(), "program", "llvm-ir", RunOptions(), seconds)
    assert "llvm" not in seconds and {"kernels", "llvm-ir"} <= seconds.keys()
    assert "define void" in str(ir)


def test_a_walk_that_hears_the_passes_runs_the_llvm_stage() -> None:
    heard: list[str] = []
    seconds: dict[str, float] = {}
    options = RunOptions(after_pass=lambda p, m: heard.append(p.name))
    direct = walk(_program(), "program", "llvm-ir")
    through = walk(_program(), "program", "llvm-ir", options, seconds)
    assert "llvm" in seconds and "convert-func-to-llvm" in heard
    assert normalized(str(direct)) == normalized(str(through))


def test_the_kernels_stay_kernels_after_the_llvm_stage_is_walked() -> None:
    kernels = _kernels(_program())
    before = str(kernels.module)  # type: ignore[attr-defined]
    walk(kernels, "kernels", "llvm")
    assert str(kernels.module) == before  # type: ignore[attr-defined]

"""Host code-generation hints: the preferred vector width and the interleaving of heavy loops.

The rewrite is checked on hand-written IR (which loops it marks), then on a real
compiled kernel: the LLVM IR carries the attribute and the loop metadata, and the
optimised IR has the host's vector type with ``interleave`` vector loads per iteration.
A regression in either hint (the attribute dropped, the metadata lost, the width
changed) fails here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import llvmlite.binding as llvm
import pytest
from tidu_compile.passes.expand_math_polynomials import ExpandMathPolynomialsPass
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.backend.jit import llvm_ir_text
from tidu_compile.backend.kernel_hints import (
    ATTRIBUTE_GROUP,
    HEAVY_LOOP_INSTRUCTIONS,
    INTERLEAVED_INSTRUCTIONS,
    add_kernel_hints,
)
from tidu_compile.backend.target import KernelTuning, host_target, tuning_for
from tidu_compile.compiler import native
from tidu_compile.compiler.stages import RunOptions, lower_to_llvm_dialect, walk

EXP_LOOP = """
func.func @NAME(%x: memref<?xf64> {llvm.noalias}, %y: memref<?xf64> {llvm.noalias}, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf64>
    %r = math.exp %v : f64
    memref.store %r, %y[%i] : memref<?xf64>
  }
  func.return
}
"""

TUNING = KernelTuning(vector_bits=256, interleave=4)


def _loop(label: str, body_lines: int, next_label: str) -> list[str]:
    return [
        f"{label}:",
        *[f'  %"{label}.{i}" = fadd double 1.0, 2.0' for i in range(body_lines)],
        f'  br label %"{label}"',
        f"{next_label}:",
    ]


def _function(name: str, loops: list[list[str]]) -> str:
    body = [line for loop in loops for line in loop]
    return "\n".join([
        f'define void @"{name}"(ptr noalias %".1", i64 %".2")',
        "{",
        "entry:",
        '  br label %"h1"',
        *body,
        "  ret void",
        "}",
    ])  # fmt: skip


def test_huge_loops_are_interleaved_less_then_not_at_all() -> None:
    """The interleaved body stays within ``INTERLEAVED_INSTRUCTIONS``: a loop of a
    quarter of it (its branch counted) gets the full count 4, of half of it 2, of more
    than all of it none."""
    text = "\n\n".join([
        _function(f"k{n}", [_loop("h1", n - 1, "after")])  # n instructions with the br
        for n in (INTERLEAVED_INSTRUCTIONS // 4, INTERLEAVED_INSTRUCTIONS // 2,
                  INTERLEAVED_INSTRUCTIONS + 1)
    ]) + "\n"  # fmt: skip
    out = add_kernel_hints(text, TUNING)
    assert '!0 = !{!"llvm.loop.interleave.count", i32 2}' in out
    assert '!1 = !{!"llvm.loop.interleave.count", i32 4}' in out
    assert "!2 = distinct !{!2, !1}" in out and "!3 = distinct !{!3, !0}" in out
    assert out.count("!llvm.loop !") == 2  # the largest loop is left as it is


def test_heavy_innermost_loops_get_the_interleave_count() -> None:
    heavy = HEAVY_LOOP_INSTRUCTIONS
    text = "\n\n".join([
        _function("heavy", [_loop("h1", heavy, "after")]),
        _function("light", [_loop("h1", heavy - 5, "after")]),
    ]) + "\n"  # fmt: skip
    out = add_kernel_hints(text, TUNING)
    marked = [line for line in out.splitlines() if "!llvm.loop" in line]
    # the heavy loop gets the host's count, the light (elementwise) one 1
    assert marked == ['  br label %"h1", !llvm.loop !2', '  br label %"h1", !llvm.loop !3']
    assert '!0 = !{!"llvm.loop.interleave.count", i32 1}' in out
    assert '!1 = !{!"llvm.loop.interleave.count", i32 4}' in out
    assert "!2 = distinct !{!2, !1}" in out and "!3 = distinct !{!3, !0}" in out
    assert out.count(f") #{ATTRIBUTE_GROUP}") == 2  # both functions
    assert f'attributes #{ATTRIBUTE_GROUP} = {{ "prefer-vector-width"="256" }}' in out
    llvm.parse_assembly(out).verify()


def _memory_loop(name: str, reads: str, writes: str, call: bool = False) -> str:
    """A light loop reading ``reads`` and writing ``writes`` (pointer arguments) through
    ``getelementptr``s, as ``convert_module`` prints a kernel."""
    return "\n".join([
        f'define void @"{name}"(ptr noalias %".1", ptr noalias %".2", i64 %".3")',
        "{",
        "entry:",
        '  br label %"h"',
        "h:",
        '  %"i" = phi i64 [0, %"entry"], [%"j", %"h"]',
        f'  %"p" = getelementptr inbounds i8, ptr %"{reads}", i64 %"i"',
        '  %"v" = load double, ptr %"p"',
        *(['  %"w" = call double @"f"(double %"v")'] if call else []),
        f'  %"q" = getelementptr inbounds i8, ptr %"{writes}", i64 %"i"',
        '  store double %"v", ptr %"q"',
        '  %"j" = add i64 %"i", 8',
        '  br label %"h"',
        "exit:",
        "  ret void",
        "}",
    ]) + "\n"  # fmt: skip


def test_light_loops_get_count_one_unless_they_accumulate_or_call() -> None:
    """A light elementwise loop is not interleaved (LLVM would, for nothing but compile
    time); one reading and writing the same buffer (a reduction's accumulator) or
    calling a function keeps LLVM's choice."""
    elementwise = add_kernel_hints(_memory_loop("copy", ".1", ".2"), TUNING)
    assert '  br label %"h", !llvm.loop !1' in elementwise
    assert '!0 = !{!"llvm.loop.interleave.count", i32 1}' in elementwise
    llvm.parse_assembly(elementwise).verify()
    for kept in (_memory_loop("accumulate", ".2", ".2"),
                 _memory_loop("calls", ".1", ".2", call=True)):  # fmt: skip
        assert "!llvm.loop" not in add_kernel_hints(kept, TUNING)


def test_only_innermost_loops_are_marked() -> None:
    lines = [
        'define void @"nest"(ptr noalias %".1")',
        "{",
        "entry:",
        '  br label %"outer"',
        "outer:",
        '  br label %"inner"',
        *_loop("inner", HEAVY_LOOP_INSTRUCTIONS, "inner.done"),
        '  br label %"outer"',
        "exit:",
        "  ret void",
        "}",
    ]
    out = add_kernel_hints("\n".join(lines) + "\n", TUNING)
    marked = [line for line in out.splitlines() if "!llvm.loop" in line]
    assert marked == ['  br label %"inner", !llvm.loop !1']


def test_no_hints_without_vector_width_or_interleave() -> None:
    text = _function("heavy", [_loop("h1", HEAVY_LOOP_INSTRUCTIONS, "after")]) + "\n"
    assert add_kernel_hints(text, KernelTuning(None, 1)) == text


@pytest.mark.parametrize(
    ("triple", "features", "bits", "interleave"),
    [
        ("x86_64-unknown-linux-gnu", {"avx512f": True, "avx2": True, "avx": True}, 512, 8),
        ("x86_64-unknown-linux-gnu", {"avx512f": False, "avx2": True, "avx": True}, 256, 4),
        ("x86_64-unknown-linux-gnu", {"sse2": True}, 128, 4),
        ("aarch64-unknown-linux-gnu", {"neon": True}, None, 4),
    ],
)
def test_tuning_follows_the_host_features(
    triple: str, features: dict[str, bool], bits: int | None, interleave: int
) -> None:
    """The vector width, and the interleave count its register file allows (32 AVX-512
    registers keep 8 chains of a heavy loop in flight without spilling; 16 keep 4)."""
    assert tuning_for(triple, features) == KernelTuning(bits, interleave)


def test_tuning_is_in_the_disk_cache_key() -> None:
    host = host_target()
    assert host.tuning == tuning_for(host.triple, dict(llvm.get_host_cpu_features()))
    fingerprint = native.environment_fingerprint()
    assert host.cpu in fingerprint and host.features in fingerprint
    assert host.tuning.key in fingerprint


def _exp_kernel(parse: Callable[[str], ModuleOp], ctx: Context, name: str) -> ModuleOp:
    module = parse(EXP_LOOP.replace("NAME", name))
    ExpandMathPolynomialsPass().apply(ctx, module)
    return lower_to_llvm_dialect(module)


def test_compiled_kernel_carries_the_hints(parse: Callable[[str], ModuleOp], ctx: Context) -> None:
    """A polynomial exp loop: the LLVM IR has both hints, the optimised IR vectorizes it
    at the host's preferred width with ``interleave`` vectors per iteration."""
    tuning = host_target().tuning
    ir = llvm_ir_text(_exp_kernel(parse, ctx, "hints_exp"), vector_math=False)
    if tuning.vector_bits is not None:
        assert f'"prefer-vector-width"="{tuning.vector_bits}"' in ir
        assert re.search(rf'^define void @"hints_exp"\(.*\) #{ATTRIBUTE_GROUP}$', ir, re.M)
    assert f'!"llvm.loop.interleave.count", i32 {tuning.interleave}' in ir
    assert re.search(r'^  br label %"?[^\s",]+"?, !llvm.loop !\d+$', ir, re.M)

    opt = str(walk(_exp_kernel(parse, ctx, "hints_exp_opt"), "llvm", "opt-ir",
                   RunOptions(vector_math=False)))
    lanes = tuning.lanes(64)
    body = opt[opt.index("vector.body:"):]
    body = body[: body.index("\n\n")]
    assert len(re.findall(rf"load <{lanes} x double>", body)) == tuning.interleave
    widths = {int(n) for n in re.findall(r"<(\d+) x double>", opt)}
    assert max(widths) == lanes  # no wider vectors than preferred, none narrower as widest

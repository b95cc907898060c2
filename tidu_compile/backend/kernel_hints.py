"""Per-host code-generation hints, added to the LLVM IR text before O3.

Two hints that LLVM's CPU model does not give on its own (``target.KernelTuning``):

* every defined function gets the attribute ``"prefer-vector-width"="<bits>"``: the
  vector width the loop vectorizer may use (512 on AVX-512 hosts, where LLVM would
  otherwise stay at 256 bits on server Intel CPUs);
* every heavy innermost loop (at least ``HEAVY_LOOP_INSTRUCTIONS`` instructions from
  its header to its back-edge, i.e. a loop body with expanded math) gets
  ``llvm.loop.interleave.count``: the vectorizer then runs that many independent
  vector iterations side by side, hiding the latency of the long polynomial chains.
  LLVM interleaves small loops by itself and leaves large ones at one. The count is
  bounded so that an interleaved body stays within ``INTERLEAVED_INSTRUCTIONS``;
* every light elementwise innermost loop (no buffer both read and written in it, no
  call) gets the count 1: LLVM would interleave it x4 by itself, which makes O3 and
  code generation of a per-op node 35-40% slower and runs no faster (a two-multiply
  kernel: equal ns per element from 64 to 1e6 elements, znver4). Reductions
  (accumulating into their result: a buffer read and written) keep LLVM's choice,
  whose independent accumulators they need.

Before (as ``convert_module`` prints a kernel)::

    define void @"k"(ptr noalias %".1", ptr noalias %".2", i64 %".3", i64 %".4")
    {
    .6:
      br label %".7"
    .7:
      ...
      br i1 %".12", label %".8", label %".9"
    .8:
      ...                                     ; >= HEAVY_LOOP_INSTRUCTIONS lines
      br label %".7"
    .9:
      ret void
    }

After::

    define void @"k"(ptr noalias %".1", ptr noalias %".2", i64 %".3", i64 %".4") #980
    ...
      br label %".7", !llvm.loop !1
    ...
    attributes #980 = { "prefer-vector-width"="256" }
    !0 = !{!"llvm.loop.interleave.count", i32 4}
    !1 = distinct !{!1, !0}

A back-edge is an unconditional ``br`` to a label defined earlier in the same
function (loops lowered from ``scf.for`` have exactly this shape); a loop is innermost
when no other back-edge lies between its header and its back-edge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .target import KernelTuning

__all__ = [
    "ATTRIBUTE_GROUP", "HEAVY_LOOP_INSTRUCTIONS", "INTERLEAVED_INSTRUCTIONS", "add_kernel_hints",
]

HEAVY_LOOP_INSTRUCTIONS = 24
"""Instructions (unoptimised, header to back-edge) from which a loop counts as heavy.
LLVM's vectorizer interleaves loops costing less than ~20 by itself (``SmallLoopCost``);
one expanded exp alone is ~35."""

INTERLEAVED_INSTRUCTIONS = 2048
"""At most this many instructions per interleaved loop body: a heavy loop of ``n``
instructions is interleaved ``min(tuning.interleave, INTERLEAVED_INSTRUCTIONS // n)``
times (at least once). Interleaving copies the body, and LLVM's O3 and code generation
grow faster than the code: a 200-op ``@tc.function`` chain took 10.9 s of O3 and code
generation interleaved x8 against 1.6 s not interleaved (Zen 5), while W1's backward
kernel (~150 instructions) keeps its x8."""

ATTRIBUTE_GROUP = 980
"""The attribute group number of the function attributes (``vecmath`` uses 900+)."""

_DEFINE = re.compile(r"^define\b[^\n]*\)(?P<attrs>[^)\n{]*)$")
_LABEL = re.compile(r'^"?(?P<name>[^\s":]+)"?:')
_BRANCH = re.compile(r'^\s+br label %"?(?P<target>[^\s",]+)"?\s*$')
_METADATA_ID = re.compile(r"^!(\d+)\s*=", re.MULTILINE)
_VALUE = r'%"?(?P<{}>[^\s",]+)"?'
_GEP = re.compile(r"^\s+" + _VALUE.format("name") + r" = getelementptr\b.*?, ptr "
                  + _VALUE.format("base"))
_ACCESS = re.compile(r"^\s+(?:" + _VALUE.format("loaded") + r" = )?(?P<op>load|store)\b.*"
                     r", ptr " + _VALUE.format("address") + r"\s*(?:,.*)?$")


@dataclass
class _Loop:
    header: int  # line index of the header label
    latch: int  # line index of the back-edge branch


def _loops(lines: list[str]) -> list[_Loop]:
    """Back-edges of every function, as (header line, back-edge line)."""
    loops: list[_Loop] = []
    labels: dict[str, int] = {}
    for index, line in enumerate(lines):
        if line.startswith("define"):
            labels = {}
            continue
        label = _LABEL.match(line)
        if label:
            labels[label.group("name")] = index
            continue
        branch = _BRANCH.match(line)
        if branch and branch.group("target") in labels:
            loops.append(_Loop(labels[branch.group("target")], index))
    return loops


def _instructions(lines: list[str], loop: _Loop) -> int:
    return sum(
        1 for line in lines[loop.header + 1 : loop.latch + 1]
        if line.startswith("  ") and line.strip()
    )  # fmt: skip


def _elementwise(lines: list[str], loop: _Loop) -> bool:
    """No buffer (a pointer argument, through its ``getelementptr``s) is both loaded and
    stored in the loop's body, and nothing is called there."""
    base: dict[str, str] = {}
    loaded: set[str] = set()
    stored: set[str] = set()
    for line in lines[loop.header + 1 : loop.latch + 1]:
        if " call " in line:
            return False
        if (gep := _GEP.match(line)) is not None:
            base[gep.group("name")] = base.get(gep.group("base"), gep.group("base"))
        elif (access := _ACCESS.match(line)) is not None:
            address = access.group("address")
            (loaded if access.group("op") == "load" else stored).add(base.get(address, address))
    return not loaded & stored


def add_kernel_hints(ir_text: str, tuning: KernelTuning) -> str:
    """``ir_text`` with the function attribute and the loop metadata of ``tuning``."""
    lines = ir_text.splitlines()
    loops = _loops(lines)
    innermost = [loop for loop in loops
                 if not any(loop.header < other.latch < loop.latch for other in loops)]  # fmt: skip
    heavy = [loop for loop in innermost if _instructions(lines, loop) >= HEAVY_LOOP_INSTRUCTIONS]
    light = [loop for loop in innermost
             if _instructions(lines, loop) < HEAVY_LOOP_INSTRUCTIONS
             and _elementwise(lines, loop)]  # fmt: skip
    trailer: list[str] = []
    counts = [min(tuning.interleave, INTERLEAVED_INSTRUCTIONS // _instructions(lines, loop))
              for loop in heavy]  # fmt: skip
    interleaved = [(loop, count) for loop, count in zip(heavy, counts, strict=True) if count > 1]
    interleaved += [(loop, 1) for loop in light]
    if interleaved:
        used = [int(n) for n in _METADATA_ID.findall(ir_text)]
        number = max(used, default=-1) + 1
        hints: dict[int, int] = {}  # interleave count -> its metadata node
        for count in sorted({count for _, count in interleaved}):
            hints[count] = number
            trailer.append(f'!{number} = !{{!"llvm.loop.interleave.count", i32 {count}}}')
            number += 1
        for loop, count in interleaved:
            lines[loop.latch] += f", !llvm.loop !{number}"
            trailer.append(f"!{number} = distinct !{{!{number}, !{hints[count]}}}")
            number += 1
    if tuning.vector_bits is not None:
        for index, line in enumerate(lines):
            match = _DEFINE.match(line)
            if match and "#" not in match.group("attrs"):
                lines[index] = f"{line} #{ATTRIBUTE_GROUP}"
        trailer.insert(
            0,
            f'attributes #{ATTRIBUTE_GROUP} = {{ "prefer-vector-width"="{tuning.vector_bits}" }}',
        )
    if not trailer:
        return ir_text
    return "\n".join([*lines, "", *trailer]) + "\n"

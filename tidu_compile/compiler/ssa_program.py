"""A backward program's data: ``NodeProgram``, a typed SSA program over positional ids.

``compiler.program`` builds it (from a tape node's recorded, linear and transposed
graphs), ``compiler.empty`` folds its zero-size values out, and the compiler imports
it into the ``tidu`` dialect. Its text is the compiler's cache identity::

    program(seed0: 8:float64, saved0: 8:float64) {
      v2 = Cos()(v1)
      v3 = Conj()(v2)
      v4 = Mul()(v0, v3)
      return (v4,)
    }

Value ids are positional: the arguments are ids ``0 .. arg_count - 1`` (cotangent
seeds first, then saved values), each instruction's outputs the next ids in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tidu_compile.ops.base import TensorType

__all__ = ["ArgSource", "Instr", "NodeProgram", "live_instructions", "renumbered"]


@dataclass(frozen=True, slots=True)
class ArgSource:
    """Where an argument comes from: ``("seed", i)`` or ``("saved", key_index)``.

    For ``saved``, ``index`` counts the recorded graph's input keys, then its output keys,
    then any retained intermediates (``build_program``'s ``saved_order``).
    """

    kind: str
    index: int


@dataclass(frozen=True, slots=True)
class Instr:
    """``outputs = op(*inputs)`` over value ids."""

    op: Any
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class NodeProgram:
    """A typed SSA program computing a node's input cotangents."""

    arg_sources: tuple[ArgSource, ...]
    types: tuple[TensorType, ...]  # one per value id; arguments are ids 0..len(args)-1
    instrs: tuple[Instr, ...]
    results: tuple[int | None, ...]

    @property
    def arg_count(self) -> int:
        return len(self.arg_sources)

    def __str__(self) -> str:
        args = ", ".join(
            f"{'seed' if s.kind == 'seed' else 'saved'}{s.index}: {self.types[i]}"
            for i, s in enumerate(self.arg_sources)
        )
        lines = [f"program({args}) {{"]
        for instr in self.instrs:
            outs = ", ".join(f"v{o}" for o in instr.outputs)
            ins = ", ".join(f"v{i}" for i in instr.inputs)
            lines.append(f"  {outs} = {instr.op!r}({ins})")
        results = ", ".join("None" if r is None else f"v{r}" for r in self.results)
        lines.append(f"  return ({results},)")
        lines.append("}")
        return "\n".join(lines)


def live_instructions(
    instrs: Sequence[Instr], results: Sequence[int | None]
) -> list[Instr]:
    """The instructions of ``instrs`` (in order) whose outputs ``results`` need, directly
    or through other kept instructions."""
    live = {r for r in results if r is not None}
    kept: list[Instr] = []
    for instr in reversed(instrs):
        if live.intersection(instr.outputs):
            kept.append(instr)
            live.update(instr.inputs)
    kept.reverse()
    return kept


def renumbered(
    program: NodeProgram, arg_ids: Sequence[int], instrs: Sequence[Instr],
    results: Sequence[int | None],
) -> NodeProgram:
    """The program of ``program``'s arguments ``arg_ids`` and ``instrs`` computing
    ``results``, its value ids renumbered in order (arguments first), so it is canonical."""
    order = [*arg_ids, *(o for instr in instrs for o in instr.outputs)]
    renumber = {old: new for new, old in enumerate(order)}
    return NodeProgram(
        tuple(program.arg_sources[i] for i in arg_ids),
        tuple(program.types[old] for old in order),
        tuple(Instr(i.op, tuple(renumber[v] for v in i.inputs),
                    tuple(renumber[v] for v in i.outputs)) for i in instrs),  # fmt: skip
        tuple(None if r is None else renumber[r] for r in results),
    )

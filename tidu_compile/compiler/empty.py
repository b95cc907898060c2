"""Zero-size values folded out of a backward program, so that it compiles.

A kernel over a zero-size tensor has nothing to do, and xDSL cannot lower zero-size
memrefs. Empty values come from empty slices (``x[3:1]``), empty index arrays and
zero-size inputs; every op that touches one folds to what it must give:

* an op with an empty result: a ``Constant`` of that (empty) shape;
* an op with an empty operand and a non-empty result: its value on no elements, a
  ``Constant`` of zeros (a sum over nothing: ``reduce_sum``, ``dot_general``,
  ``scatter_add``), of the pad value (``pad``), or the ``concatenate`` of the other
  pieces.

What no result needs any longer (an empty comparison, an unread argument's consumers)
is dropped. Afterwards a zero-size value is an argument or a constant: never a kernel
operand.
"""

from __future__ import annotations

from tidu_compile import ops
from tidu_compile.compiler.program import Instr, NodeProgram
from tidu_compile.ops.base import DIFFERENTIABLE_DTYPES, TensorType

__all__ = ["fold_empty_values"]


def _empty(t: TensorType) -> bool:
    return 0 in t.shape


def _folded(instr: Instr, types: tuple[TensorType, ...]) -> list[Instr]:
    """``instr`` without empty values (see the module docstring); [] drops it."""
    outputs = [types[o] for o in instr.outputs]
    op = instr.op
    if isinstance(op, ops.Concatenate) and not _empty(outputs[0]):
        pieces = [(i, s) for i, s in zip(instr.inputs, op.operand_shapes, strict=True)
                  if 0 not in s]  # fmt: skip
        joined = ops.Concatenate(op.axis, tuple(s for _, s in pieces))
        return [Instr(joined, tuple(i for i, _ in pieces), instr.outputs)]
    folded = []
    for output, t in zip(instr.outputs, outputs, strict=True):
        if t.dtype not in DIFFERENTIABLE_DTYPES:
            continue  # an empty mask or permutation: only folded ops read it
        value = op.value if isinstance(op, ops.Pad) and not _empty(t) else 0.0
        folded.append(Instr(ops.Constant(value, t.shape, t.dtype), (), (output,)))
    return folded


def fold_empty_values(program: NodeProgram) -> NodeProgram:
    """``program`` with no op reading or making a zero-size value (module docstring)."""
    types = program.types
    if not any(_empty(t) for t in types):
        return program
    instrs: list[Instr] = []
    for instr in program.instrs:
        touched = [types[v] for v in (*instr.inputs, *instr.outputs)]
        instrs.extend(_folded(instr, types) if any(map(_empty, touched)) else [instr])
    live = {r for r in program.results if r is not None}
    kept: list[Instr] = []
    for instr in reversed(instrs):
        if live.intersection(instr.outputs):
            kept.append(instr)
            live.update(instr.inputs)
    kept.reverse()
    return NodeProgram(program.arg_sources, types, tuple(kept), program.results)

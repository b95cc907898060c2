"""Zero-size values folded out of a backward program, so that it compiles.

A kernel over a zero-size tensor has nothing to do, and xDSL cannot lower zero-size
memrefs. Empty values come from empty slices (``x[3:1]``), empty index arrays and
zero-size inputs; every op that touches one folds to what it must give:

* an op with an empty result: a ``Constant`` of that (empty) shape;
* an op with an empty operand and a non-empty result: its value on no elements, a
  ``Constant`` of zeros (a sum over nothing: ``reduce_sum``, ``dot_general``,
  ``scatter_add``), of the pad value (``pad``), of the reduction's identity
  (``reduce_max``: -inf, ``reduce_min``: +inf, ``reduce_prod``: 1; on bool, false and
  true: a comparison of a constant with itself), or the ``concatenate`` of the other
  pieces.

A ``Scan`` of length 0 gives its initial carries (its outputs renamed to its carry
inputs) and empty stacked outputs; any other loop or cond on an empty value is not
folded (``compiler.program.compilable`` leaves such a node to the reference path:
a loop's value on nothing is not zeros).

What no result needs any longer (an empty comparison, an unread argument's consumers)
is dropped. Afterwards a zero-size value is an argument or a constant: never a kernel
operand.
"""

from __future__ import annotations

from tidu_compile import ops
from tidu_compile.compiler.ssa_program import Instr, NodeProgram, live_instructions
from tidu_compile.ops.base import DIFFERENTIABLE_DTYPES, TensorType

__all__ = ["fold_empty_values"]


def _empty(t: TensorType) -> bool:
    return 0 in t.shape


def _value_on_nothing(op: object, t: TensorType) -> float:
    """What ``op`` gives (in a non-empty result ``t``) when its operand is empty."""
    if isinstance(op, ops.Pad):
        return op.value  # type: ignore[return-value]
    if isinstance(op, ops.Reduction):  # its combiner's identity (KeyError: a new combiner)
        return getattr(op, "identity", None) or _IDENTITIES[op.combiner]
    return 0.0


#: The identity of a reduction's combiner, for reductions that do not name theirs.
_IDENTITIES = {"add": 0.0, "mul": 1.0}


def _folded(instr: Instr, types: list[TensorType]) -> list[Instr]:
    """``instr`` without empty values (see the module docstring); [] drops it. A value
    it needs of its own is added to ``types``."""
    outputs = [types[o] for o in instr.outputs]
    op = instr.op
    if isinstance(op, ops.Concatenate) and not _empty(outputs[0]):
        pieces = [(i, s) for i, s in zip(instr.inputs, op.operand_shapes, strict=True)
                  if 0 not in s]  # fmt: skip
        joined = ops.Concatenate(op.axis, tuple(s for _, s in pieces))
        return [Instr(joined, tuple(i for i, _ in pieces), instr.outputs)]
    folded = []
    for output, t in zip(instr.outputs, outputs, strict=True):
        value = 0.0 if _empty(t) else _value_on_nothing(op, t)
        extremum = isinstance(op, ops.Reduction) and op.combiner in ("max", "min")
        if t.dtype == "bool" and not _empty(t) and extremum:
            types.append(TensorType(t.shape, "float64"))  # any() is False, all() True
            direction = "ne" if op.identity < 0 else "eq"
            folded.append(Instr(ops.Constant(0.0, t.shape, "float64"), (), (len(types) - 1,)))
            folded.append(Instr(ops.Compare(direction), (len(types) - 1,) * 2, (output,)))
            continue
        if t.dtype not in DIFFERENTIABLE_DTYPES:
            continue  # an empty mask or permutation: only folded ops read it
        folded.append(Instr(ops.Constant(value, t.shape, t.dtype), (), (output,)))
    return folded


def fold_empty_values(program: NodeProgram) -> NodeProgram:
    """``program`` with no op reading or making a zero-size value (module docstring)."""
    if not any(_empty(t) for t in program.types):
        return program
    types = list(program.types)
    instrs: list[Instr] = []
    renamed: dict[int, int] = {}  # a zero-length scan's carries: its carry inputs
    for instr in program.instrs:
        if renamed:
            instr = Instr(instr.op, tuple(renamed.get(i, i) for i in instr.inputs),
                          instr.outputs)  # fmt: skip
        touched = [types[v] for v in (*instr.inputs, *instr.outputs)]
        if not any(map(_empty, touched)):
            instrs.append(instr)
        elif isinstance(instr.op, ops.Scan) and instr.op.length == 0:
            carries = instr.op.carries
            carried = instr.inputs[instr.op.consts : instr.op.consts + carries]
            renamed.update(zip(instr.outputs[:carries], carried, strict=True))
            stacked = Instr(instr.op, instr.inputs, instr.outputs[carries:])
            instrs.extend(_folded(stacked, types))
        else:
            instrs.extend(_folded(instr, types))
    results = tuple(None if r is None else renamed.get(r, r) for r in program.results)
    kept = live_instructions(instrs, results)
    return NodeProgram(program.arg_sources, tuple(types), tuple(kept), results)

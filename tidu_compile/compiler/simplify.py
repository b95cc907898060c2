"""A backward program with its repeated and identity instructions removed, before import.

The graphs a program joins repeat themselves: a fused ``value_and_grad`` traces one
``Constant(0.1)`` per loop step, the transposed graph conjugates every residual it
multiplies by (the identity on real dtypes), and the forward's ``h * w`` reappears in
its VJP. ``canonicalize`` and ``cse`` would merge them in the ``fused`` stage, after the
importer, the verifier and the passes had paid for each op (a third of a 100-op
chain's ops were such copies). Here they go first, in one pass over the instructions::

    program(seed0: 64:float64, saved0: 64:float64) {
      v2 = Constant(0.1, (), 'float64')()
      v3 = Constant(0.1, (), 'float64')()
      v4 = Conj()(v1)
      v5 = Mul()(v0, v4)
      v6 = Add()(v5, v2)
      v7 = Add()(v6, v3)
      return (v7,)
    }
    ==>
    program(seed0: 64:float64, saved0: 64:float64) {
      v2 = Constant(0.1, (), 'float64')()
      v3 = Mul()(v0, v1)
      v4 = Add()(v3, v2)
      v5 = Add()(v4, v2)
      return (v5,)
    }

Two instructions are one when their ops print alike, compare equal and read the same
values: the printed form is what the program's digest keys by, so merging never equates
what the cache tells apart (``Constant(0.0)`` and ``Constant(-0.0)`` stay two), and the
ops' own equality guards the ops that print only a name. Every op of the
set is a pure function of its operands. What nothing reads any longer is dropped and
the ids renumbered, so the result is canonical (the arguments stay: callers pass them).
"""

from __future__ import annotations

from tidu_compile.compiler.ssa_program import Instr, NodeProgram, live_instructions, renumbered
from tidu_compile.ops.base import COMPLEX_DTYPES
from tidu_compile.ops.complex_ops import Conj

__all__ = ["simplify_program"]


def simplify_program(program: NodeProgram) -> NodeProgram:
    """``program`` with each repeated instruction computed once and each ``Conj`` of a
    real value replaced by its operand (see the module docstring)."""
    alias: dict[int, int] = {}  # a value id -> the id that computes it already
    seen: dict[tuple[str, tuple[int, ...]], Instr] = {}
    kept: list[Instr] = []
    for instr in program.instrs:
        inputs = tuple(alias.get(i, i) for i in instr.inputs)
        op = instr.op
        if type(op) is Conj and program.types[inputs[0]].dtype not in COMPLEX_DTYPES:
            alias[instr.outputs[0]] = inputs[0]
            continue
        key = (repr(op), inputs)
        earlier = seen.get(key)
        if earlier is not None and type(earlier.op) is type(op) and earlier.op == op:
            alias.update(zip(instr.outputs, earlier.outputs, strict=True))
            continue
        seen.setdefault(key, instr)
        kept.append(Instr(op, inputs, instr.outputs) if inputs != instr.inputs else instr)
    if len(kept) == len(program.instrs):
        return program
    results = tuple(None if r is None else alias.get(r, r) for r in program.results)
    kept = live_instructions(kept, results)
    return renumbered(program, range(program.arg_count), kept, results)  # every argument

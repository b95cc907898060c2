"""A backward or graph program run by numpy, instruction by instruction.

What a node or graph runs while a background worker compiles its program: the very
program the native code will run (its calls inlined, zero-size values folded, repeated
instructions merged, cotangents no one needs pruned), so nothing is linearized,
transposed or type-checked again per call, and only the needed results are computed.
Each instruction is its op's ``evaluate`` on the values of its inputs::

    program(seed0: 8:float64, saved0: 8:float64) {      values = [seed0, saved0]
      v2 = Cos()(v1)                                     values[2] = cos(values[1])
      v3 = Mul()(v0, v2)                                 values[3] = values[0] * values[2]
      return (v3, None)                                  -> [values[3], None]
    }

The arguments' types are the program's (the caller keyed the program by them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.compiler.ssa_program import NodeProgram

__all__ = ["evaluate_program"]


def evaluate_program(program: NodeProgram, args: Sequence[Any]) -> list[np.ndarray | None]:
    """``program``'s results for ``args`` (one per argument, of its types), evaluated
    op by op; None where a result is None (a cotangent not computed)."""
    if len(args) != program.arg_count:
        raise ValueError(f"program: expected {program.arg_count} arguments, got {len(args)}")
    values: list[Any] = [*args, *([None] * (len(program.types) - len(args)))]
    for instr in program.instrs:
        results = instr.op.evaluate(*[values[i] for i in instr.inputs])
        for index, value in zip(instr.outputs, results, strict=True):
            values[index] = value
    return [None if r is None else np.asarray(values[r]) for r in program.results]

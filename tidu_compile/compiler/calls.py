"""Calls of traced user functions inlined into a program, so that it compiles.

A ``CustomJVPCall`` or ``CustomVJPCall`` (``ops.custom_calls``: ``tc.custom_jvp``,
``tc.custom_vjp``, ``tc.autograd.Function``) computes the graph it holds (its
``body``), made of standard ops; wherever a program computes a call (a traced
``@tc.function`` forward, a residual recomputed for a backward), the call is replaced
by the body's operations on the call's operands (nested calls too)::

    v3 = CustomJVPCall('log1pexp', 3f1c.., 9a0b..)(v1)      v4 = Exp()(v1)
    v5 = Mul()(v0, v3)                           ==>      v5 = Log1p()(v4)
                                                          v6 = Mul()(v0, v5)

New values take ids after the program's; the call's outputs are renamed to the body's.
"""

from __future__ import annotations

from typing import Any

from tidu_compile.compiler.ssa_program import Instr, NodeProgram
from tidu_compile.ops.base import TensorType
from tidu_compile.ops.custom_calls import CALL_OPS

__all__ = ["inline_calls"]


def inline_calls(program: NodeProgram) -> NodeProgram:
    """``program`` with every call op replaced by the operations of its body."""
    if not any(isinstance(instr.op, CALL_OPS) for instr in program.instrs):
        return program
    types = list(program.types)
    instrs: list[Instr] = []
    renamed: dict[int, int] = {}

    def emit(op: Any, inputs: list[int]) -> list[int]:
        if isinstance(op, CALL_OPS):
            body = op.body
            arity = body.arity
            operands = body.operands(inputs[:arity], inputs[arity:])
            where = dict(zip(body.graph.inputs, operands, strict=True))
            for node in body.graph.operations:
                outputs = emit(node.operation, [where[r.id] for r in node.inputs])  # type: ignore[union-attr]
                where.update(zip(node.outputs, outputs, strict=True))
            return [where[o] for o in body.graph.outputs[: op.output_count]]
        out_types: tuple[TensorType, ...] = tuple(op.infer_types(*(types[i] for i in inputs)))
        outputs = list(range(len(types), len(types) + len(out_types)))
        types.extend(out_types)
        instrs.append(Instr(op, tuple(inputs), tuple(outputs)))
        return outputs

    for instr in program.instrs:
        inputs = [renamed.get(i, i) for i in instr.inputs]
        if isinstance(instr.op, CALL_OPS):
            renamed.update(zip(instr.outputs, emit(instr.op, inputs), strict=True))
        else:
            instrs.append(Instr(instr.op, tuple(inputs), instr.outputs))
    results = tuple(None if r is None else renamed.get(r, r) for r in program.results)
    return NodeProgram(program.arg_sources, tuple(types), tuple(instrs), results)

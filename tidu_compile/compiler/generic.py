"""A program's shape class: its text with the extents abstracted, and their values.

``abstract(program)`` names every extent ``>= 2`` of the program's types and of its
ops' shape fields (``shape``, ``operand_shape``, ``lhs_shape``, ...) ``s0, s1, ...`` by
first appearance; ``0`` and ``1`` stay literal, as do all other op parameters::

    program(seed0: 256x10:float64, saved0: 256x64:float64) {     binding (256, 10, 64)
      v2 = ReduceSum(axes=(0,), operand_shape=(256, 10))(v0)
      ...
    ==> program(seed0: s0xs1:float64, saved0: s0xs2:float64) {
          v2 = ReduceSum(axes=(0,), operand_shape=(s0, s1))(v0)

Programs with equal abstract texts differ only in the binding (the values of ``s0, s1,
...``): they are likely to compile to the same kernels (the next batch size). It is a
grouping, not a licence to share code: background compiles of one class in flight wait
for each other (``executors.tiered``) so that the later ones reuse the first one's
object code, and they reuse it only when their own kernel text is the same
(``compiler.kernel_code``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tidu_compile.compiler.ssa_program import NodeProgram
from tidu_compile.ops.base import TensorType

__all__ = ["SHAPE_FIELDS", "Abstraction", "abstract"]

#: Op fields that hold extents (a shape, or a tuple of shapes): abstracted in the class.
SHAPE_FIELDS = frozenset(
    {"shape", "operand_shape", "lhs_shape", "rhs_shape", "big_shape", "index_shape",
     "operand_shapes"}
)  # fmt: skip


@dataclass(frozen=True)
class Abstraction:
    """``text``: the program with extents named ``s0, s1, ...``; ``binding``: their values."""

    text: str
    binding: tuple[int, ...]


class _Namer:
    """Names extents by first appearance; 0 and 1 stay literal."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def dim(self, extent: int) -> str:
        if extent in (0, 1):
            return str(extent)
        name = self.names.get(extent)
        if name is None:
            name = self.names[extent] = f"s{len(self.names)}"
        return name

    def shape(self, value: Any) -> str:
        """A shape, or a tuple of shapes, with its extents named."""
        if isinstance(value, tuple):
            return "(" + ", ".join(self.shape(v) for v in value) + ",)"
        if isinstance(value, int) and not isinstance(value, bool):
            return self.dim(value)
        return repr(value)

    def type(self, t: TensorType) -> str:
        return "x".join(self.dim(d) for d in t.shape) + f":{t.dtype}"

    def op(self, op: Any) -> str:
        if not dataclasses.is_dataclass(op):
            return repr(op)  # no fields to abstract: literal (a class of its own)
        fields = ", ".join(
            f"{f.name}={self.shape(getattr(op, f.name)) if f.name in SHAPE_FIELDS else repr(getattr(op, f.name))}"  # noqa: E501
            for f in dataclasses.fields(op)
            if f.repr
        )
        return f"{type(op).__module__}.{type(op).__qualname__}({fields})"


def abstract(program: NodeProgram) -> Abstraction:
    """``program``'s shape class and binding (~0.1 ms for a node of ten ops)."""
    namer = _Namer()
    lines = []
    for i, source in enumerate(program.arg_sources):
        lines.append(f"{source.kind}{source.index}: {namer.type(program.types[i])}")
    for instr in program.instrs:
        outs = " ".join(f"v{o}: {namer.type(program.types[o])}" for o in instr.outputs)
        ins = ", ".join(f"v{i}" for i in instr.inputs)
        lines.append(f"{outs} = {namer.op(instr.op)}({ins})")
    lines.append(f"return {program.results}")
    return Abstraction("\n".join(lines), tuple(namer.names))

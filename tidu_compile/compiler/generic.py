"""A program's shape class: its text with the extents abstracted, and their values.

Kernels loop over the rows ``[lo, hi)`` of their domain's first dimension, passed at
run time, so two programs that differ only in, say, the batch size usually compile to
the same machine code. ``abstract(program)`` names every extent ``>= 2`` of the
program's types and of its ops' shape fields (``shape``, ``operand_shape``,
``lhs_shape``, ...) ``s0, s1, ...`` by first appearance; ``0`` and ``1`` stay literal
(broadcasts and no-op transposes depend on them), as do all other op parameters (so
``Slice(start=(3,))`` or a constant ``1/n`` still split classes)::

    program(seed0: 256x10:float64, saved0: 256x64:float64) {     binding (256, 10, 64)
      v2 = ReduceSum(axes=(0,), operand_shape=(256, 10))(v0)
      ...
    ==> program(seed0: s0xs1:float64, saved0: s0xs2:float64) {
          v2 = ReduceSum(axes=(0,), operand_shape=(s0, s1))(v0)

Programs with equal abstract texts differ only in the binding (the values of
``s0, s1, ...``; equal extents share one name, so the pattern of equalities is part of
the class). Which of the names the compiled code really fixes is decided once per
compiled representative (``compiler.store``): ``plan_builder.baked_integers`` lists
every integer the kernels' loop nests spell out, an over-approximation of what they
depend on.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from tidu_compile.compiler.program import NodeProgram
from tidu_compile.ops.base import TensorType

__all__ = [
    "SHAPE_FIELDS", "Abstraction", "abstract", "integers", "map_shape_fields",
    "other_field_integers",
]

#: Op fields that hold extents (a shape, or a tuple of shapes): abstracted in the key
#: and remapped when a plan is instantiated for another binding.
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


def map_shape_fields(op: Any, dim: Any) -> Any:
    """``op`` with each extent ``d`` of its shape fields replaced by ``dim(d)``."""
    if not dataclasses.is_dataclass(op):
        return op
    changes = {
        f.name: _map_shape(getattr(op, f.name), dim)
        for f in dataclasses.fields(op)
        if f.name in SHAPE_FIELDS
    }
    return dataclasses.replace(op, **changes) if changes else op  # type: ignore[type-var]


def _map_shape(value: Any, dim: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_map_shape(v, dim) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return dim(value)
    return value


def other_field_integers(op: Any) -> set[int]:
    """The integers spelled in ``op``'s fields other than its shape fields."""
    if not dataclasses.is_dataclass(op):
        return {-1}  # unknown: the caller treats it as fixing everything
    text = " ".join(
        repr(getattr(op, f.name)) for f in dataclasses.fields(op) if f.name not in SHAPE_FIELDS
    )
    return integers(text)


_INTEGER = re.compile(r"(?<![\w.])\d+(?![\w.])")


def integers(text: str) -> set[int]:
    """The integers spelled in ``text`` (not inside names nor floats' digits)."""
    return {int(token) for token in _INTEGER.findall(text)}

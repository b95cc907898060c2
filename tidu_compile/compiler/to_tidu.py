"""Import a ``NodeProgram`` into the ``tidu`` dialect, and read library ops back.

``import_program`` gives one ``func.func @node``: arguments are the cotangent seeds and
saved values, results the input cotangents (absent cotangents are not returned)::

    func.func @node(%seed0: tensor<8xf64>, %in0: tensor<8xf64>) -> tensor<8xf64> {
      %0 = tidu.cos %in0 : tensor<8xf64>
      %1 = tidu.conj %0 : tensor<8xf64>
      %2 = tidu.mul %seed0, %1 : tensor<8xf64>
      func.return %2 : tensor<8xf64>
    }

``TO_TIDU`` has one row per primitive with parameters whose dialect op is written by
hand; a structural op is made from its primitive's fields and converts itself
(``StructuralOperation.of_primitive``), and parameterless primitives map through the op
table (``tidu.op_class``). ``primitive_of`` inverts it (``FROM_TIDU``,
``StructuralOperation.to_primitive``) for the ops that stay outside kernels and run as
numpy library calls in the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tidu_compile import ops
from tidu_compile.compiler.program import NodeProgram
from tidu_compile.dialects import tidu
from tidu_compile.ops.base import TensorType as OpType

__all__ = [
    "TO_TIDU", "UnloweredOpError", "dtype_name", "import_program", "op_type", "primitive_of",
    "verify_imported",
]


class UnloweredOpError(NotImplementedError):
    """A primitive (or tidu op) has no row in the importer's tables."""


Builder = Callable[[Any, Sequence[SSAValue], Sequence[Attribute]], Operation]

#: Primitive class -> builder of its tidu op (hand-written ops with parameters only).
TO_TIDU: dict[type, Builder] = {
    ops.Compare: lambda p, xs, ts: tidu.CompareOp(p.direction, xs[0], xs[1]),
    ops.Pow: lambda p, xs, ts: tidu.PowOp(xs[0], p.exponent),
    ops.Scale: lambda p, xs, ts: tidu.ScaleOp(xs[0], p.factor),
    ops.Shift: lambda p, xs, ts: tidu.ShiftOp(xs[0], p.offset),
    ops.FullLike: lambda p, xs, ts: tidu.FullLikeOp(xs[0], p.value),
    ops.ToComplex: lambda p, xs, ts: tidu.ToComplexOp(xs[0], p.imaginary),
    ops.Convert: lambda p, xs, ts: tidu.ConvertOp(xs[0], ts[0]),
    ops.Constant: lambda p, xs, ts: tidu.ConstantOp(p.value, ts[0]),
    ops.DotGeneral: lambda p, xs, ts: tidu.DotGeneralOp(
        xs[0], xs[1], p.lhs_contracting, p.rhs_contracting, p.lhs_batch, p.rhs_batch
    ),
    ops.Slice: lambda p, xs, ts: tidu.SliceOp(xs[0], p.start, p.step, p.shape),
    ops.Pad: lambda p, xs, ts: tidu.PadOp(xs[0], p.start, p.step, p.shape, p.value),
    ops.Concatenate: lambda p, xs, ts: tidu.ConcatenateOp(xs, p.axis),
    ops.Gather: lambda p, xs, ts: tidu.GatherOp(xs[0], xs[1:], p.axis),
    ops.ScatterAdd: lambda p, xs, ts: tidu.ScatterAddOp(xs[0], xs[1:], p.axis, p.big_shape),
}


def _to_tidu(primitive: Any, operands: Sequence[SSAValue], types: Sequence[Attribute]) -> Operation:
    builder = TO_TIDU.get(type(primitive))
    if builder is not None:
        return builder(primitive, operands, types)
    op_class = tidu.OP_OF_PRIMITIVE.get(type(primitive))
    if op_class is None:
        raise UnloweredOpError(f"stage tidu: no tidu op for primitive {primitive!r}")
    if issubclass(op_class, tidu.StructuralOperation):
        return op_class.of_primitive(primitive, operands, types)
    return op_class(*operands)  # type: ignore[call-arg]


def _xdsl_type(t: OpType) -> TensorType:
    return tidu.tensor_type(t.shape, t.dtype)


def import_program(program: NodeProgram, name: str = "node") -> ModuleOp:
    """The ``tidu`` module of ``program``: one ``func.func @name``."""
    arg_types = [_xdsl_type(program.types[i]) for i in range(program.arg_count)]
    block = Block(arg_types=arg_types)
    for i, source in enumerate(program.arg_sources):
        block.args[i].name_hint = f"{'seed' if source.kind == 'seed' else 'saved'}{source.index}"
    values: dict[int, SSAValue] = {i: block.args[i] for i in range(program.arg_count)}
    for instr in program.instrs:
        operands = [values[i] for i in instr.inputs]
        op = _to_tidu(instr.op, operands, [_xdsl_type(program.types[o]) for o in instr.outputs])
        block.add_op(op)
        for value_id, result in zip(instr.outputs, op.results, strict=True):
            expected = _xdsl_type(program.types[value_id])
            if result.type != expected:
                raise TypeError(
                    f"stage tidu: {instr.op!r} produced {result.type}, the program says {expected}"
                )
            values[value_id] = result
    returned = [values[r] for r in program.results if r is not None]
    block.add_op(func.ReturnOp(*returned))
    function = func.FuncOp(
        name, (arg_types, [v.type for v in returned]), Region(block)
    )
    return ModuleOp([function])


_VERIFIED: dict[tuple[Any, ...], None] = {}
"""Signatures of the imported ops that verified (bounded; attributes are immutable)."""
_VERIFIED_LIMIT = 8192


def verify_imported(module: ModuleOp) -> None:
    """``module.verify()`` for an ``import_program`` module, each op's verifier run once
    per signature: an op without regions or successors, inside its block, verifies by its
    class, operand and result types, properties, attributes and parent's class alone, and
    a program's hundreds of ops have a few dozen of them (the verifier was 60% of the
    ``tidu`` stage of a 100-op chain). Raises what ``verify`` raises."""
    module.verify(verify_nested_ops=False)
    for function in module.ops:
        function.verify(verify_nested_ops=False)
        for region in function.regions:
            for block in region.blocks:
                for op in block.ops:
                    if op.regions or op.successors or op is block.last_op:
                        op.verify()
                        continue
                    key = (type(op), type(function), tuple(v.type for v in op.operands),
                           tuple(r.type for r in op.results),
                           tuple(op.properties.items()), tuple(op.attributes.items()))  # fmt: skip
                    try:
                        known = key in _VERIFIED
                    except TypeError:  # an unhashable attribute: verified every time
                        op.verify()
                        continue
                    if not known:
                        op.verify()
                        if len(_VERIFIED) >= _VERIFIED_LIMIT:
                            _VERIFIED.clear()
                        _VERIFIED[key] = None


# ------------------------------------------------------------------ back to primitives


def op_type(value: SSAValue) -> OpType:
    """The primitive-level type (shape, dtype name) of a tidu tensor value."""
    t = value.type
    if not isinstance(t, TensorType):
        raise TypeError(f"expected a tensor value, got {t}")
    return OpType(tuple(t.get_shape()), dtype_name(t.element_type))


def dtype_name(element: Attribute) -> str:
    """The numpy dtype name of a tidu element type (``f32`` -> ``"float32"``)."""
    for dtype, known in tidu.DTYPE_ELEMENT_TYPES.items():
        if known == element:
            return dtype
    raise TypeError(f"element type {element} has no numpy dtype")


#: tidu op class -> primitive reconstructor (hand-written ops with parameters only).
FROM_TIDU: dict[type, Callable[[Any], Any]] = {
    tidu.CompareOp: lambda op: ops.Compare(op.direction.data),
    tidu.PowOp: lambda op: ops.Pow(op.parameter),
    tidu.ShiftOp: lambda op: ops.Shift(op.parameter),
    tidu.ScaleOp: lambda op: ops.Scale(_scalar(op.value)),
    tidu.FullLikeOp: lambda op: ops.FullLike(_scalar(op.value)),
    tidu.ToComplexOp: lambda op: ops.ToComplex(op.is_imaginary),
    tidu.ConvertOp: lambda op: ops.Convert(
        op_type(op.results[0]).dtype, op_type(op.operands[0]).dtype
    ),
    tidu.ConstantOp: lambda op: ops.Constant(
        _scalar(op.value), op_type(op.results[0]).shape, op_type(op.results[0]).dtype
    ),
    tidu.DotGeneralOp: lambda op: ops.DotGeneral(
        tuple(op.lhs_contracting.get_values()),
        tuple(op.rhs_contracting.get_values()),
        tuple(op.lhs_batch.get_values()),
        tuple(op.rhs_batch.get_values()),
        op_type(op.operands[0]).shape,
        op_type(op.operands[1]).shape,
    ),
    tidu.SliceOp: lambda op: ops.Slice(
        tuple(op.start.get_values()),
        tuple(op.step.get_values()),
        op_type(op.results[0]).shape,
        op_type(op.operands[0]).shape,
    ),
    tidu.PadOp: lambda op: ops.Pad(
        tuple(op.start.get_values()),
        tuple(op.step.get_values()),
        op_type(op.results[0]).shape,
        op_type(op.operands[0]).shape,
        _scalar(op.value),
    ),
    tidu.ConcatenateOp: lambda op: ops.Concatenate(
        op.axis_value, tuple(op_type(v).shape for v in op.operands)
    ),
    tidu.GatherOp: lambda op: ops.Gather(
        op.axis_value,
        op_type(op.operands[0]).shape,
        op_type(op.operands[1]).shape,
        len(op.operands) - 1,
    ),
    tidu.ScatterAddOp: lambda op: ops.ScatterAdd(
        op.axis_value,
        op_type(op.results[0]).shape,
        op_type(op.operands[1]).shape,
        len(op.operands) - 1,
    ),
}


def _scalar(value: complex) -> complex | float:
    return value.real if value.imag == 0 else value


def primitive_of(op: Operation) -> Any:
    """The primitive a tidu op computes (used for library calls between kernels)."""
    rebuild = FROM_TIDU.get(type(op))
    if rebuild is not None:
        return rebuild(op)
    if isinstance(op, tidu.StructuralOperation):
        return op.to_primitive()
    primitive = tidu.primitive_class(type(op))
    if primitive is None:
        raise UnloweredOpError(f"stage loops: no primitive for {op.name}")
    return primitive()

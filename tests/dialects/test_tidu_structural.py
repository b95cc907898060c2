"""Structural ops made from their primitives' fields (``tidu_structural``): the syntax,
the import and export, the verifier of an op of no family, and the errors that name
what a declaration lacks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from tidu_compile.dialects import tidu
from tidu_compile.dialects.tidu_structural import TypeRuleOperation, structural_op
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, TensorType, f64
from xdsl.dialects.func import Func
from xdsl.ir import Block

from tidu_compile import ops
from tidu_compile.ops.base import TensorType as OpType
from tidu_compile.ops.ir_fields import ir_fields, shape_of_operand


@dataclass(frozen=True)
class RepeatAlong(ops.TensorOp):
    """``x`` repeated ``count`` times along ``axis`` (a toy layout op of no family)."""

    axis: int
    count: int
    operand_shape: tuple[int, ...] = shape_of_operand()
    backwards: bool = False
    mnemonic: ClassVar[str] = "repeat_along"
    input_count = 1

    def infer_types(self, *inputs: OpType) -> tuple[OpType, ...]:
        (t,) = inputs
        if t.shape != self.operand_shape:
            raise ValueError(f"{self!r}: operand has shape {t.shape}")
        shape = list(t.shape)
        shape[self.axis] *= self.count
        return (OpType(tuple(shape), t.dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.repeat(arrays[0], self.count, self.axis),)


REPEAT_ALONG = structural_op(RepeatAlong, TypeRuleOperation)


def _context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, tidu.Tidu):
        ctx.load_dialect(dialect)
    ctx.load_op(REPEAT_ALONG)
    return ctx


def test_an_op_of_no_family_prints_its_fields_and_gives_back_its_primitive(ir) -> None:
    primitive = RepeatAlong(1, 2, (4, 8), backwards=True)
    block = Block(arg_types=[TensorType(f64, [4, 8])])
    op = REPEAT_ALONG.of_primitive(primitive, block.args, [TensorType(f64, [4, 16])])
    block.add_op(op)
    op.verify()
    assert ir.print(op) == (
        "%0 = tidu.repeat_along %1, axis = 1, count = 2 backwards : tensor<4x8xf64> -> "
        "tensor<4x16xf64>"
    )
    assert op.to_primitive() == primitive
    assert "%y = tidu.repeat_along %x0, axis = N, count = N [backwards] : T0 -> R" in (
        REPEAT_ALONG.__doc__ or ""
    )


def test_an_op_of_no_family_round_trips_and_is_verified_by_its_type_rule(ir) -> None:
    parsing = type(ir)(_context())
    text = ir.wrap("  %r = tidu.repeat_along %x, axis = 0, count = 3 : "
                   "tensor<4x8xf64> -> tensor<12x8xf64>")  # fmt: skip
    printed = parsing.round_trip(text, generic=False)
    assert "%r = tidu.repeat_along %x, axis = 0, count = 3 : tensor<4x8xf64>" in printed
    generic = parsing.round_trip(text, generic=True)
    assert "<{axis = 0 : i64, count = 3 : i64}>" in generic
    wrong = text.replace("tensor<12x8xf64>", "tensor<4x24xf64>")
    assert "tidu.repeat_along gives 12x8:float64 by the type rule of RepeatAlong(" in (
        parsing.verify_error(wrong)
    )
    missing = text.replace(", axis = 0, count = 3", "")
    with pytest.raises(Exception, match="tidu.repeat_along expects `, axis = ...` after"):
        parsing.parse(missing)


def test_a_field_the_dialect_cannot_hold_is_named() -> None:
    @dataclass(frozen=True)
    class Scaled(ops.TensorOp):
        factor: float
        input_count = 1

    with pytest.raises(TypeError, match=r"Scaled.factor: a float field has no property kind"):
        ir_fields(Scaled)

    @dataclass(frozen=True)
    class Flagged(ops.TensorOp):
        on: bool = True
        input_count = 1

    with pytest.raises(TypeError, match="Flagged.on: a flag must default to False"):
        ir_fields(Flagged)


def test_a_reduction_without_a_combiner_is_named() -> None:
    @dataclass(frozen=True)
    class ReduceMean(ops.Reduction):
        mnemonic: ClassVar[str] = "reduce_mean"

    with pytest.raises(TypeError, match="ReduceMean.combiner is None: a reduction fused"):
        structural_op(ReduceMean, tidu.ReduceOperation)

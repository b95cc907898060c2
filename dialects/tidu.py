"""The `tidu` xDSL dialect: one op per tensor primitive, plus the fused-kernel ops.

Values are ranked tensors with static shapes (`tensor<4x8xf64>`, `tensor<f64>`) of
f32, f64, complex<f32>, complex<f64>, i1 or the integers i8, i16, i32, i64; the
elementwise ops also take scalars of those types, which is how they appear in the body
of a `tidu.kernel`.

The ops live in these files, re-exported here:
- `tidu_elementwise`: the hand-written elementwise ops and the family bases;
- `tidu_table`: the ops generated from the op table (exp, log, sub, div, ...);
- `tidu_shape`: broadcast_in_dim, reshape, transpose, dot_general;
- `tidu_reduce`: reduce_sum, reduce_max, reduce_min, reduce_prod, argmax, argmin;
- `tidu_indexing`: slice, pad, concatenate, gather, scatter_add;
- `tidu_scan`: cum_sum, cum_prod, linear_scan, argsort;
- `tidu_kernel`: kernel and yield.
`tidu_base` holds the type helpers and the elementwise family base class.

The op list derives from the primitive op table (`tidu_table`): every primitive has one
op, hand-written (`HAND_WRITTEN_OPS`) or generated (`GENERATED_OPS`); `op_class` and
`primitive_class` map between primitive classes and op classes. `tensor_type(shape,
dtype)` turns a numpy shape and dtype name into the tidu tensor type.
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation

from tidu_compile.ops import TensorOp

from .tidu_base import (
    DTYPE_ELEMENT_TYPES,
    ElementKind,
    ElementwiseOperation,
    element_type,
    is_value_type,
    shape_of,
    tensor_type,
    with_element_type,
)
from .tidu_constant import ConstantOp
from .tidu_elementwise import (
    COMPARE_DIRECTIONS,
    AddOp,
    BinaryElementwiseOperation,
    CompareOp,
    ComplexPartOperation,
    ConjOp,
    ConvertOp,
    FloatParameterUnaryOperation,
    FullLikeOp,
    ImagOp,
    LiteralUnaryOperation,
    MulOp,
    NegOp,
    PowOp,
    RealOp,
    ScaleOp,
    SelectOp,
    ShiftOp,
    SinCosOp,
    ToComplexOp,
    UnaryElementwiseOperation,
)
from .tidu_indexing import ConcatenateOp, GatherOp, PadOp, ScatterAddOp, SliceOp
from .tidu_kernel import KernelOp, YieldOp
from .tidu_reduce import (
    ArgmaxOp,
    ArgminOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReduceOperation,
    ReduceProdOp,
    ReduceSumOp,
)
from .tidu_scan import ArgsortOp, CumProdOp, CumSumOp, LinearScanOp
from .tidu_shape import BroadcastInDimOp, DotGeneralOp, ReshapeOp, TransposeOp
from .tidu_table import derive_ops

HAND_WRITTEN_OPS: tuple[type[IRDLOperation], ...] = (
    # elementwise with syntax, traits or canonicalization of their own
    AddOp, MulOp, NegOp, ConjOp, RealOp, ImagOp, SinCosOp, CompareOp, SelectOp,
    PowOp, ScaleOp, ShiftOp, FullLikeOp, ToComplexOp, ConvertOp, ConstantOp,
    # shape
    BroadcastInDimOp, ReshapeOp, TransposeOp, DotGeneralOp,
    # reductions (argmax, argmin: library calls)
    ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ArgmaxOp, ArgminOp,
    # indexing and joining
    SliceOp, PadOp, ConcatenateOp, GatherOp, ScatterAddOp,
    # scans (library calls)
    CumSumOp, CumProdOp, LinearScanOp, ArgsortOp,
)  # fmt: skip

OP_OF_PRIMITIVE, GENERATED_OPS = derive_ops(HAND_WRITTEN_OPS)
"""Primitive class -> its dialect op class; the ops generated from the op table."""

PRIMITIVE_OF_OP: dict[type[IRDLOperation], type[TensorOp]] = {
    op: primitive for primitive, op in OP_OF_PRIMITIVE.items()
}
"""Dialect op class -> the primitive class it computes (the kernel and fusion ops have none)."""

Tidu = Dialect("tidu", [*OP_OF_PRIMITIVE.values(), KernelOp, YieldOp], [])


def op_class(primitive: type[TensorOp]) -> type[IRDLOperation]:
    """The dialect op of a primitive class (`op_class(ops.Exp)` is `tidu.exp`'s class)."""
    try:
        return OP_OF_PRIMITIVE[primitive]
    except KeyError:
        raise KeyError(f"primitive {primitive.__name__} is not in the op table") from None


def primitive_class(op: type[IRDLOperation]) -> type[TensorOp] | None:
    """The primitive class a dialect op computes, or None (kernel, yield, other dialects)."""
    return PRIMITIVE_OF_OP.get(op)


__all__ = [
    "COMPARE_DIRECTIONS",
    "DTYPE_ELEMENT_TYPES",
    "GENERATED_OPS",
    "HAND_WRITTEN_OPS",
    "OP_OF_PRIMITIVE",
    "PRIMITIVE_OF_OP",
    "AddOp",
    "ArgmaxOp",
    "ArgminOp",
    "ArgsortOp",
    "BinaryElementwiseOperation",
    "BroadcastInDimOp",
    "CompareOp",
    "ConcatenateOp",
    "ComplexPartOperation",
    "ConjOp",
    "ConstantOp",
    "ConvertOp",
    "CumProdOp",
    "CumSumOp",
    "DotGeneralOp",
    "ElementKind",
    "ElementwiseOperation",
    "FloatParameterUnaryOperation",
    "FullLikeOp",
    "GatherOp",
    "ImagOp",
    "KernelOp",
    "LinearScanOp",
    "LiteralUnaryOperation",
    "MulOp",
    "NegOp",
    "PadOp",
    "PowOp",
    "RealOp",
    "ReduceMaxOp",
    "ReduceMinOp",
    "ReduceOperation",
    "ReduceProdOp",
    "ReduceSumOp",
    "ReshapeOp",
    "ScaleOp",
    "ScatterAddOp",
    "SelectOp",
    "ShiftOp",
    "SinCosOp",
    "SliceOp",
    "Tidu",
    "ToComplexOp",
    "TransposeOp",
    "UnaryElementwiseOperation",
    "YieldOp",
    "element_type",
    "is_value_type",
    "op_class",
    "primitive_class",
    "shape_of",
    "tensor_type",
    "with_element_type",
]

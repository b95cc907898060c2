"""The `tidu` xDSL dialect: one op per tensor primitive, plus the fused-kernel ops.

Values are ranked tensors with static shapes (`tensor<4x8xf64>`, `tensor<f64>`) of
f32, f64, complex<f32>, complex<f64>, i1 or the integers i8, i16, i32, i64; the
elementwise ops also take scalars of those types, which is how they appear in the body
of a `tidu.kernel`.

The ops live in these files, re-exported here:
- `tidu_elementwise`: the hand-written elementwise ops and the family bases;
- `tidu_structural`: the structural ops, made from their primitives' fields;
- `tidu_shape`: broadcast_in_dim, reshape, transpose, dot_general;
- `tidu_reduce`: the families of reduce_sum, reduce_max, reduce_min, reduce_prod and of
  argmax, argmin;
- `tidu_scan`: the family of cum_sum, cum_prod, linear_scan, argsort;
- `tidu_indexing`: slice, pad, concatenate, gather, scatter_add;
- `tidu_linalg`: the family of the solves and factorisations (several results);
- `tidu_kernel`: kernel and yield.
`tidu_base` holds the type helpers and the elementwise family base class.

The op list derives from the primitive op table (`tidu_table`): every primitive has one
op, hand-written (`HAND_WRITTEN_OPS`), generated (`GENERATED_OPS`, elementwise) or made
from its fields (`STRUCTURAL_OPS`, each here under its class name: `tidu.CumSumOp`);
`op_class` and `primitive_class` map between primitive classes and op classes.
`tensor_type(shape, dtype)` turns a numpy shape and dtype name into the tidu tensor type.
This module also gives the ops with the `TiduCanonicalization` trait their patterns
(`tidu_canonicalize`).
"""

from __future__ import annotations

from xdsl.ir import Dialect

from .tidu_base import (
    DTYPE_ELEMENT_TYPES,
    ElementKind,
    ElementwiseOperation,
    TiduCanonicalization,
    element_type,
    is_value_type,
    shape_of,
    tensor_type,
    with_element_type,
)
from .tidu_canonicalize import PATTERNS
from .tidu_constant import ConstantOp
from .tidu_control import TracedPrimitiveAttr
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
from .tidu_linalg import LinalgOperation
from .tidu_reduce import ArgExtremumOperation, ReduceOperation
from .tidu_scan import AlongAxisOperation
from .tidu_shape import BroadcastInDimOp, DotGeneralOp, ReshapeOp, TransposeOp
from .tidu_structural import StructuralOperation, TypeRuleOperation
from .tidu_table import (
    GENERATED_OPS,
    HAND_WRITTEN_OPS,
    OP_OF_PRIMITIVE,
    PRIMITIVE_OF_OP,
    STRUCTURAL_OPS,
    op_class,
    primitive_class,
)

TiduCanonicalization.attach(PATTERNS)

globals().update({op.__name__: op for op in STRUCTURAL_OPS})  # tidu.CumSumOp, ...

Tidu = Dialect("tidu", [*OP_OF_PRIMITIVE.values(), KernelOp, YieldOp], [TracedPrimitiveAttr])


__all__ = [
    "COMPARE_DIRECTIONS",
    "DTYPE_ELEMENT_TYPES",
    "GENERATED_OPS",
    "HAND_WRITTEN_OPS",
    "OP_OF_PRIMITIVE",
    "PRIMITIVE_OF_OP",
    "STRUCTURAL_OPS",
    "AddOp",
    "AlongAxisOperation",
    "ArgExtremumOperation",
    "BinaryElementwiseOperation",
    "BroadcastInDimOp",
    "CompareOp",
    "ConcatenateOp",
    "ComplexPartOperation",
    "ConjOp",
    "ConstantOp",
    "ConvertOp",
    "DotGeneralOp",
    "ElementKind",
    "ElementwiseOperation",
    "FloatParameterUnaryOperation",
    "FullLikeOp",
    "GatherOp",
    "ImagOp",
    "KernelOp",
    "LiteralUnaryOperation",
    "MulOp",
    "NegOp",
    "PadOp",
    "PowOp",
    "RealOp",
    "ReduceOperation",
    "ReshapeOp",
    "ScaleOp",
    "ScatterAddOp",
    "SelectOp",
    "ShiftOp",
    "SinCosOp",
    "SliceOp",
    "StructuralOperation",
    "Tidu",
    "ToComplexOp",
    "TransposeOp",
    "TypeRuleOperation",
    "LinalgOperation",
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

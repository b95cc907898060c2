"""The `tidu` xDSL dialect: one op per tensor primitive, plus the fused-kernel ops.

Values are ranked tensors with static shapes (`tensor<4x8xf64>`, `tensor<f64>`) of
f32, f64, complex<f32>, complex<f64> or i1; the elementwise ops also take scalars of
those types, which is how they appear in the body of a `tidu.kernel`.

The ops live in three files, re-exported here:
- `tidu_elementwise`: arithmetic, math, compare/select, conversions, constants;
- `tidu_shape`: broadcast_in_dim, reduce_sum, reshape, transpose, dot_general;
- `tidu_kernel`: kernel and yield.
`tidu_base` holds the type helpers and the elementwise family base class.

`PRIMITIVE_TO_OP` maps the class name of a Python primitive (`tidu_compile.ops`) to
its op class, for the importer; `tensor_type(shape, dtype)` turns a numpy shape and
dtype name into the tidu tensor type.
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation

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
    CosOp,
    DivOp,
    ExpOp,
    FloatParameterUnaryOperation,
    FullLikeOp,
    ImagOp,
    LiteralUnaryOperation,
    LogOp,
    MaximumOp,
    MulOp,
    NegOp,
    PowOp,
    RealOp,
    ScaleOp,
    SelectOp,
    ShiftOp,
    SinCosOp,
    SinOp,
    SqrtOp,
    SubOp,
    TanhOp,
    ToComplexOp,
    UnaryElementwiseOperation,
)
from .tidu_kernel import KernelOp, YieldOp
from .tidu_shape import BroadcastInDimOp, DotGeneralOp, ReduceSumOp, ReshapeOp, TransposeOp

Tidu = Dialect(
    "tidu",
    [
        # elementwise binary
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaximumOp,
        # comparison and selection
        CompareOp,
        SelectOp,
        # elementwise unary
        NegOp,
        ExpOp,
        LogOp,
        SinOp,
        CosOp,
        TanhOp,
        SqrtOp,
        ConjOp,
        RealOp,
        ImagOp,
        SinCosOp,
        # elementwise with parameters
        PowOp,
        ScaleOp,
        ShiftOp,
        FullLikeOp,
        ToComplexOp,
        ConvertOp,
        # constants
        ConstantOp,
        # shape
        BroadcastInDimOp,
        ReduceSumOp,
        ReshapeOp,
        TransposeOp,
        DotGeneralOp,
        # fused kernels
        KernelOp,
        YieldOp,
    ],
    [],
)

PRIMITIVE_TO_OP: dict[str, type[IRDLOperation]] = {
    "Add": AddOp,
    "Sub": SubOp,
    "Mul": MulOp,
    "Div": DivOp,
    "Maximum": MaximumOp,
    "Compare": CompareOp,
    "Select": SelectOp,
    "Neg": NegOp,
    "Exp": ExpOp,
    "Log": LogOp,
    "Sin": SinOp,
    "Cos": CosOp,
    "Tanh": TanhOp,
    "Sqrt": SqrtOp,
    "Conj": ConjOp,
    "Real": RealOp,
    "Imag": ImagOp,
    "SinCos": SinCosOp,
    "Pow": PowOp,
    "Scale": ScaleOp,
    "Shift": ShiftOp,
    "FullLike": FullLikeOp,
    "ToComplex": ToComplexOp,
    "Convert": ConvertOp,
    "Constant": ConstantOp,
    "BroadcastInDim": BroadcastInDimOp,
    "ReduceSum": ReduceSumOp,
    "Reshape": ReshapeOp,
    "Transpose": TransposeOp,
    "DotGeneral": DotGeneralOp,
}
"""Python primitive class name -> tidu op class."""

__all__ = [
    "COMPARE_DIRECTIONS",
    "DTYPE_ELEMENT_TYPES",
    "PRIMITIVE_TO_OP",
    "AddOp",
    "BinaryElementwiseOperation",
    "BroadcastInDimOp",
    "CompareOp",
    "ComplexPartOperation",
    "ConjOp",
    "ConstantOp",
    "ConvertOp",
    "CosOp",
    "DivOp",
    "DotGeneralOp",
    "ElementKind",
    "ElementwiseOperation",
    "ExpOp",
    "FloatParameterUnaryOperation",
    "FullLikeOp",
    "ImagOp",
    "KernelOp",
    "LiteralUnaryOperation",
    "LogOp",
    "MaximumOp",
    "MulOp",
    "NegOp",
    "PowOp",
    "RealOp",
    "ReduceSumOp",
    "ReshapeOp",
    "ScaleOp",
    "SelectOp",
    "ShiftOp",
    "SinCosOp",
    "SinOp",
    "SqrtOp",
    "SubOp",
    "TanhOp",
    "Tidu",
    "ToComplexOp",
    "TransposeOp",
    "UnaryElementwiseOperation",
    "YieldOp",
    "element_type",
    "is_value_type",
    "shape_of",
    "tensor_type",
    "with_element_type",
]

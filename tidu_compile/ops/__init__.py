"""The standard tensor primitive set: frozen dataclasses on numpy arrays.

Each op defines, in one block, its parameters, arity, type rule (``infer_types``), numpy
evaluation (``evaluate``), JVP rule and transpose rule. ``ALL_OPS`` lists every class.
"""

from tidu_compile.ops.base import (
    COMPLEX_DTYPES,
    DIFFERENTIABLE_DTYPES,
    FLOAT_DTYPES,
    TensorOp,
    TensorType,
    type_of,
)
from tidu_compile.ops.complex_ops import Conj, Constant, Convert, Imag, Real, ToComplex
from tidu_compile.ops.elementwise import (
    Add,
    Compare,
    Cos,
    Div,
    Exp,
    FullLike,
    Log,
    Maximum,
    Mul,
    Neg,
    Pow,
    Scale,
    Select,
    Shift,
    Sin,
    SinCos,
    Sqrt,
    Sub,
    Tanh,
)
from tidu_compile.ops.structural import BroadcastInDim, DotGeneral, ReduceSum, Reshape, Transpose

ALL_OPS: tuple[type[TensorOp], ...] = (
    Add, Sub, Mul, Div, Maximum, Compare, Select,
    Neg, Exp, Log, Sin, Cos, Tanh, Sqrt, SinCos, Pow, Scale, Shift, FullLike,
    Conj, Real, Imag, ToComplex, Convert, Constant,
    BroadcastInDim, ReduceSum, Reshape, Transpose, DotGeneral,
)  # fmt: skip

__all__ = [
    "ALL_OPS", "COMPLEX_DTYPES", "DIFFERENTIABLE_DTYPES", "FLOAT_DTYPES", "TensorOp",
    "TensorType", "type_of",
    *(op.__name__ for op in ALL_OPS),
]  # fmt: skip

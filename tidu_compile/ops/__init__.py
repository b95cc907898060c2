"""The standard tensor primitive set: frozen dataclasses on numpy arrays.

Each op defines, in one block, its parameters, arity, type rule (``infer_types``), numpy
evaluation (``evaluate``), JVP rule and transpose rule, and is entered in ``OP_TABLE``
by ``@primitive`` (see ``ops.base``). Every op class is importable from here (the op
modules are star-imported: a new op needs no line in this file); ``ALL_OPS`` lists them
in table order.
"""

from tidu_compile.ops.activations import *  # noqa: F403
from tidu_compile.ops.base import (
    COMPLEX_DTYPES,
    DIFFERENTIABLE_DTYPES,
    DOMAINS,
    FLOAT_DTYPES,
    OP_TABLE,
    TensorOp,
    TensorType,
    dtype_name,
    primitive,
    type_of,
)
from tidu_compile.ops.binary_math import *  # noqa: F403
from tidu_compile.ops.complex_decompositions import *  # noqa: F403
from tidu_compile.ops.complex_ops import *  # noqa: F403
from tidu_compile.ops.control_flow import *  # noqa: F403
from tidu_compile.ops.decompositions import *  # noqa: F403
from tidu_compile.ops.elementwise import *  # noqa: F403
from tidu_compile.ops.elementwise import Elementwise, Unary
from tidu_compile.ops.indexing import *  # noqa: F403
from tidu_compile.ops.joining import *  # noqa: F403
from tidu_compile.ops.linalg import *  # noqa: F403
from tidu_compile.ops.matrix_exponential import *  # noqa: F403
from tidu_compile.ops.piecewise import *  # noqa: F403
from tidu_compile.ops.reductions import *  # noqa: F403
from tidu_compile.ops.scan import *  # noqa: F403
from tidu_compile.ops.special import *  # noqa: F403
from tidu_compile.ops.structural import *  # noqa: F403
from tidu_compile.ops.unary_math import *  # noqa: F403

ALL_OPS: tuple[type[TensorOp], ...] = tuple(OP_TABLE.values())

__all__ = [
    "ALL_OPS", "COMPLEX_DTYPES", "DIFFERENTIABLE_DTYPES", "DOMAINS", "Elementwise",
    "FLOAT_DTYPES", "OP_TABLE", "TensorOp", "TensorType", "Unary", "dtype_name", "primitive",
    "type_of",
    *(op.__name__ for op in ALL_OPS),
]  # fmt: skip

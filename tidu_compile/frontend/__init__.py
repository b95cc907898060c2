"""The eager ``Tensor`` frontend: numpy-style functions that record on the tidu tape."""

from tidu_compile.frontend.autograd import grad
from tidu_compile.frontend.composite import function
from tidu_compile.frontend.functions import (
    add,
    astype,
    broadcast_to,
    compare,
    conj,
    cos,
    divide,
    exp,
    imag,
    log,
    matmul,
    maximum,
    mean,
    multiply,
    negative,
    power,
    real,
    reshape,
    sin,
    sincos,
    sqrt,
    subtract,
    sum,
    tanh,
    transpose,
    where,
)  # fmt: skip
from tidu_compile.frontend.state import (
    get_default_executor,
    no_grad,
    set_default_executor,
    use_executor,
)
from tidu_compile.frontend.tensor import Tensor, tensor

__all__ = [
    "Tensor", "tensor", "function", "grad", "no_grad", "get_default_executor",
    "set_default_executor", "use_executor", "add", "astype", "broadcast_to", "compare", "conj",
    "cos", "divide", "exp", "imag", "log", "matmul", "maximum", "mean", "multiply", "negative",
    "power", "real", "reshape", "sin", "sincos", "sqrt", "subtract", "sum", "tanh", "transpose",
    "where",
]  # fmt: skip

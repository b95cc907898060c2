"""numpy 2's other ``linalg`` functions, as formulas: ``vector_norm``, ``matrix_norm``,
``cond``, ``matrix_rank``, ``multi_dot``, ``matmul`` and ``tensordot``; and
``NUMPY_LINALG``, every ``numpy.linalg`` function tidu_compile has, by qualified name
(what numpy's own calls on tensors dispatch to: ``frontend.dispatch``).

=====================  ==========================================================
function               as
=====================  ==========================================================
vector_norm(x, ord)    ``norm`` over ``axis`` (all elements when ``None``)
matrix_norm(x, ord)    ``norm`` over the last two axes
cond(x, p)             ``s_max / s_min`` (``p`` None, 2; -2 the inverse), else
                       ``norm(x, p) * norm(inv(x), p)``
matrix_rank(A, tol)    the int64 count of singular values above ``tol`` (default
                       ``max(m, n) * eps * s_max``)
multi_dot(arrays)      the products left to right (1-d ends as numpy's)
=====================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile.frontend import factorizations
from tidu_compile.frontend.elementwise import compare
from tidu_compile.frontend.linalg import matmul
from tidu_compile.frontend.norms import norm
from tidu_compile.frontend.products import tensordot
from tidu_compile.frontend.promotion import unary_input
from tidu_compile.frontend.reductions import max, min, sum
from tidu_compile.frontend.tensor import Tensor

__all__ = ["NUMPY_LINALG", "cond", "matrix_norm", "matrix_rank", "multi_dot", "vector_norm"]


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Tensor:  # noqa: A002 - numpy's name
    """The vector ``ord``-norm over ``axis`` (every element when ``None``)."""
    if axis is not None:
        return norm(x, ord, axis, keepdims)
    t = unary_input(x)
    result = norm(t.reshape(-1), ord)
    return result.reshape((1,) * t.ndim) if keepdims else result


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:  # noqa: A002 - numpy's name
    """The matrix ``ord``-norm of the last two axes."""
    return norm(factorizations.matrices(x, "matrix_norm", square=False), ord, (-2, -1), keepdims)


def cond(x: Any, p: Any = None) -> Tensor:
    """The condition number in the ``p`` norm (2 by singular values when ``None``)."""
    a = factorizations.matrices(x, "cond", square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        s = factorizations.svdvals(a)
        ratio = max(s, axis=-1) / min(s, axis=-1)
        return 1.0 / ratio if p == -2 else ratio
    inverse = factorizations.inv(a)
    return norm(a, p, (-2, -1)) * norm(inverse, p, (-2, -1))


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Tensor:  # noqa: N803 - numpy's name
    """The int64 number of singular values above ``tol`` (default: ``rtol`` or ``max(m,
    n) * eps`` times the largest)."""
    a = factorizations.matrices(A, "matrix_rank", square=False)
    s = factorizations.svdvals(a)
    if tol is None:
        relative = rtol if rtol is not None else float(np.finfo(a.dtype).eps) * _longer_side(a)
        tol = max(s, axis=-1, keepdims=True) * relative
    return sum(compare("gt", s, tol).astype(np.int64), axis=-1)


def _longer_side(a: Tensor) -> float:
    """``max(m, n)`` of the matrices ``a``."""
    return float(a.shape[-1] if a.shape[-1] > a.shape[-2] else a.shape[-2])


def multi_dot(arrays: Sequence[Any], *, out: Any = None) -> Tensor:
    """``arrays[0] @ arrays[1] @ ...`` (a 1-d first or last array is a row or column
    vector, as numpy's), evaluated left to right."""
    if out is not None:
        raise TypeError("multi_dot(..., out=...): a tensor is immutable; use the result")
    if len(arrays) < 2:
        raise ValueError("multi_dot: expecting at least two arrays")
    result = arrays[0]
    for array in arrays[1:]:
        result = matmul(result, array)
    return result  # type: ignore[return-value]


#: numpy's ``linalg`` functions tidu_compile has, by their qualified names.
NUMPY_LINALG: dict[str, Callable[..., Any]] = {
    f"numpy.linalg.{f.__name__}": f
    for f in (factorizations.cholesky, factorizations.det, factorizations.eigh,
              factorizations.eigvalsh, factorizations.inv, factorizations.lstsq,
              factorizations.matrix_power, factorizations.pinv, factorizations.qr,
              factorizations.slogdet, factorizations.solve, factorizations.svd,
              factorizations.svdvals, cond, matrix_norm, matrix_rank, multi_dot,
              vector_norm, matmul, tensordot)
}  # fmt: skip

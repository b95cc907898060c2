"""``tidu_compile.numpy.linalg``: numpy's ``linalg`` names that tidu_compile differentiates.

``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``, ``eigh``, ``eigvalsh``, ``svd``,
``svdvals``, ``qr``, ``norm`` (every ord numpy has; 2, -2 and 'nuc' of matrices by
singular values), ``pinv``, ``matrix_power``, ``lstsq`` (``frontend.factorizations``,
``frontend.norms``), numpy 2's ``vector_norm``, ``matrix_norm``, ``cond``,
``matrix_rank``, ``multi_dot`` (``frontend.matrix_norms``), ``matmul`` and
``tensordot``: batched over leading axes, real dtypes. Any other
``numpy.linalg`` name raises ``AttributeError`` saying so.
"""

from __future__ import annotations

from typing import Any

import numpy

from tidu_compile.frontend import FUNCTIONS
from tidu_compile.frontend.factorizations import (
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    matrix_power,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from tidu_compile.frontend.linalg import matmul
from tidu_compile.frontend.matrix_norms import (
    cond,
    matrix_norm,
    matrix_rank,
    multi_dot,
    vector_norm,
)
from tidu_compile.frontend.products import tensordot

norm = FUNCTIONS["norm"]

__all__ = [
    "cholesky", "cond", "det", "eigh", "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
    "svd", "svdvals", "tensordot", "vector_norm",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and hasattr(numpy.linalg, name):
        raise AttributeError(
            f"tidu_compile.numpy.linalg has no {name!r} (not differentiable in tidu_compile "
            f"yet). For values without gradient, call numpy.linalg.{name} on t.numpy()"
        )
    raise AttributeError(f"module 'tidu_compile.numpy.linalg' has no attribute {name!r}")

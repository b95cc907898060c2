"""``tidu_compile.scipy.linalg``: scipy's ``linalg`` names that tidu_compile differentiates.

``solve_triangular``, ``cho_factor``, ``cho_solve``, ``cholesky`` (scipy's: upper by
default), ``expm`` (``frontend.triangular``), and ``solve``, ``inv``, ``det``, ``norm``
(numpy's, whose calls scipy's take too; scipy's extra options are not). Batched over
leading axes, real dtypes. Any other ``scipy.linalg`` name (``eigh``, ``svd``, ``qr``:
their scipy signatures differ from numpy's; use ``tidu_compile.numpy.linalg``) raises
``AttributeError``.
"""

from __future__ import annotations

from typing import Any

import scipy.linalg

from tidu_compile.frontend.factorizations import det, inv, solve
from tidu_compile.frontend.norms import norm
from tidu_compile.frontend.triangular import (
    cho_factor,
    cho_solve,
    cholesky,
    expm,
    solve_triangular,
)

__all__ = [
    "cho_factor", "cho_solve", "cholesky", "det", "expm", "inv", "norm", "solve",
    "solve_triangular",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and hasattr(scipy.linalg, name):
        raise AttributeError(
            f"tidu_compile.scipy.linalg has no {name!r} (not differentiable in tidu_compile "
            f"yet). For values without gradient, call scipy.linalg.{name} on t.numpy()"
        )
    raise AttributeError(f"module 'tidu_compile.scipy.linalg' has no attribute {name!r}")

"""``tidu_compile.numpy.linalg``: numpy's ``linalg`` names that tidu_compile differentiates.

Only ``norm`` (``tidu_compile.norm``: vector and matrix norms, any axis). Any other
``numpy.linalg`` name raises ``AttributeError`` saying so (``inv``, ``solve``, ``det``
and the decompositions have no rules yet).
"""

from __future__ import annotations

from typing import Any

import numpy

from tidu_compile.frontend import FUNCTIONS

norm = FUNCTIONS["norm"]

__all__ = ["norm"]


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and hasattr(numpy.linalg, name):
        raise AttributeError(
            f"tidu_compile.numpy.linalg has no {name!r} (not differentiable in tidu_compile "
            f"yet). For values without gradient, call numpy.linalg.{name} on t.numpy()"
        )
    raise AttributeError(f"module 'tidu_compile.numpy.linalg' has no attribute {name!r}")

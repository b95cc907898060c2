"""Comparisons under numpy's names: bool tensors, never differentiated.

``equal(a, b)`` is ``a == b`` (the operators call the same ``compare``); ``isnan`` and
``isfinite`` are comparisons too (``x != x``; ``x - x == 0``), so inside a
``@tc.function`` trace a mask computed from the arguments stays in the graph.
"""

from __future__ import annotations

from typing import Any

from tidu_compile.frontend.elementwise import compare
from tidu_compile.frontend.promotion import unary_input
from tidu_compile.frontend.tensor import Tensor

__all__ = [
    "equal", "greater", "greater_equal", "isfinite", "isnan", "less", "less_equal",
    "not_equal",
]  # fmt: skip


def equal(a: Any, b: Any) -> Tensor:
    """``a == b`` elementwise."""
    return compare("eq", a, b)


def not_equal(a: Any, b: Any) -> Tensor:
    """``a != b`` elementwise."""
    return compare("ne", a, b)


def less(a: Any, b: Any) -> Tensor:
    """``a < b`` elementwise."""
    return compare("lt", a, b)


def less_equal(a: Any, b: Any) -> Tensor:
    """``a <= b`` elementwise."""
    return compare("le", a, b)


def greater(a: Any, b: Any) -> Tensor:
    """``a > b`` elementwise."""
    return compare("gt", a, b)


def greater_equal(a: Any, b: Any) -> Tensor:
    """``a >= b`` elementwise."""
    return compare("ge", a, b)


def isnan(x: Any) -> Tensor:
    """Where ``x`` is NaN (``x != x``)."""
    x = unary_input(x)
    return compare("ne", x, x)


def isfinite(x: Any) -> Tensor:
    """Where ``x`` is neither infinite nor NaN (``x - x == 0``)."""
    x = unary_input(x)
    return compare("eq", x - x, 0.0)

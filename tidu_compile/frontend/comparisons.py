"""Comparisons under numpy's names: bool tensors, never differentiated.

``equal(a, b)`` is ``a == b`` (the operators call the same ``compare``); ``isnan`` and
``isfinite`` are comparisons too (``x != x``; ``x - x == 0``), so inside a
``@tc.function`` trace a mask computed from the arguments stays in the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidu_compile.frontend.elementwise import compare
from tidu_compile.frontend.promotion import unary_input
from tidu_compile.frontend.tensor import Tensor

__all__ = [
    "equal", "greater", "greater_equal", "isfinite", "isnan", "less", "less_equal",
    "not_equal",
]  # fmt: skip


def _comparison(name: str, direction: str, symbol: str) -> Callable[[Any, Any], Tensor]:
    """numpy's comparison ``name``: ``compare(direction, a, b)``."""

    def function(a: Any, b: Any) -> Tensor:
        return compare(direction, a, b)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``a {symbol} b`` elementwise, a bool tensor."
    return function


equal = _comparison("equal", "eq", "==")
not_equal = _comparison("not_equal", "ne", "!=")
less = _comparison("less", "lt", "<")
less_equal = _comparison("less_equal", "le", "<=")
greater = _comparison("greater", "gt", ">")
greater_equal = _comparison("greater_equal", "ge", ">=")


def isnan(x: Any) -> Tensor:
    """Where ``x`` is NaN (``x != x``)."""
    x = unary_input(x)
    return compare("ne", x, x)


def isfinite(x: Any) -> Tensor:
    """Where ``x`` is neither infinite nor NaN (``x - x == 0``)."""
    x = unary_input(x)
    return compare("eq", x - x, 0.0)

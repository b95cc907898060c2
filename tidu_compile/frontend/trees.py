"""Nested arguments: the leaves of lists, tuples and dicts, and maps over them.

numpy calls (``np.concatenate([a, b])``) and ``@tc.function`` arguments
(``params=[(W1, b1), (W2, b2)]``) nest tensors in containers; these walk them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["leaves", "map_leaves"]


def leaves(value: Any) -> Iterator[Any]:
    """The items of ``value`` that are not lists, tuples or dicts, depth first."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    else:
        yield value


def map_leaves(value: Any, function: Callable[[Any], Any]) -> Any:
    """``value`` with every leaf replaced by ``function(leaf)``, in ``leaves``' order."""
    if isinstance(value, (list, tuple)):
        return type(value)(map_leaves(item, function) for item in value)
    if isinstance(value, dict):
        return {key: map_leaves(item, function) for key, item in value.items()}
    return function(value)

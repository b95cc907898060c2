"""``tidu_compile.numpy.random``: numpy's random module, for data.

Random draws are constants (no gradient), as in autograd's ``numpy.random``. Every name
is numpy's (``RandomState``, ``default_rng``, ``randn``, ``normal``...); the functions
of numpy's global generator (``randn``, ``normal``...) raise ``TypeError`` inside a
``@tidu_compile.function`` trace, where a draw would be frozen into the trace (each
later call would reuse it): draw outside and pass the array as an argument. (Methods of
a generator object cannot be checked: a ``RandomState`` used inside a traced function is
drawn once, at trace time, as under ``jax.jit``.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy.random

from tidu_compile.frontend.state import current_capture

#: Names that make generators rather than draw values: handed out as they are.
CONSTRUCTORS = frozenset({"default_rng"})


def _outside_traces(name: str, draw: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(draw)
    def checked(*args: Any, **kwargs: Any) -> Any:
        capture = current_capture()
        if capture is not None:
            raise TypeError(
                f"numpy.random.{name} inside @tidu_compile.function {capture.name!r}: the draw "
                "would be frozen into the trace (every later call would reuse it); draw "
                "outside the function and pass the array as an argument"
            )
        return draw(*args, **kwargs)

    return checked


def __getattr__(name: str) -> Any:
    value = getattr(numpy.random, name)
    if callable(value) and not isinstance(value, type) and name not in CONSTRUCTORS:
        return _outside_traces(name, value)
    return value


def __dir__() -> list[str]:
    return dir(numpy.random)

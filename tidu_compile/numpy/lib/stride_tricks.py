"""``tidu_compile.numpy.lib.stride_tricks``: ``sliding_window_view``, numpy's signature.

A copy rather than a view (tensors are immutable, so the two cannot be told apart):
one ``Gather`` per window dimension (``tidu_compile.frontend.windows``), differentiable
and compiled. ``as_strided`` has no counterpart: arbitrary strides can alias elements
in ways no gradient rule can follow; write the windows with ``sliding_window_view``.
"""

from __future__ import annotations

from typing import Any

import numpy

from tidu_compile.frontend import FUNCTIONS

sliding_window_view = FUNCTIONS["sliding_window_view"]

__all__ = ["sliding_window_view"]


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and hasattr(numpy.lib.stride_tricks, name):
        raise AttributeError(
            f"tidu_compile.numpy.lib.stride_tricks has no {name!r}: use "
            "sliding_window_view (or numpy.lib.stride_tricks on t.numpy(), no gradient)"
        )
    raise AttributeError(
        f"module 'tidu_compile.numpy.lib.stride_tricks' has no attribute {name!r}"
    )

"""``tidu_compile.numpy.lib``: numpy's ``lib`` submodules that tidu_compile differentiates.

Only ``stride_tricks`` (``sliding_window_view``).
"""

from __future__ import annotations

from typing import Any

import numpy

from tidu_compile.numpy.lib import stride_tricks

__all__ = ["stride_tricks"]


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and hasattr(numpy.lib, name):
        raise AttributeError(
            f"tidu_compile.numpy.lib has no {name!r} (only stride_tricks). For values "
            f"without gradient, call numpy.lib.{name} on t.numpy()"
        )
    raise AttributeError(f"module 'tidu_compile.numpy.lib' has no attribute {name!r}")

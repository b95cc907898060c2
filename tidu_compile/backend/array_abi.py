"""What a kernel's array-object entry point and its caller agree on, free of llvmlite.

Every kernel ``@k`` has a twin ``@k.arrays`` taking ``PyArrayObject`` addresses
(``backend.array_entry`` builds it); a plan (``compiler.plan``) calls the twin when this
interpreter's ndarrays keep their data pointer where the twin reads it. A process that
only runs plans (a background executor's caller, ``compiler.native``) needs these
constants but not LLVM's IR builder, so they live here.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

__all__ = ["ARRAY_DATA_OFFSET", "ENTRY_SUFFIX", "array_data_offset"]

ENTRY_SUFFIX = ".arrays"
"""The twin of kernel ``@k`` is ``@k.arrays``."""

ARRAY_DATA_OFFSET = 16  # sizeof(PyObject) on 64-bit CPython
"""Where the twin reads an array's data pointer: ``data``, the first field after
``PyObject_HEAD`` in numpy's public ``PyArrayObject_fields``."""


@functools.cache
def array_data_offset() -> int | None:
    """``ARRAY_DATA_OFFSET`` if this interpreter's ndarrays keep ``data`` there, else None."""
    probe = np.arange(3.0)
    try:
        found = ctypes.c_void_p.from_address(id(probe) + ARRAY_DATA_OFFSET).value
    except (ValueError, OSError):
        return None
    return ARRAY_DATA_OFFSET if found == probe.ctypes.data else None

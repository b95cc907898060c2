"""The external LAPACK/BLAS symbols of native code, bound to scipy's routines at load time.

Kernels call ``tidu_lapack_lp64_<routine>`` (``passes/lapack_kernels.py``): an undefined
symbol in the object code, never an address (the disk cache is shared by processes,
and each has its own scipy mapped elsewhere). Before an object needing such symbols
is loaded, ``bind_lapack_symbols`` tells LLVM their addresses in this process
(``llvmlite.binding.add_symbol``), read off scipy's ``cython_lapack`` and
``cython_blas`` capsules (``__pyx_capi__``)::

    tidu_lapack_lp64_dpotrf -> scipy.linalg.cython_lapack.__pyx_capi__["dpotrf"]
        "void (char *, int *, __pyx_t_..._d *, int *, int *)"

The kernels rely on the routines' ABI: every argument by pointer, C ``int`` (LP64:
32-bit) integers, no hidden string lengths. That is what the capsule's signature says
and what is checked here (``int *``, no ``long``/``npy_int64``): a scipy built otherwise
leaves the symbol unbound, and loading raises ``UnresolvedSymbolError`` instead of
calling with the wrong integers. The ABI is in the symbols' names, so in the kernels'
text and their cache key.

Threads: the routines run on scipy's OpenBLAS, whose own pool would split even small
factorisations over threads and, on a loaded machine, wait on them (0.3 to 1.6 s at
random). ``bind_lapack_symbols`` therefore sets scipy's OpenBLAS to one thread, once,
when the first LAPACK kernel is loaded (``set_blas_threads``; ``TIDU_COMPILE_LAPACK_THREADS``
overrides it, 0 keeps OpenBLAS's own choice).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import llvmlite.binding as llvm

from tidu_compile import forksafe

__all__ = [
    "LAPACK_SYMBOL_PREFIX", "bind_lapack_symbols", "routine_address", "set_blas_threads",
]  # fmt: skip

LAPACK_SYMBOL_PREFIX = "tidu_lapack_lp64_"
"""The prefix of the kernels' LAPACK/BLAS symbols (``passes.lapack_kernels`` emits it)."""

#: The routines that are BLAS (``cython_blas``); every other one is LAPACK's.
_BLAS_ROUTINES = frozenset(
    {"strsm", "dtrsm", "strsv", "dtrsv", "strmm", "dtrmm", "sgemm", "dgemm"}
)

_bound: set[str] = set()
_lock = forksafe.Lock()
_threads_set: list[bool] = []


def routine_address(routine: str) -> int:
    """The address of scipy's ``routine`` (``dpotrf``) in this process; ``LookupError``
    when scipy has none or its signature is not the LP64 one the kernels call."""
    if routine in _BLAS_ROUTINES:
        from scipy.linalg import cython_blas as library
    else:
        from scipy.linalg import cython_lapack as library
    capsule = library.__pyx_capi__.get(routine)
    if capsule is None:
        raise LookupError(f"scipy has no LAPACK/BLAS routine {routine!r}")
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    signature = get_name(capsule)
    text = signature.decode() if signature else ""
    if not text.startswith("void (") or "int *" not in text or "long" in text or "int64" in text:
        raise LookupError(f"scipy's {routine} has the signature {text!r}; the native kernels "
                          "call the LP64 one (C int arguments by pointer)")  # fmt: skip
    address = get_pointer(capsule, signature)
    if not address:
        raise LookupError(f"scipy's {routine} capsule holds no address")
    return int(address)


def bind_lapack_symbols(undefined: tuple[str, ...] | list[str]) -> None:
    """Bind every ``tidu_lapack_lp64_*`` name of ``undefined`` to scipy's routine (once
    per process); others are left alone. A routine that cannot be bound stays
    undefined (the loader then reports it)."""
    wanted = [name for name in undefined if name.startswith(LAPACK_SYMBOL_PREFIX)]
    if not wanted:
        return
    with _lock:
        if not _threads_set:
            set_blas_threads(int(os.environ.get("TIDU_COMPILE_LAPACK_THREADS", "1")))
            _threads_set.append(True)
        for name in wanted:
            if name in _bound:
                continue
            try:
                address = routine_address(name[len(LAPACK_SYMBOL_PREFIX) :])
            except LookupError:
                continue
            llvm.add_symbol(name, address)
            _bound.add(name)


def set_blas_threads(threads: int) -> bool:
    """Set scipy's OpenBLAS pool to ``threads`` threads (0: leave it); whether it was
    found. Only scipy's copy (``scipy.libs``, what the kernels call), not numpy's."""
    if threads <= 0:
        return False
    import scipy

    libs = Path(scipy.__file__).resolve().parent.parent / "scipy.libs"
    for library in sorted(libs.glob("*openblas*.so*")) if libs.is_dir() else []:
        handle = ctypes.CDLL(str(library))
        for setter in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                       "openblas_set_num_threads64_", "openblas_set_num_threads"):  # fmt: skip
            function = getattr(handle, setter, None)
            if function is not None:
                function.argtypes = [ctypes.c_int]
                function(threads)
                return True
    return False

"""Recycled memory for large kernel outputs.

A fresh ``np.empty`` of a few megabytes or more is mapped by the C allocator straight
from the kernel and returned to it on free, so every backward call pays one page fault
per 4 KiB page when the kernel first writes its output: about 9 ms for 80 MB on the
benchmark machine, as much as the kernel itself. ``BufferPool`` keeps the memory of
large outputs once their arrays are gone and hands it out again, already mapped.

Ownership is numpy's own: ``allocate`` returns an array whose ``base`` is a lease on a
pooled block (an ``ownership.Lease``). Every view of the array keeps the lease alive
(numpy views hold their base), so the block returns to the pool only when the last
array or view over it is gone; nobody can observe a block being reused. Idle memory is
bounded by ``max_idle_bytes`` (``TIDU_COMPILE_POOL_BYTES``, default 256 MiB; 0 turns pooling
off): the blocks idle the longest are freed first, so the sizes of a finished
workload make room for the next one's.

A debug mode poisons fresh outputs: with ``TIDU_COMPILE_DEBUG_FILL=nan`` (read once, at
import, into ``DEBUG_FILL``) every buffer a plan allocates for a kernel or library
output, small or pooled, and every private partial output of a kernel run in chunks on
threads (``compiler.parallel``), starts filled with ``poison(dtype)``: NaN for floats (in both
parts of complex values), the most negative integer for signed integers (the largest for
unsigned ones), ``True`` for bools. An element a kernel should write but does not then
shows as NaN (or as an absurd integer) instead of passing for a number that happened
to be in memory.
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.ownership import Lease

__all__ = [
    "DEBUG_FILL", "DEBUG_FILL_ENV", "MIN_POOLED_BYTES", "POOL", "BufferPool", "poison",
    "poisoned",
]

#: Outputs smaller than this come from ``np.empty`` (the allocator reuses them cheaply).
MIN_POOLED_BYTES = 1 << 17

_DEFAULT_IDLE_BYTES = 256 << 20


class _Lease(Lease):
    """The base of a pooled array: exports the block's memory, gives it back when freed."""

    __slots__ = ("__array_interface__", "pool")

    def __init__(
        self, pool: BufferPool, block: np.ndarray, address: int, shape: Any, typestr: str
    ) -> None:
        super().__init__(block)
        self.pool = pool
        self.__array_interface__ = {
            "data": (address, False),
            "shape": shape,
            "typestr": typestr,
            "version": 3,
        }

    def __del__(self) -> None:
        try:  # noqa: SIM105 - the cheapest form: it runs for every pooled array
            self.pool.give_back(self.block, self.__array_interface__["data"][0])
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: freed anyway
            pass


class BufferPool:
    """Idle blocks by byte size; ``allocate`` reuses one or makes a new one.

    Thread-safe: a lease may die on any thread, or inside ``allocate`` itself when the
    garbage collector runs there (hence a reentrant lock).
    """

    def __init__(self, max_idle_bytes: int = _DEFAULT_IDLE_BYTES) -> None:
        if not isinstance(max_idle_bytes, int) or max_idle_bytes < 0:
            raise ValueError(f"max_idle_bytes: must be an int >= 0, got {max_idle_bytes!r}")
        self.max_idle_bytes = max_idle_bytes
        self.idle_bytes = 0
        self.reuses = 0
        # size -> id -> (block, its data address), newest last
        self._idle: dict[int, dict[int, tuple[np.ndarray, int]]] = {}
        self._age: OrderedDict[int, int] = OrderedDict()  # id -> size, longest idle first
        self._lock = forksafe.RLock()

    def allocate(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialized C-contiguous array of ``shape`` and ``dtype`` (native order).

        Runs once per large kernel output: ``math.prod`` and the data address kept with
        each block make it ~4 us here, where ``np.prod`` and ``ctypes.data`` cost 13.
        """
        nbytes = math.prod(shape) * dtype.itemsize
        found: tuple[np.ndarray, int] | None = None
        with self._lock:
            blocks = self._idle.get(nbytes)
            if blocks:
                key, found = blocks.popitem()  # the most recently used: likely cache-warm
                del self._age[key]
                self.idle_bytes -= nbytes
                self.reuses += 1
        if found is None:
            block = np.empty(nbytes, np.uint8)
            found = (block, block.__array_interface__["data"][0])
        block, address = found
        return np.asarray(_Lease(self, block, address, shape, dtype.str))

    def give_back(self, block: np.ndarray, address: int | None = None) -> None:
        """Keep ``block`` (whose data starts at ``address``) for reuse, freeing the
        longest-idle blocks to stay within ``max_idle_bytes`` (a block larger than that
        on its own is not kept)."""
        nbytes = block.nbytes
        if address is None:
            address = block.__array_interface__["data"][0]
        with self._lock:
            if nbytes > self.max_idle_bytes:
                return  # freed with its last reference
            while self.idle_bytes + nbytes > self.max_idle_bytes:
                key, size = self._age.popitem(last=False)
                del self._idle[size][key]
                self.idle_bytes -= size
            self._idle.setdefault(nbytes, {})[id(block)] = (block, address)
            self._age[id(block)] = nbytes
            self.idle_bytes += nbytes

    def idle_blocks(self) -> list[np.ndarray]:
        """The idle blocks, longest idle first (for tests and debugging)."""
        with self._lock:
            return [self._idle[size][key][0] for key, size in self._age.items()]

    def clear(self) -> None:
        """Free every idle block (leased ones come back, or not, as usual)."""
        with self._lock:
            self._idle.clear()
            self._age.clear()
            self.idle_bytes = 0


def _configured_idle_bytes() -> int:
    text = os.environ.get("TIDU_COMPILE_POOL_BYTES")
    if not text:
        return _DEFAULT_IDLE_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"TIDU_COMPILE_POOL_BYTES must be an integer >= 0, got {text!r}")
    return value


#: The process-wide pool the compiled plans allocate their large outputs from.
POOL = BufferPool(_configured_idle_bytes())


DEBUG_FILL_ENV = "TIDU_COMPILE_DEBUG_FILL"


def _configured_debug_fill() -> bool:
    """``$TIDU_COMPILE_DEBUG_FILL``: ``nan`` poisons fresh outputs; unset, empty, ``0`` or
    ``off`` does not; anything else is a ``ValueError``."""
    text = os.environ.get(DEBUG_FILL_ENV, "")
    value = text.strip().lower()
    if value in ("", "0", "off"):
        return False
    if value == "nan":
        return True
    raise ValueError(f"{DEBUG_FILL_ENV} must be 'nan' (or unset, 0, off), got {text!r}")


#: Whether plans poison the outputs they allocate (``$TIDU_COMPILE_DEBUG_FILL``, read
#: once; a plan reads it when it is bound).
DEBUG_FILL: bool = _configured_debug_fill()


def poison(dtype: np.dtype) -> Any:
    """The value a poisoned buffer of ``dtype`` starts with."""
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "c":
        return complex(np.nan, np.nan)
    if dtype.kind == "b":
        return True
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    return np.iinfo(dtype).max


def poisoned(allocate: Any) -> Any:
    """``allocate(shape, dtype)`` whose arrays come filled with ``poison(dtype)``."""

    def allocate_poisoned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        array = allocate(shape, dtype)
        array.fill(poison(dtype))
        return array

    return allocate_poisoned

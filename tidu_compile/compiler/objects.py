"""Object code by kernel digest (``compiler.kernel_code``), in memory and on disk.

A program whose kernel text was compiled before (by this process, a worker, or an
earlier run) reuses that object code instead of running LLVM again: the next batch size
of an MLP node, the same elementwise kernel in two nodes. The digest covers the kernel
text and the compilation environment, so an entry serves exactly the kernels it was
compiled from. On disk an entry is ``obj-<digest>.tidu``, holding ``(digest, object
code)``; a missing, damaged or foreign entry (not an object defining the kernels'
symbols, ``compiler.kernel_code``) is a miss.
"""

from __future__ import annotations

import struct

from tidu_compile import forksafe
from tidu_compile.backend.elf import read_elf_symbols
from tidu_compile.compiler.cache import DiskCache, MemoryCache

__all__ = ["OBJECT_PREFIX", "ObjectStore", "kernel_symbol"]

#: Disk keys of object code start with it.
OBJECT_PREFIX = "obj-"


class ObjectStore:
    """Object code by kernel digest: an LRU of at most ``max_bytes`` bytes, then ``disk``."""

    def __init__(self, disk: DiskCache | None, max_bytes: int = 64 << 20) -> None:
        self.disk = disk
        self._memory = MemoryCache(1 << 16, max_bytes=max_bytes, size_of=len)
        self._lock = forksafe.Lock()

    def get(self, digest: str) -> bytes | None:
        """The object code of the kernels keyed ``digest``, else None."""
        code = self._memory.get(digest)
        if code is not None or self.disk is None:
            return code
        stored = self.disk.get(OBJECT_PREFIX + digest)
        if not (isinstance(stored, tuple) and len(stored) == 2 and stored[0] == digest
                and isinstance(stored[1], bytes) and _defines_kernels(stored[1], digest)):
            return None  # fmt: skip
        self._memory.put(digest, stored[1])
        return stored[1]

    def put(self, digest: str, code: bytes, *, to_disk: bool = True) -> None:
        """Keep ``code`` for ``digest`` (and store it on disk unless told otherwise)."""
        with self._lock:
            known = self._memory.get(digest) is not None
            self._memory.put(digest, code)
        if to_disk and not known and self.disk is not None:
            self.disk.put(OBJECT_PREFIX + digest, (digest, code))


def _defines_kernels(code: bytes, digest: str) -> bool:
    """Whether ``code`` is an ELF object defining the first kernel keyed ``digest``."""
    try:
        defined, _ = read_elf_symbols(code)
    except (ValueError, IndexError, struct.error):
        return False
    return kernel_symbol(digest, 0) in defined


def kernel_symbol(digest: str, index: int) -> str:
    """The symbol of kernel ``index`` of the kernels keyed ``digest``: ``tk<digest[:24]>_<i>``."""
    return f"tk{digest[:24]}_{index}"

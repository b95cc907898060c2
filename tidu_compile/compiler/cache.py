"""Kernel caches: a bounded in-memory LRU and an on-disk object cache.

Disk entries are files ``<key>.tidu`` holding ``MAGIC + sha256(payload) + payload``,
written atomically (temporary file + ``os.replace``). A missing, truncated, corrupt or
foreign entry is a miss, never a crash; an unwritable directory turns the disk cache off
with one warning. The key (``cache_key`` of ``compiler.native.program_digest``'s parts)
covers the program text, the project's and xDSL's versions, a digest of the code
generator's source, llvmlite's version, the target triple, CPU name and features.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from tidu_compile import forksafe

__all__ = ["DiskCache", "MemoryCache", "cache_key", "default_cache_dir", "CACHE_ENV"]

CACHE_ENV = "TIDU_COMPILE_CACHE_DIR"
_MAGIC = b"TIDUCACHE1\n"
_DIGEST = hashlib.sha256().digest_size


def default_cache_dir() -> Path:
    """``$TIDU_COMPILE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tidu_compile`` (``~/.cache``)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tidu_compile"


def cache_key(*parts: str) -> str:
    """A hex digest of the given parts (order matters)."""
    digest = hashlib.sha256()
    for part in parts:
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.hexdigest()


class MemoryCache:
    """A thread-safe LRU bounded by entry count and, optionally, by bytes.

    ``size_of(value)`` gives an entry's size in bytes (default 0); with ``max_bytes`` set,
    least recently used entries are evicted until the total is within it (an entry
    larger than ``max_bytes`` on its own is not kept). ``on_evict(key, value)`` hears
    every eviction and every ``discard``.
    """

    def __init__(
        self,
        max_entries: int = 512,
        on_evict: Callable[[Hashable, Any], None] | None = None,
        *,
        max_bytes: int | None = None,
        size_of: Callable[[Any], int] | None = None,
    ) -> None:
        if not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries: must be an int >= 1, got {max_entries!r}")
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 0):
            raise ValueError(f"max_bytes: must be None or an int >= 0, got {max_bytes!r}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.on_evict = on_evict
        self.size_of = size_of
        self.total_bytes = 0
        #: Counts ``put`` calls. Only a put can evict, so a caller that touched a key
        #: since the last put may skip touching it again (``touch`` costs a key hash).
        self.puts = 0
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._lock = forksafe.Lock()

    def get(self, key: Hashable) -> Any | None:
        value = self._entries.get(key)  # lock-free: single dict operations are atomic
        if value is not None:
            with contextlib.suppress(KeyError):  # evicted meanwhile: still a valid hit
                self._entries.move_to_end(key)
        return value

    def touch(self, key: Hashable) -> None:
        """Mark ``key`` as just used (a hit found through another index); cheap."""
        try:  # noqa: SIM105 - contextlib.suppress costs more than the hit it refreshes
            self._entries.move_to_end(key)
        except KeyError:  # evicted meanwhile
            pass

    def put(self, key: Hashable, value: Any) -> None:
        size = int(self.size_of(value)) if self.size_of is not None else 0
        evicted = []
        with self._lock:
            self.puts += 1
            self.total_bytes += size - self._sizes.pop(key, 0)
            self._entries[key] = value
            self._entries.move_to_end(key)
            self._sizes[key] = size
            while self._entries and (
                len(self._entries) > self.max_entries
                or (self.max_bytes is not None and self.total_bytes > self.max_bytes)
            ):
                old_key, old_value = self._entries.popitem(last=False)
                self.total_bytes -= self._sizes.pop(old_key, 0)
                evicted.append((old_key, old_value))
        if self.on_evict is not None:
            for old_key, old_value in evicted:
                self.on_evict(old_key, old_value)

    def discard(self, key: Hashable) -> None:
        """Remove ``key`` if present (``on_evict`` hears it)."""
        with self._lock:
            if key not in self._entries:
                return
            value = self._entries.pop(key)
            self.total_bytes -= self._sizes.pop(key, 0)
        if self.on_evict is not None:
            self.on_evict(key, value)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self.total_bytes = 0


class DiskCache:
    """Pickled artifacts on disk, keyed by ``cache_key`` digests."""

    SUFFIX = ".tidu"

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.enabled = True
        self._warned = False

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}{self.SUFFIX}"

    def get(self, key: str) -> Any | None:
        """The artifact stored under ``key``, or None (missing or unreadable)."""
        if not self.enabled:
            return None
        try:
            blob = self.path_for(key).read_bytes()
        except OSError:
            return None
        header = len(_MAGIC) + _DIGEST
        if len(blob) < header or not blob.startswith(_MAGIC):
            return None
        digest, payload = blob[len(_MAGIC) : header], blob[header:]
        if hashlib.sha256(payload).digest() != digest:
            return None
        try:
            return pickle.loads(payload)
        except Exception:  # noqa: BLE001 - any unpickling failure is a miss
            return None

    def put(self, key: str, artifact: Any) -> None:
        """Store ``artifact`` atomically; on any OS error turn the disk cache off."""
        if not self.enabled:
            return
        payload = pickle.dumps(artifact, protocol=pickle.HIGHEST_PROTOCOL)
        blob = _MAGIC + hashlib.sha256(payload).digest() + payload
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=self.SUFFIX)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(blob)
                os.replace(tmp, self.path_for(key))
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as error:
            self._disable(error)

    def _disable(self, error: OSError) -> None:
        self.enabled = False
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"tidu_compile: cache directory {self.directory} is not writable ({error}); "
                "caching compiled kernels in memory only",
                RuntimeWarning,
                stacklevel=4,
            )

    def entries(self) -> list[Path]:
        try:
            return sorted(self.directory.glob(f"*{self.SUFFIX}"))
        except OSError:
            return []

    def clear(self) -> int:
        """Delete every entry; returns how many were removed."""
        removed = 0
        for path in self.entries():
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
        return removed

"""The kernel caches: LRU bounds, atomic disk entries, corrupt or foreign entries are misses,
and keys that tell every shape and dtype apart (on disk and in memory)."""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import random_array

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.compiler import native
from tidu_compile.compiler.cache import (
    CACHE_ENV,
    DiskCache,
    MemoryCache,
    cache_key,
    default_cache_dir,
)
from tidu_compile.compiler.objects import OBJECT_PREFIX
from tidu_compile.compiler.program import build_program
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.ops import TensorType


def test_memory_cache_is_lru_and_bounded() -> None:
    cache = MemoryCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now most recent
    cache.put("c", 3)
    assert cache.get("b") is None
    assert cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2
    with pytest.raises(ValueError, match="max_entries"):
        MemoryCache(0)


def test_cache_key_separates_parts() -> None:
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("x") == cache_key("x")


def test_disk_round_trip_and_atomic_files(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "nested")
    key = cache_key("program")
    assert cache.get(key) is None
    cache.put(key, {"plan": [1, 2, 3]})
    assert cache.get(key) == {"plan": [1, 2, 3]}
    assert [p.name for p in (tmp_path / "nested").iterdir()] == [f"{key}.tidu"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: blob[: len(blob) // 2],  # truncated
        lambda blob: b"",  # empty
        lambda blob: os.urandom(len(blob)),  # random bytes
        lambda blob: blob[:-1] + bytes([blob[-1] ^ 1]),  # one flipped bit
        lambda blob: b"NOTTIDU" + blob[7:],  # foreign header
    ],
    ids=["truncated", "empty", "random", "bitflip", "header"],
)
def test_damaged_entries_are_misses(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    cache = DiskCache(tmp_path)
    key = cache_key("k")
    cache.put(key, ("artifact", 42))
    path = cache.path_for(key)
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get(key) is None
    cache.put(key, ("artifact", 43))  # a miss is simply overwritten
    assert cache.get(key) == ("artifact", 43)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_directory_warns_once_and_goes_memory_only(tmp_path: Path) -> None:
    tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        cache = DiskCache(tmp_path / "sub")
        with pytest.warns(RuntimeWarning, match="not writable"):
            cache.put("a", 1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cache.put("b", 2)
        assert not cache.enabled and cache.get("a") is None
    finally:
        tmp_path.chmod(stat.S_IRWXU)


def test_directory_that_is_a_file_warns_and_goes_memory_only(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    cache = DiskCache(blocker / "cache")
    with pytest.warns(RuntimeWarning, match="not writable"):
        cache.put("a", 1)
    assert not cache.enabled


def test_clear_and_entries(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path)
    for name in "abc":
        cache.put(cache_key(name), name)
    assert len(cache.entries()) == 3
    assert cache.clear() == 3
    assert cache.entries() == []


def test_default_dir_honours_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "override"))
    assert default_cache_dir() == tmp_path / "override"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "tidu_compile"


# ------------------------------------------------------------------ keys: every type apart

#: Argument types of one node (``sin``) that must each get their own kernel: the same
#: size in other shapes, the same shape in other dtypes.
SIGNATURES = [((2, 3), "float64"), ((3, 2), "float64"), ((6,), "float64"),
              ((2, 3), "float32"), ((2, 3), "complex128")]  # fmt: skip


@pytest.mark.gate
def test_program_keys_tell_shapes_and_dtypes_apart() -> None:
    """The disk key (``native.program_digest``) of one node's program differs for every
    shape and dtype. Kernel symbols are named after it, so two programs sharing a key
    would share native code: LLVM aborts the process, or one program's kernel runs on
    the other's buffers. Hence a ``gate``: it runs first and a failure stops the run."""
    graph = tc.RecordedGraph.from_primitive(ops.Sin(), [tc.Name("x")])
    linear = graph.linearize([0])
    digests = {}
    for shape, dtype in SIGNATURES:
        t = TensorType(shape, dtype)
        saved = {graph.input_value_keys[0]: t, graph.output_keys[0]: t}
        program = build_program(graph, linear, [t], saved)
        digests[shape, dtype] = native.program_digest(program)
    assert len(set(digests.values())) == len(SIGNATURES), digests


def _sin_gradients(executor: tc.BackwardExecutor) -> list[np.ndarray]:
    """``d sin(x)`` with a random seed, for every signature (one backward node each)."""
    rng = np.random.default_rng(0)
    grads = []
    for shape, dtype in SIGNATURES:
        x = tc.tensor(random_array(rng, shape, dtype), requires_grad=True)
        seed = random_array(rng, shape, dtype)
        (g,) = tc.grad(tc.sin(x), [x], seed=seed, executor=executor)
        assert g.shape == shape and g.dtype == dtype
        grads.append(g)
    return grads


def test_disk_keys_tell_shapes_and_dtypes_apart(tmp_path: Path) -> None:
    """One entry per compiled program; each comes back from disk for its own types.

    A key that ignored the dtype or the shape would map two of these programs to one
    file: fewer entries than compiles, and a fresh executor that may not compile would
    find the other program's kernel (rejected) or none (``CompileForbiddenError``).
    """
    expected = _sin_gradients(tc.ReferenceExecutor())
    writer = CompiledExecutor(tmp_path)
    for got, want in zip(_sin_gradients(writer), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert writer.stats.compiles == len(SIGNATURES)
    entries = [p.name for p in DiskCache(tmp_path).entries()]
    objects = [name for name in entries if name.startswith(OBJECT_PREFIX)]
    assert len(entries) - len(objects) == len(SIGNATURES)  # one artifact per program
    assert len(objects) == len(SIGNATURES)  # and the object code of its kernels

    reader = CompiledExecutor(tmp_path, forbid_compile=True)
    for got, want in zip(_sin_gradients(reader), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5)
    assert reader.stats.disk_hits == len(SIGNATURES) and reader.stats.compiles == 0


def test_memory_plans_tell_shapes_and_dtypes_apart() -> None:
    """One executor, the same node structure, new types: a new plan each time (never a
    plan made for other types), then cache hits for all of them."""
    executor = CompiledExecutor(False)
    expected = _sin_gradients(tc.ReferenceExecutor())
    for _ in range(2):
        for got, want in zip(_sin_gradients(executor), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5)
        assert executor.stats.compiles == len(SIGNATURES)

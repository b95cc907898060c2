"""Faults: a damaged, foreign, unwritable or vanishing disk cache, two processes filling
one cache, kernels that fail to compile, and user rules that raise mid-backward.

Every case must give correct gradients with at most a warning. The tests run as root,
where ``chmod`` does not make a directory read-only: an unwritable cache is simulated by
a cache path *under a regular file* (``mkdir`` fails with ``NotADirectoryError``) and by
making the atomic write fail with ``PermissionError`` (monkeypatched ``mkstemp``).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tidu_compile.tools.examples import EXAMPLES

import tidu_compile as tc
from tidu_compile.compiler import cache as cache_module
from tidu_compile.compiler import native, pipeline
from tidu_compile.compiler.objects import OBJECT_PREFIX
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.ops import Mul, Scale
from tidu_compile.ops.base import TensorOp, apply, linear

MLP = EXAMPLES["mlp"]


def mlp_gradients(executor: tc.BackwardExecutor, seed: int = 0) -> list[np.ndarray]:
    arrays = MLP.make_inputs(np.random.default_rng(seed), np.float64)
    inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
    return [g for g in tc.grad(MLP.function(*inputs), inputs, executor=executor)
            if g is not None]  # fmt: skip


EXPECTED = {seed: mlp_gradients(tc.ReferenceExecutor(), seed) for seed in range(2)}


def assert_correct(got: list[np.ndarray], seed: int = 0) -> None:
    for g, e in zip(got, EXPECTED[seed], strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def run_quietly(executor: CompiledExecutor, seed: int = 0) -> list[warnings.WarningMessage]:
    """Compute and check the gradients; returns the warnings raised meanwhile."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_correct(mlp_gradients(executor, seed), seed)
    return [w for w in caught if "tidu_compile" in str(w.message)]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory filled by one run (copied by each test that damages it)."""
    directory = tmp_path_factory.mktemp("filled")
    run_quietly(CompiledExecutor(directory))
    assert len(list(directory.glob("*.tidu"))) >= 3
    return directory


def damaged_copy(filled: Path, tmp_path: Path, damage: Any) -> tuple[Path, int]:
    directory = tmp_path / "cache"
    shutil.copytree(filled, directory)
    entries = sorted(directory.glob("*.tidu"))
    for i, path in enumerate(entries):
        path.write_bytes(damage(i, path.read_bytes()))
    return directory, len(_programs(entries))


def _programs(entries: list[Path]) -> list[Path]:
    """The entries of programs (one per program lowered), not of object code (``obj-*``)."""
    return [p for p in entries if not p.name.startswith(OBJECT_PREFIX)]


def _blob(payload: bytes) -> bytes:
    return cache_module._MAGIC + hashlib.sha256(payload).digest() + payload  # noqa: SLF001


DAMAGE = {
    "empty": lambda i, b: b"",
    "magic only": lambda i, b: b[: len(cache_module._MAGIC)],  # noqa: SLF001
    "truncated header": lambda i, b: b[:20],
    "truncated payload": lambda i, b: b[: len(b) // 2 + i],
    "one bit flipped": lambda i, b: b[:-7] + bytes([b[-7] ^ 1]) + b[-6:],
    "random bytes": lambda i, b: np.random.default_rng(i).bytes(len(b)),
    "magic + random": lambda i, b: cache_module._MAGIC + os.urandom(200),  # noqa: SLF001
    "valid pickle of junk": lambda i, b: _blob(pickle.dumps({"not": "an artifact"})),
    "unpicklable payload": lambda i, b: _blob(b"\x80\x05garbage"),
    "another entry's artifact": lambda i, b: b,  # shuffled below
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_entries_are_misses(filled: Path, tmp_path: Path, damage: str) -> None:
    directory, count = damaged_copy(filled, tmp_path, DAMAGE[damage])
    if damage == "another entry's artifact":  # every file holds its neighbour's artifact
        entries = sorted(directory.glob("*.tidu"))
        blobs = [p.read_bytes() for p in entries]
        for path, blob in zip(entries, blobs[1:] + blobs[:1], strict=True):
            path.write_bytes(blob)
    executor = CompiledExecutor(directory)
    assert run_quietly(executor) == []
    stats = executor.stats
    assert stats.disk_hits == 0 and stats.compiles > 0 and stats.fallbacks == 0
    assert stats.compiles + stats.generic_hits == count  # every program lowered again
    again = CompiledExecutor(directory, forbid_compile=True)  # the entries were rewritten
    assert run_quietly(again) == [] and again.stats.disk_hits == count


@dataclass(frozen=True)
class _FakeArtifact:
    digest: str


def test_artifact_with_broken_object_code_is_recompiled(filled: Path, tmp_path: Path) -> None:
    """Right digest and plan, but object code that cannot be loaded: a miss, not a crash."""

    def broken(artifact: Any) -> Any:
        if artifact.object_code is None:
            return artifact
        return replace(artifact, object_code=b"\x7fELF" + b"\0" * 60)

    def break_code(i: int, blob: bytes) -> bytes:
        header = len(cache_module._MAGIC) + hashlib.sha256().digest_size  # noqa: SLF001
        stored = pickle.loads(blob[header:])
        if isinstance(stored, tuple):  # object code by kernels digest
            return _blob(pickle.dumps((stored[0], b"\x7fELF" + b"\0" * 60)))
        return _blob(pickle.dumps(broken(stored)))

    directory, count = damaged_copy(filled, tmp_path, break_code)
    # A fresh process: this one already has the real kernels loaded under those symbols.
    out = run_child(directory, "-W", "error::RuntimeWarning")
    compiles, hits, fallbacks = map(int, out.split())
    assert compiles > 0 and fallbacks == 0


def test_entries_of_another_cpu_or_llvmlite_are_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key covers llvmlite's version, the triple, CPU name and features."""
    real = native.environment_fingerprint()
    for fake in ("llvmlite 0.1|x86_64-unknown-linux-gnu|znver9|+avx1024", real + "|other"):
        monkeypatch.setattr(native, "environment_fingerprint", lambda fake=fake: fake)
        run_quietly(CompiledExecutor(tmp_path))
    written = len(_programs(list(tmp_path.glob("*.tidu"))))
    monkeypatch.setattr(native, "environment_fingerprint", lambda: real)
    executor = CompiledExecutor(tmp_path)
    assert run_quietly(executor) == []
    stats = executor.stats
    assert stats.disk_hits == 0 and stats.compiles + stats.generic_hits == written // 2


def test_cache_under_a_regular_file_is_memory_only_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    executor = CompiledExecutor(blocker / "cache")
    caught = run_quietly(executor)
    assert len(caught) == 1 and "not writable" in str(caught[0].message)
    assert executor.disk is not None and not executor.disk.enabled
    assert run_quietly(executor, 1) == []  # memory only from now on, silently


def test_unwritable_directory_is_memory_only_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied (simulated read-only directory)")

    monkeypatch.setattr(cache_module.tempfile, "mkstemp", refuse)
    executor = CompiledExecutor(tmp_path)
    caught = run_quietly(executor)
    assert len(caught) == 1 and "Permission denied" in str(caught[0].message)
    assert list(tmp_path.iterdir()) == [] and executor.stats.compiles > 0


def test_directory_deleted_while_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "cache"
    executor = CompiledExecutor(directory)
    assert run_quietly(executor) == []
    shutil.rmtree(directory)  # between calls: hits stay in memory, new entries recreate it
    assert run_quietly(executor, 1) == []
    x = tc.tensor(np.linspace(-1, 1, 7), requires_grad=True)
    (g,) = tc.grad(tc.sum(tc.tanh(x) * 3.0), [x], executor=executor)
    np.testing.assert_allclose(g, 3.0 / np.cosh(np.linspace(-1, 1, 7)) ** 2, rtol=1e-12)
    assert list(directory.glob("*.tidu"))
    real_replace = os.replace

    def vanish(source: Any, target: Any) -> None:  # deleted between write and rename
        shutil.rmtree(directory)
        real_replace(source, target)

    monkeypatch.setattr(cache_module.os, "replace", vanish)
    fresh = CompiledExecutor(directory)
    caught = run_quietly(fresh)
    assert len(caught) <= 1 and fresh.stats.compiles > 0


CHILD = """
import sys, numpy as np, tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.tools.examples import EXAMPLES
m = EXAMPLES["mlp"]
ex = CompiledExecutor(sys.argv[1])
for seed in range(3):
    xs = [tc.tensor(a, requires_grad=True)
          for a in m.make_inputs(np.random.default_rng(seed), np.float64)]
    got = tc.grad(m.function(*xs), xs, executor=ex)
    ref = tc.grad(m.function(*xs), xs, executor=tc.ReferenceExecutor())
    assert all(g is None and r is None or np.allclose(g, r, rtol=1e-10)
               for g, r in zip(got, ref)), "wrong gradients"
print(ex.stats.compiles, ex.stats.disk_hits, ex.stats.fallbacks)
"""


def run_child(directory: Path, *options: str) -> str:
    env = dict(os.environ, TIDU_COMPILE_THREADS="1")
    result = subprocess.run([sys.executable, *options, "-c", CHILD, str(directory)],
                            capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_two_processes_fill_one_cache_at_once(tmp_path: Path) -> None:
    env = dict(os.environ, TIDU_COMPILE_THREADS="1")
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]  # fmt: skip
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        compiles, hits, fallbacks = map(int, out.split())
        assert fallbacks == 0
        assert compiles + hits > 0
    assert not list(tmp_path.glob(".tmp-*")), "temporary files left behind"
    reader = CompiledExecutor(tmp_path, forbid_compile=True)  # every entry is whole
    assert run_quietly(reader) == [] and reader.stats.disk_hits > 0


# ------------------------------------------------------------------ compile failures


@pytest.mark.compile_errors_expected
def test_failing_kernel_falls_back_for_that_node_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pipeline.compile_program

    def fail_on_pow(program: Any, digest: str, *rest: Any) -> Any:
        if "Pow(" in str(program):
            raise RuntimeError("injected: LLVM refused the pow kernel")
        return real(program, digest, *rest)

    monkeypatch.setattr(pipeline, "compile_program", fail_on_pow)
    executor = CompiledExecutor(cache_dir=False)
    caught = run_quietly(executor)
    assert caught and all("injected" in str(w.message) for w in caught)
    failed = len(executor.stats.errors)
    assert failed >= 1 and all("injected" in e for e in executor.stats.errors)
    assert executor.stats.fallbacks == failed and executor.stats.compiles > 0
    assert run_quietly(executor, 1) == []  # remembered: no new attempt, no new warning
    assert executor.stats.fallbacks == 2 * failed and len(executor.stats.errors) == failed


@pytest.mark.compile_errors_expected
def test_failing_bind_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_engine(artifact: Any) -> Any:
        raise OSError("injected: cannot map executable memory")

    monkeypatch.setattr(native, "bind", no_engine)
    executor = CompiledExecutor(cache_dir=False)
    caught = run_quietly(executor)
    assert caught and executor.stats.fallbacks == len(executor.stats.errors) > 0


# ------------------------------------------------------------------ user rules that raise


@dataclass(frozen=True)
class Cube(TensorOp):
    """``x ** 3`` with rules that misbehave on demand (``mode``)."""

    input_count = 1
    mode: str = "ok"

    def infer_types(self, *inputs: Any) -> Any:
        return (self.check_same_types(inputs),)

    def evaluate(self, *arrays: np.ndarray) -> Any:
        return (arrays[0] ** 3,)

    def jvp_rule(self, b: Any, xs: Any, ys: Any, ts: Any, ctx: Any) -> Any:
        if self.mode == "raise":
            raise RuntimeError("injected failure in a user JVP rule")
        d = apply(b, Scale(3.0), [apply(b, Mul(), [xs[0], xs[0]])])
        out = linear(b, Mul(), [ts[0], d], (True, False))
        return [out, out] if self.mode == "count" else [out]


@pytest.mark.parametrize(("mode", "error"), [("raise", RuntimeError), ("count", tc.ADRuleError)])
def test_a_raising_user_rule_leaves_the_executor_usable(mode: str, error: type) -> None:
    from tidu_compile.frontend.tensor import apply1

    executor = CompiledExecutor(cache_dir=False)
    data = np.linspace(-1.0, 1.0, 5)

    def grad_of(op: Cube) -> np.ndarray:
        x = tc.tensor(data, requires_grad=True)
        return tc.grad(tc.sum(tc.tanh(apply1(op, x)) * 2.0), [x], executor=executor)[0]

    expected = 6.0 * data**2 / np.cosh(data**3) ** 2
    for _ in range(2):  # node by node, then the tape's captured program (executors.capture)
        np.testing.assert_allclose(grad_of(Cube()), expected, rtol=1e-12)
    compiles = executor.stats.compiles
    for _ in range(3):
        with pytest.raises(error):
            grad_of(Cube(mode))
    np.testing.assert_allclose(grad_of(Cube()), expected, rtol=1e-12)
    assert executor.stats.compiles == compiles  # caches intact: nothing compiled again
    assert executor.stats.errors == [] and executor.stats.fallbacks == 0

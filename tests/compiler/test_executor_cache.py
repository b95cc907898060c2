"""Per-node caching of the compiled executor: memory, disk, fresh processes, damage, fallbacks."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from tidu_compile.tools.examples import EXAMPLES

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor, CompileForbiddenError

MLP = EXAMPLES["mlp"]


def mlp_gradients(executor: tc.BackwardExecutor, seed: int = 0) -> list[np.ndarray]:
    inputs = [tc.tensor(a, requires_grad=True)
              for a in MLP.make_inputs(np.random.default_rng(seed), np.float64)]  # fmt: skip
    grads = tc.grad(MLP.function(*inputs), inputs, executor=executor)
    return [g for g in grads if g is not None]


def test_second_iteration_compiles_nothing(tmp_path: Path) -> None:
    executor = CompiledExecutor(tmp_path)
    first = mlp_gradients(executor)
    compiles = executor.stats.compiles
    assert compiles > 0 and executor.stats.compile_seconds > 0
    executor.forbid_compile = True  # any compile now raises: the loop must hit the cache
    for seed in range(3):
        mlp_gradients(executor, seed)
    assert executor.stats.compiles == compiles
    assert executor.stats.memory_hits >= 3 * compiles
    assert all(np.array_equal(a, b) for a, b in zip(first, mlp_gradients(executor), strict=True))


def test_forbid_compile_raises_on_a_miss(tmp_path: Path) -> None:
    executor = CompiledExecutor(tmp_path, forbid_compile=True)
    with pytest.raises(CompileForbiddenError, match="forbid_compile"):
        mlp_gradients(executor)


def test_new_executor_with_same_directory_hits_disk(tmp_path: Path) -> None:
    expected = mlp_gradients(CompiledExecutor(tmp_path))
    again = CompiledExecutor(tmp_path, forbid_compile=True)
    got = mlp_gradients(again)
    assert again.stats.compiles == 0 and again.stats.disk_hits > 0
    assert again.stats.disk_seconds > 0 and again.stats.compile_seconds == 0
    assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))


def test_fresh_process_with_same_cache_compiles_nothing(tmp_path: Path) -> None:
    mlp_gradients(CompiledExecutor(tmp_path))
    script = (
        "import numpy as np, tidu_compile as tc\n"
        "from tidu_compile.executors.compiled import CompiledExecutor\n"
        "from tidu_compile.tools.examples import EXAMPLES\n"
        f"ex = CompiledExecutor({str(tmp_path)!r}, forbid_compile=True)\n"
        "m = EXAMPLES['mlp']\n"
        "xs = [tc.tensor(a, requires_grad=True) for a in "
        "m.make_inputs(np.random.default_rng(0), np.float64)]\n"
        "tc.grad(m.function(*xs), xs, executor=ex)\n"
        "print(ex.stats.compiles, ex.stats.disk_hits)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    compiles, disk_hits = map(int, result.stdout.split())
    assert compiles == 0 and disk_hits > 0


def test_corrupted_entries_are_recompiled(tmp_path: Path) -> None:
    first = CompiledExecutor(tmp_path)
    expected = mlp_gradients(first)
    entries = sorted(tmp_path.glob("*.tidu"))  # concrete programs and their shape classes
    assert entries
    for i, path in enumerate(entries):
        blob = path.read_bytes()
        path.write_bytes(blob[: len(blob) // 2] if i % 2 else b"garbage")
    fresh = CompiledExecutor(tmp_path)
    got = mlp_gradients(fresh)
    assert fresh.stats.disk_hits == 0 and fresh.stats.compiles == first.stats.compiles
    assert all(np.allclose(a, b, rtol=1e-12) for a, b in zip(expected, got, strict=True))


def test_memory_only_executor_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDU_COMPILE_CACHE_DIR", str(tmp_path))
    executor = CompiledExecutor(cache_dir=False)
    mlp_gradients(executor)
    assert executor.stats.compiles > 0 and list(tmp_path.iterdir()) == []


def test_environment_variable_chooses_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIDU_COMPILE_CACHE_DIR", str(tmp_path / "env"))
    mlp_gradients(CompiledExecutor())
    assert list((tmp_path / "env").glob("*.tidu"))


def test_compiled_is_the_default_executor() -> None:
    assert isinstance(tc.get_default_executor(), CompiledExecutor)


def test_threads_share_one_executor(tmp_path: Path) -> None:
    executor = CompiledExecutor(tmp_path)
    expected = [mlp_gradients(tc.ReferenceExecutor(), seed) for seed in range(4)]
    failures: list[str] = []

    def work(seed: int) -> None:
        for _ in range(5):
            got = mlp_gradients(executor, seed)
            pairs = zip(expected[seed], got, strict=True)
            if not all(np.allclose(a, b, rtol=1e-12) for a, b in pairs):
                failures.append(f"thread {seed}: wrong gradients")

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    single = CompiledExecutor(False)
    mlp_gradients(single)
    mlp_gradients(single)  # the second backward of the tape's structure: its captured program
    assert executor.stats.compiles == single.stats.compiles  # single flight: no duplicates
    assert executor.stats.captured == single.stats.captured == 1


def test_user_scalar_primitives_fall_back_to_reference() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
    from scalar_prims import Exp, Mul
    from scalar_runtime import Tape

    executor = CompiledExecutor(False)
    tape = Tape()
    x, y = tape.leaf(0.5), tape.leaf(2.0)
    out = tape.apply1(Exp(), tape.apply1(Mul(), x, y))
    grads = tc.backward(out.key, out.trace, 1.0, executor)
    assert grads[x.key] == pytest.approx(2.0 * np.exp(1.0))
    assert grads[y.key] == pytest.approx(0.5 * np.exp(1.0))
    assert executor.stats.fallbacks == 2 and executor.stats.compiles == 0


@pytest.mark.compile_errors_expected
def test_a_failing_compile_falls_back_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from tidu_compile.compiler import pipeline

    def broken(program: object, digest: str, *rest: object) -> None:
        raise RuntimeError("injected backend failure")

    monkeypatch.setattr(pipeline, "compile_program", broken)
    executor = CompiledExecutor(False)
    with pytest.warns(RuntimeWarning, match="injected backend failure"):
        got = mlp_gradients(executor)
    expected = mlp_gradients(tc.ReferenceExecutor())
    assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))
    assert executor.stats.errors and "injected backend failure" in executor.stats.errors[0]
    fallbacks, errors = executor.stats.fallbacks, len(executor.stats.errors)
    assert fallbacks == errors > 0  # one failed compile per node
    mlp_gradients(executor)  # the failure is remembered: no second attempt
    assert len(executor.stats.errors) == errors
    assert executor.stats.fallbacks == 2 * fallbacks

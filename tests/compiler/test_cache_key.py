"""The disk-cache key: the program text plus what the generated code depends on, so an
upgrade (of the project, xDSL or llvmlite), an edit of the code generator or another
target (triple, CPU features, even with the same CPU name) never loads a stale kernel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm
import numpy as np
import pytest
import xdsl

import tidu_compile as tc
from tidu_compile import version
from tidu_compile.backend import target
from tidu_compile.compiler import native
from tidu_compile.executors.compiled import CompiledExecutor, CompileForbiddenError


def gradient(executor: CompiledExecutor) -> list[np.ndarray | None]:
    x = tc.tensor(np.linspace(-1.0, 1.0, 9), requires_grad=True)
    return tc.grad(tc.sum(tc.tanh(x) * x), [x], executor=executor)


@pytest.fixture
def fresh_fingerprint(monkeypatch: pytest.MonkeyPatch) -> Callable[[], str]:
    """``code_fingerprint`` recomputed on every call (it is cached per process)."""
    real: Callable[[], str] = native.code_fingerprint.__wrapped__
    monkeypatch.setattr(native, "code_fingerprint", real)
    return real


def test_the_key_names_the_project_and_xdsl_versions(
    fresh_fingerprint: Callable[[], str],
) -> None:
    parts = fresh_fingerprint().split("|")
    assert parts[0] == f"tidu_compile-{tc.__version__}" == f"tidu_compile-{version.__version__}"
    assert parts[1] == f"xdsl-{xdsl.__version__}"  # the dist-info read agrees with xDSL's


@pytest.mark.parametrize("upgrade", ["project", "xdsl"])
def test_an_upgrade_never_loads_a_kernel_of_the_old_version(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fresh_fingerprint: Callable[[], str],
    upgrade: str,
) -> None:
    expected = gradient(CompiledExecutor(tmp_path))
    again = CompiledExecutor(tmp_path, forbid_compile=True)
    assert np.array_equal(gradient(again)[0], expected[0]) and again.stats.disk_hits > 0
    if upgrade == "project":
        monkeypatch.setattr(version, "__version__", "99.0")
    else:
        monkeypatch.setattr(native, "installed_version", lambda name: "99.0")
    with pytest.raises(CompileForbiddenError):
        gradient(CompiledExecutor(tmp_path, forbid_compile=True))


def test_an_edit_of_the_code_generator_changes_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_fingerprint: Callable[[], str]
) -> None:
    package = tmp_path / "fake_codegen"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "lower.py").write_text("RULE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(native, "CODE_PACKAGES", ("fake_codegen",))
    before = fresh_fingerprint()
    assert before == fresh_fingerprint()
    (package / "lower.py").write_text("RULE = 2\n")
    assert fresh_fingerprint() != before


def test_the_code_packages_are_the_code_generator() -> None:
    import importlib

    for name in native.CODE_PACKAGES:
        directory = Path(importlib.import_module(name).__path__[0])
        assert list(directory.glob("*.py")), name
    assert {"tidu_compile.compiler", "tidu_compile.passes", "tidu_compile.dialects",
            "tidu_compile.backend"} == set(native.CODE_PACKAGES)  # fmt: skip


# ----------------------------------------------------------------- the target in the key


def _neutral_feature(features: dict[str, bool], triple: str) -> str:
    """A CPU feature whose flip leaves the kernel tuning as it is (so only the feature
    string itself can tell the two targets apart)."""
    for name in sorted(features):
        flipped = {**features, name: not features[name]}
        if target.tuning_for(triple, flipped) == target.tuning_for(triple, features):
            return name
    raise AssertionError("every feature changes the tuning")


@pytest.fixture
def other_target(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """``other_target(what)``: from now on the host target differs from this machine's
    in ``what`` only, the CPU name kept: a flipped feature (``"avx512f"``, or
    ``"neutral"``: one that leaves the tuning as it is), ``"llvmlite"`` (another
    version) or ``"triple"``. What the disk key is built from is patched (llvmlite's
    feature map, its version, the process triple), not the key or the fingerprint."""
    gradient(CompiledExecutor(False))  # the target machine and engine: this machine's
    features = dict(llvm.get_host_cpu_features())
    triple = llvm.get_process_triple()
    monkeypatch.setattr(native, "_environment", [])  # the fingerprint, cached per process

    def switch(what: str) -> None:
        monkeypatch.delitem(target._state, "host", raising=False)  # noqa: SLF001 - its cache
        if what == "llvmlite":
            monkeypatch.setattr(llvmlite, "__version__", f"{llvmlite.__version__}.post9")
        elif what == "triple":
            vendorless, _, environment = triple.rpartition("-")
            other = f"{vendorless}-{'musl' if environment != 'musl' else 'gnu'}"
            monkeypatch.setattr(llvm, "get_process_triple", lambda: other)
        else:
            name = _neutral_feature(features, triple) if what == "neutral" else what
            flipped = llvm.FeatureMap({**features, name: not features.get(name, False)})
            monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: flipped)
        assert target.host_target().cpu == llvm.get_host_cpu_name()

    return switch


@pytest.mark.parametrize("what", ["avx512f", "neutral", "llvmlite", "triple"])
def test_an_artifact_of_another_target_is_never_loaded(
    tmp_path: Path, other_target: Callable[[str], None], what: str
) -> None:
    expected = gradient(CompiledExecutor(tmp_path))
    again = CompiledExecutor(tmp_path, forbid_compile=True)
    assert np.array_equal(gradient(again)[0], expected[0]) and again.stats.disk_hits > 0
    before = native.environment_fingerprint()
    other_target(what)
    assert native.environment_fingerprint() == before  # learnt once per process ...
    native._environment.clear()  # noqa: SLF001 - ... as a new process would
    assert native.environment_fingerprint() != before
    with pytest.raises(CompileForbiddenError):  # no kernel on disk for this target
        gradient(CompiledExecutor(tmp_path, forbid_compile=True))
    if what != "triple":  # code for another triple is not to be run here
        compiling = CompiledExecutor(tmp_path)
        assert np.array_equal(gradient(compiling)[0], expected[0])
        stats = compiling.stats
        assert stats.compiles > 0 and stats.disk_hits == 0 and stats.generic_hits == 0, stats

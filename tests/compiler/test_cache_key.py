"""The disk-cache key: the program text plus what the generated code depends on, so an
upgrade (of the project or xDSL) or an edit of the code generator never loads a stale
kernel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import xdsl

import tidu_compile as tc
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
    assert parts[0] == f"tidu_compile-{tc.__version__}"
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
        monkeypatch.setattr(tc, "__version__", "99.0")
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

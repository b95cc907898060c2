"""Fixtures of the frontend tests.

* ``executor``: each test twice, as the default executor: the ``ReferenceExecutor`` and a
  ``CompiledExecutor`` (on one disk cache per module), which must end the test with no
  fallback and no compile error. A module may define its own ``executor`` instead, such
  as ``compiled_only``: a fresh memory-only ``CompiledExecutor``, checked the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("frontend-cache")


@pytest.fixture(params=["reference", "compiled"])
def executor(
    request: pytest.FixtureRequest, module_cache_dir: Path
) -> Iterator[tc.BackwardExecutor]:
    chosen = (tc.ReferenceExecutor() if request.param == "reference"
              else CompiledExecutor(module_cache_dir))  # fmt: skip
    with tc.use_executor(chosen):
        yield chosen
    if isinstance(chosen, CompiledExecutor):
        assert chosen.stats.fallbacks == 0 and not chosen.stats.errors, chosen.stats.errors


@pytest.fixture
def compiled_only() -> Iterator[CompiledExecutor]:
    compiled = CompiledExecutor(False)
    with tc.use_executor(compiled):
        yield compiled
    assert compiled.stats.fallbacks == 0 and not compiled.stats.errors, compiled.stats.errors

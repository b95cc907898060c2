"""Shared fixtures of the compiler tests; ``tests/`` and ``tests/ops`` go on ``sys.path``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parents[1]
for _path in (str(_TESTS), str(_TESTS / "ops")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from tidu_compile.executors.compiled import CompiledExecutor  # noqa: E402


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One disk cache for the session, so repeated programs compile once."""
    return tmp_path_factory.mktemp("tidu-cache")


@pytest.fixture(scope="session")
def compiled(shared_cache_dir: Path) -> CompiledExecutor:
    """A session-wide compiled executor (its stats accumulate across tests)."""
    return CompiledExecutor(shared_cache_dir)

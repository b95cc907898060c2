"""Session-wide test machinery.

* ``tests/`` goes on ``sys.path`` so the shared ``helpers`` package imports from every
  test directory, under any import mode.
* Every test fails when a ``CompiledExecutor`` could not compile a node during it
  (``helpers.compile_errors``; opt out with ``@pytest.mark.compile_errors_expected``).
* A test past its timeout fails (pytest-timeout, configured in ``pyproject.toml``; a
  slow test raises its own with ``@pytest.mark.timeout(seconds)``); one stuck in native
  code ends the run loudly (``helpers.hang_watchdog``).
* ``compiled``: one session-wide compiled executor on one session disk cache, shared
  by the op, frontend and compiler tests so a program compiles once per session.
"""

import sys
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from helpers.compile_errors import MARKER, CompileErrorsFailTheTest  # noqa: E402
from helpers.hang_watchdog import HangWatchdog  # noqa: E402

from tidu_compile.executors.compiled import CompiledExecutor  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: the test makes compiles fail on purpose (stats.errors)"
    )
    config.pluginmanager.register(CompileErrorsFailTheTest(), "tidu-compile-errors")
    if config.pluginmanager.hasplugin("timeout"):
        config.pluginmanager.register(HangWatchdog(config), "tidu-hang-watchdog")


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One disk cache for the session, so repeated programs compile once."""
    return tmp_path_factory.mktemp("tidu-cache")


@pytest.fixture(scope="session")
def compiled(shared_cache_dir: Path) -> CompiledExecutor:
    """A session-wide compiled executor (its stats accumulate across tests)."""
    return CompiledExecutor(shared_cache_dir)

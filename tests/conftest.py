"""Session-wide test machinery.

* ``tests/`` goes on ``sys.path`` so the shared ``helpers`` package imports from every
  test directory, under any import mode.
* Every test fails when a ``CompiledExecutor`` could not compile a node during it
  (``helpers.compile_errors``; opt out with ``@pytest.mark.compile_errors_expected``).
* A test past its timeout fails (pytest-timeout, configured in ``pyproject.toml``; a
  slow test raises its own with ``@pytest.mark.timeout(seconds)``); one stuck in native
  code ends the run loudly (``helpers.hang_watchdog``).
* ``@pytest.mark.gate``: the test runs before all others, and its failure stops the
  run. For invariants whose violation would crash the process later (a disk-cache key
  that maps two programs to one kernel name makes LLVM abort, or runs one program's
  kernel on another's buffers): the run ends with that test's failure, not an abort.
* ``compiled``: one session-wide compiled executor on one session disk cache, shared
  by the op, frontend and compiler tests so a program compiles once per session.
* Executors compile on the calling thread (``TIDU_COMPILE_BACKGROUND=0``, inherited by
  subprocesses): tests count compiles and check native results right after a call.
  The tests of background compilation ask for ``background=True`` themselves.
* Every compile verifies each MLIR stage's result (``TIDU_COMPILE_VERIFY=1``, inherited
  by subprocesses; a user's compile verifies the imported module and the LLVM IR).
"""

import os
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

os.environ["TIDU_COMPILE_BACKGROUND"] = "0"  # before any executor exists
os.environ["TIDU_COMPILE_VERIFY"] = "1"  # every compile verifies every stage's result

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from helpers.compile_errors import MARKER, CompileErrorsFailTheTest  # noqa: E402
from helpers.hang_watchdog import HangWatchdog  # noqa: E402

from tidu_compile.executors.compiled import CompiledExecutor  # noqa: E402

GATE = "gate"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: the test makes compiles fail on purpose (stats.errors)"
    )
    config.addinivalue_line(
        "markers", f"{GATE}: runs first; its failure stops the run (see tests/conftest.py)"
    )
    config.pluginmanager.register(CompileErrorsFailTheTest(), "tidu-compile-errors")
    if config.pluginmanager.hasplugin("timeout"):
        config.pluginmanager.register(HangWatchdog(config), "tidu-hang-watchdog")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker(GATE) is None)  # stable: gates first


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and item.get_closest_marker(GATE) is not None:
        item.session.shouldstop = (
            f"{item.nodeid} failed: running on could crash the process (see tests/conftest.py)"
        )
    return report


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One disk cache for the session, so repeated programs compile once: under xdist,
    one for all workers (in the run's base directory, the parent of each worker's)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return tmp_path_factory.mktemp("tidu-cache")
    shared = tmp_path_factory.getbasetemp().parent / "tidu-cache"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(scope="session")
def compiled(shared_cache_dir: Path) -> CompiledExecutor:
    """A session-wide compiled executor (its stats accumulate across tests)."""
    return CompiledExecutor(shared_cache_dir)

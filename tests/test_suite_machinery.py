"""The suite's own safety nets, each proved on a throw-away test file run by a child pytest:

* a compile failure fails the test that caused it, directly (one FAILED, no ERROR),
  unless the test is marked ``compile_errors_expected``; later tests are not blamed;
* a test that hangs in Python fails at its timeout and the session goes on;
* a test that hangs in native code ends the run with status 1, naming the test.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from helpers.compile_errors import CompileErrorsFailTheTest
from helpers.hang_watchdog import HangWatchdog

def pytest_configure(config):
    config.addinivalue_line("markers", "compile_errors_expected: on purpose")
    config.pluginmanager.register(CompileErrorsFailTheTest(), "errors")
    config.pluginmanager.register(HangWatchdog(config, grace=1.0), "watchdog")
"""


def run_pytest(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_child.py").write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), str(tmp_path / "test_child.py"), *args],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip


CHILD_TESTS = """
import threading
import numpy as np
import pytest
import tidu_compile as tc
from tidu_compile.compiler import pipeline
from tidu_compile.executors.compiled import CompiledExecutor

@pytest.fixture(scope="module")
def shared():
    return CompiledExecutor(False)

def gradient(executor):
    x = tc.tensor(np.linspace(0.0, 1.0, 4), requires_grad=True)
    return tc.grad(tc.sum(tc.sin(x)), [x], executor=executor)[0]

def test_broken_compile(monkeypatch, shared):
    def broken(program, digest, *rest):
        raise RuntimeError("injected lowering failure")
    monkeypatch.setattr(pipeline, "compile_program", broken)
    with pytest.warns(RuntimeWarning):
        gradient(shared)  # right answer, from the reference: the plugin must object

def test_later_tests_are_not_blamed(shared):
    gradient(CompiledExecutor(False))

@pytest.mark.compile_errors_expected
def test_marked(monkeypatch):
    monkeypatch.setattr(pipeline, "compile_program", lambda p, d, *rest: 1 / 0)
    with pytest.warns(RuntimeWarning):
        gradient(CompiledExecutor(False))

def test_executor_dropped_inside_the_test(monkeypatch):
    monkeypatch.setattr(pipeline, "compile_program", lambda p, d, *rest: 1 / 0)
    with pytest.warns(RuntimeWarning):
        gradient(CompiledExecutor(False))  # the executor is gone before the check

@pytest.mark.timeout(1)
def test_deadlock():
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()  # never returns

def test_after_the_deadlock():
    assert True
"""


def test_compile_failures_and_python_hangs_fail_their_own_tests_only(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, CHILD_TESTS, "-rfE")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    summary = out.strip().splitlines()[-1]
    assert "3 failed, 3 passed" in summary and "error" not in summary, out
    for name in ("test_broken_compile", "test_executor_dropped_inside_the_test",
                 "test_deadlock"):  # fmt: skip
        assert f"FAILED test_child.py::{name}" in out, out
    assert "injected lowering failure" in out and "compile_errors_expected" in out
    assert "Timeout" in out


NATIVE_HANG = """
import ctypes
import llvmlite.binding as llvm
import pytest

IR = '''
define void @spin() {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%j, %loop]
  %j = add i64 %i, 1
  store volatile i64 %j, ptr @sink
  br label %loop
}
@sink = global i64 0
'''

def test_spins_in_native_code():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple().create_target_machine()
    module = llvm.parse_assembly(IR)
    engine = llvm.create_mcjit_compiler(module, target)
    engine.finalize_object()
    ctypes.CFUNCTYPE(None)(engine.get_function_address("spin"))()

def test_never_reached():
    pass
"""


@pytest.mark.timeout(60)
def test_a_native_hang_ends_the_run_naming_the_test(tmp_path: Path) -> None:
    result = run_pytest(tmp_path, NATIVE_HANG, "-o", "timeout=1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "test_child.py::test_spins_in_native_code: still running" in result.stderr
    assert "test_never_reached" not in result.stdout

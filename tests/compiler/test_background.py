"""Tiered execution: nodes run on the reference path while workers compile them.

``CompiledExecutor(background=True)`` never waits on the compiler; once a worker's
artifact arrives the node runs natively. Results are the reference's while pending
and bit for bit those of ``background=False`` once native.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tidu_compile.tools.bench.row import Workload
from tidu_compile.tools.bench.workloads import make_w1, make_w2, make_w3, make_w4
from tidu_compile.tools.bench.workloads_indexing import make_w5, make_w6

import tidu_compile as tc
from tidu_compile.compiler import background
from tidu_compile.executors.compiled import CompiledExecutor

pytestmark = pytest.mark.timeout(600)

WORKLOADS = [
    make_w1(300),
    make_w1(300, composite=True),
    make_w1(300, dtype="float32"),
    make_w2(20),
    make_w2(20, composite=True),
    make_w3("float64", batch=6, features=5, hidden=4, outputs=3),
    make_w3("float32", batch=6, features=5, hidden=4, outputs=3, composite=True),
    make_w4(7, 5),
    make_w4(7, 5, composite=True),
    make_w5(rows=12, features=6, classes=4),
    make_w5(rows=12, features=6, classes=4, composite=True),
    make_w6(batch=3, size=4),
    make_w6(batch=3, size=4, composite=True),
]


def _gradients(workload: Workload, executor: tc.BackwardExecutor, seed: int) -> list:
    arrays = workload.make_inputs(seed)
    tensors = [tc.tensor(a, requires_grad=i in workload.grad_inputs)
               for i, a in enumerate(arrays)]  # fmt: skip
    wrt = [tensors[i] for i in workload.grad_inputs]
    return tc.grad(workload.tidu_loss(*tensors), wrt, executor=executor)


def _settle(executor: CompiledExecutor, step: Callable[[], object]) -> None:
    """Wait for the workers, then step until a step runs nothing on the reference path
    (one wait should do: ``test_one_wait_covers_programs_that_followed_their_shape_class``)."""
    deadline = time.monotonic() + 300
    while True:
        assert executor.wait_for_background(timeout=300)
        assert time.monotonic() < deadline, "the nodes never switched to native code"
        runs = executor.stats.background_runs
        step()
        if executor.stats.background_runs == runs:
            return


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: f"{w.key} {w.recording}")
def test_background_results_match_blocking_ones(tmp_path: Path, workload: Workload) -> None:
    # Node by node (capture=False): a captured program would take over before the nodes'
    # own plans are collected (its own switch: test_whole_backward_capture).
    executor = CompiledExecutor(tmp_path / "bg", background=True, capture=False)
    blocking = CompiledExecutor(tmp_path / "fg", background=False, capture=False)
    rtol = 1e-5 if workload.dtype == "float32" else 1e-12
    for seed in range(2):  # while pending: the reference path's results
        for got, want in zip(_gradients(workload, executor, seed),
                             _gradients(workload, blocking, seed), strict=True):  # fmt: skip
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    _settle(executor, lambda: _gradients(workload, executor, 0))  # from here on native
    runs = executor.stats.background_runs
    for seed in range(2):
        for got, want in zip(_gradients(workload, executor, seed),
                             _gradients(workload, blocking, seed), strict=True):  # fmt: skip
            np.testing.assert_array_equal(got, want)
    assert executor.stats.background_runs == runs  # nothing ran on the reference path
    # Programs of one shape class may all go to the workers before the first is back.
    assert executor.stats.compiles + executor.stats.generic_hits >= blocking.stats.compiles
    assert executor.stats.fallbacks == blocking.stats.fallbacks


def test_a_node_switches_to_native_code(tmp_path: Path) -> None:
    executor = CompiledExecutor(tmp_path, background=True)
    x = tc.tensor(np.linspace(0.0, 1.0, 1000), requires_grad=True)

    def step() -> np.ndarray:
        return tc.grad(tc.sum(tc.exp(tc.sin(x)) * x), [x], executor=executor)[0]

    expected = np.exp(np.sin(x.numpy())) * (np.cos(x.numpy()) * x.numpy() + 1)
    first = step()
    assert executor.stats.background_runs > 0 and executor.stats.memory_hits == 0
    deadline = time.monotonic() + 300
    while True:  # the user's loop never waits: it keeps stepping until all is native
        assert time.monotonic() < deadline, "the nodes never switched to native code"
        runs = executor.stats.background_runs
        np.testing.assert_allclose(step(), expected, rtol=1e-12)
        if executor.stats.background_runs == runs:
            break
        time.sleep(0.01)
    hits = executor.stats.memory_hits
    np.testing.assert_allclose(step(), expected, rtol=1e-12)
    assert executor.stats.background_runs == runs and executor.stats.memory_hits > hits
    assert executor.stats.compiles > 0
    np.testing.assert_allclose(first, expected, rtol=1e-12)
    # A second executor on the same disk cache finds the workers' artifacts there.
    again = CompiledExecutor(tmp_path, background=True, forbid_compile=True)
    tc.grad(tc.sum(tc.exp(tc.sin(x)) * x), [x], executor=again)
    assert again.stats.disk_hits > 0 and again.stats.background_runs == 0


def test_background_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(background.BACKGROUND_ENV, raising=False)
    assert CompiledExecutor(False).background
    monkeypatch.setenv(background.BACKGROUND_ENV, "0")
    assert not CompiledExecutor(False).background


def test_fork_while_a_background_compile_runs() -> None:
    executor = CompiledExecutor(False, background=True)
    x = tc.tensor(np.ones((10, 7)), requires_grad=True)
    tc.grad(tc.sum(tc.tanh(x) * tc.exp(x)), [x], executor=executor)
    assert executor.tiered.in_flight  # a worker compiles right now
    pid = os.fork()
    if pid == 0:  # the child: the parent's workers are not its own; it compiles anew
        status = 4
        try:
            (got,) = tc.grad(tc.sum(tc.tanh(x) * tc.exp(x)), [x], executor=executor)
            assert executor.wait_for_background(timeout=60)
            (got,) = tc.grad(tc.sum(tc.tanh(x) * tc.exp(x)), [x], executor=executor)
            t = np.tanh(1.0)
            status = 0 if np.allclose(got, (1 - t * t) * np.e + t * np.e, rtol=1e-12) else 3
        finally:
            os._exit(status)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child deadlocked")
    assert executor.wait_for_background(timeout=120)


def test_workers_exit_when_the_parent_dies(tmp_path: Path) -> None:
    script = (
        "import os, sys, numpy as np, tidu_compile as tc\n"
        "from tidu_compile.compiler import background\n"
        "from tidu_compile.executors.compiled import CompiledExecutor\n"
        "ex = CompiledExecutor(False, background=True)\n"
        "x = tc.tensor(np.ones(5), requires_grad=True)\n"
        "tc.grad(tc.sum(tc.exp(x)), [x], executor=ex)\n"
        "print(*background._pool.pids(), flush=True)\n"
        "os._exit(0)\n"  # dies without shutting the pool down
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    pids = [int(p) for p in result.stdout.split()]
    assert pids
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{p}").exists() for p in pids):
        assert time.monotonic() < deadline, "a worker outlived its parent"
        time.sleep(0.1)


def test_a_traced_function_runs_its_forward_while_it_compiles(tmp_path: Path) -> None:
    """``@tc.function`` runs its forward with the current executor's ``run_graph``:
    op by op while a worker compiles the graph, natively afterwards."""
    workload = make_w4(7, 5, composite=True)
    executor = CompiledExecutor(tmp_path / "bg", background=True)
    blocking = CompiledExecutor(tmp_path / "fg", background=False)
    with tc.use_executor(blocking):
        want = _gradients(workload, blocking, 0)
    with tc.use_executor(executor):
        first = _gradients(workload, executor, 0)
        # the joint forward's graph (loss and gradients: ``frontend.joint_forward``)
        assert executor.stats.background_runs >= 1 and executor.stats.joint_runs == 1
        _settle(executor, lambda: _gradients(workload, executor, 0))
        runs = executor.stats.background_runs
        again = _gradients(workload, executor, 0)
    assert executor.stats.background_runs == runs
    for got, native, expected in zip(first, again, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        np.testing.assert_array_equal(native, expected)


def test_new_batch_sizes_follow_their_shape_class_in_flight(tmp_path: Path) -> None:
    """Batch sizes that come before the first one's code is back wait for it and reuse
    it: the MLP compiles only the programs of its first batch size."""
    from test_shape_generic import BATCHES, _mlp_loss, _params  # noqa: PLC0415

    # per-node programs only: a whole-tape capture would compile one more in flight
    executor = CompiledExecutor(tmp_path, background=True, capture=False)
    blocking = CompiledExecutor(tmp_path / "fg", background=False, capture=False)
    rng = np.random.default_rng(0)
    params = _params(rng)
    batches = [(tc.tensor(rng.standard_normal((b, 48))), tc.tensor(rng.standard_normal((b, 10))))
               for b in BATCHES]  # fmt: skip
    for x, y in batches:  # every size on the reference path, all before any code is back
        tc.grad(_mlp_loss(x, y, *params), params, executor=executor)
    _settle(executor, lambda: [tc.grad(_mlp_loss(x, y, *params), params, executor=executor)
                               for x, y in batches])  # fmt: skip
    for x, y in batches:
        blocking_grads = tc.grad(_mlp_loss(x, y, *params), params, executor=blocking)
        for got, want in zip(tc.grad(_mlp_loss(x, y, *params), params, executor=executor),
                             blocking_grads, strict=True):  # fmt: skip
            np.testing.assert_array_equal(got, want)
    assert executor.stats.compiles == blocking.stats.compiles, (executor.stats, blocking.stats)


@pytest.mark.parametrize("workload", [make_w3("float64", batch=256, features=8, hidden=16,
                                              outputs=4)], ids=["W3 per-op"])  # fmt: skip
@pytest.mark.parametrize("on_disk", [True, False], ids=["disk cache", "memory only"])
def test_one_wait_covers_programs_that_followed_their_shape_class(
    tmp_path: Path, workload: Workload, on_disk: bool
) -> None:
    """A program that followed its shape class's compile and found the code does not
    serve it (a fixed extent differs) is submitted as soon as the class is done, so one
    ``wait_for_background`` is enough for the next step to run natively, at every new
    batch size (the class's finished submissions do not linger as leaders)."""
    executor = CompiledExecutor(tmp_path / "bg" if on_disk else False, background=True)
    for batch in (256, 200, 64):
        sized = make_w3("float64", batch=batch, features=8, hidden=16, outputs=4)
        _gradients(sized, executor, 0)
        assert executor.wait_for_background(timeout=300)
        runs = executor.stats.background_runs
        _gradients(sized, executor, 0)
        assert executor.stats.background_runs == runs, f"batch {batch}: not native"
    assert executor.stats.fallbacks == 0


def test_one_wait_after_several_new_sizes_serves_every_size_natively() -> None:
    """Three batch sizes before any code is back, then one wait: every size runs
    natively and right, nothing on the calling thread. A follower whose class's code
    does not serve it is submitted under its digest, though it was named by its
    program's text (it had no keys): its node's next call must find that submission (it
    did not, compiled the program once more and ran on the reference path meanwhile)."""
    from test_worker_pool import _compiles_here, _train_after_fork  # noqa: PLC0415

    executor = CompiledExecutor(False, background=True)
    here = _compiles_here(executor)
    w = tc.tensor(np.random.default_rng(0).standard_normal((8, 4)), requires_grad=True)
    assert _train_after_fork(executor, here, w) == ""
    assert executor.stats.fallbacks == 0


@pytest.mark.parametrize(("text", "enabled"), [("0", False), ("off", False), (" 1 ", True),
                                               ("yes", True)])  # fmt: skip
def test_the_background_switch_reads_its_environment_variable(
    monkeypatch: pytest.MonkeyPatch, text: str, enabled: bool
) -> None:
    monkeypatch.setenv(background.BACKGROUND_ENV, text)
    assert background.default_enabled() is enabled


@pytest.mark.parametrize("name", ["BACKGROUND_ENV", "WORKERS_ENV"])
def test_bad_background_settings_are_clear_errors(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    variable = getattr(background, name)
    monkeypatch.setenv(variable, "maybe")
    with pytest.raises(ValueError, match=f"{variable}.*'maybe'"):
        background.default_enabled() if name == "BACKGROUND_ENV" else background.workers()

"""Regression tests of issue 25 (never a stale kernel) and of the bugs the sequence
fuzzer (``tests/hardening/test_fuzz_sequences.py``) found, each shrunk to a few lines.

Every test runs programs of one structure through ONE executor, as a training loop or a
notebook does, with random cotangent seeds (all-ones seeds hide misplaced elements) and
NaN-filled fresh outputs (``TIDU_COMPILE_DEBUG_FILL``: an element never written cannot
pass for a number), and compares every gradient with the ``ReferenceExecutor``'s.

The stale kernels (a pad's or a slice's backward, a slice's offset, a disk entry of
another program) are gone since object code is keyed by the text of the kernels it was
compiled from (``compiler.kernel_code``); a traced op nothing reads is left out of the
type check of a node memoized by its structure (``compiler.program.infer_output_types``);
a cumulative product along an axis of extent 1 shifts nothing in (``ops.scan``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.compiler import buffers
from tidu_compile.executors.compiled import CompiledExecutor


@pytest.fixture(autouse=True)
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(buffers, "DEBUG_FILL", True)
    yield


def _fresh() -> CompiledExecutor:
    return CompiledExecutor(cache_dir=False, background=False)


def _check_each(
    executor: CompiledExecutor,
    fn: Callable[..., tc.Tensor],
    calls: list[tuple[np.ndarray, tuple[Any, ...]]],
    reference: Callable[..., tc.Tensor] | None = None,
) -> list[str]:
    """``fn(x, *static)`` for each call on ``executor`` (one executor for all), its
    value and gradient against the reference's (``reference``, default ``fn``); the
    calls that differ."""
    wrong = []
    rng = np.random.default_rng(5)
    for data, static in calls:
        x = tc.tensor(data, requires_grad=True)
        with tc.use_executor(executor):
            y = fn(x, *static)
            seed = rng.standard_normal(y.shape)
            got = tc.grad(y, [x], seed=seed, executor=executor)[0]
        expected_y = (reference or fn)(x, *static)
        expected = tc.grad(expected_y, [x], seed=seed, executor=tc.ReferenceExecutor())[0]
        if not (np.allclose(y.numpy(), expected_y.numpy()) and np.allclose(got, expected)):
            wrong.append(f"{data.shape} {static}: {got.ravel()} vs {expected.ravel()}")
    return wrong


def _pad(x: tc.Tensor, widths: Any) -> tc.Tensor:
    return tc.pad(x, widths)


def _slice(x: tc.Tensor, start: int | None, stop: int | None) -> tc.Tensor:
    return x[start:stop]


_RNG = np.random.default_rng(0)
_A22, _A46, _A86 = (_RNG.standard_normal(s) for s in [(2, 2), (4, 6), (8, 6)])


@pytest.mark.parametrize(
    "calls",
    [
        [(_A22, (0,)), (_A22, (3,)), (_A22, ((3,),)), (_A22, ((3, 2),))],  # issue 25's
        [(_A46, ((0, 1),)), (_A86, ((0, 3),))],  # the fuzzer's: low widths 0, a batch
    ],
    ids=["issue", "fuzzer"],
)
@pytest.mark.parametrize("traced", [False, True], ids=["per-op", "function"])
def test_pad_widths_through_one_executor(calls: list, traced: bool) -> None:
    fn = tc.function(_pad) if traced else _pad
    assert _check_each(_fresh(), fn, calls, reference=_pad) == []


@pytest.mark.parametrize("traced", [False, True], ids=["per-op", "function"])
def test_a_narrower_slice_after_a_wider_one(traced: bool) -> None:
    """Issue 25: ``x[1:]`` then ``x[1:-1]`` on a fresh 4-vector: ``[0, 1, 1, 0]``."""
    executor = _fresh()
    fn = tc.function(_slice) if traced else _slice
    grads = []
    for stop in (None, -1):
        x = tc.tensor(np.arange(4.0), requires_grad=True)
        with tc.use_executor(executor):
            grads.append(tc.grad(tc.sum(fn(x, 1, stop)), [x], executor=executor)[0])
    np.testing.assert_array_equal(grads[0], [0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(grads[1], [0.0, 1.0, 1.0, 0.0])


@pytest.mark.parametrize(
    "calls",
    [
        [(_RNG.standard_normal(6), (2, None)), (_RNG.standard_normal(6), (2, -1))],
        # the fuzzer's (array_split pieces): x[2:4] of 4 elements, then of 5
        [(_RNG.standard_normal(4), (2, 4)), (_RNG.standard_normal(5), (2, 4))],
    ],
    ids=["shorter-slice", "longer-input"],
)
def test_a_slice_of_another_length_with_the_same_start(calls: list) -> None:
    assert _check_each(_fresh(), _slice, calls) == []


def test_a_column_then_a_column_of_wider_rows() -> None:
    """The fuzzer's, 2-d: ``x[:, 1]`` of a 6 x 2 matrix, then of a 6 x 4 one."""
    calls = [(_RNG.standard_normal((6, 2)), ()), (_RNG.standard_normal((6, 4)), ())]
    assert _check_each(_fresh(), lambda x: x[:, 1], calls) == []


def test_a_traced_slice_of_rows_of_another_length() -> None:
    """The fuzzer's, a forward value: ``x[1, 1:2]`` in a ``@tc.function`` of a 2 x 6
    matrix, then of a 2 x 4 one (the compiled forward reads element 7, not 5)."""
    traced = tc.function(lambda x: x[1, 1:2])
    executor = _fresh()
    values = []
    for shape in [(2, 6), (2, 4)]:
        data = _RNG.standard_normal(shape)
        with tc.use_executor(executor):
            values.append((traced(tc.tensor(data, requires_grad=True)).numpy(), data[1, 1:2]))
    for got, expected in values:
        np.testing.assert_array_equal(got, expected)


_GP_SCRIPT = Path(__file__).resolve().parent / "disk_cache_gp.py"


#: Fresh interpreters of the disk-cache script (``TIDU_HARDENING_LONG=1``: ten, as the
#: issue ran it; the first compiles, every later one is served from disk alike).
PROCESSES = 10 if os.environ.get("TIDU_HARDENING_LONG") else 4


@pytest.mark.timeout(600)
def test_the_disk_cache_script_in_fresh_processes_on_one_cache(tmp_path: Path) -> None:
    """Issue 25's ``wrong_grad_from_disk_cache.py`` (N = 4): fresh interpreters, one
    after another on one fresh cache directory, each right on every call."""
    env = dict(os.environ, TIDU_COMPILE_DEBUG_FILL="nan")
    runs = []
    for _ in range(PROCESSES):
        run = subprocess.run(
            [sys.executable, str(_GP_SCRIPT), str(tmp_path / "cache"), "4", "2"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        runs.append(json.loads(run.stdout.strip().splitlines()[-1]))
    assert runs[0]["compiles"] > 0 and all(r["compiles"] == 0 for r in runs[1:]), runs
    assert [r["wrong"] for r in runs] == [0] * PROCESSES, runs


_INDEX_ONE_ELEMENT = """
import json, sys
import numpy as np
import tidu_compile as tc
executor = tc.CompiledExecutor(cache_dir=sys.argv[1], background=False)
rng = np.random.default_rng(0)
wrong = []
for n in (4, 3):
    x = tc.tensor(rng.standard_normal(n), requires_grad=True)
    seed = rng.standard_normal(())
    got = tc.grad(x[2], [x], seed=seed, executor=executor)[0]
    expected = tc.grad(x[2], [x], seed=seed, executor=tc.ReferenceExecutor())[0]
    wrong += [] if np.allclose(got, expected) else [got.tolist()]
print(json.dumps({"wrong": wrong, "compiles": executor.stats.compiles}))
"""


def test_a_class_from_disk_serves_only_what_it_served_in_memory(tmp_path: Path) -> None:
    """The fuzzer's, shrunk from the disk-cache script: ``x[2]`` of a 4-vector, then of
    a 3-vector. The compiling process compiles both (the first's code spells its 4);
    a second process on the same cache serves the 4-vector with the class's entry made
    for the 3-vector, whose code never writes element 3."""
    env = dict(os.environ, TIDU_COMPILE_DEBUG_FILL="nan")
    runs = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", _INDEX_ONE_ELEMENT, str(tmp_path)],
                             capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        runs.append(json.loads(run.stdout.strip().splitlines()[-1]))
    assert runs[0]["compiles"] > 0 and runs[1]["compiles"] == 0, runs
    assert [r["wrong"] for r in runs] == [[], []], runs


def test_one_element_then_a_longer_vector() -> None:
    """``x[2]`` of a 3-vector (no element after it), then of a 4-vector."""
    calls = [(_RNG.standard_normal(3), ()), (_RNG.standard_normal(4), ())]
    assert _check_each(_fresh(), lambda x: x[2], calls) == []


def test_a_traced_function_with_an_unused_value_meets_a_new_shape() -> None:
    """The fuzzer's (a step whose value nothing reads): ``mean(x)`` is dead, ``y`` keeps
    its shape, ``x`` changes shape."""

    def program(x: tc.Tensor, y: tc.Tensor) -> tc.Tensor:
        tc.mean(x)
        return y * 2.5

    traced = tc.function(program)
    executor = _fresh()
    rng = np.random.default_rng(1)
    for shape in [(3, 2, 6), (3, 4, 6)]:
        x = tc.tensor(rng.standard_normal(shape), requires_grad=True)
        y = tc.tensor(rng.standard_normal((3, 1)), requires_grad=True)
        with tc.use_executor(executor):
            grads = tc.grad(traced(x, y), [x, y], seed=np.full((3, 1), 0.5), executor=executor)
        assert grads[0] is None
        np.testing.assert_array_equal(grads[1], np.full((3, 1), 1.25))


def test_a_traced_split_with_an_empty_piece_meets_a_new_batch() -> None:
    """The fuzzer's: ``array_split`` at index 0 makes an empty piece (a slice nothing
    reads once the join drops it); a new number of columns breaks the next call."""
    traced = tc.function(lambda x: tc.concatenate(tc.array_split(x, [0], axis=1)[::-1], 1))
    executor = _fresh()
    for shape in [(4, 5), (4, 8)]:
        x = tc.tensor(_RNG.standard_normal(shape), requires_grad=True)
        seed = _RNG.standard_normal(shape)
        with tc.use_executor(executor):
            (grad,) = tc.grad(traced(x), [x], seed=seed, executor=executor)
        np.testing.assert_array_equal(grad, seed)


@pytest.mark.parametrize(("shape", "axis"), [((1, 3), 0), ((3, 1), 1), ((), None)])
def test_cumprod_along_an_axis_of_extent_1(shape: tuple[int, ...], axis: int | None) -> None:
    """The fuzzer's (the reference itself raised): the cumulative product of one
    element is that element, its gradient the seed."""
    data = np.random.default_rng(2).standard_normal(shape)
    x = tc.tensor(data, requires_grad=True)
    out = tc.cumprod(x, axis=axis)
    seed = np.random.default_rng(3).standard_normal(out.shape)
    (grad,) = tc.grad(out, [x], seed=seed, executor=tc.ReferenceExecutor())
    np.testing.assert_allclose(grad, seed.reshape(shape))

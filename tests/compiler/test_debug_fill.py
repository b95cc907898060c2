"""The debug mode ``TIDU_COMPILE_DEBUG_FILL=nan``: fresh kernel outputs start poisoned.

An element a kernel should write but does not then reads as NaN (or an absurd integer)
instead of whatever the allocator's memory held: a stale kernel that passes for right
by luck fails every time in this mode (the sequence fuzzer runs with it on).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.compiler import buffers, plan
from tidu_compile.compiler.buffers import MIN_POOLED_BYTES, poison
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.ops.base import TensorType


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(buffers, "DEBUG_FILL", True)
    yield


@pytest.mark.parametrize(
    ("value", "expected"), [(None, False), ("", False), ("0", False), ("off", False),
                            ("nan", True), (" NaN ", True)],
)  # fmt: skip
def test_the_values_of_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: bool
) -> None:
    monkeypatch.delenv(buffers.DEBUG_FILL_ENV, raising=False)
    if value is not None:
        monkeypatch.setenv(buffers.DEBUG_FILL_ENV, value)
    assert buffers._configured_debug_fill() is expected


def test_another_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(buffers.DEBUG_FILL_ENV, "zeros")
    with pytest.raises(ValueError, match="TIDU_COMPILE_DEBUG_FILL must be 'nan'.*'zeros'"):
        buffers._configured_debug_fill()


def test_the_variable_is_read_at_import() -> None:
    code = "from tidu_compile.compiler import buffers; print(buffers.DEBUG_FILL)"
    env = dict(os.environ, **{buffers.DEBUG_FILL_ENV: "nan"})
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"


@pytest.mark.parametrize(
    ("dtype", "check"),
    [("float64", np.isnan), ("float32", np.isnan), ("complex128", np.isnan),
     ("int64", lambda a: a == np.iinfo(np.int64).min), ("int32", lambda a: a == -(2**31)),
     ("uint8", lambda a: a == 255), ("bool", lambda a: a)],
)  # fmt: skip
def test_poison_per_dtype(dtype: str, check: object) -> None:
    value = np.full(3, poison(np.dtype(dtype)), dtype=dtype)
    assert value.dtype == dtype and np.all(check(value))  # type: ignore[operator]
    if dtype.startswith("complex"):
        assert np.isnan(value.real).all() and np.isnan(value.imag).all()


@pytest.mark.parametrize("elements", [6, MIN_POOLED_BYTES // 8 + 1], ids=["small", "pooled"])
def test_a_plans_allocator_poisons_its_outputs(poisoned: None, elements: int) -> None:
    allocate = plan._allocator(TensorType((elements,), "float64"))
    for _ in range(2):  # the second pooled block is a recycled one: poisoned again
        out = allocate((elements,), np.dtype("float64"))
        assert out.shape == (elements,) and np.isnan(out).all()
        out[:] = 1.0
        del out


def test_without_the_mode_outputs_are_not_filled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(buffers, "DEBUG_FILL", False)
    assert plan._allocator(TensorType((6,), "float64")) is np.empty


@pytest.mark.parametrize("composite", [False, True], ids=["per-op", "function"])
def test_kernels_that_write_everything_are_unaffected(poisoned: None, composite: bool) -> None:
    """Every element of every output of a sound program is written: no NaN shows."""
    rng = np.random.default_rng(3)

    def loss(x: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
        joined = tc.concatenate([x[1:] @ w, tc.pad(x, 1)[:2, 1:-1]])
        return tc.sum(joined**2) + tc.max(x[:, ::-2])

    fn = tc.function(loss) if composite else loss
    executor = CompiledExecutor(False, background=False)
    x = tc.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    w = tc.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    with tc.use_executor(executor):
        got = tc.grad(fn(x, w), [x, w], executor=executor)
    expected = tc.grad(loss(x, w), [x, w], executor=tc.ReferenceExecutor())
    assert executor.stats.compiles > 0
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)

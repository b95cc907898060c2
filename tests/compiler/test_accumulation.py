"""``CompiledExecutor.add_operands``: every fast path adds exactly like ``np.add``."""

from __future__ import annotations

import numpy as np
import pytest

from tidu_compile.compiler.buffers import MIN_POOLED_BYTES
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.ownership import exclusive_owner

EDGES = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 5e-324, 1.7976931348623157e308]


@pytest.mark.parametrize("a", EDGES)
@pytest.mark.parametrize("b", EDGES)
def test_scalar_f64_sums_are_ieee_sums(a: float, b: float) -> None:
    got = CompiledExecutor(False).add_operands(np.array(a), np.array(b))
    with np.errstate(all="ignore"):
        want = np.add(np.array(a), np.array(b))
    assert type(got) is np.ndarray and got.shape == () and got.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got) == np.signbit(want)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_other_scalar_dtypes_keep_their_dtype(dtype: type) -> None:
    got = CompiledExecutor(False).add_operands(np.array(1.25, dtype), np.array(2.5, dtype))
    assert type(got) is np.ndarray and got.dtype == dtype and got == dtype(3.75)


def test_large_sums_use_recycled_memory() -> None:
    n = MIN_POOLED_BYTES // 8
    a, b = np.arange(float(n)), np.full(n, 0.5)
    got = CompiledExecutor(False).add_operands(a, b)
    np.testing.assert_array_equal(got, a + b)
    assert exclusive_owner(got) is got.base  # a pooled block, not a numpy allocation
    broadcast = CompiledExecutor(False).add_operands(a, np.array(1.0))  # not the pooled path
    np.testing.assert_array_equal(broadcast, a + 1.0)

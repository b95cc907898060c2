"""Every lowering row of the op table, run as native code against numpy's function.

For a table op ``f``, ``@tc.function g(x, y) = sum(f(x) * y)`` has the backward
``ct_y = f(x)``: the compiled kernel recomputes ``f`` from ``x`` with the op's lowering
row (polynomial math included). Inputs: the op's domain plus edge values (signed zeros,
infinities, NaN, tiny and huge values, the boundaries of the domain). The native values
must match numpy's within a few ulps, with the same inf and NaN pattern, and nothing may
fall back to the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import table_elementwise

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.executors.compiled import CompiledExecutor

#: Largest error in units in the last place allowed of a lowering row.
MAX_ULPS = 4

EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 1e-30, 1e30, -1e30, 0.5,
         -0.5, 1.0, -1.0, 2.0, 3.0, 700.0, -700.0, 1e-8, -1e-8]  # fmt: skip

#: Documented range limits of a lowering (``expand_math_polynomials``: sin and cos are
#: NaN above 1.5 * 2^51 in f64 and 1.5 * 2^22 in f32); inputs beyond them are left out.
RANGE_LIMITS: dict[type[ops.TensorOp], dict[str, float]] = {
    ops.Sin: {"float64": 1.5 * 2.0**51, "float32": 1.5 * 2.0**22},
    ops.Cos: {"float64": 1.5 * 2.0**51, "float32": 1.5 * 2.0**22},
}

UNARY = [p for p in table_elementwise() if p.input_count == 1]
BINARY = [p for p in table_elementwise() if p.input_count == 2]


def _ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    finite = np.isfinite(want)
    spacing = np.spacing(np.abs(want[finite]).astype(want.dtype))
    return np.abs(got[finite] - want[finite]) / np.maximum(spacing, np.finfo(want.dtype).tiny)


def _inputs(primitive: type[ops.TensorOp], dtype: str, rng: np.random.Generator) -> np.ndarray:
    from helpers import random_array

    sample = random_array(rng, (64,), dtype, primitive.domain)
    values = np.concatenate([sample, np.array(EDGES, dtype=dtype)]).astype(dtype)
    limit = RANGE_LIMITS.get(primitive, {}).get(dtype)
    return values if limit is None else values[~(np.abs(values) > limit)]


def _native_values(
    executor: CompiledExecutor, primitive: type[ops.TensorOp], *xs: np.ndarray
) -> np.ndarray:
    """``f(xs)`` as computed by the compiled backward kernel of ``sum(f(xs) * y)``."""
    function = tc.FUNCTIONS[primitive.numpy_names[0]]

    @tc.function
    def g(y, *xs):  # type: ignore[no-untyped-def]
        return tc.sum(function(*xs) * y)

    y = tc.tensor(np.ones_like(xs[0]), requires_grad=True)
    args = [tc.tensor(x) for x in xs]
    with np.errstate(all="ignore"), tc.use_executor(executor):
        (gy,) = tc.grad(g(y, *args), [y])
    assert gy is not None
    return gy


def _check(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN pattern differs"
    infinite = np.isinf(want)
    assert np.array_equal(got[infinite], want[infinite]), f"{what}: infinities differ"
    worst = float(np.max(_ulp_error(got, want), initial=0.0))
    assert worst <= MAX_ULPS, f"{what}: {worst:.1f} ulps"


@pytest.fixture(scope="module")
def executor(shared_cache_dir) -> CompiledExecutor:  # type: ignore[no-untyped-def]
    return CompiledExecutor(shared_cache_dir)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("primitive", UNARY, ids=lambda p: p.mnemonic)
def test_unary_lowering_row_matches_numpy(
    executor: CompiledExecutor, primitive: type[ops.TensorOp], dtype: str
) -> None:
    if dtype not in primitive.allowed_dtypes:  # type: ignore[attr-defined]
        pytest.skip(f"{primitive.__name__} takes no {dtype}")
    x = _inputs(primitive, dtype, np.random.default_rng(7))
    fallbacks = executor.stats.fallbacks
    got = _native_values(executor, primitive, x)
    with np.errstate(all="ignore"):
        want = primitive.numpy_fn(x).astype(dtype)  # type: ignore[attr-defined]
    _check(got, want, f"{primitive.__name__} {dtype}")
    assert executor.stats.fallbacks == fallbacks and not executor.stats.errors


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("primitive", BINARY, ids=lambda p: p.mnemonic)
def test_binary_lowering_row_matches_numpy(
    executor: CompiledExecutor, primitive: type[ops.TensorOp], dtype: str
) -> None:
    if dtype not in primitive.allowed_dtypes:  # type: ignore[attr-defined]
        pytest.skip(f"{primitive.__name__} takes no {dtype}")
    rng = np.random.default_rng(11)
    a = _inputs(primitive, dtype, rng)
    b = rng.permutation(_inputs(primitive, dtype, rng))
    fallbacks = executor.stats.fallbacks
    got = _native_values(executor, primitive, a, b)
    with np.errstate(all="ignore"):
        want = primitive.numpy_fn(a, b).astype(dtype)  # type: ignore[attr-defined]
    _check(got, want, f"{primitive.__name__} {dtype}")
    assert executor.stats.fallbacks == fallbacks and not executor.stats.errors

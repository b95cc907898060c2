"""Every lowering row of the op table, run as native code against numpy's function.

For a table op ``f``, ``@tc.function g(x, y) = sum(f(x) * y)`` has the backward
``ct_y = f(x)``: the compiled kernel recomputes ``f`` from ``x`` with the op's lowering
row (polynomial math included). Inputs: the op's domain, a wide sample (magnitudes from
1e-9 to 1100, both signs: past the overflow of exp, sinh, cosh, exp2) and edge values
(signed zeros, infinities, NaN, tiny and huge values, the boundaries of the domains and
of the rows' cases). The native values must match numpy's within a few ulps, with the
same inf and NaN pattern and the same sign of zero, and nothing may fall back to the
reference.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from op_cases import table_elementwise

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend.tensor import apply1

#: Largest error in units in the last place allowed of a lowering row.
MAX_ULPS = 4

EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 1e-30, 1e30, -1e30, 0.5,
         -0.5, 1.0, -1.0, 2.0, 3.0, 700.0, -700.0, 1e-8, -1e-8,
         # the cases of the rows (tidu_math_lowering): 1 +- 1 ulp, 22, near overflow
         1.0 + 2.0**-23, 1.0 - 2.0**-24, 1.0 + 2.0**-52, 1.0 - 2.0**-53, 22.0, 88.5, 89.2,
         709.5, 710.2, -710.2, 1023.5, -1074.0, -149.0, 2.0**28]  # fmt: skip

#: Documented range limits of a lowering (``expand_math_polynomials``: sin and cos are
#: NaN above 1.5 * 2^51 in f64 and 1.5 * 2^22 in f32; tan is sin / cos); inputs beyond
#: them are left out.
TRIG_LIMITS = {"float64": 1.5 * 2.0**51, "float32": 1.5 * 2.0**22}
RANGE_LIMITS: dict[type[ops.TensorOp], dict[str, float]] = {
    ops.Sin: TRIG_LIMITS, ops.Cos: TRIG_LIMITS, ops.Tan: TRIG_LIMITS,
}  # fmt: skip


def _logaddexp_scale(a: np.ndarray, b: np.ndarray, want: np.ndarray) -> np.ndarray:
    """numpy computes logaddexp(2) as ``m + L`` with ``m = max(x, y)``: where the two
    cancel (a result near 0) numpy's own error is thousands of ulps of the result, so the
    row is held to ``MAX_ULPS`` of the largest of ``|m|``, ``|L|`` and ``|result|``."""
    m = np.maximum(a, b)
    return np.maximum.reduce([np.abs(m), np.abs(want - m), np.abs(want)])


def _at_least_one(x: np.ndarray, want: np.ndarray) -> np.ndarray:
    """scipy's ``gammaln`` near its zeros 1 and 2 is off by ~1e-16 absolute (at ``2 -
    2^-52`` it gives +1.1e-16, the value is -9.4e-17): the error is measured in ulps of
    ``max(|result|, 1)``."""
    return np.maximum(np.abs(want), 1.0)


def _digamma_scale(x: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Below 0 digamma is ``digamma(1 - x) - pi cot(pi x)``, two terms that cancel near
    its negative zeros (scipy's formula too): ulps of the larger term."""
    import scipy.special

    reflected = np.where(x < 0, np.abs(scipy.special.digamma(1.0 - x)), 0.0)
    return np.maximum(np.abs(want), reflected)


#: Ops whose error is measured in ulps of another magnitude than the result's.
ERROR_SCALES: dict[type[ops.TensorOp], Callable[..., np.ndarray]] = {
    ops.Logaddexp: _logaddexp_scale,
    ops.Logaddexp2: _logaddexp_scale,
    ops.Gammaln: _at_least_one,
    ops.Digamma: _digamma_scale,
}

#: Rows held to more than ``MAX_ULPS``: ``erfc`` (a 28-term Chebyshev series and two
#: exps: up to 5 ulps), ``erfinv`` (Halley steps on ``erfc``: 5); and two where scipy is
#: the less accurate side: ``trigamma`` (scipy's ``polygamma(1, x)`` is ~7 ulps off near
#: 0, against exact rational arithmetic) and ``digamma`` below 0 (scipy is 14 ulps off at
#: -1.938, against the reflection formula in long double; the row agrees with that).
ROW_MAX_ULPS: dict[type[ops.TensorOp], int] = {
    ops.Erfc: 6, ops.Erfinv: 6, ops.Trigamma: 12, ops.Digamma: 16,
}  # fmt: skip

#: Ops that may return either operand's zero on a tie of +0 and -0 (numpy's SIMD loops
#: and LLVM's maxnum differ there): the sign of a zero result is not compared.
ZERO_SIGN_FREE = {ops.Maximum, ops.Minimum, ops.Fmax, ops.Fmin, ops.Relu}

UNARY = [p for p in table_elementwise() if p.input_count == 1]
BINARY = [p for p in table_elementwise() if p.input_count == 2]


def _ulp_error(got: np.ndarray, want: np.ndarray, scale: np.ndarray) -> np.ndarray:
    finite = np.isfinite(want)
    spacing = np.spacing(np.abs(scale[finite]).astype(want.dtype))
    return np.abs(got[finite] - want[finite]) / np.maximum(spacing, np.finfo(want.dtype).tiny)


def _inputs(primitive: type[ops.TensorOp], dtype: str, rng: np.random.Generator) -> np.ndarray:
    from helpers import random_array

    sample = random_array(rng, (64,), dtype, primitive.domain)
    wide = rng.choice([-1.0, 1.0], 64) * np.exp(rng.uniform(-20.0, 7.0, 64))
    values = np.concatenate([sample, wide, np.array(EDGES)]).astype(dtype)
    limit = RANGE_LIMITS.get(primitive, {}).get(dtype)
    return values if limit is None else values[~(np.abs(values) > limit)]


def _native_values(
    executor: CompiledExecutor, primitive: type[ops.TensorOp], *xs: np.ndarray
) -> np.ndarray:
    """``f(xs)`` as computed by the compiled backward kernel of ``sum(f(xs) * y)``."""

    @tc.function
    def g(y, *xs):  # type: ignore[no-untyped-def]
        return tc.sum(apply1(primitive(), *xs) * y)

    y = tc.tensor(np.ones_like(xs[0]), requires_grad=True)
    args = [tc.tensor(x) for x in xs]
    with np.errstate(all="ignore"), tc.use_executor(executor):
        (gy,) = tc.grad(g(y, *args), [y])
    assert gy is not None
    return gy


def _check(
    primitive: type[ops.TensorOp], got: np.ndarray, want: np.ndarray, *xs: np.ndarray
) -> None:
    what = f"{primitive.__name__} {want.dtype}"
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN pattern differs"
    infinite = np.isinf(want)
    assert np.array_equal(got[infinite], want[infinite]), f"{what}: infinities differ"
    if primitive not in ZERO_SIGN_FREE:
        zero = want == 0
        signs = np.signbit(got[zero]) == np.signbit(want[zero])
        assert signs.all(), f"{what}: the sign of zero differs at {[x[zero][~signs] for x in xs]}"
    with np.errstate(all="ignore"):
        scale = ERROR_SCALES[primitive](*xs, want) if primitive in ERROR_SCALES else want
    errors = _ulp_error(got, want, scale)
    worst = float(np.max(errors, initial=0.0))
    assert worst <= ROW_MAX_ULPS.get(primitive, MAX_ULPS), f"{what}: {worst:.1f} ulps"


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
    _check(primitive, got, want, x)
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
    _check(primitive, got, want, a, b)
    assert executor.stats.fallbacks == fallbacks and not executor.stats.errors


def test_one_kernel_uses_the_f32_and_f64_variant_of_a_function(
    executor: CompiledExecutor,
) -> None:
    """``sqrt``, ``exp``, ``fabs`` and friends of both precisions in one kernel compile
    (xDSL's ``llvm.intr.*`` ops were declared once per module, without type suffix)."""
    x = tc.tensor(np.linspace(1.0, 2.0, 8).astype(np.float32), requires_grad=True)
    w = tc.tensor(np.linspace(1.0, 2.0, 8), requires_grad=True)
    f = tc.function(lambda x, w: tc.sum(tc.sqrt(x) * tc.sqrt(w) + tc.abs(x) * tc.floor(w)))
    errors, fallbacks = len(executor.stats.errors), executor.stats.fallbacks
    with tc.use_executor(executor):
        gx, gw = tc.grad(f(x, w), [x, w])
    assert executor.stats.errors[errors:] == [] and executor.stats.fallbacks == fallbacks
    xv, wv = x.numpy().astype(np.float64), w.numpy()
    np.testing.assert_allclose(gx, 0.5 / np.sqrt(xv) * np.sqrt(wv) + np.floor(wv), rtol=1e-6)
    np.testing.assert_allclose(gw, np.sqrt(xv) * 0.5 / np.sqrt(wv), rtol=1e-6)

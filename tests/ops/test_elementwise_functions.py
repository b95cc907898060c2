"""The elementwise functions of the numpy surface beyond the op table's own cases.

The table ops (``sinh``, ``hypot``, ``mod``, ...) are checked op by op from the table
(``test_op_autodiff``, ``test_lowering_rows``, ``test_compiled_vs_reference``). Here:

* composites and functions with parameters (``clip``, ``abs`` of complex values,
  ``sinc``, ``gelu``, ...): values against numpy, gradients against central differences
  (f64 tight, f32 loose), complex where numpy defines them;
* the derivative conventions at kinks (``relu'(0) = 0``, ``abs'(0) = 0``, ties of
  max/min share the gradient, ``pow(x, 0)' = 0`` at 0, ...), in both executors;
* the compiled executor: a program of these functions is one fused backward kernel,
  with no fallback, and agrees with the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import check_frontend_grad, random_array
from tidu_compile.tools.dump import backward_nodes

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.compiler.stages import walk
from tidu_compile.executors.compiled import CompiledExecutor

_erf = np.frompyfunc(math.erf, 1, 1)


def np_erf(a: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(a), dtype=a.dtype)


def np_gelu(a: np.ndarray) -> np.ndarray:
    return a * (np_erf(a / math.sqrt(2.0)) + 1) * 0.5


def np_gelu_tanh(a: np.ndarray) -> np.ndarray:
    return a * ((np.tanh((a + a**3 * 0.044715) * math.sqrt(2 / math.pi)) + 1) * 0.5)


def np_sigmoid(a: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-a))


#: name -> (tidu function, numpy function, input kinds, dtypes)
UNARY_COMPOSITES: dict[str, tuple[Callable[..., Any], Callable[..., Any], str, tuple[str, ...]]] = {
    "abs": (tc.abs, np.abs, "nonzero", ("float64", "float32", "complex128", "complex64")),
    "absolute": (tc.absolute, np.absolute, "nonzero", ("float64", "complex128")),
    "sign_complex": (tc.sign, np.sign, "nonzero", ("complex128", "complex64")),
    "clip": (lambda t: tc.clip(t, -0.3, 0.4), lambda a: np.clip(a, -0.3, 0.4), "normal",
             ("float64", "float32")),
    "clip_above": (lambda t: tc.clip(t, a_max=0.2), lambda a: np.clip(a, None, 0.2), "normal",
                   ("float64",)),
    "square": (tc.square, np.square, "normal", ("float64", "float32", "complex128")),
    "reciprocal": (tc.reciprocal, np.reciprocal, "nonzero", ("float64", "complex128")),
    "nan_to_num": (tc.nan_to_num, np.nan_to_num, "normal", ("float64", "complex128")),
    "angle": (tc.angle, np.angle, "nonzero", ("complex128", "complex64")),
    "angle_deg": (lambda t: tc.angle(t, deg=True), lambda a: np.angle(a, deg=True), "nonzero",
                  ("complex128",)),
    "sinc": (tc.sinc, np.sinc, "normal", ("float64", "float32", "complex128")),
    "exp2_by_power": (lambda t: 2**t, lambda a: 2**a, "normal", ("float64", "complex128")),
    "sigmoid": (tc.sigmoid, np_sigmoid, "normal", ("float64", "float32")),
    "relu": (tc.relu, lambda a: np.maximum(a, 0), "nonzero", ("float64", "float32")),
    "softplus": (tc.softplus, lambda a: np.logaddexp(a, 0), "normal", ("float64", "float32")),
    "erf": (tc.erf, np_erf, "normal", ("float64", "float32")),
    "gelu": (tc.gelu, np_gelu, "normal", ("float64", "float32")),
    "gelu_tanh": (lambda t: tc.gelu(t, approximate="tanh"), np_gelu_tanh, "normal",
                  ("float64", "float32")),
}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "dtype"),
    [(name, dtype) for name, (*_, dtypes) in UNARY_COMPOSITES.items() for dtype in dtypes],
)
def test_unary_function_values_and_gradients(name: str, dtype: str) -> None:
    function, numpy_function, kind, _ = UNARY_COMPOSITES[name]
    x = random_array(np.random.default_rng(len(name)), (2, 3), dtype, kind)
    check_frontend_grad(function, numpy_function, [x])


def _pair(dtype: str, seed: int, kind: str = "positive") -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [random_array(rng, (2, 3), dtype, kind) for _ in range(2)]


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_power_with_a_tensor_exponent(dtype: str) -> None:
    check_frontend_grad(tc.power, np.power, _pair(dtype, 1))
    check_frontend_grad(lambda x, y: x**y, lambda a, b: a**b, _pair(dtype, 2))
    # a tensor base with an array exponent, and a broadcast scalar base
    x, y = _pair(dtype, 3)
    check_frontend_grad(lambda t: t ** tc.tensor(y), lambda a: a**y, [x])
    check_frontend_grad(lambda t: 1.5**t, lambda a: 1.5**a, [x])


def test_clip_with_tensor_bounds() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3))
    low = x + rng.choice([-1.0, 1.0], (2, 3)) * rng.uniform(0.2, 1.0, (2, 3))
    check_frontend_grad(lambda t, lo: tc.clip(t, lo, 2.0), lambda a, lo: np.clip(a, lo, 2.0),
                        [x, low])  # fmt: skip


def test_values_at_special_inputs_match_numpy() -> None:
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 1e300])
    with np.errstate(all="ignore"):
        for name, function, expected in [
            ("nan_to_num", tc.nan_to_num, np.nan_to_num(special)),
            ("nan_to_num(nan=1, posinf=2)", lambda t: tc.nan_to_num(t, nan=1.0, posinf=2.0),
             np.nan_to_num(special, nan=1.0, posinf=2.0)),
            ("sign", tc.sign, np.sign(special)),
            ("abs", tc.abs, np.abs(special)),
            ("angle", tc.angle, np.angle(special)),
            ("sinc", tc.sinc, np.sinc(special)),
            ("round", tc.round, np.round(special)),
            ("round(2)", lambda t: tc.round(t * 1.23456, 2), np.round(special * 1.23456, 2)),
            ("round(-1)", lambda t: tc.round(t * 123.4, -1), np.round(special * 123.4, -1)),
            ("clip", lambda t: tc.clip(t, -1.0, 1.0), np.clip(special, -1.0, 1.0)),
            ("relu", tc.relu, np.where(np.isnan(special), np.nan, np.maximum(special, 0))),
            ("softplus", tc.softplus, np.logaddexp(special, 0.0)),
        ]:  # fmt: skip
            got = function(tc.tensor(special)).numpy()
            np.testing.assert_array_equal(got, expected, err_msg=name)
            zero = expected == 0
            assert (np.signbit(got[zero]) == np.signbit(expected[zero])).all(), name
    z = np.array([complex(np.nan, np.inf), complex(-np.inf, 1.0), 0j, 3 - 4j])
    np.testing.assert_array_equal(tc.nan_to_num(tc.tensor(z)).numpy(), np.nan_to_num(z))
    np.testing.assert_array_equal(tc.abs(tc.tensor(z[2:])).numpy(), np.abs(z[2:]))
    np.testing.assert_allclose(tc.sign(tc.tensor(z[2:])).numpy(), np.sign(z[2:]), rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_compiled_complex_exp_has_numpys_special_values(dtype: type) -> None:
    """Compiled complex ``exp`` (``tidu-complex-lowering``'s ``_exp``) at every mix of
    infinite, NaN, zero and finite parts is numpy's (C99's ``cexp``): ``e^a * cos b``
    alone would give a NaN at ``(-inf, nan)``, ``(inf, 0)`` and ``(inf, inf)``."""
    parts = (-np.inf, np.inf, np.nan, 0.5, 0.0, -0.0)
    z = np.array([complex(a, b) for a in parts for b in (*parts, 1.0, -3.0)], dtype)
    with tc.use_executor(CompiledExecutor(False, background=False)), np.errstate(all="ignore"):
        got = tc.function(tc.exp)(tc.tensor(z, requires_grad=True)).numpy()
        want = np.exp(z)
    for part in ("real", "imag"):  # NaN where numpy's is, infinities equal, close elsewhere
        g, w = getattr(got, part), getattr(want, part)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=part)
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=part)


def test_functions_of_issue_9_are_exported() -> None:
    names = [
        "abs", "absolute", "sign", "clip", "minimum", "maximum", "fmax", "fmin", "square",
        "reciprocal", "log1p", "expm1", "log2", "log10", "exp2", "tan", "arcsin", "arccos",
        "arctan", "arctan2", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "sinc", "hypot",
        "logaddexp", "logaddexp2", "floor", "ceil", "round", "rint", "trunc", "mod",
        "remainder", "power", "nan_to_num", "angle", "sigmoid", "relu", "softplus", "gelu",
        "erf",
    ]
    missing = [n for n in names if n not in tc.__all__ or not callable(getattr(tc, n, None))]
    assert not missing


def test_bad_inputs_raise_clear_errors() -> None:
    z = tc.tensor(np.array([1 + 1j]))
    for function in (tc.clip, tc.relu, tc.sigmoid, tc.gelu, tc.erf, tc.floor, tc.round):
        with pytest.raises(TypeError, match="complex|dtype"):
            function(z)
    with pytest.raises(ValueError, match="approximate"):
        tc.gelu(tc.tensor([1.0]), approximate="cubic")


# --------------------------------------------------------------------- conventions at kinks

REFERENCE = tc.ReferenceExecutor()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> CompiledExecutor:
    return CompiledExecutor(tmp_path_factory.mktemp("kinks"))


def _grads(
    executor: Any, function: Callable[..., tc.Tensor], *values: Any
) -> list[np.ndarray | None]:
    """Gradients of ``sum(function(*inputs))`` traced as one ``@tc.function`` (so the
    compiled executor compiles it as one backward node)."""
    inputs = [tc.tensor(np.asarray(v, dtype=float), requires_grad=True) for v in values]
    with np.errstate(all="ignore"):
        loss = tc.function(lambda *ts: tc.sum(function(*ts)))(*inputs)
        return tc.grad(loss, inputs, executor=executor)


KINKS: list[tuple[str, Callable[..., tc.Tensor], list[list[float]], list[list[float]]]] = [
    ("relu'(0) = 0", tc.relu, [[-1.0, 0.0, -0.0, 2.0]], [[0.0, 0.0, 0.0, 1.0]]),
    ("abs'(0) = 0", tc.abs, [[-2.0, 0.0, 3.0]], [[-1.0, 0.0, 1.0]]),
    ("maximum ties", tc.maximum, [[1.0, 2.0], [1.0, 0.0]], [[0.5, 1.0], [0.5, 0.0]]),
    ("minimum ties", tc.minimum, [[1.0, 2.0], [1.0, 0.0]], [[0.5, 0.0], [0.5, 1.0]]),
    ("fmax ties and NaN", tc.fmax, [[1.0, np.nan, 3.0], [1.0, 2.0, np.nan]],
     [[0.5, 0.0, 1.0], [0.5, 1.0, 0.0]]),
    ("fmin ties", tc.fmin, [[-1.0, 4.0], [-1.0, 5.0]], [[0.5, 1.0], [0.5, 0.0]]),
    ("clip at its bounds", lambda x: tc.clip(x, -1.0, 1.0), [[-1.0, 0.0, 1.0, 2.0]],
     [[0.5, 1.0, 0.5, 0.0]]),
    ("pow(x, 0)' = 0 at 0", lambda x: x**0.0, [[0.0, 2.0]], [[0.0, 0.0]]),
    ("power(x, y) at x = 0, y = 0", tc.power, [[0.0, 0.0], [0.0, 2.0]],
     [[0.0, 0.0], [0.0, 0.0]]),
    ("sqrt'(0) = inf", tc.sqrt, [[0.0, 4.0]], [[np.inf, 0.25]]),
    ("hypot at the origin", tc.hypot, [[0.0, 3.0], [0.0, 4.0]], [[0.0, 0.6], [0.0, 0.8]]),
    ("arctan2 at the origin", tc.arctan2, [[0.0, 1.0], [0.0, 1.0]], [[0.0, 0.5], [0.0, -0.5]]),
    ("sinc'(0) = 0", tc.sinc, [[0.0, 0.5]], [[0.0, -4.0 / np.pi]]),
    ("softplus'(0) = 1/2", tc.softplus, [[0.0]], [[0.5]]),
    ("sigmoid'(0) = 1/4", tc.sigmoid, [[0.0]], [[0.25]]),
    ("gelu'(0) = 1/2", tc.gelu, [[0.0]], [[0.5]]),
    ("logaddexp at a tie", tc.logaddexp, [[1.0], [1.0]], [[0.5], [0.5]]),
    ("x * floor(x)", lambda x: x * tc.floor(x), [[1.5, -0.5]], [[1.0, -1.0]]),
    ("mod: d/dx = 1, d/dy = -quotient", tc.mod, [[7.5, -7.5], [2.0, 2.0]],
     [[1.0, 1.0], [-3.0, 4.0]]),
]  # fmt: skip


@pytest.mark.parametrize("executor_name", ["reference", "compiled"])
@pytest.mark.parametrize(
    ("what", "function", "inputs", "expected"), KINKS, ids=[k[0] for k in KINKS]
)
def test_gradients_at_kinks(
    executor_name: str,
    what: str,
    function: Callable[..., tc.Tensor],
    inputs: list[list[float]],
    expected: list[list[float]],
    compiled: CompiledExecutor,
) -> None:
    executor = REFERENCE if executor_name == "reference" else compiled
    fallbacks = compiled.stats.fallbacks
    grads = _grads(executor, function, *inputs)
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-14, atol=1e-15, err_msg=what)
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors


def test_complex_abs_has_gradient_zero_at_zero() -> None:
    z = tc.tensor(np.array([0j, 3 + 4j]), requires_grad=True)
    (g,) = tc.grad(tc.sum(tc.abs(z)), [z], executor=REFERENCE)
    np.testing.assert_allclose(g, [0.0, 0.6 + 0.8j])


def test_piecewise_constant_functions_carry_no_gradient() -> None:
    x = tc.tensor(np.array([-1.5, 0.5, 2.5]), requires_grad=True)
    for function in (tc.floor, tc.ceil, tc.round, tc.rint, tc.trunc, tc.sign):
        out = function(x)
        assert not out.requires_grad, function.__name__
        with pytest.raises(ValueError, match="does not require gradients"):
            tc.grad(tc.sum(out), [x], executor=REFERENCE)


# --------------------------------------------------------------------- compiled and fused


def _one_kernel(loss: tc.Tensor) -> None:
    """Every backward node of ``loss`` is one ``tidu.kernel`` (no op outside it)."""
    for node in backward_nodes(loss):
        module = walk(node.program(), "program", "fused")
        (func,) = module.ops
        body = [op.name for op in func.body.block.ops]  # type: ignore[attr-defined]
        assert body == ["tidu.kernel", "func.return"], body


def _program(x: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
    terms = [
        tc.gelu(x * w), tc.gelu(x, approximate="tanh"), tc.softplus(x) * tc.sigmoid(w),
        tc.relu(x - 0.1) * tc.clip(w, 0.9, 2.0), tc.logaddexp(x, w), tc.logaddexp2(w, x),
        tc.sinc(x), tc.abs(x) * tc.sign(w), tc.hypot(x, w), tc.arctan2(x, w),
        tc.sinh(x) + tc.cosh(w) + tc.tan(x * 0.5), tc.arcsinh(x) + tc.arccosh(w + 1.5),
        tc.arctanh(x * 0.3) + tc.arcsin(x * 0.3) + tc.arccos(x * 0.3) + tc.arctan(x),
        tc.log2(w) + tc.log10(w) + tc.exp2(x) + tc.log1p(w) + tc.expm1(x), tc.erf(x),
        tc.minimum(x, w) + tc.fmax(x, w) + tc.fmin(x, w), tc.mod(x, w) + tc.floor(x),
        (x * x + 0.5) ** w, 2.0 ** x, tc.square(x) + tc.reciprocal(w), tc.nan_to_num(x),
    ]  # fmt: skip
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return tc.sum(total)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_program_of_every_function_is_one_fused_kernel(
    dtype: str, compiled: CompiledExecutor
) -> None:
    rng = np.random.default_rng(9)
    x = tc.tensor(rng.uniform(-1.5, 1.5, 64).astype(dtype), requires_grad=True)
    w = tc.tensor(rng.uniform(1.0, 2.5, 64).astype(dtype), requires_grad=True)
    loss = tc.function(_program)(x, w)
    _one_kernel(loss)
    fallbacks = compiled.stats.fallbacks
    got = tc.grad(loss, [x, w], executor=compiled)
    want = tc.grad(loss, [x, w], executor=REFERENCE)
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors
    tol = 1e-12 if dtype == "float64" else 2e-5
    for g, r in zip(got, want, strict=True):
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * float(np.max(np.abs(r))))


def test_complex_composites_compile_without_fallback(compiled: CompiledExecutor) -> None:
    z = tc.tensor(random_array(np.random.default_rng(3), (16,), "complex128", "nonzero"),
                  requires_grad=True)  # fmt: skip

    def program(z: tc.Tensor) -> tc.Tensor:
        parts = tc.abs(z) + tc.angle(z) + tc.real(tc.sign(z) + tc.square(z) + tc.reciprocal(z))
        return tc.sum(parts + tc.imag(tc.sinh(z) * tc.cosh(z) + tc.nan_to_num(z)))

    loss = tc.function(program)(z)
    _one_kernel(loss)
    fallbacks = compiled.stats.fallbacks
    (got,) = tc.grad(loss, [z], executor=compiled)
    (want,) = tc.grad(loss, [z], executor=REFERENCE)
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------- second derivatives

LN2 = math.log(2.0)
S = np_sigmoid

#: name -> (function, its second derivative in closed form)
SECOND_DERIVATIVES: dict[str, tuple[Callable[..., tc.Tensor], Callable[..., np.ndarray]]] = {
    "sinh": (tc.sinh, np.sinh),
    "cosh": (tc.cosh, np.cosh),
    "tan": (tc.tan, lambda x: 2 * np.tan(x) * (1 + np.tan(x) ** 2)),
    "arcsin": (tc.arcsin, lambda x: x / (1 - x**2) ** 1.5),
    "arctan": (tc.arctan, lambda x: -2 * x / (1 + x**2) ** 2),
    "arcsinh": (tc.arcsinh, lambda x: -x / (1 + x**2) ** 1.5),
    "arccosh": (lambda t: tc.arccosh(t + 1.5), lambda x: -(x + 1.5) / ((x + 1.5) ** 2 - 1) ** 1.5),
    "arctanh": (tc.arctanh, lambda x: 2 * x / (1 - x**2) ** 2),
    "exp2": (tc.exp2, lambda x: LN2**2 * 2**x),
    "log2": (tc.log2, lambda x: -1 / (x**2 * LN2)),
    "sigmoid": (tc.sigmoid, lambda x: S(x) * (1 - S(x)) * (1 - 2 * S(x))),
    "softplus": (tc.softplus, lambda x: S(x) * (1 - S(x))),
    "erf": (tc.erf, lambda x: -4 * x / math.sqrt(math.pi) * np.exp(-(x**2))),
    "relu": (tc.relu, np.zeros_like),
    "power in x": (lambda t: t**2.5, lambda x: 2.5 * 1.5 * x**0.5),
    "power in y": (lambda t: 1.7**t, lambda x: math.log(1.7) ** 2 * 1.7**x),
    "hypot": (lambda t: tc.hypot(t, 0.8), lambda x: 0.64 / np.hypot(x, 0.8) ** 3),
    "logaddexp": (lambda t: tc.logaddexp(t, 0.4), lambda x: S(x - 0.4) * (1 - S(x - 0.4))),
}  # fmt: skip


@pytest.mark.parametrize("executor_name", ["reference", "compiled"])
@pytest.mark.parametrize("name", list(SECOND_DERIVATIVES))
def test_second_derivatives(name: str, executor_name: str, compiled: CompiledExecutor) -> None:
    """The derivatives are built from primitives, so they differentiate again."""
    function, closed_form = SECOND_DERIVATIVES[name]
    x = np.array([0.2, 0.45, 0.7])
    executor = REFERENCE if executor_name == "reference" else compiled
    fallbacks = compiled.stats.fallbacks
    with tc.use_executor(executor):
        second = func.grad(lambda t: tc.sum(func.grad(lambda u: tc.sum(function(u)))(t)))(x)
    np.testing.assert_allclose(second.numpy(), closed_form(x), rtol=1e-12, atol=1e-14)
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors


BINARY_FORWARD: dict[str, tuple[Callable[..., tc.Tensor], Callable[..., np.ndarray]]] = {
    "power": (tc.power, np.power),
    "arctan2": (tc.arctan2, np.arctan2),
    "hypot": (tc.hypot, np.hypot),
    "logaddexp": (tc.logaddexp, np.logaddexp),
    "logaddexp2": (tc.logaddexp2, np.logaddexp2),
    "mod": (tc.mod, np.mod),
    "fmin": (tc.fmin, np.fmin),
}


@pytest.mark.parametrize("name", list(BINARY_FORWARD))
def test_forward_mode_of_binary_functions(name: str) -> None:
    """``func.jvp`` (the JVP rules alone, no transpose) against a central difference."""
    function, numpy_function = BINARY_FORWARD[name]
    x, y = np.array([0.7, 1.3, 2.45]), np.array([1.1, 0.55, 0.9])
    dx, dy = np.array([0.3, -1.0, 0.5]), np.array([-0.2, 0.4, 1.0])
    with tc.use_executor(REFERENCE):
        _, tangent = func.jvp(function, (x, y), (dx, dy))
    step = 1e-6
    expected = (numpy_function(x + step * dx, y + step * dy)
                - numpy_function(x - step * dx, y - step * dy)) / (2 * step)  # fmt: skip
    np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-7)

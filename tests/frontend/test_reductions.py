"""The reductions of the numpy surface: values, gradients, conventions and edge cases.

* values against numpy for every function, every ``axis`` combination (None, ints,
  negative ints, tuples) with and without ``keepdims``, on square and repeated extents,
  in f32, f64 and complex where numpy defines the function;
* gradients against central differences (the ``ReferenceExecutor``; f64 tight, f32
  loose, complex), forward mode against central differences and against reverse mode
  (the adjoint test ``<J v, u> == <v, J^T u>``) for the composites;
* conventions: ties share the gradient equally, a NaN propagates, integer and bool
  results carry no gradient, empty reductions as numpy (an error where there is no
  identity), the product's gradient at zeros.

The compiled side (native kernels, fusion, threads) is ``tests/compiler/
test_compiled_reductions.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import check_frontend_grad, random_array, real_inner
from helpers.ties import draw_tied, reduced_size, shared_reduction_gradient, slice_hits

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor

REFERENCE = tc.ReferenceExecutor()
SHAPES = [(3, 3), (2, 3, 3), (4,), ()]


def axis_choices(ndim: int) -> list[Any]:
    """None, every axis (and its negative twin), every tuple of two or more axes."""
    choices: list[Any] = [None, *range(ndim), *range(-ndim, 0)]
    for count in range(2, ndim + 1):
        choices += list(itertools.combinations(range(ndim), count))
    return choices


def np_logsumexp(a: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    peak = np.max(a.real, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0)
    total = np.log(np.sum(np.exp(a - peak), axis=axis, keepdims=True)) + peak
    return total if keepdims else np.squeeze(total, axis=axis)


def _np(function: Callable[..., Any]) -> Callable[..., Any]:
    return lambda x, axis, keepdims: function(x, axis=axis, keepdims=keepdims)


#: name -> (tidu function, numpy function, dtypes), both taking (x, axis, keepdims).
FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[str, ...]]] = {
    "sum": (tc.sum, _np(np.sum), ("float64", "float32", "complex128")),
    "mean": (tc.mean, _np(np.mean), ("float64", "complex128")),
    "max": (tc.max, _np(np.max), ("float64", "float32")),
    "amax": (tc.amax, _np(np.amax), ("float64",)),
    "min": (tc.min, _np(np.min), ("float64", "float32")),
    "amin": (tc.amin, _np(np.amin), ("float64",)),
    "prod": (tc.prod, _np(np.prod), ("float64", "float32", "complex128", "complex64")),
    "var": (lambda x, a, k: tc.var(x, a, keepdims=k), _np(np.var),
            ("float64", "float32", "complex128")),
    "std": (lambda x, a, k: tc.std(x, a, keepdims=k), _np(np.std), ("float64", "complex128")),
    "var_ddof1": (lambda x, a, k: tc.var(x, a, ddof=1, keepdims=k),
                  lambda x, a, k: np.var(x, a, ddof=1, keepdims=k), ("float64",)),
    "std_ddof1": (lambda x, a, k: tc.std(x, a, ddof=1, keepdims=k),
                  lambda x, a, k: np.std(x, a, ddof=1, keepdims=k), ("float64", "float32")),
    "logsumexp": (lambda x, a, k: tc.logsumexp(x, a, keepdims=k), _np(np_logsumexp),
                  ("float64", "float32", "complex128")),
    "norm": (lambda x, a, k: tc.norm(x, axis=a, keepdims=k),
             lambda x, a, k: np.linalg.norm(x, axis=a, keepdims=k),
             ("float64", "float32", "complex128")),
    "average": (lambda x, a, k: tc.average(x, a, keepdims=k),
                lambda x, a, k: np.average(x, a, keepdims=k), ("float64",)),
    "any": (lambda x, a, k: tc.any(x > 0.3, a, k), lambda x, a, k: np.any(x > 0.3, a, keepdims=k),
            ("float64",)),
    "all": (lambda x, a, k: tc.all(x, a, k), lambda x, a, k: np.all(x, a, keepdims=k),
            ("float64", "complex128")),
}  # fmt: skip

#: Functions that take one axis (or None) only: numpy's ``norm`` takes at most two.
ONE_OR_TWO_AXES = {"norm"}


def _allowed(name: str, axis: Any) -> bool:
    if name in ONE_OR_TWO_AXES:
        return not isinstance(axis, tuple) or len(axis) <= 2
    return True


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")  # numpy's, ddof=1
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # 0/0 there, in both
@pytest.mark.parametrize(
    ("name", "dtype"), [(n, d) for n, (_, _, dtypes) in FUNCTIONS.items() for d in dtypes]
)
def test_values_match_numpy_over_every_axis_combination(name: str, dtype: str) -> None:
    function, numpy_function, _ = FUNCTIONS[name]
    rng = np.random.default_rng(len(name))
    tol = 2e-5 if dtype in ("float32", "complex64") else 1e-13
    for shape in SHAPES:
        x = random_array(rng, shape, dtype)
        for axis in axis_choices(len(shape)):
            for keepdims in (False, True):
                if not _allowed(name, axis):
                    continue
                got = function(tc.tensor(x), axis, keepdims)
                want = np.asarray(numpy_function(x, axis, keepdims))
                what = f"{name}{shape} axis={axis} keepdims={keepdims}"
                assert got.shape == want.shape, what
                assert got.dtype == want.dtype, f"{what}: {got.dtype} != {want.dtype}"
                np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("function", ["argmax", "argmin"])
def test_arg_extrema_match_numpy(function: str) -> None:
    rng = np.random.default_rng(1)
    for shape in SHAPES:
        x = rng.standard_normal(shape)
        x.flat[-1:] = x.flat[:1]  # a tie: the first index wins
        for axis in [None, *range(len(shape)), *range(-len(shape), 0)]:
            for keepdims in (False, True):
                got = getattr(tc, function)(tc.tensor(x), axis, keepdims)
                want = getattr(np, function)(x, axis, keepdims=keepdims)
                assert got.dtype == np.int64 and got.shape == np.shape(want)
                np.testing.assert_array_equal(got.numpy(), want)
    nan = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 0.0, 5.0, 5.0]])
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(getattr(tc, function)(nan, axis).numpy(),
                                      getattr(np, function)(nan, axis))  # fmt: skip


def test_softmax_and_log_softmax_match_numpy() -> None:
    rng = np.random.default_rng(2)
    for dtype in ("float64", "float32"):
        x = random_array(rng, (2, 3, 3), dtype) * 30  # big enough to overflow unshifted
        for axis in (-1, 0, 1, (0, 2), (0, 1, 2)):
            e = np.exp(x - np.max(x, axis, keepdims=True))
            soft = e / np.sum(e, axis, keepdims=True)
            tol = 1e-5 if dtype == "float32" else 1e-13
            np.testing.assert_allclose(tc.softmax(x, axis).numpy(), soft, rtol=tol, atol=tol)
            log_soft = x - np_logsumexp(x, axis, keepdims=True)
            got = tc.log_softmax(x, axis)
            assert got.dtype == dtype
            np.testing.assert_allclose(got.numpy(), log_soft, rtol=tol, atol=tol * 30)
    np.testing.assert_allclose(tc.softmax(np.array([1000.0, 1000.0])).numpy(), [0.5, 0.5])


def test_norm_orders_match_numpy() -> None:
    rng = np.random.default_rng(3)
    for dtype in ("float64", "complex128"):
        v, m = random_array(rng, (5,), dtype), random_array(rng, (3, 4), dtype)
        for ord_ in (None, 2, 1, np.inf, -np.inf, 0, 3, 0.5):
            np.testing.assert_allclose(tc.norm(v, ord_).numpy(), np.linalg.norm(v, ord_))
        for ord_ in (None, "fro", 1, -1, np.inf, -np.inf):
            for axis in (None, (0, 1), (1, 0)):
                np.testing.assert_allclose(
                    tc.norm(m, ord_, axis).numpy(), np.linalg.norm(m, ord_, axis), rtol=1e-13
                )
        for axis in (0, 1, -1):
            np.testing.assert_allclose(
                tc.norm(m, 1, axis, True).numpy(), np.linalg.norm(m, 1, axis, True), rtol=1e-13
            )
    cube = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(tc.norm(cube, 1, axis=(2, 0)).numpy(),
                               np.linalg.norm(cube, 1, axis=(2, 0)))  # fmt: skip


def test_average_with_weights_matches_numpy() -> None:
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (3, 4))
    for axis in (None, 0, 1, (0, 1)):
        np.testing.assert_allclose(tc.average(x, axis, w).numpy(), np.average(x, axis, w))
    along = rng.uniform(0.5, 2.0, 4)
    avg, total = tc.average(x, 1, along, returned=True)
    want_avg, want_total = np.average(x, 1, along, returned=True)
    np.testing.assert_allclose(avg.numpy(), want_avg)
    np.testing.assert_allclose(total.numpy(), want_total)
    avg, count = tc.average(x, 0, returned=True, keepdims=True)
    np.testing.assert_allclose(count.numpy(), np.full((1, 4), 3.0))
    with pytest.raises(TypeError, match="1-d with an int axis"):
        tc.average(x, None, along)
    with pytest.raises(ValueError, match="4 weights for axis 0"):
        tc.average(x, 0, along)


# --------------------------------------------------------------------- edge cases


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")  # numpy's var
def test_empty_reductions_follow_numpy() -> None:
    empty = np.zeros((0, 3))
    for function in (tc.max, tc.min, tc.amax):
        with pytest.raises(ValueError, match="zero-size array"):
            function(empty)
        with pytest.raises(ValueError, match="zero-size array"):
            function(empty, 0)
        assert function(empty, 1).shape == (0,)  # nothing to reduce for an empty result
    for function in (tc.argmax, tc.argmin):
        with pytest.raises(ValueError, match="empty"):
            function(empty)
    for name in ("sum", "prod", "any", "all", "logsumexp", "norm"):
        got = getattr(tc, name)(tc.tensor(empty), axis=0)
        want = (
            np.full(3, -np.inf)
            if name == "logsumexp"
            else (np.linalg.norm(empty, axis=0) if name == "norm" else getattr(np, name)(empty, 0))
        )
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(tc.var(empty, 0).numpy(), np.var(empty, 0))
        np.testing.assert_array_equal(tc.var(np.ones(3), ddof=3).numpy(), np.nan)
        np.testing.assert_array_equal(tc.var(np.arange(2.0), ddof=4).numpy(), np.inf)


def test_nan_propagates_as_numpy() -> None:
    x = np.array([[1.0, np.nan, 3.0], [2.0, -1.0, 0.5], [np.nan, np.inf, -np.inf]])
    with np.errstate(invalid="ignore"):
        for name in ("max", "min", "prod", "sum", "logsumexp", "var"):
            function = np_logsumexp if name == "logsumexp" else getattr(np, name)
            for axis in (None, 0, 1):
                np.testing.assert_array_equal(
                    getattr(tc, name)(x, axis).numpy(), function(x, axis), err_msg=f"{name} {axis}"
                )
    np.testing.assert_array_equal(tc.logsumexp(np.array([-np.inf, -np.inf])).numpy(), -np.inf)
    np.testing.assert_array_equal(tc.logsumexp(np.array([1.0, np.inf])).numpy(), np.inf)


def test_bad_arguments_raise_clear_errors() -> None:
    z = np.array([1 + 1j, 2 - 1j])
    for function in (tc.argmax, tc.argmin):
        with pytest.raises(TypeError, match="complex values are not ordered"):
            function(z)
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="out of range"):
        tc.max(x, 2)
    with pytest.raises(ValueError, match="repeated axis"):
        tc.prod(x, (0, -2))
    with pytest.raises(TypeError, match="axis must be None or an int"):
        tc.argmax(x, (0, 1))
    with pytest.raises(ValueError, match="invalid norm order 'fro' for vectors"):
        tc.norm(np.ones(3), "fro")
    z = np.array([[1, 2j], [3, 4 - 1j]])  # complex matrices: by (real) singular values
    for order in (2, -2, "nuc"):
        np.testing.assert_allclose(tc.norm(z, order).numpy(), np.linalg.norm(z, order),
                                   rtol=1e-12)  # fmt: skip
    with pytest.raises(ValueError, match="improper number of dimensions"):
        tc.norm(np.ones((2, 2, 2)), 1)
    with pytest.raises(ValueError, match="names 3 axes"):
        tc.norm(np.ones((2, 2, 2)), None, (0, 1, 2))


# --------------------------------------------------------------------- gradients


def _grad(function: Callable[..., tc.Tensor], *arrays: np.ndarray) -> list[np.ndarray]:
    tensors = [tc.tensor(a, requires_grad=True) for a in arrays]
    return tc.grad(tc.sum(function(*tensors)), tensors, executor=REFERENCE)  # type: ignore[return-value]


#: name -> (function of one tensor, its numpy twin, dtypes): gradients vs differences.
DIFFERENTIABLE: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[str, ...]]] = {
    "max": (lambda t: tc.max(t, 1), lambda a: np.max(a, 1), ("float64", "float32")),
    "max_all": (tc.max, np.max, ("float64",)),
    "min_keepdims": (lambda t: tc.min(t, (0, 2), keepdims=True),
                     lambda a: np.min(a, (0, 2), keepdims=True), ("float64", "float32")),
    "prod": (lambda t: tc.prod(t, -1), lambda a: np.prod(a, -1),
             ("float64", "float32", "complex128", "complex64")),
    "prod_all": (tc.prod, np.prod, ("float64", "complex128")),
    "var": (lambda t: tc.var(t, (1, 2)), lambda a: np.var(a, (1, 2)),
            ("float64", "float32", "complex128")),
    "std": (lambda t: tc.std(t, 0, ddof=1, keepdims=True),
            lambda a: np.std(a, 0, ddof=1, keepdims=True), ("float64", "float32", "complex128")),
    "logsumexp": (lambda t: tc.logsumexp(t, 1), lambda a: np_logsumexp(a, 1),
                  ("float64", "float32", "complex128")),
    "logsumexp_b": (lambda t: tc.logsumexp(t, (0, 2), b=np.arange(1.0, 4.0)[:, None]),
                    lambda a: np.log(np.sum(np.arange(1.0, 4.0)[:, None] * np.exp(a), (0, 2))),
                    ("float64",)),
    "softmax": (tc.softmax, lambda a: np.exp(a - np_logsumexp(a, -1, True)),
                ("float64", "float32")),
    "log_softmax": (lambda t: tc.log_softmax(t, (0, 1)),
                    lambda a: a - np_logsumexp(a, (0, 1), True), ("float64", "float32")),
    "norm": (tc.norm, lambda a: np.linalg.norm(a.reshape(-1)),
             ("float64", "float32", "complex128")),
    "norm_1": (lambda t: tc.norm(t, 1, axis=2), lambda a: np.linalg.norm(a, 1, axis=2),
               ("float64", "complex128")),
    "norm_inf": (lambda t: tc.norm(t, np.inf, axis=1), lambda a: np.linalg.norm(a, np.inf, 1),
                 ("float64",)),
    "norm_3": (lambda t: tc.norm(t, 3, axis=0), lambda a: np.linalg.norm(a, 3, axis=0),
               ("float64",)),
    "norm_matrix_1": (lambda t: tc.norm(t, 1, axis=(1, 2)),
                      lambda a: np.linalg.norm(a, 1, axis=(1, 2)), ("float64",)),
    "norm_fro": (lambda t: tc.norm(t, "fro", axis=(2, 0)),
                 lambda a: np.linalg.norm(a, "fro", axis=(2, 0)), ("float64", "complex128")),
    "average": (lambda t: tc.average(t, 2, np.array([0.5, 1.0, 2.0])),
                lambda a: np.average(a, 2, np.array([0.5, 1.0, 2.0])), ("float64",)),
}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "dtype"), [(n, d) for n, (_, _, dtypes) in DIFFERENTIABLE.items() for d in dtypes]
)
def test_gradients_match_central_differences(name: str, dtype: str) -> None:
    function, numpy_function, _ = DIFFERENTIABLE[name]
    x = random_array(np.random.default_rng(len(name)), (2, 3, 3), dtype)
    check_frontend_grad(function, numpy_function, [x])


def test_gradient_in_the_weights_of_average_and_logsumexp() -> None:
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (3, 4))
    check_frontend_grad(lambda t, u: tc.average(t, 1, u), lambda a, b: np.average(a, 1, b),
                        [x, w])  # fmt: skip
    check_frontend_grad(lambda t, u: tc.logsumexp(t, 0, b=u),
                        lambda a, b: np.log(np.sum(b * np.exp(a), 0)), [x, w])  # fmt: skip


@pytest.mark.parametrize("name", ["var", "std", "logsumexp", "softmax", "log_softmax", "norm",
                                  "norm_1", "prod", "max", "average"])  # fmt: skip
def test_forward_mode_matches_differences_and_reverse_mode(name: str) -> None:
    """``func.jvp`` against central differences of the values, and the adjoint test
    ``<J v, u> == <v, J^T u>`` against ``func.vjp``."""
    function, _, dtypes = DIFFERENTIABLE[name]
    dtype = "complex128" if "complex128" in dtypes else "float64"
    rng = np.random.default_rng(len(name) + 7)
    x, v = (random_array(rng, (2, 3, 3), dtype) for _ in range(2))
    out, jv = func.jvp(function, (x,), (v,))
    step = 1e-6
    ahead, behind = function(tc.tensor(x + step * v)), function(tc.tensor(x - step * v))
    difference = (ahead.numpy() - behind.numpy()) / (2 * step)
    np.testing.assert_allclose(jv.numpy(), difference, rtol=1e-6, atol=1e-7)
    u = random_array(rng, out.shape, out.dtype)
    _, vjp_fn = func.vjp(function, x)
    (ct,) = vjp_fn(tc.tensor(u))
    lhs, rhs = real_inner(jv.numpy(), u), real_inner(v, ct.numpy())
    assert abs(lhs - rhs) <= 1e-10 * (np.linalg.norm(jv.numpy()) * np.linalg.norm(u) + 1.0)


# --------------------------------------------------------------------- conventions


def test_ties_share_the_gradient_equally() -> None:
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, -1.0], [0.0, -2.0, 0.0, -2.0]])
    (g,) = _grad(lambda t: tc.max(t, 1), x)
    np.testing.assert_allclose(g, [[0, 0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3, 0], [0.5, 0, 0.5, 0]])
    (g,) = _grad(lambda t: tc.min(t, 1, keepdims=True), x)
    np.testing.assert_allclose(g, [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0.5, 0, 0.5]])
    (g,) = _grad(tc.amax, np.ones((2, 2)))
    np.testing.assert_allclose(g, np.full((2, 2), 0.25))
    (g,) = _grad(lambda t: tc.norm(t, np.inf), np.array([-2.0, 1.0, 2.0]))
    np.testing.assert_allclose(g, [-0.5, 0.0, 0.5])


def _selects(name: str) -> bool:
    """Whether ``FUNCTIONS[name]`` is a selection: each result element is one of its
    slice's elements (probed on random float64 values, which have no ties)."""
    _, numpy_function, dtypes = FUNCTIONS[name]
    x = np.random.default_rng(0).standard_normal((4, 32))
    kept = np.asarray(numpy_function(x, 1, True))
    return "float64" in dtypes and kept.dtype == x.dtype and bool(np.all(np.any(x == kept, 1)))


#: The selecting reductions of ``FUNCTIONS`` (max, amax, min, amin, and any new one).
SELECTING = [name for name in FUNCTIONS if _selects(name)]


def test_the_selecting_reductions_are_found() -> None:
    assert {"max", "amax", "min", "amin"} <= set(SELECTING)
    assert not {"sum", "prod", "mean", "norm", "any", "logsumexp"} & set(SELECTING)


@pytest.mark.parametrize("name", SELECTING)
def test_ties_share_the_gradient_over_every_axis(
    name: str, executor: tc.BackwardExecutor
) -> None:
    """Inputs with ties (``helpers.ties``), every axis choice, with and without
    ``keepdims``, on both executors: each of ``k`` tied elements gets ``1/k``. (Native
    code in float64 only: ~90 programs a dtype; ``test_op_ties`` compiles float32 ties.)"""
    function, numpy_function, dtypes = FUNCTIONS[name]
    rng = np.random.default_rng(len(name))
    compiled = isinstance(executor, CompiledExecutor)
    for dtype, shape in itertools.product(dtypes[:1] if compiled else dtypes, SHAPES):
        for axis in axis_choices(len(shape)):
            axes = tuple(range(len(shape))) if axis is None else tuple(
                sorted(a % len(shape) for a in np.atleast_1d(axis)))  # fmt: skip
            size = reduced_size(shape, axes)
            if size < 2:
                continue

            def counts(xs: list[np.ndarray], axis: Any = axis, axes: Any = axes,
                       size: int = size) -> tuple[np.ndarray, int]:  # fmt: skip
                kept = numpy_function(xs[0], axis, True)
                return np.sum(slice_hits(xs[0], kept, axes)[0], axis=axes), size

            (x,) = draw_tied(rng, [shape], dtype, counts)
            kept = np.asarray(numpy_function(x, axis, True))
            for keepdims in (False, True):
                t = tc.tensor(x, requires_grad=True)
                out = function(t, axis, keepdims)
                w = random_array(rng, out.shape, dtype)
                (g,) = tc.grad(tc.sum(out * w), [t])
                want = shared_reduction_gradient(x, kept, axes, w.reshape(kept.shape))
                what = f"{name} {dtype}{shape} axis={axis} keepdims={keepdims}"
                assert g is not None and g.dtype == x.dtype, what
                tol = 1e-6 if dtype == "float32" else 1e-15
                np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=what)


def test_nan_maximum_carries_no_gradient() -> None:
    (g,) = _grad(lambda t: tc.max(t, 1), np.array([[1.0, np.nan], [2.0, 3.0]]))
    np.testing.assert_array_equal(g, [[0.0, 0.0], [0.0, 1.0]])


def test_product_gradient_at_zeros() -> None:
    """The product of the others: exact with one zero; 0 with two zeros or more."""
    x = np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 6.0], [1.5, -2.0, 0.5, 4.0]])
    (g,) = _grad(lambda t: tc.prod(t, 1), x)
    np.testing.assert_allclose(g, [[0, 24, 0, 0], [0, 0, 0, 0], [-4, 3, -12, -1.5]])
    z = np.array([0j, 1 + 2j, 3 - 1j])
    (g,) = _grad(lambda t: tc.real(tc.prod(t)), z)  # a real loss: Re(prod)
    np.testing.assert_allclose(g, np.conj([(1 + 2j) * (3 - 1j), 0, 0]))


def test_second_derivatives() -> None:
    """Hessians by nesting: the product's mixed partials (one zero), max's are 0, and
    logsumexp's ``diag(p) - p p^T``."""
    x = np.array([2.0, 0.0, 3.0])
    hessian = [func.grad(lambda t, i=i: func.grad(tc.prod)(t)[i])(x).numpy() for i in range(3)]
    np.testing.assert_allclose(hessian, [[0, 3, 0], [3, 0, 2], [0, 2, 0]])
    h_max = func.grad(lambda t: tc.sum(func.grad(tc.max)(t) * t))(np.array([1.0, 4.0, 2.0]))
    np.testing.assert_allclose(h_max.numpy(), [0.0, 1.0, 0.0])  # d/dt <grad max, t> = grad max
    y = np.array([0.5, -1.0, 2.0])
    p = np.exp(y) / np.sum(np.exp(y))
    rows = [func.grad(lambda t, i=i: func.grad(tc.logsumexp)(t)[i])(y).numpy() for i in range(3)]
    np.testing.assert_allclose(rows, np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-15)


def test_integer_and_bool_results_carry_no_gradient() -> None:
    x = tc.tensor(np.random.default_rng(6).standard_normal((3, 4)), requires_grad=True)
    for out in (tc.argmax(x, 1), tc.argmin(x), tc.any(x > 0, 0), tc.all(x > -5)):
        assert not out.requires_grad and out.dtype.kind in "ib"
        with pytest.raises(ValueError, match="does not require gradients"):
            tc.grad(out, [x], seed=np.ones(out.shape, out.dtype), executor=REFERENCE)
    picked = tc.take_along_axis(x, tc.argmax(x, 1, keepdims=True), 1)  # a gradient via a gather
    (g,) = tc.grad(tc.sum(picked), [x], executor=REFERENCE)
    np.testing.assert_array_equal(g, x.numpy() == np.max(x.numpy(), 1, keepdims=True))


def test_stop_gradient() -> None:
    x = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * tc.stop_gradient(x)
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])
    (g,) = tc.grad(tc.sum(y), [x], executor=REFERENCE)
    np.testing.assert_array_equal(g, [1.0, 2.0])
    traced = tc.function(lambda t: tc.sum(t * tc.stop_gradient(t * t)))
    (g,) = tc.grad(traced(x), [x], executor=REFERENCE)
    np.testing.assert_array_equal(g, [1.0, 4.0])


def test_norm_gradient_is_zero_at_zero() -> None:
    for function in (tc.norm, lambda t: tc.norm(t, 3), lambda t: tc.norm(t, 1),
                     lambda t: tc.norm(t, np.inf)):  # fmt: skip
        (g,) = _grad(function, np.zeros(3))
        np.testing.assert_array_equal(g, np.zeros(3))
    (g,) = _grad(lambda t: tc.norm(t, axis=1), np.array([[0.0, 0.0], [3.0, 4.0]]))
    np.testing.assert_allclose(g, [[0.0, 0.0], [0.6, 0.8]])
    with np.errstate(divide="ignore", invalid="ignore"):
        (g,) = _grad(lambda t: tc.std(t), np.ones(3))  # documented: sqrt'(0) = inf
    assert np.isnan(g).all()


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_complex_max_and_min_order_as_numpy(axis: Any) -> None:
    """numpy orders complex values lexicographically: the real part, then the imaginary;
    the gradient goes to the chosen element (ties of both share it)."""
    z = np.array([[1 + 2j, 1 + 3j, 0 + 5j], [2 - 1j, 2 - 2j, -1j], [2 - 1j, 0j, 2 - 1j]])
    for name in ("max", "min"):
        want = getattr(np, name)(z, axis)
        np.testing.assert_array_equal(getattr(tc, name)(z, axis).numpy(), want)
    x = tc.tensor(z, requires_grad=True)
    (g,) = tc.grad(tc.sum(tc.real(tc.max(x, axis))), [x])
    if axis is None:
        ties = z == np.max(z)  # three of them, sharing the gradient
        np.testing.assert_allclose(g, np.where(ties, 1.0 / ties.sum(), 0.0))
    sorted_rows = tc.sort(x, axis=1)
    np.testing.assert_array_equal(sorted_rows.numpy(), np.sort(z, axis=1))

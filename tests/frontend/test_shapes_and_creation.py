"""Shape functions (values against numpy, gradients against central differences, the
compiled executor against the reference) and constructors (values and dtypes as numpy)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import check_frontend_grad

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

RNG = np.random.default_rng(7)
X234 = RNG.standard_normal((2, 3, 4))

SHAPE_CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], np.ndarray]] = [
    ("expand_dims 0", lambda x: tc.expand_dims(x, 0), lambda x: np.expand_dims(x, 0), X234),
    ("expand_dims -1", lambda x: tc.expand_dims(x, -1), lambda x: np.expand_dims(x, -1), X234),
    ("expand_dims (0, 3)", lambda x: tc.expand_dims(x, (0, 3)),
     lambda x: np.expand_dims(x, (0, 3)), X234),
    ("squeeze", tc.squeeze, np.squeeze, RNG.standard_normal((1, 3, 1, 2))),
    ("squeeze axis", lambda x: tc.squeeze(x, 2), lambda x: np.squeeze(x, 2),
     RNG.standard_normal((1, 3, 1, 2))),
    ("squeeze (0, -2)", lambda x: tc.squeeze(x, (0, -2)), lambda x: np.squeeze(x, (0, -2)),
     RNG.standard_normal((1, 3, 1, 2))),
    ("ravel", tc.ravel, np.ravel, X234),
    ("flatten", tc.flatten, lambda x: x.flatten(), X234),
    ("swapaxes", lambda x: tc.swapaxes(x, 0, 2), lambda x: np.swapaxes(x, 0, 2), X234),
    ("swapaxes same", lambda x: tc.swapaxes(x, 1, -2), lambda x: np.swapaxes(x, 1, -2), X234),
    ("moveaxis", lambda x: tc.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), X234),
    ("moveaxis tuple", lambda x: tc.moveaxis(x, (0, 1), (2, 0)),
     lambda x: np.moveaxis(x, (0, 1), (2, 0)), X234),
    ("atleast_2d 1-d", tc.atleast_2d, np.atleast_2d, RNG.standard_normal(3)),
    ("atleast_3d 1-d", tc.atleast_3d, np.atleast_3d, RNG.standard_normal(3)),
    ("atleast_3d 2-d", tc.atleast_3d, np.atleast_3d, RNG.standard_normal((2, 3))),
    ("atleast_1d 0-d", tc.atleast_1d, np.atleast_1d, np.array(1.5)),
    ("atleast_2d 0-d", tc.atleast_2d, np.atleast_2d, np.array(1.5)),
    ("method flatten", lambda x: x.flatten(), lambda x: x.flatten(), X234),
    ("method ravel", lambda x: x.ravel(), lambda x: x.ravel(), X234),
    ("method squeeze", lambda x: x.squeeze(), lambda x: x.squeeze(),
     RNG.standard_normal((3, 1))),
    ("method swapaxes", lambda x: x.swapaxes(0, 1), lambda x: x.swapaxes(0, 1), X234),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize(("fn", "np_fn", "x"), [c[1:] for c in SHAPE_CASES],
                         ids=[c[0] for c in SHAPE_CASES])  # fmt: skip
def test_shape_functions_match_numpy_and_central_differences(fn, np_fn, x, dtype) -> None:  # type: ignore[no-untyped-def]
    data = x.astype(dtype)
    if np.dtype(dtype).kind == "c":
        data = data + 1j * RNG.standard_normal(x.shape)
    check_frontend_grad(fn, np_fn, [data])


def test_broadcast_arrays_values_and_gradients() -> None:
    a, b = RNG.standard_normal((3, 1)), RNG.standard_normal(4)
    ta, tb = tc.tensor(a, requires_grad=True), tc.tensor(b, requires_grad=True)
    ba, bb = tc.broadcast_arrays(ta, tb)
    ea, eb = np.broadcast_arrays(a, b)
    np.testing.assert_array_equal(ba.numpy(), ea)
    np.testing.assert_array_equal(bb.numpy(), eb)
    ga, gb = tc.grad(tc.sum(ba * bb), [ta, tb])
    np.testing.assert_allclose(ga, np.sum(eb, axis=1, keepdims=True), rtol=1e-14)
    np.testing.assert_allclose(gb, np.sum(ea, axis=0), rtol=1e-14)
    with pytest.raises(ValueError, match="do not broadcast"):
        tc.broadcast_arrays(np.ones(3), np.ones(4))


def test_shape_functions_compile_without_fallbacks() -> None:
    executor = CompiledExecutor(False)
    x = tc.tensor(X234, requires_grad=True)
    y = tc.moveaxis(tc.expand_dims(tc.swapaxes(x, 0, 2), 1), 0, -1)
    loss = tc.sum(tc.sin(tc.ravel(tc.squeeze(y, 0))) * np.arange(24.0))
    got = tc.grad(loss, [x], executor=executor)[0]
    want = tc.grad(loss, [x], executor=tc.ReferenceExecutor())[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert executor.stats.fallbacks == 0 and executor.stats.compiles > 0


def test_atleast_of_several_and_of_enough_dims() -> None:
    x = tc.tensor(X234)
    assert tc.atleast_2d(x) is x
    a, b = tc.atleast_1d(1.0, [1.0, 2.0])
    assert a.shape == (1,) and b.shape == (2,)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tc.squeeze(np.ones((2, 1)), 0), "size is not one"),
        (lambda: tc.expand_dims(np.ones(2), 3), "out of range"),
        (lambda: tc.expand_dims(np.ones(2), (0, 0)), "repeated axis"),
        (lambda: tc.swapaxes(np.ones((2, 3)), 0, 2), "out of range"),
        (lambda: tc.moveaxis(np.ones((2, 3)), (0, 1), 0), "same number of axes"),
    ],
)
def test_shape_function_errors_name_the_problem(call, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()


CONSTRUCTORS: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("array", lambda m: m.array([[1, 2], [3, 4]]), lambda m: m.array([[1, 2], [3, 4]])),
    ("array dtype ndmin", lambda m: m.array([1.0, 2.0], np.float32, ndmin=3),
     lambda m: m.array([1.0, 2.0], np.float32, ndmin=3)),
    ("asarray", lambda m: m.asarray((1.5, 2.5)), lambda m: m.asarray((1.5, 2.5))),
    ("copy", lambda m: m.copy([True, False]), lambda m: m.copy([True, False])),
    ("zeros", lambda m: m.zeros((2, 3)), lambda m: m.zeros((2, 3))),
    ("zeros int", lambda m: m.zeros(3, dtype=int), lambda m: m.zeros(3, dtype=int)),
    ("ones f32", lambda m: m.ones(2, np.float32), lambda m: m.ones(2, np.float32)),
    ("full int", lambda m: m.full(2, 1), lambda m: m.full(2, 1)),
    ("full float", lambda m: m.full((2, 2), 0.5), lambda m: m.full((2, 2), 0.5)),
    ("full complex", lambda m: m.full(2, 1j), lambda m: m.full(2, 1j)),
    ("zeros_like", lambda m: m.zeros_like(np.ones((2, 3), np.float32)),
     lambda m: m.zeros_like(np.ones((2, 3), np.float32))),
    ("ones_like int", lambda m: m.ones_like([1, 2]), lambda m: m.ones_like([1, 2])),
    ("full_like", lambda m: m.full_like(np.ones(3), 7), lambda m: m.full_like(np.ones(3), 7)),
    ("empty_like shape", lambda m: m.empty_like(np.ones(3), shape=(2,)) * 0,
     lambda m: m.zeros((2,))),
    ("eye", lambda m: m.eye(3), lambda m: m.eye(3)),
    ("eye rect k", lambda m: m.eye(2, 4, 1), lambda m: m.eye(2, 4, 1)),
    ("identity", lambda m: m.identity(2, int), lambda m: m.identity(2, int)),
    ("arange", lambda m: m.arange(5), lambda m: m.arange(5)),
    ("arange float step", lambda m: m.arange(1.0, 2.0, 0.25),
     lambda m: m.arange(1.0, 2.0, 0.25)),
    ("linspace", lambda m: m.linspace(0, 1, 5), lambda m: m.linspace(0, 1, 5)),
    ("linspace no endpoint f32", lambda m: m.linspace(-1, 1, 4, endpoint=False,
                                                     dtype=np.float32),
     lambda m: m.linspace(-1, 1, 4, endpoint=False, dtype=np.float32)),
]  # fmt: skip


@pytest.mark.parametrize(("ours", "theirs"), [c[1:] for c in CONSTRUCTORS],
                         ids=[c[0] for c in CONSTRUCTORS])  # fmt: skip
def test_constructors_follow_numpy(ours, theirs) -> None:  # type: ignore[no-untyped-def]
    got, want = ours(tc), theirs(np)
    assert isinstance(got, tc.Tensor) and not got.requires_grad
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_linspace_retstep_and_empty() -> None:
    values, step = tc.linspace(0.0, 1.0, 3, retstep=True)
    assert step == 0.5 and values.shape == (3,)
    np.testing.assert_array_equal(tc.empty((2, 2)).numpy(), np.zeros((2, 2)))


def test_array_of_a_tensor_keeps_its_gradient() -> None:
    x = tc.tensor([1.0, 2.0], requires_grad=True)
    assert tc.array(x) is x and tc.asarray(x) is x and tc.copy(x) is x
    y = tc.array(x, dtype=np.complex128, ndmin=2)
    assert y.shape == (1, 2) and y.dtype == np.complex128
    np.testing.assert_allclose(tc.grad(tc.real(tc.sum(y * 3.0)), [x])[0], [3.0, 3.0])


def test_full_with_a_tensor_fill_value_is_differentiable() -> None:
    v = tc.tensor(2.0, requires_grad=True)
    filled = tc.full((2, 3), v)
    np.testing.assert_array_equal(filled.numpy(), np.full((2, 3), 2.0))
    assert tc.grad(tc.sum(filled), [v])[0] == 6.0
    like = tc.full_like(np.ones(4, np.float32), v)
    assert like.dtype == np.float32 and tc.grad(tc.sum(like), [v])[0] == 4.0


def test_like_constructors_of_tensors_read_only_shape_and_dtype() -> None:
    x = tc.tensor(np.ones((2, 2), np.float32), requires_grad=True)
    z = tc.zeros_like(x)
    assert not z.requires_grad and z.dtype == np.float32 and z.shape == (2, 2)


def test_constructor_arguments_that_require_gradients_are_refused() -> None:
    n = tc.tensor(3.0, requires_grad=True)
    with pytest.raises(TypeError, match="linspace: start/stop/num is a tensor that requires"):
        tc.linspace(1.0, 5.0, tc.tensor(4.0, requires_grad=True))
    with pytest.raises(TypeError, match="zeros: shape is a tensor that requires"):
        tc.zeros(n)
    assert tc.arange(tc.tensor(3)).shape == (3,)  # a constant tensor is a value


@pytest.mark.parametrize("num", [0, 1, 2, 5])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_differentiates_its_float_endpoints(num: int, endpoint: bool) -> None:
    ends = tc.tensor(np.array([1.2, -3.4]), requires_grad=True)
    values = tc.linspace(ends[0], ends[1], num, endpoint=endpoint)
    np.testing.assert_array_equal(values.numpy(), np.linspace(1.2, -3.4, num, endpoint=endpoint))
    weights = np.arange(1.0, num + 1.0)
    (g,) = tc.grad(tc.sum(values * weights), [ends])
    div = (num - 1 if endpoint else num) or 1
    fraction = np.arange(num) / div
    np.testing.assert_allclose(g, [np.sum(weights * (1 - fraction)), np.sum(weights * fraction)])
    arrays = tc.linspace(ends, np.zeros(2), 3, axis=1)  # array endpoints, the axis last
    np.testing.assert_allclose(arrays.numpy(), np.linspace([1.2, -3.4], np.zeros(2), 3, axis=1))


def test_arange_differentiates_start_and_step() -> None:
    p = tc.tensor(np.array([0.5, 0.7]), requires_grad=True)
    values = tc.arange(p[0], 3.0, p[1])
    np.testing.assert_allclose(values.numpy(), np.arange(0.5, 3.0, 0.7))
    (g,) = tc.grad(tc.sum(values), [p])
    np.testing.assert_allclose(g, [4.0, 0.0 + 1 + 2 + 3])


def test_array_of_python_objects_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Python objects"):
        tc.array([object()])


def test_dot_follows_numpy() -> None:
    cases = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
             ((2, 3, 4), (5, 4, 6)), ((), (3,)), ((2, 2), ())]  # fmt: skip
    for shape_a, shape_b in cases:
        a, b = RNG.standard_normal(shape_a), RNG.standard_normal(shape_b)
        check_frontend_grad(tc.dot, np.dot, [a, b])
    check_frontend_grad(tc.outer, np.outer, [RNG.standard_normal(3), RNG.standard_normal((2, 2))])
    with pytest.raises(ValueError, match="not aligned"):
        tc.dot(np.ones((2, 3)), np.ones((2, 3)))

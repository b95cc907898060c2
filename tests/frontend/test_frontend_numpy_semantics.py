"""numpy semantics of the Tensor frontend, with gradients checked against finite differences.

Every gradient here runs on an explicit ``ReferenceExecutor`` (the process default may
become a compiled executor).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_frontend_grad, random_array

import tidu_compile as tc

REF = tc.ReferenceExecutor


def _rand(shape, dtype="float64", kind="normal", seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype, kind)


# --------------------------------------------------------------------------- broadcasting


def test_scalar_plus_tensor() -> None:
    x = _rand((2, 3))
    check_frontend_grad(lambda t: 2.0 + t, lambda a: 2.0 + a, [x])
    check_frontend_grad(lambda t: t + 3, lambda a: a + 3, [x])


def test_zero_d_tensor_plus_tensor_sums_the_broadcast_gradient() -> None:
    s, x = np.array(1.5), _rand((2, 3))
    gs, gx = check_frontend_grad(lambda a, b: a * b + a, lambda a, b: a * b + a, [s, x])
    assert gs.shape == () and gx.shape == (2, 3)


def test_column_plus_row_broadcasts_to_a_matrix() -> None:
    a, b = _rand((3, 1), seed=1), _rand((1, 4), seed=2)
    ta, tb = tc.tensor(a, requires_grad=True), tc.tensor(b, requires_grad=True)
    out = ta + tb
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.numpy(), a + b)
    ga, gb = tc.grad(tc.sum(out), [ta, tb], executor=REF())
    np.testing.assert_array_equal(ga, np.full((3, 1), 4.0))
    np.testing.assert_array_equal(gb, np.full((1, 4), 3.0))
    check_frontend_grad(lambda p, q: p * q - q, lambda p, q: p * q - q, [a, b])


def test_broadcast_against_lower_rank_and_broadcast_to() -> None:
    a, b = _rand((2, 3, 4), seed=3), _rand((4,), seed=4)
    check_frontend_grad(lambda p, q: p / (q * q + 1.0), lambda p, q: p / (q * q + 1.0), [a, b])
    check_frontend_grad(lambda q: tc.broadcast_to(q, (3, 2, 4)),
                        lambda q: np.broadcast_to(q, (3, 2, 4)), [b])  # fmt: skip
    with pytest.raises(ValueError):
        tc.broadcast_to(tc.tensor(b, requires_grad=True), (3, 5))


def test_incompatible_shapes_raise_value_error_naming_them() -> None:
    x, y = tc.tensor(np.ones((2, 3)), requires_grad=True), tc.tensor(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 2\)"):
        x + y


# --------------------------------------------------------------------------- operators


def test_reflected_operators() -> None:
    x = _rand((2, 3), kind="nonzero", seed=5)
    check_frontend_grad(lambda t: 2 - t, lambda a: 2 - a, [x])
    check_frontend_grad(lambda t: 2 / t, lambda a: 2 / a, [x])
    check_frontend_grad(lambda t: 3.0 * t, lambda a: 3.0 * a, [x])
    check_frontend_grad(lambda t: 1 + t, lambda a: 1 + a, [x])
    check_frontend_grad(lambda t: -t, lambda a: -a, [x])
    (g,) = tc.grad(tc.sum(2 / tc.tensor(x, requires_grad=True)), [tc.tensor(x)], executor=REF())
    assert g is None  # a different tensor: no path


def test_numpy_array_on_the_left_defers_to_the_tensor() -> None:
    a, b = np.arange(1.0, 7.0).reshape(2, 3), _rand((2, 3), seed=6)
    for result in (a - tc.tensor(b), a * tc.tensor(b), a @ tc.tensor(b.T)):
        assert isinstance(result, tc.Tensor)
    np.testing.assert_allclose((a - tc.tensor(b)).numpy(), a - b)
    check_frontend_grad(lambda t: a @ t.T, lambda q: a @ q.T, [b])


def test_power_by_constants_and_by_tensors() -> None:
    x = _rand((2, 3), kind="positive", seed=7)
    for exponent in (2, 3, 0.5, -1, 1.5):
        check_frontend_grad(lambda t, e=exponent: t**e, lambda a, e=exponent: a**e, [x])
    check_frontend_grad(lambda t: 2**t, lambda a: 2**a, [x])
    check_frontend_grad(lambda t: t**t, lambda a: a**a, [x])


def test_python_scalars_are_constants() -> None:
    x = _rand((3,), seed=8)
    t = tc.tensor(x, requires_grad=True)
    out = t * 3 + 1.5
    assert out.requires_grad
    (g,) = tc.grad(tc.sum(out), [t], executor=REF())
    np.testing.assert_array_equal(g, np.full(3, 3.0))


# --------------------------------------------------------------------------- dtypes


def test_float32_tensor_times_python_float_stays_float32() -> None:
    x = _rand((2, 3), "float32", seed=9)
    t = tc.tensor(x, requires_grad=True)
    for out in (t * 2.5, 2.5 * t, t + 1, t - 0.5, 1.0 / (t * t + 1.0), t**2):
        assert out.dtype == np.float32, out.dtype
    (g,) = tc.grad(tc.sum(t * 2.5), [t], executor=REF())
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.full((2, 3), 2.5, np.float32))


def test_float32_plus_float64_tensor_promotes_and_grads_keep_input_dtypes() -> None:
    a, b = _rand((2, 3), "float32", seed=10), _rand((2, 3), "float64", seed=11)
    ta, tb = tc.tensor(a, requires_grad=True), tc.tensor(b, requires_grad=True)
    out = ta * tb + ta
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), a.astype(np.float64) * b + a)
    ga, gb = tc.grad(tc.sum(out), [ta, tb], executor=REF())
    assert ga.dtype == np.float32 and gb.dtype == np.float64
    np.testing.assert_allclose(ga, b + 1, rtol=1e-6)
    np.testing.assert_allclose(gb, a, rtol=1e-12)


def test_real_times_complex_promotes_to_complex() -> None:
    x, z = _rand((3,), "float32", seed=12), _rand((3,), "complex64", seed=13)
    gx, gz = check_frontend_grad(lambda p, q: p * q, lambda p, q: p * q, [x, z])
    assert gx.dtype == np.float32 and gz.dtype == np.complex64
    check_frontend_grad(lambda p: p * 1j, lambda p: p * np.complex64(1j), [x])


def test_tensor_dtype_argument_and_integer_constants() -> None:
    t = tc.tensor([1, 2, 3], dtype=np.float32, requires_grad=True)
    assert t.dtype == np.float32
    out = t * tc.tensor([1, 2, 3])
    (g,) = tc.grad(tc.sum(out), [t], executor=REF())
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [1, 2, 3])


# --------------------------------------------------------------------------- reductions


SUM_AXES = [None, 0, 1, -1, -3, (0, 2), (-1, 0), (0, 1, 2), ()]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", SUM_AXES, ids=repr)
def test_sum_and_mean_axes(axis, keepdims: bool) -> None:
    x = _rand((2, 3, 4), seed=14)
    check_frontend_grad(lambda t: tc.sum(t, axis=axis, keepdims=keepdims),
                        lambda a: np.sum(a, axis=axis, keepdims=keepdims), [x])  # fmt: skip
    check_frontend_grad(lambda t: tc.mean(t, axis=axis, keepdims=keepdims),
                        lambda a: np.mean(a, axis=axis, keepdims=keepdims), [x])  # fmt: skip
    check_frontend_grad(lambda t: t.sum(axis, keepdims), lambda a: a.sum(axis, keepdims=keepdims),
                        [x])  # fmt: skip


def test_mean_gradient_is_one_over_count() -> None:
    t = tc.tensor(np.ones((2, 5)), requires_grad=True)
    (g,) = tc.grad(tc.mean(t), [t], executor=REF())
    np.testing.assert_allclose(g, np.full((2, 5), 0.1), rtol=1e-15)
    (g,) = tc.grad(tc.sum(tc.mean(t, axis=1)), [t], executor=REF())
    np.testing.assert_allclose(g, np.full((2, 5), 0.2), rtol=1e-15)


@pytest.mark.parametrize("axis", [3, -4, (0, 0), (1, -2)], ids=repr)
def test_bad_sum_axis_is_a_value_error(axis) -> None:
    with pytest.raises(ValueError, match="axis"):
        tc.sum(tc.tensor(np.ones((2, 3, 4)), requires_grad=True), axis=axis)


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("shape", [(4, -1), (-1,), (2, -1, 2), (24,), (1, 2, 3, 4), 24])
def test_reshape_with_minus_one(shape) -> None:
    x = _rand((2, 3, 4), seed=15)
    check_frontend_grad(lambda t: tc.reshape(t, shape), lambda a: np.reshape(a, shape), [x])


def test_reshape_method_and_errors() -> None:
    x = _rand((2, 3, 4), seed=16)
    check_frontend_grad(lambda t: t.reshape(4, -1), lambda a: a.reshape(4, -1), [x])
    check_frontend_grad(lambda t: t.reshape((6, 4)), lambda a: a.reshape((6, 4)), [x])
    with pytest.raises(ValueError, match="reshape"):
        tc.reshape(tc.tensor(x, requires_grad=True), (5, -1))
    with pytest.raises(ValueError):
        tc.reshape(tc.tensor(x, requires_grad=True), (-1, -1))


@pytest.mark.parametrize("axes", [None, (1, 2, 0), (0, 2, 1), (-1, 0, 1), (2, 1, 0)], ids=repr)
def test_transpose_with_and_without_axes(axes) -> None:
    x = _rand((2, 3, 4), seed=17)
    check_frontend_grad(lambda t: tc.transpose(t, axes), lambda a: np.transpose(a, axes), [x])


def test_transpose_methods_and_errors() -> None:
    x = _rand((2, 3), seed=18)
    check_frontend_grad(lambda t: t.T, lambda a: a.T, [x])
    check_frontend_grad(lambda t: t.transpose(), lambda a: a.transpose(), [x])
    y = _rand((2, 3, 4), seed=19)
    check_frontend_grad(lambda t: t.transpose(2, 0, 1), lambda a: a.transpose(2, 0, 1), [y])
    with pytest.raises(ValueError):
        tc.transpose(tc.tensor(y, requires_grad=True), (0, 0, 1))


# --------------------------------------------------------------------------- matmul


MATMUL_SHAPES = [
    ((3,), (3,)),  # inner product -> scalar
    ((2, 3), (3,)),  # matrix @ vector
    ((3,), (3, 4)),  # vector @ matrix
    ((2, 3), (3, 4)),  # 2-d
    ((2, 2, 3), (2, 3, 4)),  # batched
    ((2, 1, 2, 3), (3, 3, 2)),  # broadcast batch dims
    ((2, 3), (4, 3, 2)),  # 2-d @ batched
    ((3,), (2, 3, 4)),  # 1-d @ batched
    ((2, 2, 3), (3,)),  # batched @ 1-d
]


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=repr)
def test_matmul_follows_numpy(shapes, dtype) -> None:
    a, b = _rand(shapes[0], dtype, seed=20), _rand(shapes[1], dtype, seed=21)
    check_frontend_grad(tc.matmul, np.matmul, [a, b])
    check_frontend_grad(lambda p, q: p @ q, lambda p, q: p @ q, [a, b], seed=1)


BAD_MATMUL = [((2, 3), (4, 2)), ((3,), (4,)), ((), (3,)), ((2, 2, 3), (3, 3, 2))]


@pytest.mark.parametrize("shapes", BAD_MATMUL, ids=repr)
def test_matmul_shape_errors(shapes) -> None:
    a, b = (tc.tensor(np.ones(s), requires_grad=True) for s in shapes)
    with pytest.raises(ValueError):
        tc.matmul(a, b)


# --------------------------------------------------------------------------- where / maximum


def test_where_with_bool_array_and_bool_tensor_condition() -> None:
    rng = np.random.default_rng(22)
    mask = rng.random((2, 3)) < 0.5
    mask[0, 0], mask[0, 1] = True, False
    a, b = _rand((2, 3), seed=23), _rand((2, 3), seed=24)
    for cond in (mask, tc.tensor(mask)):
        ga, gb = check_frontend_grad(lambda p, q, c=cond: tc.where(c, p, q),
                                     lambda p, q: np.where(mask, p, q), [a, b])  # fmt: skip
        w = tc.tensor(a, requires_grad=True)
        (g,) = tc.grad(tc.sum(tc.where(cond, w, 0.0)), [w], executor=REF())
        np.testing.assert_array_equal(g, mask.astype(np.float64))


def test_where_broadcasts_condition_and_values() -> None:
    mask = np.array([[True], [False], [True]])
    a, b = _rand((4,), seed=25), _rand((3, 4), seed=26)
    check_frontend_grad(lambda p, q: tc.where(mask, p, q), lambda p, q: np.where(mask, p, q),
                        [a, b])  # fmt: skip


def test_where_rejects_non_bool_condition() -> None:
    a = tc.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError):
        tc.where(np.array([1, 0, 1]), a, a)


def test_maximum_gradient() -> None:
    x = _rand((2, 3), seed=27)
    y = x + np.array([[0.5, -0.5, 0.3], [-0.2, 0.9, -1.0]])
    check_frontend_grad(tc.maximum, np.maximum, [x, y])
    check_frontend_grad(lambda t: tc.maximum(t, 0.0), lambda a: np.maximum(a, 0.0), [x])
    t = tc.tensor(np.array([-1.0, 2.0]), requires_grad=True)
    (g,) = tc.grad(tc.sum(tc.maximum(t, 0.0)), [t], executor=REF())
    np.testing.assert_array_equal(g, [0.0, 1.0])


# --------------------------------------------------------------------------- complex


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_conj_real_imag_of_complex_tensors(dtype) -> None:
    z = _rand((2, 3), dtype, seed=28)
    check_frontend_grad(tc.conj, np.conj, [z])
    check_frontend_grad(tc.real, np.real, [z])
    check_frontend_grad(tc.imag, np.imag, [z])
    check_frontend_grad(lambda t: tc.exp(t) * tc.conj(t), lambda a: np.exp(a) * np.conj(a), [z])
    t = tc.tensor(z, requires_grad=True)
    assert tc.real(t).dtype == tc.imag(t).dtype == np.dtype(dtype).type(0).real.dtype


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_abs_squared_gradient_is_two_z(dtype) -> None:
    z = _rand((2, 3), dtype, seed=29)
    t = tc.tensor(z, requires_grad=True)
    loss = tc.sum(tc.real(t * tc.conj(t)))
    assert loss.dtype == np.dtype(dtype).type(0).real.dtype
    (g,) = tc.grad(loss, [t], executor=REF())
    assert g.dtype == dtype
    np.testing.assert_allclose(g, 2 * z, rtol=1e-5 if dtype == "complex64" else 1e-13)
    loss2 = tc.sum(tc.real(t) ** 2 + tc.imag(t) ** 2)
    (g2,) = tc.grad(loss2, [t], executor=REF())
    np.testing.assert_allclose(g2, 2 * z, rtol=1e-5 if dtype == "complex64" else 1e-13)


def test_gradient_of_a_linear_functional_of_complex_parts() -> None:
    z = _rand((3,), "complex128", seed=30)
    a, b = np.array([1.0, -2.0, 0.5]), np.array([0.25, 3.0, -1.0])
    t = tc.tensor(z, requires_grad=True)
    (g,) = tc.grad(tc.sum(a * tc.real(t) + b * tc.imag(t)), [t], executor=REF())
    np.testing.assert_allclose(g, a + 1j * b, rtol=1e-15)


def test_real_and_imag_of_a_complex_scalar_keep_shape() -> None:
    t = tc.tensor(1.0 + 2.0j, requires_grad=True)
    assert tc.real(t).shape == () and tc.imag(t).shape == ()
    (g,) = tc.grad(tc.real(t) * 3.0 + tc.imag(t), [t], executor=REF())
    assert g.shape == ()
    np.testing.assert_allclose(g, 3.0 + 1.0j)


def test_unary_functions_match_numpy() -> None:
    x = _rand((2, 3), kind="positive", seed=31)
    for f, g in [(tc.exp, np.exp), (tc.log, np.log), (tc.sin, np.sin), (tc.cos, np.cos),
                 (tc.tanh, np.tanh), (tc.sqrt, np.sqrt)]:  # fmt: skip
        check_frontend_grad(f, g, [x])
        check_frontend_grad(f, g, [x.astype(np.complex128) + 0.3j])
    s, c = tc.sincos(tc.tensor(x, requires_grad=True))
    np.testing.assert_allclose(s.numpy(), np.sin(x))
    np.testing.assert_allclose(c.numpy(), np.cos(x))

"""``Tensor`` and numpy's array protocol: operators, conversions, methods, and numpy
functions called on tensors (``__array_ufunc__``, ``__array_function__``, ``__array__``),
which run tidu_compile's function or raise, and never drop a gradient."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.frontend import FUNCTIONS


def leaf(values: Any, dtype: Any = np.float64) -> tc.Tensor:
    return tc.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


class Spy:
    """A stand-in frontend function that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append((args, kwargs))
        return "spied"


# ------------------------------------------------------------------ operators


def test_eq_and_ne_are_elementwise_and_hash_is_by_identity() -> None:
    x = leaf([0.5, 1.0, 0.5])
    np.testing.assert_array_equal((x == 0.5).numpy(), [True, False, True])
    np.testing.assert_array_equal((x != 0.5).numpy(), [False, True, False])
    np.testing.assert_array_equal((x == np.array([0.5, 0.0, 0.0])).numpy(), [True, False, False])
    np.testing.assert_array_equal((np.array([1, 1, 1]) == x).numpy(), [False, True, False])
    assert (x == x).dtype == np.bool_
    assert (x == None) is False and (x != "text") is True  # noqa: E711 - not array-like
    y = tc.tensor([0.5, 1.0, 0.5])
    assert len({x: 1, y: 2}) == 2 and hash(x) != hash(y)


def test_pow_rpow_and_abs_call_the_frontend_functions_by_name(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    x = leaf([1.0, 2.0])
    power, absolute = Spy(), Spy()
    monkeypatch.setitem(FUNCTIONS, "power", power)
    monkeypatch.setitem(FUNCTIONS, "abs", absolute)
    assert 2.0**x == "spied" and x**x == "spied" and abs(x) == "spied"
    assert power.calls == [((2.0, x), {}), ((x, x), {})]
    assert absolute.calls == [((x,), {})]


def test_pow_by_a_constant_and_a_missing_function_is_named(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    x = leaf([1.0, 2.0])
    np.testing.assert_allclose(tc.grad(tc.sum(x**3.0), [x])[0], [3.0, 12.0])
    monkeypatch.delitem(FUNCTIONS, "abs", raising=False)
    with pytest.raises(AttributeError, match="needs tidu_compile.abs, which does not exist"):
        abs(x)


# ------------------------------------------------------------------ conversions


@pytest.mark.parametrize("values", [2.5, [2.5], [[0.0]], [1.0, 2.0], 3, [True]])
@pytest.mark.parametrize("convert", [float, int, bool, complex, operator.index])
def test_conversions_follow_numpy(convert, values) -> None:  # type: ignore[no-untyped-def]
    array = np.asarray(values)
    try:
        expected: Any = convert(array)
    except (TypeError, ValueError) as error:
        with pytest.raises(type(error)):
            convert(tc.tensor(array))
    else:
        assert convert(tc.tensor(array)) == expected


def test_conversions_of_a_tensor_requiring_gradients_and_format() -> None:
    assert float(leaf(1.5)) == 1.5 and int(leaf(2.5)) == 2 and bool(leaf(1.0)) is True
    assert f"{leaf(1.25):.1f}" == "1.2" and [10, 20, 30][tc.tensor(1)] == 20
    with pytest.raises(ValueError, match="ambiguous"):
        bool(leaf([1.0, 2.0]))


def test_iteration_gives_rows_that_keep_their_gradient() -> None:
    rows = list(tc.tensor(np.arange(6.0).reshape(3, 2)))
    assert len(rows) == 3 and all(isinstance(r, tc.Tensor) for r in rows)
    np.testing.assert_array_equal(rows[2].numpy(), [4.0, 5.0])
    x = leaf([1.0, 2.0])
    a, b = x
    (g,) = tc.grad(a * b**2, [x])
    np.testing.assert_allclose(g, [4.0, 4.0])
    with pytest.raises(TypeError, match="0-d"):
        iter(tc.tensor(1.0))


def test_requires_grad_is_set_on_leaves_only() -> None:
    x = leaf([1.0])
    x.requires_grad = False  # a leaf: as PyTorch's requires_grad_(False)
    assert not x.requires_grad and x.is_leaf
    x.requires_grad = True
    y = x * 2.0
    with pytest.raises(RuntimeError, match="leaf tensors.*detach"):
        y.requires_grad = False
    assert x.requires_grad and not x.detach().requires_grad


# ------------------------------------------------------------------ methods


def test_astype_is_recorded_and_copy_is_a_recorded_clone() -> None:
    x = leaf([1.0, 2.0], np.float32)
    y = x.astype(np.float64)
    assert y.dtype == np.float64 and y.requires_grad
    g = tc.grad(tc.sum(y * y), [x])[0]
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [2.0, 4.0])
    c = x.copy()
    assert c is not x and not c.is_leaf and c.requires_grad
    np.testing.assert_allclose(tc.grad(tc.sum(c * 3.0), [x])[0], [3.0, 3.0])
    np.testing.assert_array_equal((x > 1.5).astype(np.float32).numpy(), [0.0, 1.0])


def test_complex_parts_and_transpose_as_properties_and_methods() -> None:
    z = tc.tensor(np.array([[1 + 2j, 3 - 1j]]), requires_grad=True)
    np.testing.assert_array_equal(z.real.numpy(), [[1.0, 3.0]])
    np.testing.assert_array_equal(z.imag.numpy(), [[2.0, -1.0]])
    np.testing.assert_array_equal(z.conj().numpy(), [[1 - 2j, 3 + 1j]])
    np.testing.assert_array_equal(z.conjugate().numpy(), [[1 - 2j, 3 + 1j]])
    assert z.T.shape == (2, 1)
    (g,) = tc.grad(tc.sum(z.real * 2.0 + z.imag), [z])
    np.testing.assert_allclose(g, [[2 + 1j, 2 + 1j]])


def test_methods_call_the_frontend_function_of_their_name(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    x = leaf([[1.0, 2.0]])
    spy = Spy()
    for name in ("max", "min", "prod", "var", "std", "clip", "argmax", "argmin", "all", "any"):
        monkeypatch.setitem(FUNCTIONS, name, spy)
        assert getattr(x, name)(axis=0) == "spied"
        assert spy.calls[-1] == ((x,), {"axis": 0})
    np.testing.assert_array_equal(x.dot(np.array([1.0, 1.0])).numpy(), [3.0])
    monkeypatch.delitem(FUNCTIONS, "ravel")
    with pytest.raises(AttributeError, match=r"Tensor.ravel needs tidu_compile.ravel"):
        x.ravel()


# ------------------------------------------------------------------ numpy functions


@pytest.mark.parametrize(
    ("call", "expected_grad"),
    [
        (lambda x: np.sum(np.exp(x)), np.exp),
        (lambda x: np.sum(np.sin(x) * np.cos(x)), lambda v: np.cos(2 * v)),
        (lambda x: np.sum(np.sqrt(x)), lambda v: 0.5 / np.sqrt(v)),
        (lambda x: np.sum(np.power(x, 2)), lambda v: 2 * v),
        (lambda x: np.sum(np.maximum(x, 1.0)), lambda v: (v >= 1.0) * 1.0),
        (lambda x: np.mean(np.tanh(x)), lambda v: (1 - np.tanh(v) ** 2) / v.size),
        (lambda x: np.sum(np.array([1.0, 2.0, 3.0]) * x), lambda v: np.array([1.0, 2.0, 3.0])),
        (lambda x: np.sum(np.divide(1.0, x)), lambda v: -1 / v**2),
        (lambda x: np.sum(np.log(np.negative(-x))), lambda v: 1 / v),
        (lambda x: np.sum(np.where(x > 1.0, x, 0.0)), lambda v: (v > 1.0) * 1.0),
        (lambda x: np.sum(np.reshape(x, (3, 1)) * np.transpose(np.ones((1, 3)))),
         lambda v: np.ones(3)),
        (lambda x: np.sum(np.expand_dims(x, 0), axis=(0, 1)), lambda v: np.ones(3)),
        (lambda x: np.dot(np.arange(3.0), x), lambda v: np.arange(3.0)),
        (lambda x: np.matmul(x, np.ones(3)), lambda v: np.ones(3)),
        (lambda x: np.sum(np.real(np.conj(x * 1j))), lambda v: np.zeros(3)),
    ],  # fmt: skip
)
def test_numpy_functions_on_tensors_carry_the_gradient(call, expected_grad) -> None:  # type: ignore[no-untyped-def]
    values = np.array([0.5, 1.5, 2.0])
    x = leaf(values)
    loss = call(x)
    assert isinstance(loss, tc.Tensor) and loss.requires_grad
    np.testing.assert_allclose(tc.grad(loss, [x])[0], expected_grad(values), rtol=1e-12, atol=0)


def test_numpy_keyword_arguments_are_passed_on() -> None:
    x = leaf(np.arange(6.0).reshape(2, 3))
    s = np.sum(x, axis=0, keepdims=True)
    assert isinstance(s, tc.Tensor) and s.shape == (1, 3)
    assert np.mean(x, axis=1).shape == (2,)
    assert np.shape(x) == (2, 3) and np.ndim(x) == 2 and np.size(x) == 6
    assert np.result_type(x, np.float32) == np.float64


def test_out_and_unknown_keywords_are_refused_by_name() -> None:
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="out= writes into an array"):
        np.exp(x, out=np.empty(2))
    with pytest.raises(TypeError, match="immutable"):
        np.sum(x, out=np.empty(()))
    with pytest.raises(TypeError, match=r"tidu_compile.sum\(x, axis=None, keepdims=False\)"):
        np.sum(x, dtype=np.float32)
    with pytest.raises(TypeError, match="immutable"):
        np.add(1.0, 2.0, out=tc.tensor(0.0))
    array = np.ones(2)
    with pytest.raises(TypeError, match="requires gradients"):
        array += x  # an in-place numpy update would drop the gradient


def test_unsupported_numpy_functions_raise_naming_the_function() -> None:
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match=r"numpy.median .*no 'median'"):
        np.median(x)
    with pytest.raises(TypeError, match=r"numpy.add.reduce .*tidu_compile.sum"):
        np.add.reduce(x)
    with pytest.raises(TypeError, match=r"numpy.histogram .*no 'histogram'"):
        np.histogram(x)


def test_numpy_computes_where_no_gradient_can_be_dropped() -> None:
    constant = tc.tensor([1.0, np.inf])
    np.testing.assert_array_equal(np.cumsum(constant), [1.0, np.inf])  # nothing to drop
    x = leaf([1.0, np.inf])
    np.testing.assert_array_equal(np.isinf(x), [False, True])  # bool result: no gradient
    assert np.allclose(constant, [1.0, np.inf])


def test_asarray_refuses_tensors_that_require_gradients() -> None:
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="requires gradients would drop them"):
        np.asarray(x)
    with pytest.raises(TypeError, match="requires gradients"):
        np.array([x, x])
    copy = np.asarray(x.detach())
    copy[0] = 5.0  # a writable copy
    assert x.numpy()[0] == 1.0
    indices = np.int64(x)  # integer values carry no gradient: nothing to drop
    assert indices.dtype == np.int64 and indices.tolist() == [1, 2]
    np.testing.assert_array_equal(np.asarray(x, dtype=bool), [True, True])

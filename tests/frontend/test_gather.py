"""Advanced indexing, ``take``, ``take_along_axis`` and ``.at`` with advanced keys: values
against numpy, gradients against central differences, the compiled executor against the
reference (no fallback), and out-of-range indices."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_frontend_grad, random_array

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

MASK = np.array([[True, False, True, False, True]] * 3 + [[False] * 5])

KEYS = [
    np.s_[[0, 2, 2]],
    np.s_[[-1, 0, -1]],
    np.s_[:, [1, -1, 1]],
    np.s_[[0, 1], [2, 3]],
    np.s_[[0, 1], :, [2, 0]],
    np.s_[1:, [[0], [4]], ::-1],
    np.s_[MASK],
    np.s_[None, [3, 0], None, 2],
    np.s_[..., [2, 2, 0]],
    np.s_[[True, False, True, True]],
    np.s_[0, :, [1, 1]],
    np.s_[np.arange(4), np.array([0, 1, 2, 4])],
    np.s_[[[0, 1], [1, 0]], 2],
    np.s_[[]],
]


def _rand(shape, dtype="float64", seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype)


def _numpy_key(key):
    items = key if isinstance(key, tuple) else (key,)
    return tuple(i.numpy() if isinstance(i, tc.Tensor) else i for i in items)


@pytest.fixture(scope="module")
def compiled() -> CompiledExecutor:
    return CompiledExecutor(cache_dir=False)


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_advanced_indexing_matches_numpy(key) -> None:
    a = _rand((4, 5, 3))
    if np.asarray(a[_numpy_key(key)]).size == 0:
        out = tc.tensor(a, requires_grad=True)[key]
        assert out.shape == a[_numpy_key(key)].shape
        return
    check_frontend_grad(lambda t: t[key], lambda x: x[_numpy_key(key)], [a])


@pytest.mark.parametrize("key", [np.s_[[0, 2, 2, -1]], np.s_[:, [3, 3, 0]],
                                 np.s_[np.arange(4), [1, 0, 3, 3]], np.s_[MASK[:, :4]]], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_advanced_indexing_compiled(compiled: CompiledExecutor, key, dtype: str) -> None:
    a = _rand((4, 4), dtype)
    x = tc.tensor(a, requires_grad=True)
    y = x[key]
    np.testing.assert_array_equal(y.numpy(), a[key])
    w = _rand(y.shape, dtype, seed=1)
    loss = tc.sum(tc.real(tc.exp(y) * w))
    fallbacks = compiled.stats.fallbacks
    (got,) = tc.grad(loss, [x], executor=compiled)
    (expected,) = tc.grad(loss, [x], executor=tc.ReferenceExecutor())
    assert compiled.stats.fallbacks == fallbacks
    np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_repeated_indices_accumulate() -> None:
    x = tc.tensor(np.arange(4.0), requires_grad=True)
    (g,) = tc.grad(tc.sum(x[[1, 1, 1, -1, 3]]), [x], executor=tc.ReferenceExecutor())
    np.testing.assert_array_equal(g, [0.0, 3.0, 0.0, 2.0])


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (np.s_[[4]], "index 4 is out of bounds for axis 0 with size 4"),
        (np.s_[:, [0, -6]], "index -6 is out of bounds for axis 1 with size 5"),
        (np.s_[1:, [5]], "index 5 is out of bounds for axis 1 with size 5"),
        (np.s_[[0, 1], [0, 1, 2]], "could not be broadcast together with shapes"),
        (np.s_[[0], [0], [0]], "too many indices for array"),
        (np.s_[np.array([0.5])], "only integers, slices"),
    ],
)
def test_bad_advanced_keys_raise_index_error(key, message: str) -> None:
    x = tc.tensor(_rand((4, 5)), requires_grad=True)
    with pytest.raises(IndexError, match=message):
        x[key]


def test_integer_tensor_indices() -> None:
    idx = tc.tensor(np.array([2, 0, 2]))
    check_frontend_grad(lambda t: t[idx], lambda a: a[[2, 0, 2]], [_rand((3, 2))])


# --------------------------------------------------------------------------- take


@pytest.mark.parametrize(
    ("fn", "np_fn"),
    [
        (lambda t: tc.take(t, [3, 0, 3]), lambda a: np.take(a, [3, 0, 3])),
        (lambda t: tc.take(t, 5), lambda a: np.take(a, 5)),
        (lambda t: tc.take(t, [[1], [0]], axis=1), lambda a: np.take(a, [[1], [0]], axis=1)),
        (lambda t: tc.take(t, [7, -9], axis=0, mode="wrap"),
         lambda a: np.take(a, [7, -9], axis=0, mode="wrap")),
        (lambda t: tc.take(t, [7, -9], axis=-1, mode="clip"),
         lambda a: np.take(a, [7, -9], axis=-1, mode="clip")),
        (lambda t: tc.take_along_axis(t, np.array([[2, 0, 0]] * 3), axis=1),
         lambda a: np.take_along_axis(a, np.array([[2, 0, 0]] * 3), axis=1)),
        (lambda t: tc.take_along_axis(t, np.array([[1], [0], [2]]), axis=-1),
         lambda a: np.take_along_axis(a, np.array([[1], [0], [2]]), axis=-1)),
        (lambda t: tc.take_along_axis(t, np.array([[0, 2, 1]]), axis=0),
         lambda a: np.take_along_axis(a, np.array([[0, 2, 1]]), axis=0)),
    ],
)
def test_take_matches_numpy(fn, np_fn) -> None:
    check_frontend_grad(fn, np_fn, [_rand((3, 3))])


def test_take_along_axis_of_argsort_sorts(compiled: CompiledExecutor) -> None:
    a = _rand((4, 6))
    x = tc.tensor(a, requires_grad=True)
    order = np.argsort(a, axis=1)
    y = tc.take_along_axis(x, order, axis=1)
    np.testing.assert_array_equal(y.numpy(), np.sort(a, axis=1))
    (g,) = tc.grad(tc.sum(y * np.arange(6.0)), [x], executor=compiled)
    expected = np.zeros_like(a)
    np.put_along_axis(expected, order, np.broadcast_to(np.arange(6.0), a.shape), axis=1)
    np.testing.assert_array_equal(g, expected)


# --------------------------------------------------------------------------- .at


@pytest.mark.parametrize(
    "key",
    [np.s_[[0, 0, 2]], np.s_[[0, 1, 1], [2, 2, 2]], np.s_[:, [1, 1]], np.s_[MASK[:3, :4]]],
    ids=str,
)
def test_at_add_with_repeated_indices(key) -> None:
    a = _rand((3, 4))
    shape = a[key].shape

    def numpy_add(x, v):
        out = x.copy()
        np.add.at(out, key, v)
        return out

    check_frontend_grad(lambda t, v: t.at[key].add(v), numpy_add, [a, _rand(shape, seed=1)])


def test_at_set_keeps_the_last_value_of_a_repeated_index() -> None:
    def numpy_set(x, v):
        out = x.copy()
        out[[1, 0, 1]] = v
        return out

    gx, gv = check_frontend_grad(lambda t, v: t.at[[1, 0, 1]].set(v), numpy_set,
                                 [_rand((3, 2)), _rand((3, 2), seed=1)])  # fmt: skip
    assert np.all(gv[0] == 0.0) and np.all(gx[[0, 1]] == 0.0)


def test_at_compiled(compiled: CompiledExecutor) -> None:
    x = tc.tensor(_rand((5, 2)), requires_grad=True)
    v = tc.tensor(_rand((3, 2), seed=1), requires_grad=True)
    y = x.at[[4, 0, 4]].add(v * 2.0)
    loss = tc.sum(tc.sin(y))
    fallbacks = compiled.stats.fallbacks
    got = tc.grad(loss, [x, v], executor=compiled)
    expected = tc.grad(loss, [x, v], executor=tc.ReferenceExecutor())
    assert compiled.stats.fallbacks == fallbacks
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12)


# --------------------------------------------------------------------------- composite


def test_labels_as_a_traced_argument(compiled: CompiledExecutor) -> None:
    """An integer tensor argument stays an input of the trace: new labels, same node."""

    @tc.function
    def loss(logits, labels):
        return -tc.sum(logits[np.arange(6), labels])

    z = tc.tensor(_rand((6, 4)), requires_grad=True)
    for labels in (np.array([0, 1, 2, 3, 3, 0]), np.array([3, 3, 3, -1, 0, 1])):
        compiles = compiled.stats.compiles
        out = loss(z, tc.tensor(labels))
        np.testing.assert_allclose(out.item(), -z.numpy()[np.arange(6), labels].sum())
        (g,) = tc.grad(out, [z], executor=compiled)
        expected = np.zeros((6, 4))
        expected[np.arange(6), labels] = -1.0
        np.testing.assert_array_equal(g, expected)
    assert len(loss.traces) == 1 and compiled.stats.compiles == compiles


def test_a_traced_mask_argument_is_refused() -> None:
    @tc.function
    def loss(x, mask):
        return tc.sum(x[mask])

    with pytest.raises(TypeError, match="boolean masks give data-dependent shapes"):
        loss(tc.tensor(_rand((3,)), requires_grad=True), tc.tensor(np.array([True, False, True])))


def test_traced_labels_follow_every_call_and_are_range_checked() -> None:
    """Integer labels passed to a ``tc.function`` stay inputs of the trace: a second call
    with other labels gathers other elements, and an out-of-range label in a later call
    is numpy's ``IndexError``, not a read outside the buffer."""
    table = np.arange(12.0).reshape(3, 4)
    constant = tc.tensor(table)  # a constant tensor indexed by traced labels

    @tc.function
    def picked(logits: tc.Tensor, labels: tc.Tensor) -> tc.Tensor:
        return tc.sum(logits[np.arange(3), labels] * constant[np.arange(3), labels])

    x = tc.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4), requires_grad=True)
    for labels in ([0, 3, 1], [2, 2, 0]):
        rows = np.arange(3), np.array(labels)
        loss = picked(x, tc.tensor(np.array(labels)))
        np.testing.assert_allclose(loss.item(), np.sum(x.numpy()[rows] * table[rows]))
        (g,) = tc.grad(loss, [x])
        expected = np.zeros((3, 4))
        expected[rows] = table[rows]
        np.testing.assert_allclose(g, expected)
    with pytest.raises(IndexError, match="out of bounds"):
        picked(x, tc.tensor(np.array([0, 4, 1])))
    # an ndarray indexed by a traced tensor would freeze the labels: a clear error
    frozen = tc.function(lambda logits, labels: tc.sum(logits[0] * table[np.arange(3), labels]))
    with pytest.raises(tc.TracedValueError):
        frozen(x, tc.tensor(np.array([0, 1, 2])))


def test_advanced_at_updates_inside_a_function_read_no_traced_values() -> None:
    """``x.at[int_array].set/add`` in a ``tc.function``: the update's shape comes from
    the key, not from reading the traced ``x`` (a ``TracedValueError`` before)."""
    w = np.array([1.0, 2.0, 3.0, 4.0])

    @tc.function
    def loss(x: tc.Tensor) -> tc.Tensor:
        y = x.at[np.array([0, 0, 2])].set(x[1] * 5.0)
        return tc.sum(y.at[np.array([3, 3])].add(x[0]) * w)

    x = tc.tensor(np.array([0.5, -1.0, 2.0, 1.5]), requires_grad=True)
    value = loss(x)
    np.testing.assert_allclose(value.item(), 1 * -5 + 2 * -1 + 3 * -5 + 4 * (1.5 + 1.0))
    (g,) = tc.grad(value, [x])
    np.testing.assert_allclose(g, [8.0, 2 + 5 * (1 + 3), 0.0, 4.0])

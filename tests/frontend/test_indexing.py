"""Basic indexing, ``.at`` updates, joining and splitting: values against numpy, gradients
against central differences (reference executor) and the compiled executor against the
reference, with no fallback."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from helpers import check_frontend_grad, random_array

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


@pytest.fixture(scope="module")
def compiled() -> CompiledExecutor:
    return CompiledExecutor(cache_dir=False)


def _rand(shape, dtype="float64", seed=0):
    shape = (shape,) if isinstance(shape, int) else shape
    return random_array(np.random.default_rng(seed), shape, dtype)


def check_compiled(
    compiled: CompiledExecutor, fn: Callable[..., tc.Tensor], arrays: Sequence[np.ndarray]
) -> None:
    """``fn``'s gradient on the compiled executor equals the reference's, no fallback."""
    tensors = [tc.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*tensors)
    w = _rand(out.shape, out.dtype.name, seed=3)
    loss = tc.sum(tc.real(tc.tanh(out) * w))
    fallbacks = compiled.stats.fallbacks
    got = tc.grad(loss, tensors, executor=compiled)
    expected = tc.grad(loss, tensors, executor=tc.ReferenceExecutor())
    assert compiled.stats.fallbacks == fallbacks, compiled.stats.errors
    for g, e in zip(got, expected, strict=True):
        assert g is not None and e is not None
        np.testing.assert_allclose(g, e, rtol=1e-5 if g.dtype.itemsize <= 8 else 1e-12,
                                   atol=1e-12)  # fmt: skip


# --------------------------------------------------------------------------- basic keys

KEYS = [
    np.s_[1],
    np.s_[-1],
    np.s_[1:],
    np.s_[:-1, 2],
    np.s_[::-1],
    np.s_[::-2, 1:4, ::2],
    np.s_[..., 0],
    np.s_[None, 2, ..., None],
    np.s_[1:3, None, -3:],
    np.s_[..., ::-3],
    np.s_[:],
    np.s_[...],
    np.s_[np.int64(2), 0, -1],
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_basic_indexing_matches_numpy(key) -> None:
    check_frontend_grad(lambda t: t[key], lambda a: a[key], [_rand((4, 5, 3))])


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_basic_indexing_in_other_dtypes(dtype: str) -> None:
    check_frontend_grad(lambda t: t[1:, ::-1], lambda a: a[1:, ::-1], [_rand((3, 4), dtype)])


@pytest.mark.parametrize("key", [np.s_[1:], np.s_[::-2, 1], np.s_[None, :, 2:4]], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex64"])
def test_basic_indexing_compiled(compiled: CompiledExecutor, key, dtype: str) -> None:
    check_compiled(compiled, lambda t: t[key], [_rand((4, 6), dtype)])


def test_a_key_that_keeps_everything_records_nothing() -> None:
    x = tc.tensor(_rand((2, 3)), requires_grad=True)
    assert x[:] is x and x[...] is x and x[:, ::1] is x


def test_empty_slices_have_zero_gradient(compiled: CompiledExecutor) -> None:
    """Empty values fold out of the backward program (``compiler.empty``): no fallback."""
    x = tc.tensor(_rand((4, 3)), requires_grad=True)
    y = x[3:1]
    assert y.shape == (0, 3)
    fallbacks = compiled.stats.fallbacks
    for executor in (compiled, tc.ReferenceExecutor()):
        (g,) = tc.grad(tc.sum(x * 2.0) + tc.sum(y), [x], executor=executor)
        np.testing.assert_array_equal(g, np.full((4, 3), 2.0))

    @tc.function
    def joined(x):
        return tc.sum(tc.concatenate([x[2:2], x, x[5:]]) ** 2) + tc.sum(tc.sin(x[:, :0]))

    (g,) = tc.grad(joined(x), [x], executor=compiled)
    np.testing.assert_allclose(g, 2 * x.numpy(), rtol=1e-14)
    assert compiled.stats.fallbacks == fallbacks


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (np.s_[4], "index 4 is out of bounds for axis 0 with size 4"),
        (np.s_[0, -6], "index -6 is out of bounds for axis 1 with size 5"),
        (np.s_[0, 0, 0], "too many indices for array: array is 2-dimensional, but 3 were"),
        (np.s_[..., 0, ...], "an index can only have a single ellipsis"),
    ],
)
def test_bad_keys_raise_index_error(key, message: str) -> None:
    with pytest.raises(IndexError, match=message):
        tc.tensor(_rand((4, 5)))[key]


def test_iteration_over_rows() -> None:
    rows = list(tc.tensor(_rand((3, 2)), requires_grad=True))
    assert len(rows) == 3 and all(r.shape == (2,) for r in rows)


def test_item_assignment_points_to_at() -> None:
    x = tc.tensor(_rand((3,)))
    with pytest.raises(TypeError, match=r"x\.at\[key\]\.set\(value\)"):
        x[0] = 1.0


# --------------------------------------------------------------------------- .at (basic keys)


def test_at_set_and_add_with_basic_keys() -> None:
    def numpy_set(a, v):
        out = a.copy()
        out[1, 1:3] = v
        return out

    def numpy_add(a, v):
        out = a.copy()
        out[:, ::-2] += v
        return out

    check_frontend_grad(lambda t, v: t.at[1, 1:3].set(v), numpy_set, [_rand((3, 4)), _rand(2)])
    check_frontend_grad(lambda t, v: t.at[:, ::-2].add(v), numpy_add,
                        [_rand((3, 4)), _rand((3, 2))])  # fmt: skip
    x = tc.tensor(np.zeros(3))
    np.testing.assert_array_equal(x.at[1].set(5).numpy(), [0.0, 5.0, 0.0])


def test_at_compiled(compiled: CompiledExecutor) -> None:
    check_compiled(compiled, lambda t, v: t.at[1:, 0].set(v * 2.0), [_rand((3, 4)), _rand(2)])


# --------------------------------------------------------------------------- joining

JOINS = [
    ("concatenate0", lambda *t: tc.concatenate(t), lambda *a: np.concatenate(a),
     [(2, 3), (4, 3)]),
    ("concatenate1", lambda *t: tc.concatenate(t, axis=-1), lambda *a: np.concatenate(a, -1),
     [(2, 3), (2, 1), (2, 2)]),
    ("concatenate_none", lambda *t: tc.concatenate(t, axis=None),
     lambda *a: np.concatenate(a, axis=None), [(2, 3), (4,)]),
    ("stack", lambda *t: tc.stack(t), lambda *a: np.stack(a), [(2, 3), (2, 3)]),
    ("stack2", lambda *t: tc.stack(t, axis=2), lambda *a: np.stack(a, axis=2),
     [(2, 3), (2, 3), (2, 3)]),
    ("hstack1d", lambda *t: tc.hstack(t), lambda *a: np.hstack(a), [(2,), (3,)]),
    ("hstack2d", lambda *t: tc.hstack(t), lambda *a: np.hstack(a), [(2, 1), (2, 3)]),
    ("vstack", lambda *t: tc.vstack(t), lambda *a: np.vstack(a), [(3,), (2, 3)]),
    ("dstack", lambda *t: tc.dstack(t), lambda *a: np.dstack(a), [(2, 3), (2, 3, 2)]),
    ("column_stack", lambda *t: tc.column_stack(t), lambda *a: np.column_stack(a),
     [(3,), (3, 2)]),
    ("append", lambda a, b: tc.append(a, b), lambda a, b: np.append(a, b), [(2, 2), (3,)]),
    ("append_axis", lambda a, b: tc.append(a, b, axis=0),
     lambda a, b: np.append(a, b, axis=0), [(2, 2), (1, 2)]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "fn", "np_fn", "shapes"), JOINS, ids=[j[0] for j in JOINS])
def test_joining_matches_numpy(name, fn, np_fn, shapes) -> None:
    check_frontend_grad(fn, np_fn, [_rand(s, seed=i) for i, s in enumerate(shapes)])


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_stack_compiled(compiled: CompiledExecutor, dtype: str) -> None:
    check_compiled(compiled, lambda a, b: tc.stack([a, b * 2.0], axis=1),
                   [_rand((3, 2), dtype), _rand((3, 2), dtype, 1)])  # fmt: skip


def test_joining_promotes_dtypes_and_takes_constants() -> None:
    x = tc.tensor(np.ones(2, np.float32), requires_grad=True)
    y = tc.concatenate([x, np.arange(3)])
    assert y.dtype == np.float64 and y.numpy().tolist() == [1, 1, 0, 1, 2]
    (g,) = tc.grad(tc.sum(y * y), [x], executor=tc.ReferenceExecutor())
    assert g.dtype == np.float32 and g.tolist() == [2.0, 2.0]
    assert tc.concatenate([np.ones(2, int), np.zeros(1, int)]).dtype == np.int64


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda: tc.concatenate([np.ones((2, 3)), np.ones((2, 2))]), "only dimension 0 may"),
        (lambda: tc.concatenate([np.ones(2), np.ones((2, 2))]), "same number of dimensions"),
        (lambda: tc.concatenate([np.ones(2)], axis=1), "axis 1 is out of bounds"),
        (lambda: tc.concatenate([]), "need at least one array"),
        (lambda: tc.stack([np.ones(2), np.ones(3)]), "must have the same shape"),
        (lambda: tc.split(np.ones(5), 2), "does not result in an equal division"),
        (lambda: tc.vsplit(np.ones(5), 5), "2 or more dimensions"),
    ],
)
def test_joining_errors(fn, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fn()


# --------------------------------------------------------------------------- splitting


@pytest.mark.parametrize(
    ("fn", "np_fn", "shape"),
    [
        (lambda t: tc.split(t, 2), lambda a: np.split(a, 2), (4, 3)),
        (lambda t: tc.split(t, [1, 3], axis=1), lambda a: np.split(a, [1, 3], axis=1), (2, 5)),
        (lambda t: tc.split(t, [-1, 9]), lambda a: np.split(a, [-1, 9]), (4,)),
        (lambda t: tc.array_split(t, 3), lambda a: np.array_split(a, 3), (7, 2)),
        (lambda t: tc.hsplit(t, 2), lambda a: np.hsplit(a, 2), (3, 4)),
        (lambda t: tc.vsplit(t, [1]), lambda a: np.vsplit(a, [1]), (3, 4)),
    ],
)
def test_splitting_matches_numpy(fn, np_fn, shape) -> None:
    a = _rand(shape)
    pieces, expected = fn(tc.tensor(a)), np_fn(a)
    assert [p.shape for p in pieces] == [e.shape for e in expected]
    for p, e in zip(pieces, expected, strict=True):
        np.testing.assert_array_equal(p.numpy(), e)
    weights = [np.arange(1.0, e.size + 1).reshape(e.shape) for e in expected]

    def joined(t):
        pieces = zip(fn(t), weights, strict=True)
        return tc.concatenate([tc.reshape(p * w, (-1,)) for p, w in pieces])

    def np_joined(x):
        return np.concatenate([(p * w).ravel() for p, w in zip(np_fn(x), weights, strict=True)])

    check_frontend_grad(joined, np_joined, [a])


# --------------------------------------------------------------------------- composite


def test_composite_slices_compile_to_one_fused_node(compiled: CompiledExecutor) -> None:
    @tc.function
    def loss(x, y):
        return tc.sum(tc.tanh(x[1:] * y[:-1]))

    a, b = _rand(50), _rand(50, seed=1)
    x, y = tc.tensor(a, requires_grad=True), tc.tensor(b, requires_grad=True)
    compiles, fallbacks = compiled.stats.compiles, compiled.stats.fallbacks
    gx, gy = tc.grad(loss(x, y), [x, y], executor=compiled)
    assert compiled.stats.compiles == compiles + 1
    assert compiled.stats.fallbacks == fallbacks
    d = 1 - np.tanh(a[1:] * b[:-1]) ** 2
    np.testing.assert_allclose(gx, np.concatenate([[0.0], d * b[:-1]]), rtol=1e-13)
    np.testing.assert_allclose(gy, np.concatenate([d * a[1:], [0.0]]), rtol=1e-13)

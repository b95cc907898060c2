"""Array manipulation, products and einsum: values against numpy, gradients against
central differences (reference executor), a sample on the compiled executor (no
fallback), and numpy's errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import check_frontend_grad, random_array

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


def _rand(shape, dtype="float64", seed=0):
    return random_array(np.random.default_rng(seed), shape, dtype)


CASES = {
    "flip": (lambda x: tc.flip(x, 1), lambda x: np.flip(x, 1), [(3, 4)]),
    "flip_all": (tc.flip, np.flip, [(3, 4)]),
    "roll": (lambda x: tc.roll(x, 2, 1), lambda x: np.roll(x, 2, 1), [(3, 4)]),
    "roll_flat": (lambda x: tc.roll(x, -3), lambda x: np.roll(x, -3), [(3, 4)]),
    "roll_axes": (lambda x: tc.roll(x, (1, -1), (0, 1)), lambda x: np.roll(x, (1, -1), (0, 1)),
                  [(3, 4)]),
    "diff": (lambda x: tc.diff(x, 2, 0), lambda x: np.diff(x, 2, 0), [(5, 3)]),
    "sort": (lambda x: tc.sort(x, 0), lambda x: np.sort(x, 0), [(5, 3)]),
    "sort_flat": (lambda x: tc.sort(x, None), lambda x: np.sort(x, None), [(2, 3)]),
    "cumsum": (lambda x: tc.cumsum(x, 1), lambda x: np.cumsum(x, 1), [(3, 4)]),
    "cumsum_flat": (tc.cumsum, np.cumsum, [(3, 4)]),
    "cumprod": (lambda x: tc.cumprod(x, 0), lambda x: np.cumprod(x, 0), [(4, 3)]),
    "pad": (lambda x: tc.pad(x, ((1, 2), (0, 1))), lambda x: np.pad(x, ((1, 2), (0, 1))),
            [(3, 4)]),
    "pad_values": (lambda x: tc.pad(x, 1, constant_values=((1, 2), (3, 4))),
                   lambda x: np.pad(x, 1, constant_values=((1, 2), (3, 4))), [(3, 4)]),
    "pad_edge": (lambda x: tc.pad(x, ((5, 2), (0, 7)), mode="edge"),
                 lambda x: np.pad(x, ((5, 2), (0, 7)), mode="edge"), [(3, 4)]),
    "pad_wrap": (lambda x: tc.pad(x, 4, mode="wrap"), lambda x: np.pad(x, 4, mode="wrap"),
                 [(3, 2)]),
    "pad_reflect": (lambda x: tc.pad(x, ((5, 2), (0, 7)), mode="reflect"),
                    lambda x: np.pad(x, ((5, 2), (0, 7)), mode="reflect"), [(3, 4)]),
    "pad_symmetric": (lambda x: tc.pad(x, (3, 1), mode="symmetric"),
                      lambda x: np.pad(x, (3, 1), mode="symmetric"), [(3, 4)]),
    "tril": (lambda x: tc.tril(x, -1), lambda x: np.tril(x, -1), [(4, 4)]),
    "triu": (lambda x: tc.triu(x, 1), lambda x: np.triu(x, 1), [(2, 4, 5)]),
    "diagonal": (lambda x: tc.diagonal(x, 1), lambda x: np.diagonal(x, 1), [(4, 5)]),
    "diagonal_axes": (lambda x: tc.diagonal(x, -1, 2, 0), lambda x: np.diagonal(x, -1, 2, 0),
                      [(3, 2, 4)]),
    "trace": (tc.trace, np.trace, [(4, 4)]),
    "diag_of_vector": (lambda x: tc.diag(x, -2), lambda x: np.diag(x, -2), [(3,)]),
    "diag_of_matrix": (lambda x: tc.diag(x, 1), lambda x: np.diag(x, 1), [(3, 4)]),
    "tile": (lambda x: tc.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), [(3, 2)]),
    "repeat": (lambda x: tc.repeat(x, 2, 1), lambda x: np.repeat(x, 2, 1), [(3, 2)]),
    "repeat_counts": (lambda x: tc.repeat(x, [1, 0, 3], 0),
                      lambda x: np.repeat(x, [1, 0, 3], 0), [(3, 2)]),
    "broadcast_arrays": (lambda x, y: tc.broadcast_arrays(x, y)[0] * tc.broadcast_arrays(x, y)[1],
                         lambda x, y: x * y, [(3, 1), (4,)]),
    "outer": (tc.outer, np.outer, [(3,), (2, 2)]),
    "inner": (tc.inner, np.inner, [(3, 4), (2, 4)]),
    "dot": (tc.dot, np.dot, [(3, 4), (2, 4, 5)]),
    "dot_vector": (tc.dot, np.dot, [(3, 4), (4,)]),
    "vdot": (tc.vdot, np.vdot, [(3, 4), (12,)]),
    "tensordot": (lambda a, b: tc.tensordot(a, b, ((0, 2), (1, 0))),
                  lambda a, b: np.tensordot(a, b, ((0, 2), (1, 0))), [(2, 3, 4), (4, 2)]),
    "tensordot_int": (lambda a, b: tc.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1),
                      [(2, 3), (3, 2)]),
    "kron": (tc.kron, np.kron, [(2, 3), (3, 2)]),
    "cross": (tc.cross, np.cross, [(4, 3), (4, 3)]),
    "cross_axis": (lambda a, b: tc.cross(a, b, axis=0), lambda a, b: np.cross(a, b, axis=0),
                   [(3, 2), (3, 2)]),
    "logcumsumexp": (tc.logcumsumexp, lambda a: np.logaddexp.accumulate(a, 0), [(4, 3)]),
    "logcumsumexp_reverse": (
        lambda a: tc.logcumsumexp(a, axis=-1, reverse=True),
        lambda a: np.flip(np.logaddexp.accumulate(np.flip(a, -1), -1), -1), [(2, 5)]),
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_matches_numpy(name: str) -> None:
    fn, np_fn, shapes = CASES[name]
    check_frontend_grad(fn, np_fn, [_rand(s, seed=i) for i, s in enumerate(shapes)])


def test_cumprod_gradient_is_exact_at_zeros() -> None:
    a = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    check_frontend_grad(tc.cumprod, np.cumprod, [a])


def test_complex_products() -> None:
    a, b = _rand((3, 2), "complex128"), _rand((2, 4), "complex128", seed=1)
    check_frontend_grad(tc.dot, np.dot, [a, b])
    check_frontend_grad(tc.vdot, np.vdot, [a, a * 2j])
    check_frontend_grad(lambda x: tc.cumsum(x, 0), lambda x: np.cumsum(x, 0), [a])


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk", [(2, 2, 3), (3, 2)]),
    ("i...,i...->...", [(3, 2, 2), (3, 1, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij->ji", [(2, 2, 3)]),
    ("ijk,kji", [(2, 3, 2), (2, 3, 2)]),
    ("i,i", [(4,), (4,)]),
    ("ab,bc,cd,de->ae", [(2, 3), (3, 2), (2, 2), (2, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]),
    ("i,i,i->", [(3,), (3,), (3,)]),
    ("abc->cab", [(2, 3, 4)]),
]


@pytest.mark.parametrize(("spec", "shapes"), EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_matches_numpy(spec: str, shapes) -> None:
    check_frontend_grad(lambda *t: tc.einsum(spec, *t), lambda *a: np.einsum(spec, *a),
                        [_rand(s, seed=i) for i, s in enumerate(shapes)])  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "shapes", "message"),
    [
        ("ij,jk", [(2, 3), (4, 5)], "has size 4 and 3"),
        ("ij->k", [(2, 3)], "'k' is in no operand"),
        ("ij,jk", [(2, 3)], "2 operand subscripts for 1 operands"),
        ("ijk", [(2, 3)], "does not fit an operand of shape"),
        ("i1", [(2, 3)], "invalid subscript"),
        ("...i->i", [(2, 3)], "must include '...'"),
    ],
)
def test_einsum_errors(spec: str, shapes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tc.einsum(spec, *[np.ones(s) for s in shapes])


@pytest.mark.parametrize(
    "optimize", [True, False, None, "greedy", "optimal", ["einsum_path", (1, 2), (0, 1)]]
)
def test_einsum_takes_numpys_optimize_values(optimize: Any) -> None:
    """numpy's values run (numpy's result; the order is einsum_path's greedy one)."""
    arrays = [_rand(s, seed=i) for i, s in enumerate([(2, 3), (3, 4), (4, 2)])]
    got = tc.einsum("ij,jk,kl->il", *arrays, optimize=optimize).numpy()
    np.testing.assert_allclose(got, np.einsum("ij,jk,kl->il", *arrays, optimize=optimize))


@pytest.mark.parametrize(
    ("optimize", "error", "message"),
    [
        ("fastest", TypeError, "optimize must be a bool, None, 'greedy', 'optimal'"),
        (1, TypeError, "optimize must be"),
        (np.True_, TypeError, "got np.True_|got True"),
        ([(0, 1)], TypeError, "optimize must be"),
        (["einsum_path", (0, 1)], ValueError, "optimize: the path leaves 2 operands"),
        (["einsum_path", (0, 3), (0, 1)], ValueError, r"optimize: \(0, 3\) is not a contraction"),
    ],
)
def test_einsum_refuses_what_numpy_refuses_for_optimize(
    optimize: Any, error: type[Exception], message: str
) -> None:
    arrays = [np.ones(s) for s in [(2, 3), (3, 4), (4, 2)]]
    with pytest.raises(error, match=message):
        tc.einsum("ij,jk,kl->il", *arrays, optimize=optimize)


@pytest.fixture(scope="module")
def compiled() -> CompiledExecutor:
    return CompiledExecutor(cache_dir=False)


#: Repeated letters with every extent equal: a diagonal whose labels come out in the
#: wrong order still fits the shape here, and is wrong only in its values (on distinct
#: extents, ``iij->ji`` on 2x2x3, it is a shape error).
EINSUM_EQUAL_EXTENTS = [
    ("iij->ji", [(3, 3, 3)]),
    ("iij->ij", [(3, 3, 3)]),
    ("iji->ij", [(3, 3, 3)]),
    ("iji->ji", [(3, 3, 3)]),
    ("jii->ij", [(3, 3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iii->i", [(3, 3, 3)]),
    ("bii->bi", [(3, 3, 3)]),
    ("bii->ib", [(3, 3, 3)]),
    ("ibi->bi", [(3, 3, 3)]),
    ("ijij->ji", [(3, 3, 3, 3)]),
    ("ijji->ij", [(3, 3, 3, 3)]),
    ("ijik->kij", [(3, 3, 3, 3)]),
    ("jiki->ijk", [(3, 3, 3, 3)]),
    ("iij->", [(3, 3, 3)]),
    ("iij,jk->ik", [(3, 3, 3), (3, 3)]),
    ("iij,jk->ki", [(3, 3, 3), (3, 3)]),
    ("jii,jk->ik", [(3, 3, 3), (3, 3)]),
    ("iij,kjj->ik", [(3, 3, 3), (3, 3, 3)]),
    ("ii,ij->j", [(3, 3), (3, 3)]),
    ("ij,jj->ij", [(3, 3), (3, 3)]),
    ("bii,bij->bj", [(3, 3, 3), (3, 3, 3)]),
]


@pytest.mark.parametrize("executor_name", ["reference", "compiled"])
@pytest.mark.parametrize(("spec", "shapes"), EINSUM_EQUAL_EXTENTS,
                         ids=[e[0] for e in EINSUM_EQUAL_EXTENTS])  # fmt: skip
def test_einsum_repeated_letters_on_equal_extents(
    spec: str, shapes, executor_name: str, compiled: CompiledExecutor
) -> None:
    executor = compiled if executor_name == "compiled" else tc.ReferenceExecutor()
    fallbacks = compiled.stats.fallbacks
    check_frontend_grad(lambda *t: tc.einsum(spec, *t), lambda *a: np.einsum(spec, *a),
                        [_rand(s, seed=i + 7) for i, s in enumerate(shapes)], seed=len(spec),
                        executor=executor)  # fmt: skip
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors


COMPILED = ["roll", "sort", "cumprod", "pad_reflect", "diagonal", "trace", "repeat_counts",
            "kron", "cross"]  # fmt: skip


@pytest.mark.parametrize("name", COMPILED)
def test_compiled_matches_reference(compiled: CompiledExecutor, name: str) -> None:
    fn, _, shapes = CASES[name]
    tensors = [tc.tensor(_rand(s, seed=i), requires_grad=True) for i, s in enumerate(shapes)]
    loss = tc.sum(tc.sin(fn(*tensors)))
    fallbacks = compiled.stats.fallbacks
    got = tc.grad(loss, tensors, executor=compiled)
    expected = tc.grad(loss, tensors, executor=tc.ReferenceExecutor())
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_einsum_batched_contraction_is_one_dot_general(compiled: CompiledExecutor) -> None:
    @tc.function
    def chain(a, b, c):
        return tc.sum(tc.einsum("bij,bjk->bik", tc.einsum("bij,bjk->bik", a, b), c))

    arrays = [_rand((3, 4, 4), seed=i) for i in range(3)]
    tensors = [tc.tensor(a, requires_grad=True) for a in arrays]
    out = chain(*tensors)
    np.testing.assert_allclose(out.item(), np.einsum("bij,bjk,bkl->", *arrays), rtol=1e-12)
    got = tc.grad(out, tensors, executor=compiled)
    ones = np.ones((3, 4, 4))
    a, b, c = arrays
    expected = [ones @ np.swapaxes(b @ c, 1, 2), np.swapaxes(a, 1, 2) @ ones @ np.swapaxes(c, 1, 2),
                np.swapaxes(a @ b, 1, 2) @ ones]  # fmt: skip
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_sort_inside_a_function_follows_the_data(compiled: CompiledExecutor) -> None:
    """The permutation is an op of the trace (Argsort), not a constant of it."""

    @tc.function
    def smallest_two(x):
        return tc.sum(tc.sort(x)[:2])

    for data in (np.array([3.0, 1.0, 2.0, 0.5]), np.array([0.1, 5.0, -1.0, 2.0])):
        x = tc.tensor(data, requires_grad=True)
        out = smallest_two(x)
        np.testing.assert_allclose(out.item(), np.sort(data)[:2].sum())
        (g,) = tc.grad(out, [x], executor=compiled)
        np.testing.assert_array_equal(g, np.isin(data, np.sort(data)[:2]).astype(float))
    assert len(smallest_two.traces) == 1

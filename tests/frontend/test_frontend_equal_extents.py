"""Frontend gradients at square and repeated extents.

With all-distinct extents (``2x3x4``) a gradient that confuses two axes has the wrong
shape and fails loudly; with ``3x3`` or ``2x2x2`` it has the right shape and wrong
values. Each case here is checked against central differences with a random (never
uniform) output weight on the reference executor; the broadcasts between operands,
the contractions and the fused programs (per-op, and ``tc.function`` composites whose
backward is one loop nest) on the session's compiled executor too. (Single reductions,
broadcasts and transposes meet the compiled executor in ``tests/ops``.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import check_frontend_grad, random_array

import tidu_compile as tc

EXECUTORS = ["reference", "compiled"]


@pytest.fixture(params=EXECUTORS)
def executor(request: pytest.FixtureRequest) -> tc.BackwardExecutor:
    if request.param == "compiled":
        return request.getfixturevalue("compiled")  # type: ignore[no-any-return]
    return tc.ReferenceExecutor()


def _rand(shape: tuple[int, ...], dtype: str = "float64", seed: int = 0) -> np.ndarray:
    return random_array(np.random.default_rng(seed), shape, dtype)


# --------------------------------------------------------------------------- reductions

SQUARE_AXES = [((3, 3), 0), ((3, 3), 1), ((3, 3), (0, 1)), ((2, 2, 2), 0), ((2, 2, 2), 1),
               ((2, 2, 2), 2), ((2, 2, 2), (0, 2)), ((2, 2, 2), (1, 2)), ((3, 3, 3), -1),
               ((3, 3, 3), (0, 1))]  # fmt: skip


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axis", SQUARE_AXES, ids=repr)
def test_sum_and_mean_over_one_of_equal_axes(
    shape: tuple[int, ...], axis: Any, keepdims: bool
) -> None:
    x = _rand(shape, seed=1)
    check_frontend_grad(lambda t: tc.sum(t, axis=axis, keepdims=keepdims),
                        lambda a: np.sum(a, axis=axis, keepdims=keepdims), [x])  # fmt: skip
    check_frontend_grad(lambda t: tc.mean(t, axis=axis, keepdims=keepdims),
                        lambda a: np.mean(a, axis=axis, keepdims=keepdims), [x])  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_sum_of_a_square_matrix_in_other_dtypes(dtype: str) -> None:
    x = _rand((3, 3), dtype, seed=2)
    for axis in (0, 1):
        check_frontend_grad(lambda t, a=axis: tc.sum(t, axis=a), lambda v, a=axis: np.sum(v, a),
                            [x])  # fmt: skip


# --------------------------------------------------------------------------- broadcasting

Fn = Callable[..., Any]
BROADCASTS: list[tuple[str, Fn, list[tuple[int, ...]]]] = [
    ("row", lambda p, q: p + q, [(3, 3), (3,)]),
    ("column", lambda p, q: p * q, [(3, 3), (3, 1)]),
    ("column_times_row", lambda p, q: p * q - q, [(3, 1), (1, 3)]),
    ("row_over_cube", lambda p, q: p / (q * q + 1.0), [(2, 2, 2), (2,)]),
    ("plane_over_cube", lambda p, q: p * q, [(2, 2, 2), (2, 1, 2)]),
    ("leading_over_cube", lambda p, q: p - q, [(2, 2, 2), (2, 2)]),
]


@pytest.mark.parametrize("fn, shapes", [b[1:] for b in BROADCASTS], ids=[b[0] for b in BROADCASTS])
def test_broadcasting_between_equal_extents(
    fn: Fn, shapes: list[tuple[int, ...]], executor: tc.BackwardExecutor
) -> None:
    arrays = [_rand(s, seed=3 + i) for i, s in enumerate(shapes)]
    check_frontend_grad(fn, fn, arrays, executor=executor)


BROADCAST_TO = [((3,), (3, 3)), ((3, 1), (3, 3)), ((1, 3), (3, 3)), ((2, 2), (2, 2, 2)),
                ((2, 1, 2), (2, 2, 2)), ((3,), (3, 3, 3))]  # fmt: skip


@pytest.mark.parametrize("source, target", BROADCAST_TO, ids=repr)
def test_broadcast_to_equal_extents(source: tuple[int, ...], target: tuple[int, ...]) -> None:
    check_frontend_grad(lambda q: tc.broadcast_to(q, target),
                        lambda q: np.broadcast_to(q, target), [_rand(source, seed=5)])  # fmt: skip


# --------------------------------------------------------------------------- transposes

CUBE_AXES = [None, (1, 2, 0), (2, 0, 1), (0, 2, 1), (1, 0, 2)]


@pytest.mark.parametrize("axes", CUBE_AXES, ids=repr)
def test_transpose_of_a_cube(axes: Any) -> None:
    check_frontend_grad(lambda t: tc.transpose(t, axes), lambda a: np.transpose(a, axes),
                        [_rand((2, 2, 2), seed=6)])  # fmt: skip


def test_transpose_of_a_square_matrix(executor: tc.BackwardExecutor) -> None:
    x = _rand((3, 3), seed=7)
    check_frontend_grad(lambda t: t.T * 2.0 + t, lambda a: a.T * 2.0 + a, [x], executor=executor)


# --------------------------------------------------------------------------- contractions

SQUARE_MATMULS = [((3, 3), (3, 3)), ((3,), (3, 3)), ((3, 3), (3,)), ((2, 2, 2), (2, 2, 2)),
                  ((2, 2), (2, 2, 2)), ((2, 2, 2), (2,))]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shapes", SQUARE_MATMULS, ids=repr)
def test_square_matmul(
    shapes: tuple[tuple[int, ...], ...], dtype: str, executor: tc.BackwardExecutor
) -> None:
    a, b = _rand(shapes[0], dtype, seed=8), _rand(shapes[1], dtype, seed=9)
    check_frontend_grad(tc.matmul, np.matmul, [a, b], executor=executor)


def test_products_of_a_square_matrix_with_its_transpose(executor: tc.BackwardExecutor) -> None:
    x = _rand((3, 3), seed=10)
    check_frontend_grad(lambda t: t @ t.T, lambda a: a @ a.T, [x], executor=executor)
    check_frontend_grad(lambda t: t.T @ t, lambda a: a.T @ a, [x], executor=executor)
    check_frontend_grad(lambda t, u: t.T @ u, lambda a, b: a.T @ b, [x, _rand((3, 3), seed=11)],
                        executor=executor)  # fmt: skip


# --------------------------------------------------------------------------- fused kernels


def _row_and_column(xp: Any, x: Any, row: Any, column: Any) -> Any:
    """Row and column broadcasts of equal size meeting in one loop nest."""
    return xp.tanh(x * row + column) * row


def _normalize_rows(xp: Any, x: Any) -> Any:
    shifted = x - xp.mean(x, axis=1, keepdims=True)
    return xp.exp(shifted * 0.5) / xp.sum(xp.exp(shifted * 0.5), axis=1, keepdims=True)


def _normalize_columns(xp: Any, x: Any) -> Any:
    return x * x / (xp.sum(x * x, axis=0, keepdims=True) + 1.0)


#: name, function of (``tc`` or ``np``, arrays...), argument shapes.
FUSED = [
    ("row_and_column", _row_and_column, [(3, 3), (3,), (3, 1)]),
    ("normalize_rows", _normalize_rows, [(3, 3)]),
    ("normalize_columns", _normalize_columns, [(3, 3)]),
]


@pytest.mark.parametrize("composite", [False, True], ids=["per_op", "composite"])
@pytest.mark.parametrize("fn, shapes", [f[1:] for f in FUSED], ids=[f[0] for f in FUSED])
def test_broadcasts_and_reductions_of_equal_extents_in_one_program(
    fn: Fn, shapes: list[tuple[int, ...]], composite: bool, executor: tc.BackwardExecutor
) -> None:
    arrays = [_rand(s, seed=12 + i) for i, s in enumerate(shapes)]
    on_tensors = functools.partial(fn, tc)
    check_frontend_grad(tc.function(on_tensors) if composite else on_tensors,
                        functools.partial(fn, np), arrays, executor=executor)  # fmt: skip

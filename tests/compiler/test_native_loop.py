"""Scans and while loops as one native loop (``compiler.native_loop``), and the
contractions of their bodies as calls of a strided product (``compiler.loop_contractions``).

Every case runs on a ``CompiledExecutor`` (its scan taken by a ``NativeScan``: checked)
and on the ``ReferenceExecutor``, and the two must agree: carries that swap, a carry
that is an ``xs`` row, integer and bool carries, several ``y``, reverse scans, and the
gradient (a reverse scan of the body's VJP, native too), while loops and fori loops with
tensor bounds (``NativeWhile``). A body with a step that needs Python between iterations
(a nested scan) runs one plan call per iteration, and agrees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor
from tidu_compile.compiler.loop_contractions import strided_product
from tidu_compile.compiler.native_loop import NativeScan, NativeWhile
from tidu_compile.ops.structural import DotGeneral

RNG = np.random.default_rng(3)

# --------------------------------------------------------- contractions in loops

#: (lhs shape, rhs shape, lhs contracting, rhs contracting, lhs batch, rhs batch)
CONTRACTIONS = [
    ((5,), (5, 3), (0,), (0,), (), ()),  # h @ W
    ((4, 5), (5,), (1,), (0,), (), ()),  # W @ h
    ((4, 5), (5, 3), (1,), (0,), (), ()),  # matmul
    ((4, 5), (3, 5), (1,), (1,), (), ()),  # A @ B.T
    ((5, 4), (3, 5), (0,), (1,), (), ()),  # A.T @ B.T
    ((4,), (3,), (), (), (), ()),  # outer
    ((2, 4, 5), (2, 5, 3), (2,), (1,), (0,), (0,)),  # batched matmul
    ((2, 3, 4), (3, 4, 6), (1, 2), (0, 1), (), ()),  # two contracted dimensions
    ((4, 0), (0, 3), (1,), (0,), (), ()),  # nothing to sum: zeros
]


@pytest.mark.parametrize("dims", CONTRACTIONS, ids=str)
def test_the_strided_product_is_the_contraction(dims: tuple) -> None:
    op = DotGeneral(*dims[2:], dims[0], dims[1])
    product = strided_product(op)
    assert product is not None
    lhs, rhs = RNG.standard_normal(op.lhs_shape).ravel(), RNG.standard_normal(op.rhs_shape).ravel()
    (lb, lm, lk), (rb, rn, rk) = product.lhs_strides, product.rhs_strides
    b, m, n, k = np.ix_(*(np.arange(e) for e in (product.batch, product.rows, product.columns,
                                                 product.depth)))  # fmt: skip
    routine = np.sum(lhs[b * lb + m * lm + k * lk] * rhs[b * rb + n * rn + k * rk], axis=3)
    (want,) = op.evaluate(lhs.reshape(op.lhs_shape), rhs.reshape(op.rhs_shape))
    np.testing.assert_allclose(routine.reshape(want.shape), want, rtol=1e-13, atol=1e-13)


def test_a_contraction_over_dimensions_apart_in_memory_has_no_routine() -> None:
    assert strided_product(DotGeneral((0, 2), (0, 1), (), (), (2, 3, 4), (2, 4))) is None


# ------------------------------------------------------------------- native scans


def _all_native(executor: CompiledExecutor) -> bool:
    """Whether every loop the executor ran went to a native runner (and one did)."""
    from tidu_compile.executors.native_loops import _RUNNERS

    runners = list(_RUNNERS.get(executor, {}).values())
    return bool(runners) and all(isinstance(r, NativeScan | NativeWhile) for r in runners)


def _both(run: Callable[[], list[Any]], natively: bool = True) -> None:
    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(compiled):
        got = run()
    with tc.use_executor(ReferenceExecutor()):
        want = run()
    assert compiled.stats.fallbacks == 0, compiled.stats.errors
    assert _all_native(compiled) == natively
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _values(*tensors: Any) -> list[Any]:
    return [t.detach().numpy() if isinstance(t, tc.Tensor) else t for t in tensors]


W = RNG.standard_normal((6, 6)) * 0.4
XS = RNG.standard_normal((7, 6))


@pytest.mark.parametrize("reverse", [False, True])
def test_an_rnn_and_its_gradient_run_as_native_loops(reverse: bool) -> None:
    def run() -> list[Any]:
        w, xs = tc.tensor(W, requires_grad=True), tc.tensor(XS, requires_grad=True)

        def step(h: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, tuple[tc.Tensor, tc.Tensor]]:
            h = tc.tanh(h @ w + x)
            return h, (tc.sum(h), h * 2.0)

        h, (ys, hs) = tc.scan(step, tc.zeros(6), xs, reverse=reverse)
        grads = tc.grad(tc.sum(ys) + tc.sum(hs * hs) + tc.sum(h), [w, xs])
        return [*_values(h, ys, hs), *grads]

    _both(run)


def test_carries_that_swap_and_a_carry_that_is_an_xs_row() -> None:
    def run() -> list[Any]:
        def step(carry: tuple[tc.Tensor, ...], x: tc.Tensor) -> tuple[Any, tc.Tensor]:
            a, b, last = carry
            return (b, a + x, x), a * b

        final, ys = tc.scan(step, (tc.ones(6), tc.zeros(6), tc.zeros(6)), tc.tensor(XS))
        return _values(*final, ys)

    _both(run)


def test_integer_and_bool_carries() -> None:
    def run() -> list[Any]:
        def step(carry: tuple[tc.Tensor, tc.Tensor], x: tc.Tensor) -> tuple[Any, tc.Tensor]:
            count, seen = carry
            big = x > 0.5
            return (count + tc.astype(big, "int64"), tc.maximum(seen, big)), tc.astype(big, "int32")

        (count, seen), ys = tc.scan(step, (tc.zeros(6, dtype="int64"),
                                           tc.zeros(6, dtype="bool")), tc.tensor(XS))  # fmt: skip
        return _values(count, seen, ys)

    _both(run)


def test_fori_loop_with_static_bounds_and_a_zero_length_scan() -> None:
    def run() -> list[Any]:
        y = tc.fori_loop(0, 40, lambda i, y: y * 0.9 + tc.astype(i, "float64"), tc.tensor(1.0))
        empty, ys = tc.scan(lambda c, x: (c + x, c), tc.ones(6), tc.tensor(XS[:0]))
        return _values(y, empty, ys)

    _both(run)


@pytest.mark.parametrize("start", [3.0, 500.0])  # several iterations, and none
def test_while_loops_and_fori_loops_with_tensor_bounds(start: float) -> None:
    def run() -> list[Any]:
        w = tc.tensor(W[0])
        limit = tc.tensor(100.0)

        def test(carry: tuple[tc.Tensor, tc.Tensor]) -> tc.Tensor:
            return tc.sum(carry[0]) < limit

        def step(carry: tuple[tc.Tensor, tc.Tensor]) -> tuple[tc.Tensor, tc.Tensor]:
            v, n = carry
            return v * 1.5 + tc.abs(w), n + 1

        v, n = tc.while_loop(test, step, (tc.full(6, start), tc.tensor(0)))
        upper = tc.tensor(np.int64(7))
        total = tc.fori_loop(tc.tensor(np.int64(2)), upper, lambda i, y: y * 0.5 + i,
                             tc.tensor(1.0))  # fmt: skip
        return _values(v, n, total)

    _both(run)


def test_a_body_holding_a_loop_calls_its_plan_per_iteration() -> None:
    def run() -> list[Any]:
        def step(c: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, None]:
            inner, _ = tc.scan(lambda h, _: (tc.sin(h) + x, None), c, length=3)
            return inner, None

        final, _ = tc.scan(step, tc.zeros(6), tc.tensor(XS))
        return _values(final)

    _both(run, natively=False)

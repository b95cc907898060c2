"""``vmap`` inside another trace: an enclosing ``vmap``, a ``scan`` body, ``@tc.function``.

Inside the inner function a tensor of the enclosing trace is a tracer holding ONE of its
examples' values. The inner trace must keep it an input (so the enclosing trace records
the dependence), never bake its data as a constant, even when that example's values
are all equal (the splat a closed-over plain tensor becomes). Each case runs the same
program on inputs whose first example is all-equal and on inputs whose first is not,
and compares every result with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import func

YS = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
FIRST_EQUAL = np.array([[2.0, 2.0, 2.0], [1.0, 5.0, 3.0]])
FIRST_VARIED = FIRST_EQUAL[::-1].copy()


@pytest.mark.parametrize("xs", [FIRST_EQUAL, FIRST_VARIED], ids=["first-equal", "first-varied"])
def test_a_nested_vmap_reads_each_outer_example(executor: tc.BackwardExecutor,
                                                xs: np.ndarray) -> None:  # fmt: skip
    inner_only = func.vmap(lambda x: func.vmap(lambda y: tc.sum(x * y))(tc.tensor(YS)))
    # ``x * 2`` and ``exp(x)`` touch only the outer tracer inside the inner trace
    mixed = func.vmap(lambda x: func.vmap(
        lambda y: tc.sum((x * 2) * y + tc.exp(x)))(tc.tensor(YS)))  # fmt: skip
    np.testing.assert_allclose(np.asarray(inner_only(tc.tensor(xs))), xs @ YS.T)
    expected = 2 * xs @ YS.T + np.exp(xs).sum(axis=1)[:, None]
    np.testing.assert_allclose(np.asarray(mixed(tc.tensor(xs))), expected)


@pytest.mark.parametrize("xs", [FIRST_EQUAL, FIRST_VARIED], ids=["first-equal", "first-varied"])
def test_vmap_of_vmap_grad_and_grad_of_nested_vmap(executor: tc.BackwardExecutor,
                                                   xs: np.ndarray) -> None:  # fmt: skip
    per_example = func.vmap(
        lambda x: func.vmap(func.grad(lambda y: tc.sum(tc.sin(x * y))))(tc.tensor(YS)))
    expected = np.cos(xs[:, None, :] * YS[None]) * xs[:, None, :]
    np.testing.assert_allclose(np.asarray(per_example(tc.tensor(xs))), expected)

    def loss(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(func.vmap(
            lambda row: func.vmap(lambda y: tc.sum(tc.sin(row * y)))(tc.tensor(YS)))(x))

    expected_grad = (np.cos(xs[:, None, :] * YS[None]) * YS[None]).sum(axis=1)
    np.testing.assert_allclose(np.asarray(func.grad(loss)(tc.tensor(xs))), expected_grad)


@pytest.mark.parametrize("init", [[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]], ids=["equal", "varied"])
def test_a_vmap_in_a_scan_body_reads_the_carry(executor: tc.BackwardExecutor,
                                               init: list[float]) -> None:  # fmt: skip
    def body(carry: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
        products = func.vmap(lambda y: tc.sum(carry * y))(tc.tensor(YS))
        return carry + x, tc.sum(products)

    _, outputs = tc.scan(body, tc.tensor(np.array(init)), tc.tensor(np.ones((3, 3))))
    carries = np.array(init) + np.arange(3)[:, None]
    np.testing.assert_allclose(np.asarray(outputs), (carries @ YS.T).sum(axis=1))


def test_a_vmap_in_a_function_reads_its_argument(executor: tc.BackwardExecutor) -> None:
    @tc.function
    def total(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(func.vmap(lambda y: tc.sum(x * y))(tc.tensor(YS)))

    for row in (FIRST_EQUAL[0], FIRST_EQUAL[1], np.full(3, 3.0)):
        assert float(np.asarray(total(tc.tensor(row)))) == pytest.approx((YS @ row).sum())

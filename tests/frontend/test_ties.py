"""Ties in the frontend's selections, on both executors (the ``executor`` fixture).

* every binary function of the op table that selects one of its operands (maximum,
  minimum, fmax, fmin, and any new one: found by probing ``TABLE_FUNCTIONS``), with
  tensors of one shape, broadcast ones and Python numbers: ``1/2`` to each tied operand;
* ``clip`` at its bounds (numbers and broadcast tensors): shared with the bound;
* ``sort``: the cotangent goes back through the stable permutation (tied elements keep
  their order, as ``jnp.sort``'s);
* a value picked by ``argmax``/``argmin`` (``take_along_axis``): the first tied element.

The reductions (``max``, ``amin``, ``keepdims``...) are in ``test_reductions.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import random_array
from helpers.ties import LEVELS, draw_tied, enough_ties, shared_pair_gradient

import tidu_compile as tc
from tidu_compile.frontend.elementwise import TABLE_FUNCTIONS


def _selects(function: Callable[..., Any]) -> bool:
    """Whether a binary function gives, element by element, one of its operands."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 32))
    try:
        z = function(tc.tensor(x), tc.tensor(y)).numpy()
    except (TypeError, ValueError):  # not binary, or not on reals
        return False
    return z.dtype == x.dtype and bool(np.all((z == x) | (z == y)))


SELECTIONS = sorted(name for name, function in TABLE_FUNCTIONS.items() if _selects(function))


def test_the_selections_are_found() -> None:
    assert {"maximum", "minimum", "fmax", "fmin"} <= set(SELECTIONS)
    assert not {"add", "hypot", "mod", "logaddexp", "arctan2"} & set(SELECTIONS)


def _pair_counts(function: Callable[..., Any]) -> Callable[[list[np.ndarray]], Any]:
    def counts(xs: list[np.ndarray]) -> tuple[np.ndarray, int]:
        z = function(tc.tensor(xs[0]), tc.tensor(xs[1])).numpy()
        return (xs[0] == z).astype(np.int64) + (xs[1] == z), 2

    return counts


#: Operand shapes: equal, broadcast both ways, against a 0-d tensor.
PAIR_SHAPES = [((3, 3), (3, 3)), ((3, 3), (3,)), ((1, 3), (3, 1)), ((2, 3), ())]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", SELECTIONS)
def test_tied_operands_share_the_gradient(
    name: str, dtype: str, executor: tc.BackwardExecutor
) -> None:
    function = TABLE_FUNCTIONS[name]
    rng = np.random.default_rng(len(name))
    tol = 1e-6 if dtype == "float32" else 1e-15
    for shapes in PAIR_SHAPES:
        x, y = draw_tied(rng, shapes, dtype, _pair_counts(function))
        tx, ty = tc.tensor(x, requires_grad=True), tc.tensor(y, requires_grad=True)
        out = function(tx, ty)
        w = random_array(rng, out.shape, dtype)
        grads = tc.grad(tc.sum(out * w), [tx, ty])
        wants = shared_pair_gradient(x, y, out.numpy(), w)
        for g, want, v in zip(grads, wants, (x, y), strict=True):
            assert g is not None and g.dtype == v.dtype and g.shape == v.shape, (name, shapes)
            np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=f"{name} {shapes}")
    x = np.array(LEVELS * 2, dtype).reshape(2, 4)  # every level, against a number of them
    for number in LEVELS[1:3]:
        tx = tc.tensor(x, requires_grad=True)
        out = function(tx, number)
        assert out.dtype == dtype
        w = random_array(rng, out.shape, dtype)
        (g,) = tc.grad(tc.sum(out * w), [tx])
        want, _ = shared_pair_gradient(x, np.asarray(number, dtype), out.numpy(), w)
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=f"{name} {number}")


def test_clip_shares_the_gradient_with_a_bound_it_meets(executor: tc.BackwardExecutor) -> None:
    x = np.array(LEVELS * 3).reshape(3, 4)
    rng = np.random.default_rng(1)
    w = random_array(rng, x.shape, "float64")
    low, high = -0.5, 0.5
    above = np.where(x > low, 1.0, 0.0) + np.where(x == low, 0.5, 0.0)  # maximum(x, low)
    below = np.where(x < high, 1.0, 0.0) + np.where(x == high, 0.5, 0.0)  # minimum(x, high)
    for bounds, share in (((low, high), above * below), ((low, None), above),
                          ((None, high), below)):  # fmt: skip
        t = tc.tensor(x, requires_grad=True)
        (g,) = tc.grad(tc.sum(tc.clip(t, *bounds) * w), [t])
        np.testing.assert_array_equal(g, w * share, err_msg=str(bounds))
    lows = np.array([-1.5, -0.5, 0.5, -0.5])  # tensor bounds, broadcast along the rows
    t, tl = tc.tensor(x, requires_grad=True), tc.tensor(lows, requires_grad=True)
    gx, gl = tc.grad(tc.sum(tc.clip(t, tl, 1.0) * w), [t, tl])
    at_low, at_high = x == lows, x == 1.0
    share_x = np.where(x > lows, 1.0, 0.0) + 0.5 * at_low - 0.5 * at_high
    np.testing.assert_array_equal(gx, w * share_x)
    np.testing.assert_array_equal(gl, np.sum(w * (np.where(x < lows, 1.0, 0.0) + 0.5 * at_low), 0))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_sort_sends_tied_cotangents_back_in_stable_order(
    axis: int | None, executor: tc.BackwardExecutor
) -> None:
    rng = np.random.default_rng(2)
    x = rng.choice(LEVELS, (3, 5))
    order = np.argsort(x, axis=axis, kind="stable")
    t = tc.tensor(x, requires_grad=True)
    out = tc.sort(t, axis)
    np.testing.assert_array_equal(out.numpy(), np.sort(x, axis, kind="stable"))
    w = random_array(rng, out.shape, "float64")
    (g,) = tc.grad(tc.sum(out * w), [t])
    want = np.zeros(x.size)
    if axis is None:
        want[order] = w
    else:
        np.put_along_axis(want.reshape(x.shape), order, w, axis)
    np.testing.assert_array_equal(g, want.reshape(x.shape))


@pytest.mark.parametrize("function", ["argmax", "argmin"])
def test_a_value_picked_by_arg_extremum_sends_its_gradient_to_the_first_tie(
    function: str, executor: tc.BackwardExecutor
) -> None:
    rng = np.random.default_rng(3)
    pick = getattr(np, function)
    for axis in (0, 1):

        def counts(xs: list[np.ndarray], axis: int = axis) -> tuple[np.ndarray, int]:
            named = np.take_along_axis(xs[0], pick(xs[0], axis, keepdims=True), axis)
            return np.sum(xs[0] == named, axis), xs[0].shape[axis]

        (x,) = draw_tied(rng, [(3, 4)], "float64", counts)
        assert enough_ties(*counts([x]))
        t = tc.tensor(x, requires_grad=True)
        index = getattr(tc, function)(t, axis, keepdims=True)
        np.testing.assert_array_equal(index.numpy(), pick(x, axis, keepdims=True))
        picked = tc.take_along_axis(t, index, axis)
        w = random_array(rng, picked.shape, "float64")
        (g,) = tc.grad(tc.sum(picked * w), [t])
        want = np.zeros_like(x)
        np.put_along_axis(want, pick(x, axis, keepdims=True), w, axis)
        np.testing.assert_array_equal(g, want, err_msg=f"axis {axis}")

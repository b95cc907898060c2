"""``func.value_and_grad`` of a ``@tc.function``: forward and backward as one program
(``tidu_compile.composite_grad``), giving what the general path gives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import composite_grad, func
from tidu_compile.executors.compiled import CompiledExecutor


@pytest.fixture
def executor(compiled_only: CompiledExecutor) -> CompiledExecutor:
    return compiled_only


@pytest.fixture
def fused_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls that the fused path answered."""
    runs: list[int] = []
    real = composite_grad.fused_value_and_grad

    def counting(*args: Any) -> Any:
        result = real(*args)
        if result is not None:
            runs.append(1)
        return result

    monkeypatch.setattr(func, "fused_value_and_grad", counting)
    return runs


def w1(x: tc.Tensor, y: tc.Tensor) -> tc.Tensor:
    return tc.sum(tc.tanh(x * y + tc.exp(-x)) * y)


def mlp(params: list[tuple[tc.Tensor, tc.Tensor]], x: tc.Tensor) -> tc.Tensor:
    (w1_, b1), (w2, b2) = params
    return tc.mean((tc.tanh(x @ w1_ + b1) @ w2 + b2) ** 2)


def magnitude(z: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
    return tc.sum(tc.real(z * tc.conj(z)) * 0.5 + tc.real(z * w))


def _check(f: Callable[..., tc.Tensor], args: list[Any], argnums: Any, rtol: float,
           fused_runs: list[int]) -> None:  # fmt: skip
    composite = func.value_and_grad(tc.function(f), argnums)
    composite(*args)  # traces, then runs one fused program: no forward program of its own
    assert fused_runs == [1]
    value, grads = composite(*args)  # the same fused program
    assert fused_runs == [1, 1]
    want_value, want_grads = func.value_and_grad(f, argnums)(*args)
    assert value.dtype == want_value.dtype and not value.requires_grad
    np.testing.assert_allclose(value.numpy(), want_value.numpy(), rtol=rtol)
    got_leaves, want_leaves = _leaves(grads), _leaves(want_grads)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=rtol)
    assert type(grads) is type(want_grads)


def _leaves(tree: Any) -> list[tc.Tensor]:
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_w1_in_one_program(executor: CompiledExecutor, fused_runs: list[int], dtype: type) -> None:
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(300).astype(dtype) for _ in range(2))
    _check(w1, [x, y], (0, 1), 1e-5 if dtype == np.float32 else 1e-12, fused_runs)
    executor.forbid_compile = True  # a new trace of the same structure: all cached
    again = func.value_and_grad(tc.function(w1), (0, 1))
    again(x, y)
    again(x, y)
    executor.forbid_compile = False
    assert fused_runs == [1, 1, 1, 1]


def test_nested_parameters_and_one_argnum(executor: CompiledExecutor,
                                          fused_runs: list[int]) -> None:  # fmt: skip
    rng = np.random.default_rng(1)
    params = [(rng.standard_normal((4, 5)), rng.standard_normal(5)),
              (rng.standard_normal((5, 2)), rng.standard_normal(2))]  # fmt: skip
    x = rng.standard_normal((6, 4))
    _check(mlp, [params, x], 0, 1e-12, fused_runs)


def test_complex_inputs_of_a_real_loss(executor: CompiledExecutor,
                                       fused_runs: list[int]) -> None:  # fmt: skip
    rng = np.random.default_rng(2)
    z, w = (rng.standard_normal(7) + 1j * rng.standard_normal(7) for _ in range(2))
    _check(magnitude, [z, w], (0, 1), 1e-12, fused_runs)


def test_the_general_path_keeps_what_the_fused_one_cannot_do(
    executor: CompiledExecutor, fused_runs: list[int]
) -> None:
    composite = tc.function(w1)
    x, y = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)
    for _ in range(2):
        func.value_and_grad(composite, (0, 1))(x, 2.0)  # a number among the variables
        func.grad(composite)(x, y)  # fine: fused from the first call
    assert len(fused_runs) == 2
    # Inside another transform the tape must see the call: forward over reverse.
    _, (hx, hy) = func.jvp(func.grad(composite, (0, 1)), (x, y), (np.ones(5), np.zeros(5)))
    _, (want_x, want_y) = func.jvp(func.grad(w1, (0, 1)), (x, y), (np.ones(5), np.zeros(5)))
    np.testing.assert_allclose(hx.numpy(), want_x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(hy.numpy(), want_y.numpy(), rtol=1e-12)
    assert len(fused_runs) == 2

    @tc.function
    def picked(v: tc.Tensor, labels: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.exp(v)[labels])

    # Integer index data: checked with numpy before the fused program runs (the first
    # call too; an index out of range raises before any native code reads it).
    for labels in (np.array([0, 4, 4]), np.array([1, 2, 3]), np.array([1, 2, 5])):
        if labels.max() < 5:
            np.testing.assert_allclose(func.grad(picked)(x, labels).numpy(),
                                       np.bincount(labels, minlength=5) * np.exp(x),
                                       rtol=1e-12)  # fmt: skip
        else:
            with pytest.raises(IndexError, match="index 5 is out of bounds"):
                func.grad(picked)(x, labels)
    assert len(fused_runs) == 4

    @tc.function
    def vector(v: tc.Tensor) -> tc.Tensor:
        return tc.sin(v)

    for _ in range(2):
        with pytest.raises(ValueError, match="must return a real scalar"):
            func.value_and_grad(vector)(x)

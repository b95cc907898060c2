"""What ``tidu_compile.func`` returns carries tape history only towards tracked tensors.

At the outermost level (arguments that need no gradient) every transform returns plain
values, as ``jax.grad`` and ``torch.func.grad`` do, so a JAX-style loop
``w = w - lr * func.grad(f)(w)`` records nothing across steps; under an outer transform
(or for arguments that require gradients) the results stay differentiable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
import tidu_compile.numpy as tnp
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor

X = np.array([0.3, 1.2, -0.7])
V = np.array([1.0, -0.5, 2.0])


def f(x: tc.Tensor) -> tc.Tensor:
    return tc.sum(tc.sin(x) * x * x)


def vector(x: tc.Tensor) -> tc.Tensor:
    return tc.stack([x[0] * x[1], tc.sin(x[2])])


def _tensors(tree: Any) -> list[tc.Tensor]:
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in _tensors(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in _tensors(item)]
    assert isinstance(tree, tc.Tensor), type(tree)
    return [tree]


def _vjp_both(x: Any) -> Any:
    out, vjp_fn = func.vjp(vector, x)
    return out, vjp_fn(np.array([1.0, -2.0]))


TRANSFORMS: dict[str, Callable[[Any], Any]] = {
    "grad": func.grad(f),
    "grad-tree": lambda x: func.grad(lambda p: f(p["w"][0]))({"w": [x]}),
    "value_and_grad": func.value_and_grad(f),
    "vjp": _vjp_both,
    "jvp": lambda x: func.jvp(f, (x,), (V,)),
    "jvp-grad": lambda x: func.jvp(func.grad(f), (x,), (V,)),
    "grad-grad": func.grad(lambda x: tc.sum(func.grad(f)(x))),
    "jacrev": func.jacrev(vector),
    "jacfwd": func.jacfwd(vector),
    "hessian": func.hessian(f),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("wrap", [np.array, tc.tensor], ids=["array", "tensor"])
def test_outermost_results_carry_no_history(
    executor: tc.BackwardExecutor, name: str, wrap: Callable[[Any], Any]
) -> None:
    results = _tensors(TRANSFORMS[name](wrap(X)))
    assert results
    for result in results:
        assert not result.requires_grad and result._trace is None, name


def test_results_stay_differentiable_under_an_outer_transform(
    executor: tc.BackwardExecutor,
) -> None:
    seen: list[bool] = []

    def inner_sum(x: tc.Tensor) -> tc.Tensor:
        g = func.grad(f)(x)
        seen.append(g.requires_grad)
        return tc.sum(g)

    second = func.grad(inner_sum)(X)  # the sum over rows of the Hessian (it is diagonal)
    np.testing.assert_allclose(second.numpy(), (2 - X * X) * np.sin(X) + 4 * X * np.cos(X),
                               rtol=1e-12)  # fmt: skip
    assert seen == [True] and not second.requires_grad


def test_an_inner_result_keeps_the_outer_variable_it_closes_over(
    executor: tc.BackwardExecutor,
) -> None:
    """The inner grad's argument is an array (a variable of its own), but its result,
    2 x y, depends on the outer x through the closure: d/dx sum(2 x y) = 2 y."""
    outer = func.grad(lambda x: tc.sum(func.grad(lambda y: tc.sum(x * y * y))(V)))
    np.testing.assert_allclose(outer(X).numpy(), 2 * V)
    out, tangent = func.jvp(lambda x: func.vjp(lambda y: x * y, V)[1](np.ones(3))[0],
                            (X,), (np.ones(3),))  # fmt: skip
    np.testing.assert_allclose(out.numpy(), X)
    np.testing.assert_allclose(tangent.numpy(), np.ones(3))


def test_arguments_that_require_grad_keep_their_history(executor: tc.BackwardExecutor) -> None:
    """As ``torch.func`` with autograd: the tape differentiates through the result."""
    x = tc.tensor(X, requires_grad=True)
    g = func.grad(f)(x)
    assert g.requires_grad
    (second,) = tc.grad(tc.sum(g), [x])
    np.testing.assert_allclose(second, (2 - X * X) * np.sin(X) + 4 * X * np.cos(X), rtol=1e-12)


# ------------------------------------------------------------------ the training loop


def _median_ms(times: list[float]) -> float:
    return 1e3 * float(np.median(times))


def _loss(w: tc.Tensor) -> tc.Tensor:
    return tnp.sum(tnp.tanh(w) ** 2)


@pytest.mark.parametrize(
    ("executor_kind", "step"),
    [
        ("reference", "grad"),
        ("compiled", "grad"),
        ("compiled", "function"),
        ("compiled", "value_and_grad"),
    ],
)
def test_a_jax_style_loop_does_not_slow_down(executor_kind: str, step: str) -> None:
    """500 steps of ``w = w - lr * g``: no step records on the tape (checked at every
    step, so the old code fails at step 0) and the late steps cost what the early ones
    do (the old code: 1.8 ms a step at step 1, 0.71 s at step 200, on the reference)."""
    chosen = (tc.ReferenceExecutor() if executor_kind == "reference"
              else CompiledExecutor(cache_dir=False, background=False))  # fmt: skip
    loss = tc.function(_loss) if step == "function" else _loss
    transform = func.value_and_grad(loss) if step == "value_and_grad" else func.grad(loss)
    w: Any = np.linspace(-1.0, 1.0, 1000)
    times = []
    with tc.use_executor(chosen):
        for _ in range(500):
            start = time.perf_counter()
            result = transform(w)
            g = result[1] if step == "value_and_grad" else result
            w = w - 0.1 * g
            times.append(time.perf_counter() - start)
            assert not g.requires_grad and g._trace is None
            assert not w.requires_grad and w._trace is None
    early, late = _median_ms(times[10:60]), _median_ms(times[400:500])
    assert late < 3 * early + 0.05, f"step time grew from {early:.3f} ms to {late:.3f} ms"
    expected = np.linspace(-1.0, 1.0, 1000)
    for _ in range(500):  # the same descent in numpy
        t = np.tanh(expected)
        expected = expected - 0.1 * 2 * t * (1 - t * t)
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-10, atol=1e-12)

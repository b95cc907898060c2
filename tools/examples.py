"""Built-in example programs for ``make demo``, ``tidu-compile dump --example`` and benchmarks.

Each example is a function of ``Tensor``s returning a scalar ``Tensor``, with a recipe
for random inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import tidu_compile as tc


@dataclass(frozen=True)
class Example:
    name: str
    description: str
    input_names: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    function: Callable[..., tc.Tensor]

    def make_inputs(self, rng: np.random.Generator, dtype: type) -> list[np.ndarray]:
        return [rng.normal(size=shape).astype(dtype) for shape in self.input_shapes]


def elementwise_chain(x: tc.Tensor, y: tc.Tensor) -> tc.Tensor:
    """W1: ``sum(tanh(x*y + exp(-x)) * y)``."""
    return tc.sum(tc.tanh(x * y + tc.exp(-x)) * y)


def mlp_loss(
    x: tc.Tensor, w1: tc.Tensor, b1: tc.Tensor, w2: tc.Tensor, b2: tc.Tensor, y: tc.Tensor
) -> tc.Tensor:
    """W3: ``sum((tanh(X@W1 + b1) @ W2 + b2 - Y)**2)``."""
    hidden = tc.tanh(x @ w1 + b1)
    return tc.sum((hidden @ w2 + b2 - y) ** 2)


def broadcast_exp(a: tc.Tensor, v: tc.Tensor) -> tc.Tensor:
    """W4: ``sum(exp(A - v[None, :])**2)``."""
    return tc.sum(tc.exp(a - v) ** 2)


def classifier(params: tc.Tensor, x: tc.Tensor) -> tc.Tensor:
    """Softmax regression on integer labels, its parameters one vector:
    ``W = params[:D*C].reshape(D, C)``, ``b = params[D*C:]``,
    ``-sum(log_softmax(X@W + b)[arange(n), labels])``."""
    n, d = x.shape
    classes = params.shape[0] // (d + 1)
    w = tc.reshape(params[: d * classes], (d, classes))
    b = params[d * classes :]
    z = x @ w + b
    log_p = z - tc.log(tc.sum(tc.exp(z), axis=1, keepdims=True))
    labels = np.arange(n) % classes
    return -tc.sum(log_p[np.arange(n), labels])


EXAMPLES: dict[str, Example] = {
    example.name: example
    for example in (
        Example("chain", elementwise_chain.__doc__ or "", ("x", "y"), ((1000,), (1000,)),
                elementwise_chain),
        Example("mlp", mlp_loss.__doc__ or "", ("X", "W1", "b1", "W2", "b2", "Y"),
                ((32, 16), (16, 16), (16,), (16, 4), (4,), (32, 4)), mlp_loss),
        Example("broadcast", broadcast_exp.__doc__ or "", ("A", "v"), ((64, 64), (64,)),
                broadcast_exp),
        Example("classifier", classifier.__doc__ or "", ("params", "X"), ((36,), (32, 8)),
                classifier),
    )
}  # fmt: skip

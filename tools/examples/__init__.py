"""Built-in example programs for ``make demo``, ``tidu-compile demo --example NAME``,
``tidu-compile dump --example NAME`` and the benchmarks.

Each example is a function of ``Tensor``s returning a scalar ``Tensor``, with a recipe
for random inputs: the workloads here (``chain``, ``mlp``, ``broadcast``, ``classifier``), and
programs written as autograd users write them, with ``import tidu_compile.numpy as np``
(one module each: ``logistic_regression``, ``mlp_classifier``, ``black_box_svi``,
``cnn_classifier``),
which the demo also trains for a few steps of gradient descent, and the two loops written
with ``tc.scan`` (``neural_ode``: RK4 over 50 steps; ``gru_language_model``: a GRU over
integer token ids), each one tape node whatever its trip count.
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
    #: The standard deviation of the random inputs.
    scale: float = 1.0
    #: Gradient descent in the demo: this many steps of this size (0: none).
    steps: int = 0
    step_size: float = 0.0

    def make_inputs(self, rng: np.random.Generator, dtype: type) -> list[np.ndarray]:
        return [(self.scale * rng.normal(size=shape)).astype(dtype) for shape in self.input_shapes]


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


def _autograd_style() -> tuple[Example, ...]:
    """The programs written as autograd users write them (imported here: building their
    toy data sets takes a few milliseconds)."""
    from tidu_compile.tools.examples import (
        black_box_svi,
        cnn_classifier,
        logistic_regression,
        mlp_classifier,
    )

    def mlp_objective(*weights: tc.Tensor) -> tc.Tensor:
        """MLP 2-8-3 classifier: mean log_softmax cross-entropy of integer labels + L2."""
        return mlp_classifier.objective(list(zip(weights[::2], weights[1::2], strict=True)))

    def svi_objective(params: tc.Tensor) -> tc.Tensor:
        """Negative evidence lower bound (50 samples) of a diagonal Gaussian fitted to a
        Bayesian logistic regression posterior (params: mean, then log std)."""
        return black_box_svi.objective(params, 0)

    sizes = mlp_classifier.layer_sizes
    pairs = zip(sizes[:-1], sizes[1:], strict=False)
    mlp_shapes = tuple(shape for m, n in pairs for shape in ((m, n), (n,)))
    return (
        Example("logistic_regression", "logistic regression: negative log-likelihood "
                "(autograd's logistic_regression.py)", ("weights",), ((3,),),
                logistic_regression.training_loss, steps=100, step_size=0.1),
        Example("mlp_classifier", mlp_objective.__doc__ or "", ("W1", "b1", "W2", "b2"),
                mlp_shapes, mlp_objective, scale=0.3, steps=100, step_size=0.5),
        Example("black_box_svi", svi_objective.__doc__ or "", ("params",),
                ((2 * black_box_svi.D,),), svi_objective, scale=0.5, steps=100,
                step_size=0.05),
        Example("cnn_classifier", "CNN: 3x3 conv (sliding_window_view + einsum), tanh, "
                "2x2 mean pool, dense, cross-entropy of 10 classes on 28x28 images",
                ("filters", "filter_bias", "weights", "bias"), cnn_classifier.param_shapes,
                cnn_classifier.objective, scale=0.1, steps=20, step_size=0.5),
    )  # fmt: skip


def _loops() -> tuple[Example, ...]:
    """The programs whose time loop is one ``tc.scan`` (run natively when compiled)."""
    from tidu_compile.tools.examples import gru_language_model as gru
    from tidu_compile.tools.examples import neural_ode as ode

    def ode_loss(w1: tc.Tensor, b1: tc.Tensor, w2: tc.Tensor, y0: tc.Tensor) -> tc.Tensor:
        """Neural ODE: RK4, 50 steps of tanh(y @ w1 + b1) @ w2 (one tc.scan), squared
        distance of the final state to a target."""
        return ode.loss({"w1": w1, "b1": b1, "w2": w2}, y0)

    sequence = gru.tokens(np.random.default_rng(0), 33)

    def gru_loss(*weights: tc.Tensor) -> tc.Tensor:
        """GRU language model: 32 steps over integer token ids (one tc.scan, the
        embedding gathered in the body), mean next-token negative log-likelihood."""
        return gru.loss(dict(zip(gru.PARAMETERS, weights, strict=True)), sequence)

    rng = np.random.default_rng(0)
    ode_shapes = {k: v.shape for k, v in ode.init_params(rng).items()}
    gru_shapes = {k: v.shape for k, v in gru.init_params(rng).items()}
    return (
        Example("neural_ode", ode_loss.__doc__ or "", (*ode.PARAMETERS, "y0"),
                (*ode_shapes.values(), (ode.STATE,)), ode_loss, scale=0.5),
        Example("gru_language_model", gru_loss.__doc__ or "", gru.PARAMETERS,
                tuple(gru_shapes.values()), gru_loss, scale=0.3),
    )  # fmt: skip


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
        *_autograd_style(),
        *_loops(),
    )
}  # fmt: skip

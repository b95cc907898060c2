"""Machine-learning functions that numpy lacks: ``sigmoid``, ``relu``, ``softplus``,
``gelu``, the error function ``erf`` (real values only), and ``stop_gradient``.

============  ==================================================================
function      definition
============  ==================================================================
sigmoid       the primitive ``Sigmoid``: ``1 / (1 + exp(-x))``, stable both ways
relu          the primitive ``Relu``: ``max(x, 0)``, ``relu'(0) = 0``
erf           the primitive ``Erf``
softplus      ``log(1 + exp(x)) = logaddexp(x, 0)``: stable, ``softplus' = sigmoid``
gelu          ``x (1 + erf(x / sqrt 2)) / 2``; with ``approximate="tanh"``,
              ``x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2`` (JAX's formulas)
stop_gradient the primitive ``StopGradient``: ``x``, through which no gradient flows
============  ==================================================================
"""

from __future__ import annotations

import math
from typing import Any

from tidu_compile import ops
from tidu_compile.frontend.elementwise import binary, unary
from tidu_compile.frontend.promotion import unary_input
from tidu_compile.frontend.tensor import Tensor, apply1


def _real_input(name: str, x: Any) -> Tensor:
    x = unary_input(x)
    if x.dtype.kind == "c":
        raise TypeError(f"{name}: complex values are not supported")
    return x


def sigmoid(x: Any) -> Tensor:
    """The logistic function ``1 / (1 + exp(-x))``; ``sigmoid' = sigmoid (1 - sigmoid)``."""
    return unary(ops.Sigmoid, _real_input("sigmoid", x))


def relu(x: Any) -> Tensor:
    """``max(x, 0)``; the gradient is 1 where ``x > 0``, else 0 (also at 0)."""
    return unary(ops.Relu, _real_input("relu", x))


def erf(x: Any) -> Tensor:
    """The error function; ``erf'(x) = 2/sqrt(pi) exp(-x^2)``."""
    return unary(ops.Erf, _real_input("erf", x))


def softplus(x: Any) -> Tensor:
    """``log(1 + exp(x))`` without overflow (``logaddexp(x, 0)``)."""
    return binary(ops.Logaddexp, _real_input("softplus", x), 0.0)


def gelu(x: Any, approximate: str | bool = "none") -> Tensor:
    """The Gaussian error linear unit ``x Phi(x)``: exact (``approximate="none"`` or
    False, with ``erf``) or the tanh approximation (``"tanh"`` or True)."""
    x = _real_input("gelu", x)
    if approximate in ("tanh", True):
        inner = (x + x**3 * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * ((apply1(ops.Tanh(), inner) + 1.0) * 0.5)
    if approximate not in ("none", False):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return x * (erf(x / math.sqrt(2.0)) + 1.0) * 0.5


def stop_gradient(x: Any) -> Tensor:
    """``x`` as a constant for differentiation (JAX's ``stop_gradient``): the same
    values, no gradient through it (also inside ``@tc.function``)."""
    x = unary_input(x)
    return apply1(ops.StopGradient(), x)


__all__ = ["erf", "gelu", "relu", "sigmoid", "softplus", "stop_gradient"]

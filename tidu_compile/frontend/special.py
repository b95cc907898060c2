"""``scipy.special``'s functions (real values), exported from ``tidu_compile`` and, under
scipy's names (with ``logsumexp``), as ``tidu_compile.scipy.special``.

==========  ==============================================================================
function    definition
==========  ==============================================================================
gammaln     the primitive ``Gammaln``: ``log |Gamma(x)|``, ``gammaln' = digamma``
digamma     the primitive ``Digamma`` (``psi``), ``digamma' = polygamma(1, .)``
polygamma   ``polygamma(n, x)``, ``n`` a non-negative integer (a constant): ``Digamma``
            (n = 0), ``Trigamma`` (n = 1); from n = 2 the formula ``(-1)^(n+1) n!
            (sum_{k<K} (x + k)^-(n+1) + zeta_asymptotic(n + 1, x + K))``, ``K = 12``
            (Euler-Maclaurin; relative error below 1e-13 for ``x > 0``)
erfc        the primitive ``Erfc``: ``1 - erf(x)``, accurate where it is small
erfinv      the primitive ``Erfinv``: ``erf(erfinv(x)) = x`` on (-1, 1)
expit       ``Sigmoid``: ``1 / (1 + exp(-x))``
logit       ``log(p / (1 - p)) = log(p) - log1p(-p)``
xlogy       ``x log(y)``, 0 where ``x == 0`` (also for ``y == 0``); gradients
            ``log(y)`` and ``x / y``, 0 in ``x`` where ``x == 0`` (as JAX's)
xlog1py     ``x log1p(y)``, 0 where ``x == 0``
betaln      ``gammaln(a) + gammaln(b) - gammaln(a + b)``
==========  ==============================================================================
"""

from __future__ import annotations

import math
import operator
from typing import Any

from tidu_compile import ops
from tidu_compile.frontend.elementwise import unary, where
from tidu_compile.frontend.promotion import coerce, unary_input
from tidu_compile.frontend.tensor import Tensor

__all__ = [
    "betaln", "digamma", "erfc", "erfinv", "expit", "gammaln", "logit", "polygamma",
    "xlog1py", "xlogy",
]  # fmt: skip


def _real_input(name: str, x: Any) -> Tensor:
    x = unary_input(x)
    if x.dtype.kind == "c":
        raise TypeError(f"{name}: complex values are not supported")
    return x


def gammaln(x: Any) -> Tensor:
    """``log |Gamma(x)|``; its derivative is ``digamma``."""
    return unary(ops.Gammaln, _real_input("gammaln", x))


def digamma(x: Any) -> Tensor:
    """``Gamma'(x) / Gamma(x)``; its derivative is ``polygamma(1, x)``."""
    return unary(ops.Digamma, _real_input("digamma", x))


#: Terms summed exactly before ``polygamma``'s asymptotic series (n >= 2).
POLYGAMMA_SHIFT = 12
#: Bernoulli numbers B_2..B_16, the asymptotic series' coefficients.
BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def polygamma(n: Any, x: Any) -> Tensor:
    """The ``n``-th derivative of ``digamma``; ``n`` a non-negative integer constant."""
    try:
        order = operator.index(n.item() if isinstance(n, Tensor) else n)
    except TypeError:
        raise TypeError(f"polygamma: n must be a non-negative integer, got {n!r}") from None
    if order < 0:
        raise ValueError(f"polygamma: n must be non-negative, got {order}")
    x = _real_input("polygamma", x)
    if order == 0:
        return digamma(x)
    if order == 1:
        return unary(ops.Trigamma, x)
    s = order + 1  # polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x)
    partial = sum((1.0 / (x + float(k))) ** s for k in range(POLYGAMMA_SHIFT))
    z = x + float(POLYGAMMA_SHIFT)
    # zeta(s, z) ~ z^(1-s)/(s-1) + z^-s/2 + sum_k B_2k / (2k)! (s)_(2k-1) z^-(s+2k-1)
    tail = z ** (1 - s) / (s - 1) + 0.5 * z ** (-s)
    rising = 1.0
    for k, bernoulli in enumerate(BERNOULLI, start=1):
        rising *= (s + 2 * k - 3) * (s + 2 * k - 2) if k > 1 else s
        tail = tail + bernoulli / math.factorial(2 * k) * rising * z ** (-(s + 2 * k - 1))
    return (-1.0) ** (order + 1) * math.factorial(order) * (partial + tail)


def erfc(x: Any) -> Tensor:
    """``1 - erf(x)``, accurate where it is small; ``erfc' = -2/sqrt(pi) exp(-x^2)``."""
    return unary(ops.Erfc, _real_input("erfc", x))


def erfinv(x: Any) -> Tensor:
    """The inverse error function on (-1, 1) (+-inf at +-1, NaN beyond)."""
    return unary(ops.Erfinv, _real_input("erfinv", x))


def expit(x: Any) -> Tensor:
    """The logistic function ``1 / (1 + exp(-x))`` (``tidu_compile.sigmoid``)."""
    return unary(ops.Sigmoid, _real_input("expit", x))


def logit(p: Any) -> Tensor:
    """``log(p / (1 - p))``, the inverse of ``expit``."""
    p = _real_input("logit", p)
    return unary(ops.Log, p) - unary(ops.Log1p, -p)


def xlogy(x: Any, y: Any) -> Tensor:
    """``x * log(y)``, 0 where ``x == 0`` (``y`` replaced by 1 there, so neither the
    value nor the gradients see ``log(0)``)."""
    x, y = coerce(x, y)
    zero = x == 0.0
    return where(zero, 0.0, x * unary(ops.Log, where(zero, 1.0, y)))


def xlog1py(x: Any, y: Any) -> Tensor:
    """``x * log1p(y)``, 0 where ``x == 0``."""
    x, y = coerce(x, y)
    zero = x == 0.0
    return where(zero, 0.0, x * unary(ops.Log1p, where(zero, 0.0, y)))


def betaln(a: Any, b: Any) -> Tensor:
    """``log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``."""
    a, b = coerce(a, b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)

"""Primitives of ``scipy.special``: ``gammaln``, ``digamma``, ``trigamma``, ``erfc``,
``erfinv``.

They are not numpy names (``numpy_names`` is empty): ``tidu_compile.scipy.special``
exports them, with the formulas ``polygamma``, ``expit``, ``logit``, ``xlogy``,
``xlog1py``, ``betaln`` and ``logsumexp``. Real dtypes; values are scipy's (the numpy
functions below keep the input's dtype, as scipy does for all but ``polygamma``).

=========  ================================  ===========================================
op         value                             derivative
=========  ================================  ===========================================
gammaln    ``log |Gamma(x)|``                ``digamma(x)``
digamma    ``Gamma'(x) / Gamma(x)``          ``trigamma(x)``
trigamma   ``polygamma(1, x)``               ``polygamma(2, x)``: the formula below
erfc       ``1 - erf(x)``                    ``-2/sqrt(pi) exp(-x^2)``
erfinv     ``erf(y) = x``                    ``sqrt(pi)/2 exp(y^2)``
=========  ================================  ===========================================

``polygamma(2, x)`` (the derivative of ``trigamma``) is built of primitives, so every
order differentiates again: ``-2 sum_{k<12} (x + k)^-3`` plus the asymptotic series of
``psi''(z)`` at ``z = x + 12`` (for ``x > 0``; relative error about 1e-15 there).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile.ops.base import FLOAT_DTYPES, apply, primitive
from tidu_compile.ops.elementwise import Add, Div, Exp, FullLike, Mul, Neg, Scale, Shift, Unary


def _keeping_dtype(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """``scipy.special.<name>`` in the dtype of its input (scipy imported at the first
    call: it is a third of ``import tidu_compile``)."""

    def evaluate(x: np.ndarray) -> np.ndarray:
        import scipy.special

        return np.asarray(getattr(scipy.special, name)(x), dtype=np.result_type(x))

    evaluate.__name__ = name
    return evaluate


def numpy_trigamma(x: np.ndarray) -> np.ndarray:
    """``scipy.special.polygamma(1, x)`` in the dtype of ``x``."""
    import scipy.special

    return np.asarray(scipy.special.polygamma(1, x), dtype=np.result_type(x))


#: ``psi''(z) ~ -1/z^2 - 1/z^3 - sum_k B_2k (2k + 1)! / (2k)! / z^(2k + 2)``: the
#: coefficients of ``z^-2``, ``z^-3``, ``z^-4``, ``z^-6``, ... up to ``z^-18``.
TETRAGAMMA_SERIES = ((2, -1.0), (3, -1.0), (4, -0.5), (6, 1.0 / 6.0), (8, -1.0 / 6.0),
                     (10, 3.0 / 10.0), (12, -5.0 / 6.0), (14, 691.0 / 210.0), (16, -17.5),
                     (18, 3617.0 * 17.0 / 510.0))  # fmt: skip
TETRAGAMMA_SHIFT = 12


def tetragamma(b: Any, x: int) -> int:
    """``polygamma(2, x)`` of primitives (see the module docstring)."""

    def power(v: int, n: int) -> int:
        result = v
        for _ in range(n - 1):
            result = apply(b, Mul(), [result, v])
        return result

    one = apply(b, FullLike(1.0), [x])
    inverse = apply(b, Div(), [one, apply(b, Shift(float(TETRAGAMMA_SHIFT)), [x])])
    terms = [apply(b, Scale(c), [power(inverse, n)]) for n, c in TETRAGAMMA_SERIES]
    for k in range(TETRAGAMMA_SHIFT):
        shifted = apply(b, Div(), [one, apply(b, Shift(float(k)), [x]) if k else x])
        terms.append(apply(b, Scale(-2.0), [power(shifted, 3)]))
    total = terms[0]
    for term in terms[1:]:
        total = apply(b, Add(), [total, term])
    return total


def numpy_erfc(x: np.ndarray) -> np.ndarray:
    """``erfc(x)`` in the dtype of ``x``; past 1/2 as ``erfcx(x) exp(-x^2)`` with ``x^2``
    split exactly into ``s + e`` (Dekker), ``exp(-s) exp(-e)``: scipy's own ``erfc``
    rounds ``x^2`` first, which costs it up to ~500 ulps near its underflow (x ~ 26)."""
    import scipy.special

    wide = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        square = wide * wide
        split = wide * 134217729.0  # 2^27 + 1
        hi = split - (split - wide)
        lo = wide - hi
        error = ((hi * hi - square) + 2.0 * hi * lo) + lo * lo
        tail = scipy.special.erfcx(wide) * np.exp(-square) * np.exp(-error)
        value = np.where(wide > 0.5, np.where(np.isfinite(tail), tail, 0.0),
                         scipy.special.erfc(wide))  # fmt: skip
    return np.asarray(value, dtype=np.result_type(x))


@primitive
class Gammaln(Unary):
    """``log |Gamma(x)|`` (``scipy.special.gammaln``); ``dy = dx * digamma(x)``."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = _keeping_dtype("gammaln")
    domain = "positive"

    def derivative(self, b, x, y):
        return apply(b, Digamma(), [x])


@primitive
class Digamma(Unary):
    """``d/dx log Gamma(x)`` (``scipy.special.digamma``); ``dy = dx * trigamma(x)``."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = _keeping_dtype("digamma")
    domain = "positive"

    def derivative(self, b, x, y):
        return apply(b, Trigamma(), [x])


@primitive
class Trigamma(Unary):
    """``polygamma(1, x)``; ``dy = dx * polygamma(2, x)`` (a formula, ``x > 0``)."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = numpy_trigamma
    domain = "positive"

    def derivative(self, b, x, y):
        return tetragamma(b, x)


@primitive
class Erfc(Unary):
    """``1 - erf(x)``, accurate where it is small; ``dy = -dx * 2/sqrt(pi) exp(-x^2)``."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = numpy_erfc

    def derivative(self, b, x, y):
        gauss = apply(b, Exp(), [apply(b, Neg(), [apply(b, Mul(), [x, x])])])
        return apply(b, Scale(-2.0 / math.sqrt(math.pi)), [gauss])


@primitive
class Erfinv(Unary):
    """The inverse error function (``erf(y) = x``, ``|x| < 1``);
    ``dy = dx * sqrt(pi)/2 exp(y^2)``."""

    allowed_dtypes = FLOAT_DTYPES
    numpy_fn = _keeping_dtype("erfinv")
    domain = "open_unit"

    def derivative(self, b, x, y):
        gauss = apply(b, Exp(), [apply(b, Mul(), [y, y])])
        return apply(b, Scale(math.sqrt(math.pi) / 2.0), [gauss])

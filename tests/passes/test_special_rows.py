"""The tables of ``passes/tidu_special_lowering.py`` against scipy, in numpy: the erfc
Chebyshev series (Numerical Recipes') and the Taylor series at the zeros of ``gammaln``
and ``digamma``, on the intervals their rows use them."""

from __future__ import annotations

import numpy as np
import scipy.special
from numpy.polynomial import chebyshev, polynomial
from tidu_compile.passes.tidu_special_lowering import (
    DIGAMMA_ZERO,
    ERFC_CHEBYSHEV,
    digamma_taylor,
    gammaln_taylor,
)


def test_erfc_chebyshev_series_is_log_erfcx_over_t() -> None:
    z = np.linspace(0.5, 27.0, 5001)  # below 1/2 the row is 1 - erf(x)
    t = 2.0 / (2.0 + z)
    p = chebyshev.chebval(2.0 * t - 1.0, np.array(ERFC_CHEBYSHEV))
    np.testing.assert_allclose(p, np.log(scipy.special.erfcx(z) / t), rtol=0, atol=8e-16)


def test_gammaln_taylor_series_at_two() -> None:
    e = np.linspace(-0.5, 0.5, 1001)
    value = polynomial.polyval(e, np.array(gammaln_taylor()))
    np.testing.assert_allclose(value, scipy.special.gammaln(2.0 + e), rtol=0, atol=3e-16)
    assert gammaln_taylor()[0] == 0.0  # gammaln(2) = 0 exactly


def test_digamma_taylor_series_at_its_zero() -> None:
    x = np.linspace(1.0, 2.0, 1001)
    value = polynomial.polyval(x - DIGAMMA_ZERO, np.array(digamma_taylor()))
    np.testing.assert_allclose(value, scipy.special.digamma(x), rtol=0, atol=2e-16)

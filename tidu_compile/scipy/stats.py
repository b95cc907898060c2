"""``import tidu_compile.scipy.stats``: scipy's distributions as formulas on tensors.

Each distribution is an object with scipy's method names and arguments, differentiable
in every float argument (autograd's ``scipy.stats`` set):

===================  =========================================================================
distribution         methods and formulas (``y = (x - loc) / scale``)
===================  =========================================================================
norm                 ``logpdf = -y^2/2 - log(scale) - log(2 pi)/2``, ``pdf``, ``cdf =
                     erfc(-y / sqrt 2) / 2``, ``logcdf``, ``sf``, ``logsf``
t                    ``logpdf = gammaln((df+1)/2) - gammaln(df/2) - log(df pi)/2 -
                     log(scale) - (df+1)/2 log1p(y^2/df)``, ``pdf``
gamma                ``logpdf = (a-1) log y - y - gammaln(a) - log(scale)``, ``pdf``
beta                 ``logpdf = (a-1) log y + (b-1) log1p(-y) - betaln(a, b) - log(scale)``,
                     ``pdf``
dirichlet            ``logpdf = sum((alpha-1) log x) + gammaln(sum alpha) - sum gammaln(alpha)``
                     over the last axis, ``pdf``
multivariate_normal  ``logpdf = -(d log(2 pi) + log det C + r^T C^-1 r) / 2``, ``r = x - mean``,
                     ``pdf``; ``cov`` a constant (its Cholesky factor is numpy's: the
                     gradient in ``cov`` needs the linear algebra of issue 21, a
                     ``TypeError`` until then)
===================  =========================================================================

The ``cdf`` of ``t``, ``gamma`` and ``beta`` (incomplete beta and gamma functions) are
not provided.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile.frontend import FUNCTIONS
from tidu_compile.frontend.tensor import Tensor, as_tensor

__all__ = [
    "Beta", "Dirichlet", "Gamma", "MultivariateNormal", "Normal", "StudentT", "beta",
    "dirichlet", "gamma", "multivariate_normal", "norm", "t",
]  # fmt: skip

_log, _log1p, _exp = FUNCTIONS["log"], FUNCTIONS["log1p"], FUNCTIONS["exp"]
_gammaln, _erfc, _sum = FUNCTIONS["gammaln"], FUNCTIONS["erfc"], FUNCTIONS["sum"]

LOG_2PI = math.log(2.0 * math.pi)


def _standard(x: Any, loc: Any, scale: Any) -> Tensor:
    return (as_tensor(x) - loc) / scale


class Normal:
    """The normal distribution (``scipy.stats.norm``)."""

    def logpdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        y = _standard(x, loc, scale)
        return -0.5 * y * y - _log(as_tensor(scale) * 1.0) - 0.5 * LOG_2PI

    def pdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return _exp(self.logpdf(x, loc, scale))

    def cdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return 0.5 * _erfc(-_standard(x, loc, scale) / math.sqrt(2.0))

    def logcdf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return _log(self.cdf(x, loc, scale))

    def sf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return 0.5 * _erfc(_standard(x, loc, scale) / math.sqrt(2.0))

    def logsf(self, x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return _log(self.sf(x, loc, scale))


class StudentT:
    """Student's t distribution (``scipy.stats.t``)."""

    def logpdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        y = _standard(x, loc, scale)
        df = as_tensor(df) * 1.0
        return (_gammaln((df + 1.0) / 2.0) - _gammaln(df / 2.0) - 0.5 * _log(df * math.pi)
                - _log(as_tensor(scale) * 1.0) - (df + 1.0) / 2.0 * _log1p(y * y / df))  # fmt: skip

    def pdf(self, x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return _exp(self.logpdf(x, df, loc, scale))


class Gamma:
    """The gamma distribution (``scipy.stats.gamma``, shape ``a``)."""

    def logpdf(self, x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        y = _standard(x, loc, scale)
        a = as_tensor(a) * 1.0
        return (a - 1.0) * _log(y) - y - _gammaln(a) - _log(as_tensor(scale) * 1.0)

    def pdf(self, x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return _exp(self.logpdf(x, a, loc, scale))


class Beta:
    """The beta distribution (``scipy.stats.beta``)."""

    def logpdf(self, x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        y = _standard(x, loc, scale)
        a, b = as_tensor(a) * 1.0, as_tensor(b) * 1.0
        return ((a - 1.0) * _log(y) + (b - 1.0) * _log1p(-y) - FUNCTIONS["betaln"](a, b)
                - _log(as_tensor(scale) * 1.0))  # fmt: skip

    def pdf(self, x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Tensor:
        return _exp(self.logpdf(x, a, b, loc, scale))


class Dirichlet:
    """The Dirichlet distribution (``scipy.stats.dirichlet``); ``x`` and ``alpha`` along
    the last axis."""

    def logpdf(self, x: Any, alpha: Any) -> Tensor:
        alpha = as_tensor(alpha) * 1.0
        normalizer = _gammaln(_sum(alpha, -1)) - _sum(_gammaln(alpha), -1)
        return _sum((alpha - 1.0) * _log(as_tensor(x) * 1.0), -1) + normalizer

    def pdf(self, x: Any, alpha: Any) -> Tensor:
        return _exp(self.logpdf(x, alpha))


class MultivariateNormal:
    """The multivariate normal distribution (``scipy.stats.multivariate_normal``) with a
    constant covariance; ``x`` has the dimension last."""

    def logpdf(
        self, x: Any, mean: Any = None, cov: Any = 1.0, allow_singular: bool = False
    ) -> Tensor:
        if isinstance(cov, Tensor) and cov.requires_grad:
            raise TypeError(
                "multivariate_normal: a cov that requires gradients needs the Cholesky "
                "factorization of tidu_compile.numpy.linalg (issue 21, section 1); pass "
                "cov as an array"
            )
        x = as_tensor(x) * 1.0
        d = x.shape[-1] if x.ndim else 1
        covariance = np.asarray(cov.numpy() if isinstance(cov, Tensor) else cov, dtype=float)
        if covariance.ndim == 0:
            covariance = covariance * np.eye(d)
        elif covariance.ndim == 1:
            covariance = np.diag(covariance)
        factor = np.linalg.cholesky(covariance)  # raises LinAlgError if not positive definite
        residual = x - (0.0 if mean is None else mean)
        whitened_rows = Tensor(np.linalg.inv(factor).T)
        z = residual @ whitened_rows  # rows: L^-1 r
        log_det = 2.0 * float(np.sum(np.log(np.diag(factor))))
        return -0.5 * (d * LOG_2PI + log_det + _sum(z * z, -1))

    def pdf(
        self, x: Any, mean: Any = None, cov: Any = 1.0, allow_singular: bool = False
    ) -> Tensor:
        return _exp(self.logpdf(x, mean, cov, allow_singular))


norm = Normal()
t = StudentT()
gamma = Gamma()
beta = Beta()
dirichlet = Dirichlet()
multivariate_normal = MultivariateNormal()

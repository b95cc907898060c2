"""``tidu_compile.scipy.special`` and ``tidu_compile.scipy.stats`` against scipy: values,
gradients against central differences (both executors: the ``executor`` fixture, which
also checks that the compiled one fell back nowhere), and a compiled ``@tc.function``
whose gradient needs the special functions' lowering rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.special
import scipy.stats
from helpers.frontend import check_frontend_grad

import tidu_compile as tc
import tidu_compile.scipy.special as tss
import tidu_compile.scipy.stats as tst

RNG = np.random.default_rng(3)
POSITIVE = RNG.uniform(0.3, 6.0, (3, 4))
UNIT = RNG.uniform(-0.9, 0.9, (3, 4))
PROBABILITY = RNG.uniform(0.05, 0.95, (3, 4))
NEGATIVE = -RNG.uniform(0.1, 0.9, (3, 4)) - RNG.integers(0, 4, (3, 4))  # away from poles
X = RNG.standard_normal((3, 4))

#: (name, tidu_compile function, scipy function, inputs)
CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], list[np.ndarray]]] = [
    ("gammaln", tss.gammaln, scipy.special.gammaln, [POSITIVE]),
    ("gammaln negative", tss.gammaln, scipy.special.gammaln, [NEGATIVE]),
    ("digamma", tss.digamma, scipy.special.digamma, [POSITIVE]),
    ("psi negative", tss.psi, scipy.special.psi, [NEGATIVE]),
    *((f"polygamma {n}", lambda x, n=n: tss.polygamma(n, x),
       lambda x, n=n: scipy.special.polygamma(n, x), [POSITIVE]) for n in range(5)),
    ("erf", tss.erf, scipy.special.erf, [X]),
    ("erfc", tss.erfc, scipy.special.erfc, [X * 3]),
    ("erfinv", tss.erfinv, scipy.special.erfinv, [UNIT]),
    ("expit", tss.expit, scipy.special.expit, [X * 5]),
    ("logit", tss.logit, scipy.special.logit, [PROBABILITY]),
    ("xlogy", tss.xlogy, scipy.special.xlogy, [X, POSITIVE]),
    ("xlog1py", tss.xlog1py, scipy.special.xlog1py, [X, POSITIVE]),
    ("betaln", tss.betaln, scipy.special.betaln, [POSITIVE, POSITIVE[::-1] + 0.5]),
    ("logsumexp", lambda a, b: tss.logsumexp(a, axis=1, b=b),
     lambda a, b: scipy.special.logsumexp(a, axis=1, b=b), [X, POSITIVE]),
    ("norm.logpdf", lambda x, m, s: tst.norm.logpdf(x, m, s), scipy.stats.norm.logpdf,
     [X, X[::-1], POSITIVE]),
    ("norm.pdf", tst.norm.pdf, scipy.stats.norm.pdf, [X, X[::-1], POSITIVE]),
    ("norm.cdf", tst.norm.cdf, scipy.stats.norm.cdf, [X, X[::-1], POSITIVE]),
    ("norm.logcdf", tst.norm.logcdf, scipy.stats.norm.logcdf, [X, X[::-1], POSITIVE]),
    ("norm.sf", tst.norm.sf, scipy.stats.norm.sf, [X, X[::-1], POSITIVE]),
    ("t.logpdf", tst.t.logpdf, scipy.stats.t.logpdf, [X, POSITIVE + 1, X[::-1], POSITIVE]),
    ("t.pdf", tst.t.pdf, scipy.stats.t.pdf, [X, POSITIVE + 1, X[::-1], POSITIVE]),
    ("gamma.logpdf", tst.gamma.logpdf, scipy.stats.gamma.logpdf, [POSITIVE, POSITIVE[::-1]]),
    ("gamma.pdf", lambda x, a, s: tst.gamma.pdf(x, a, 0.0, s),
     lambda x, a, s: scipy.stats.gamma.pdf(x, a, 0.0, s), [POSITIVE, POSITIVE + 1, POSITIVE]),
    ("beta.logpdf", tst.beta.logpdf, scipy.stats.beta.logpdf,
     [PROBABILITY, POSITIVE, POSITIVE[::-1]]),
    ("beta.pdf", tst.beta.pdf, scipy.stats.beta.pdf, [PROBABILITY, POSITIVE, POSITIVE + 1]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "fn", "reference", "arrays"), CASES, ids=[c[0] for c in CASES])
def test_value_and_gradient(
    name: str, fn: Callable[..., Any], reference: Callable[..., Any], arrays: list[np.ndarray],
    executor: tc.BackwardExecutor,
) -> None:  # fmt: skip
    check_frontend_grad(fn, reference, arrays, executor=executor)


def test_dirichlet_and_multivariate_normal(executor: tc.BackwardExecutor) -> None:
    simplex = PROBABILITY / PROBABILITY.sum(axis=1, keepdims=True)
    alpha = POSITIVE[0] + 0.5
    def dirichlet_formula(x: np.ndarray, a: np.ndarray) -> np.ndarray:
        """scipy's value off the simplex too (central differences leave it)."""
        gammaln = scipy.special.gammaln
        return np.sum((a - 1) * np.log(x)) + gammaln(np.sum(a)) - np.sum(gammaln(a))

    for row in simplex:
        value = tst.dirichlet.logpdf(row, alpha).numpy()
        np.testing.assert_allclose(value, scipy.stats.dirichlet.logpdf(row, alpha), rtol=1e-13)
        check_frontend_grad(tst.dirichlet.logpdf, dirichlet_formula, [row, alpha],
                            executor=executor)  # fmt: skip
    cov = np.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.0, 0.2, 0.0], [0.0, 0.2, 1.5, 0.0],
                    [0.1, 0.0, 0.0, 1.0]])  # fmt: skip
    for method in ("logpdf", "pdf"):
        check_frontend_grad(
            lambda x, m, method=method: getattr(tst.multivariate_normal, method)(x, m, cov),
            lambda x, m, method=method: getattr(scipy.stats.multivariate_normal, method)(x, m, cov),
            [X, X[0]], executor=executor,
        )


def test_compiled_in_a_traced_function(executor: tc.BackwardExecutor) -> None:
    """Every special primitive in one ``@tc.function``: its backward recomputes them with
    their lowering rows (the fixture checks no fallback); values match eager ones."""

    def loss(x: Any, u: Any) -> Any:
        terms = (tss.gammaln(x) + tss.digamma(x) * tss.polygamma(1, x) + tss.erfc(u)
                 + tss.erfinv(u * 0.9) * tss.polygamma(3, x))  # fmt: skip
        return tc.sum(terms * tss.gammaln(x))

    traced = tc.function(loss)
    for _ in range(2):
        x, u = tc.tensor(POSITIVE, requires_grad=True), tc.tensor(UNIT, requires_grad=True)
        got = tc.grad(traced(x, u), [x, u], executor=executor)
        x2, u2 = tc.tensor(POSITIVE, requires_grad=True), tc.tensor(UNIT, requires_grad=True)
        want = tc.grad(loss(x2, u2), [x2, u2], executor=tc.ReferenceExecutor())
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_second_derivatives_differentiate_again() -> None:
    from tidu_compile import func

    x = np.array([0.7, 2.5, 9.0])
    first = func.grad(lambda y: tc.sum(tss.gammaln(y)))
    hessian_diagonal = func.grad(lambda x: tc.sum(first(x)))(x)
    np.testing.assert_allclose(hessian_diagonal.numpy(), scipy.special.polygamma(1, x), rtol=1e-12)
    third = func.grad(lambda x: tc.sum(tss.polygamma(1, x)))(x)
    np.testing.assert_allclose(third.numpy(), scipy.special.polygamma(2, x), rtol=1e-12)


def test_bad_arguments_raise_clear_errors() -> None:
    with pytest.raises(TypeError, match="complex values are not supported"):
        tss.gammaln(np.array([1j]))
    with pytest.raises(TypeError, match="non-negative integer"):
        tss.polygamma(1.5, POSITIVE)
    with pytest.raises(ValueError, match="non-negative"):
        tss.polygamma(-1, POSITIVE)
    with pytest.raises(TypeError, match="return_sign"):
        tss.logsumexp(X, return_sign=True)
    cov = tc.tensor(np.eye(4), requires_grad=True)
    with pytest.raises(TypeError, match="linalg"):
        tst.multivariate_normal.logpdf(X, None, cov)

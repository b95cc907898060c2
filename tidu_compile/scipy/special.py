"""``import tidu_compile.scipy.special``: scipy's special functions on tensors.

``gammaln``, ``digamma`` (also ``psi``), ``polygamma``, ``erf``, ``erfc``, ``erfinv``,
``expit``, ``logit``, ``xlogy``, ``xlog1py``, ``betaln``, ``logsumexp``: real values,
differentiable (``polygamma`` in ``x``), compiled (``tidu_compile.frontend.special``
says how each is built).
"""

from __future__ import annotations

from typing import Any

from tidu_compile.frontend import FUNCTIONS
from tidu_compile.frontend.tensor import Tensor

__all__ = [
    "betaln", "digamma", "erf", "erfc", "erfinv", "expit", "gammaln", "logit", "logsumexp",
    "polygamma", "psi", "xlog1py", "xlogy",
]  # fmt: skip

betaln = FUNCTIONS["betaln"]
digamma = psi = FUNCTIONS["digamma"]
erf = FUNCTIONS["erf"]
erfc = FUNCTIONS["erfc"]
erfinv = FUNCTIONS["erfinv"]
expit = FUNCTIONS["expit"]
gammaln = FUNCTIONS["gammaln"]
logit = FUNCTIONS["logit"]
polygamma = FUNCTIONS["polygamma"]
xlog1py = FUNCTIONS["xlog1py"]
xlogy = FUNCTIONS["xlogy"]


def logsumexp(
    a: Any, axis: Any = None, b: Any = None, keepdims: bool = False, return_sign: bool = False
) -> Tensor:
    """``log(sum(b * exp(a)))`` over ``axis`` (``tidu_compile.logsumexp``);
    ``return_sign=True`` is refused (the sign of a signed sum carries no gradient)."""
    if return_sign:
        raise TypeError("logsumexp: return_sign=True is not supported; weights b >= 0 are")
    return FUNCTIONS["logsumexp"](a, axis, b, keepdims)

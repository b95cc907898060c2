"""``tidu_compile.autograd``: PyTorch's names for the tape's gradients and custom rules.

``Function`` (a function with its own ``forward``/``backward``, ``frontend.autograd_function``)
and ``grad`` (``tc.grad``).
"""

from tidu_compile.frontend.autograd import grad
from tidu_compile.frontend.autograd_function import Function, FunctionCtx

__all__ = ["Function", "FunctionCtx", "grad"]

"""The eager ``Tensor`` frontend: numpy-style functions that record on the tidu tape.

The function modules, each with its ``__all__``: ``elementwise`` (generated from the op
table, plus ``where``, ``power``, ...), ``formulas`` (``abs``, ``clip``, ``sinc``,
...), ``activations`` (``sigmoid``, ``relu``, ``softplus``, ``gelu``, ``erf``,
``stop_gradient``), ``reductions`` (``sum``, ``max``, ``prod``, ``argmax``, ``any``...),
``comparisons``, ``creation`` (constant constructors),
``statistics`` (``var``, ``std``, ``average``), ``softmax`` (``logsumexp``,
``softmax``, ``log_softmax``), ``norms`` (``norm``), ``shapes``, ``linalg``,
``products`` and ``einsum`` (contractions),
``joining`` (``concatenate``, ``stack``, ``split``, ...), ``arrays`` (``flip``,
``pad``, ``sort``, ``cumsum``, ...), ``convolution`` (``conv``, ``convolve``,
``correlate``) and ``windows`` (``sliding_window_view``), ``gather`` (``take``,
``take_along_axis``) and
``promotion`` (``astype``, ``broadcast_to``). ``namespace.FUNCTIONS`` maps every public
function name to its function; ``tidu_compile`` exports them all, ``tidu_compile.numpy``
those numpy has. ``Tensor``'s operators and methods are attached here, from above the
modules that implement them (``tensor_methods``: ``x[key]`` is ``indexing`` or
``gather``, ``x.at`` is ``updates``, numpy's calls on tensors are ``dispatch``).
"""

from tidu_compile.frontend import tensor_methods
from tidu_compile.frontend.autograd import grad
from tidu_compile.frontend.composite_function import function
from tidu_compile.frontend.elementwise import compare
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.state import (
    enable_grad,
    get_default_executor,
    is_grad_enabled,
    no_grad,
    set_default_executor,
    set_grad_enabled,
    use_executor,
)
from tidu_compile.frontend.tensor import Tensor, TracedValueError, tensor

tensor_methods.install()
globals().update(FUNCTIONS)

__all__ = [
    "FUNCTIONS", "Tensor", "TracedValueError", "compare", "tensor", "function", "grad", "no_grad",
    "enable_grad", "get_default_executor", "is_grad_enabled", "set_grad_enabled",
    "set_default_executor", "use_executor", *FUNCTIONS,
]  # fmt: skip

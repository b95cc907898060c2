"""The eager ``Tensor`` frontend: numpy-style functions that record on the tidu tape.

The function modules, each with its ``__all__``: ``elementwise`` (generated from the op
table, plus ``where``, ``power``, ...), ``composites`` (``abs``, ``clip``, ``sinc``,
...), ``activations`` (``sigmoid``, ``relu``, ``softplus``, ``gelu``, ``erf``),
``comparisons``, ``reductions``, ``shapes``, ``linalg``, ``creation`` (constant
constructors) and ``promotion`` (``astype``, ``broadcast_to``). ``FUNCTIONS`` maps every
public function name to its function; ``tidu_compile`` exports them all,
``tidu_compile.numpy`` those numpy has. ``Tensor``'s methods and numpy's calls on tensors
(``dispatch``) find them here by name.
"""

from collections.abc import Callable
from typing import Any

from tidu_compile.frontend import (
    activations,
    comparisons,
    composites,
    creation,
    elementwise,
    linalg,
    promotion,
    reductions,
    shapes,
)
from tidu_compile.frontend.autograd import grad
from tidu_compile.frontend.composite import function
from tidu_compile.frontend.elementwise import compare
from tidu_compile.frontend.state import (
    get_default_executor,
    no_grad,
    set_default_executor,
    use_executor,
)
from tidu_compile.frontend.tensor import Tensor, TracedValueError, tensor

_PUBLIC_PROMOTION = ("astype", "broadcast_to")

#: Every numpy-style frontend function by name.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: getattr(elementwise, name) for name in elementwise.__all__
       if name not in ("unary", "binary", "compare")},
    **{name: getattr(composites, name) for name in composites.__all__},
    **{name: getattr(activations, name) for name in activations.__all__},
    **{name: getattr(reductions, name) for name in reductions.__all__
       if name != "normalize_axes"},
    **{name: getattr(shapes, name) for name in shapes.__all__},
    **{name: getattr(comparisons, name) for name in comparisons.__all__},
    **{name: getattr(linalg, name) for name in linalg.__all__},
    **{name: getattr(creation, name) for name in creation.__all__},
    **{name: getattr(promotion, name) for name in _PUBLIC_PROMOTION},
}  # fmt: skip
globals().update(FUNCTIONS)

__all__ = [
    "FUNCTIONS", "Tensor", "TracedValueError", "compare", "tensor", "function", "grad", "no_grad",
    "get_default_executor",
    "set_default_executor", "use_executor", *FUNCTIONS,
]  # fmt: skip

"""``FUNCTIONS``: every numpy-style frontend function by name.

One dict, built from the function modules' ``__all__``: ``tidu_compile`` exports them
all, ``tidu_compile.numpy`` those numpy has; ``Tensor``'s methods
(``frontend.tensor_methods``), numpy's calls on tensors (``frontend.dispatch``) and the
function transforms look functions up here by name.
"""

from collections.abc import Callable
from typing import Any

from tidu_compile.frontend import (
    activations,
    arrays,
    comparisons,
    convolution,
    creation,
    einsum,
    elementwise,
    formulas,
    gather,
    joining,
    linalg,
    norms,
    numpy_tail,
    products,
    promotion,
    reductions,
    shapes,
    softmax,
    special,
    statistics,
    torch_creation,
    windows,
)

__all__ = ["FUNCTIONS"]

_PUBLIC_PROMOTION = ("astype", "broadcast_to")
_PUBLIC_GATHER = ("take", "take_along_axis")

#: Every numpy-style frontend function by name.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: getattr(elementwise, name) for name in elementwise.__all__
       if name not in ("unary", "binary", "compare")},
    **{name: getattr(formulas, name) for name in formulas.__all__},
    **{name: getattr(activations, name) for name in activations.__all__},
    **{name: getattr(reductions, name) for name in reductions.__all__
       if name != "normalize_axes"},
    **{name: getattr(module, name) for module in (statistics, softmax, norms)
       for name in module.__all__},
    **{name: getattr(shapes, name) for name in shapes.__all__},
    **{name: getattr(comparisons, name) for name in comparisons.__all__},
    **{name: getattr(linalg, name) for name in linalg.__all__},
    **{name: getattr(creation, name) for name in creation.__all__},
    **{name: getattr(joining, name) for name in joining.__all__},
    **{name: getattr(gather, name) for name in _PUBLIC_GATHER},
    **{name: getattr(arrays, name) for name in arrays.__all__},
    **{name: getattr(products, name) for name in products.__all__},
    "einsum": einsum.einsum,
    **{name: getattr(module, name) for module in (convolution, windows)
       for name in module.__all__},
    **{name: getattr(numpy_tail, name) for name in numpy_tail.__all__},
    **{name: getattr(special, name) for name in special.__all__},
    **{name: getattr(promotion, name) for name in _PUBLIC_PROMOTION},
    **{name: getattr(torch_creation, name) for name in torch_creation.__all__},
}  # fmt: skip

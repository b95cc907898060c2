"""The eager ``Tensor`` frontend: numpy-style functions that record on the tidu tape.

The function modules, each with its ``__all__``: ``elementwise`` (generated from the op
table, plus ``where``, ``power``, ...), ``composites`` (``abs``, ``clip``, ``sinc``,
...), ``activations`` (``sigmoid``, ``relu``, ``softplus``, ``gelu``, ``erf``,
``stop_gradient``), ``reductions`` (``sum``, ``max``, ``prod``, ``argmax``, ``any``...),
``comparisons``, ``creation`` (constant constructors),
``statistics`` (``var``, ``std``, ``average``), ``softmax`` (``logsumexp``,
``softmax``, ``log_softmax``), ``norms`` (``norm``), ``shapes``, ``linalg``,
``products`` and ``einsum`` (contractions),
``joining`` (``concatenate``, ``stack``, ``split``, ...), ``arrays`` (``flip``,
``pad``, ``sort``, ``cumsum``, ...), ``gather`` (``take``, ``take_along_axis``) and
``promotion`` (``astype``, ``broadcast_to``). ``Tensor.__getitem__`` is ``indexing``
and ``Tensor.at`` is ``updates``. ``FUNCTIONS`` maps every public function
name to its function; ``tidu_compile`` exports them all, ``tidu_compile.numpy`` those
numpy has. ``Tensor``'s methods and numpy's calls on tensors (``dispatch``) find them
here by name.
"""

from collections.abc import Callable
from typing import Any

from tidu_compile.frontend import (
    activations,
    arrays,
    comparisons,
    composites,
    creation,
    einsum,
    elementwise,
    gather,
    joining,
    linalg,
    norms,
    products,
    promotion,
    reductions,
    shapes,
    softmax,
    statistics,
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
_PUBLIC_GATHER = ("take", "take_along_axis")

#: Every numpy-style frontend function by name.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: getattr(elementwise, name) for name in elementwise.__all__
       if name not in ("unary", "binary", "compare")},
    **{name: getattr(composites, name) for name in composites.__all__},
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
    **{name: getattr(promotion, name) for name in _PUBLIC_PROMOTION},
}  # fmt: skip
globals().update(FUNCTIONS)

__all__ = [
    "FUNCTIONS", "Tensor", "TracedValueError", "compare", "tensor", "function", "grad", "no_grad",
    "get_default_executor",
    "set_default_executor", "use_executor", *FUNCTIONS,
]  # fmt: skip

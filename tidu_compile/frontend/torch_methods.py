"""PyTorch's spellings of ``Tensor`` methods where numpy's ndarray has no conflicting
meaning: ``unsqueeze``, ``permute``, ``view``, ``clone``, ``exp()``, ``pow()``,
``sqrt()``, ``abs()``, ``dim()``, ``numel()``, ``float()``, ``double()``, ``t()``,
``clamp``, ``masked_fill``, ``contiguous()``, ``mm``, ``matmul``, ``add``/``sub`` (with
``alpha=``), ``mul``, ``div``, and the element functions as methods (``x.tanh()``,
``x.log()``...). Each calls the tidu_compile function of its meaning.

Where the two disagree the method keeps numpy's meaning (the README lists them):
``std``/``var`` (numpy: ``ddof=0``), ``max(axis)``/``min(axis)`` (numpy: the values
only), ``transpose(axes)`` (numpy: a permutation of all axes; ``swapaxes(a, b)`` is
PyTorch's ``transpose(a, b)``), ``size`` (numpy: the element count, an attribute),
``flatten``, ``repeat``, ``split`` and ``sort`` (numpy's functions).
``sum``/``mean`` take PyTorch's ``dim=``/``keepdim=`` as well as numpy's names
(``tensor_methods``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.tensor import Tensor

__all__ = ["TORCH_METHODS", "axis_argument"]


def axis_argument(name: str, axis: Any, dim: Any, keepdims: Any, keepdim: Any) -> tuple[Any, bool]:
    """numpy's ``axis``/``keepdims`` or PyTorch's ``dim``/``keepdim`` (not both)."""
    if dim is not None:
        if axis is not None:
            raise TypeError(f"{name}: pass axis= (numpy) or dim= (PyTorch), not both")
        axis = dim
    if keepdim is not None:
        keepdims = keepdim
    return axis, bool(keepdims)


def _shape_arguments(shape: tuple[Any, ...]) -> Any:
    """``view(2, 3)`` and ``view((2, 3))`` alike."""
    return shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) else shape


def _unsqueeze(self: Tensor, dim: int) -> Tensor:
    """A new axis of size 1 at ``dim`` (PyTorch's ``unsqueeze``)."""
    return FUNCTIONS["expand_dims"](self, dim)  # type: ignore[no-any-return]


def _permute(self: Tensor, *dims: Any) -> Tensor:
    """The axes in the order ``dims`` (PyTorch's ``permute``)."""
    return FUNCTIONS["transpose"](self, tuple(_shape_arguments(dims)))  # type: ignore[no-any-return]


def _view(self: Tensor, *shape: Any) -> Tensor:
    """``reshape`` (PyTorch's ``view``; tensors have no strides to keep)."""
    target = _shape_arguments(shape)
    if isinstance(target, (type, np.dtype, str)):
        raise TypeError("view(dtype) reinterprets bytes, which tidu_compile does not do: "
                        "use astype(dtype)")  # fmt: skip
    return FUNCTIONS["reshape"](self, target)  # type: ignore[no-any-return]


def _t(self: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dimensions (PyTorch's ``t()``)."""
    if self.ndim > 2:
        raise ValueError(f"t(): expects a tensor of at most 2 dimensions, got {self.ndim} "
                         "(use transpose(axes) or swapaxes(a, b))")  # fmt: skip
    return FUNCTIONS["transpose"](self)  # type: ignore[no-any-return]


def _clamp(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's
    """``self`` limited to ``[min, max]`` (PyTorch's ``clamp``; numpy's ``clip``)."""
    return FUNCTIONS["clip"](self, min, max)  # type: ignore[no-any-return]


def _masked_fill(self: Tensor, mask: Any, value: Any) -> Tensor:
    """``value`` where ``mask`` is True, ``self`` elsewhere (PyTorch's ``masked_fill``)."""
    return FUNCTIONS["where"](mask, value, self)  # type: ignore[no-any-return]


def _calls(function: str, doc: str) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return FUNCTIONS[function](self, *args, **kwargs)

    method.__doc__ = doc
    return method


def _scaled(function: str) -> Callable[..., Any]:
    """PyTorch's ``add``/``sub``: ``self + alpha * other`` (``subtract``: minus)."""

    def method(self: Tensor, other: Any, *, alpha: Any = 1) -> Any:
        scaled = other if alpha == 1 else FUNCTIONS["multiply"](other, alpha)
        return FUNCTIONS[function](self, scaled)

    method.__doc__ = f"``tidu_compile.{function}(self, alpha * other)`` (PyTorch's spelling)."
    return method


def _as(dtype: str) -> Callable[[Tensor], Tensor]:
    def method(self: Tensor) -> Tensor:
        return FUNCTIONS["astype"](self, dtype)  # type: ignore[no-any-return]

    method.__doc__ = f"``astype({dtype})`` (PyTorch's spelling)."
    return method


#: Element functions that are methods in PyTorch (and not in numpy).
_ELEMENT_METHODS = ("exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sinh",
                    "cosh", "sqrt", "abs", "sigmoid", "relu", "square", "sign", "floor",
                    "ceil", "erf", "reciprocal")  # fmt: skip

#: The methods ``tensor_methods`` sets on ``Tensor``, by name.
TORCH_METHODS: dict[str, Any] = {
    "unsqueeze": _unsqueeze,
    "permute": _permute,
    "view": _view,
    "t": _t,
    "clamp": _clamp,
    "masked_fill": _masked_fill,
    "pow": _calls("power", "``self ** exponent`` (PyTorch's ``pow``)."),
    "dim": lambda self: self.ndim,
    "numel": lambda self: self.size,
    "float": _as("float32"),
    "double": _as("float64"),
    "contiguous": lambda self: self,
    "mm": _calls("matmul", "``self @ other`` (PyTorch's ``mm``)."),
    "matmul": _calls("matmul", "``self @ other`` (PyTorch's ``matmul``)."),
    "add": _scaled("add"),
    "sub": _scaled("subtract"),
    "mul": _calls("multiply", "``self * other`` (PyTorch's ``mul``)."),
    "div": _calls("divide", "``self / other`` (PyTorch's ``div``)."),
    **{name: _calls(name, f"``tidu_compile.{name}(self)``.") for name in _ELEMENT_METHODS},
}

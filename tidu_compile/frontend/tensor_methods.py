"""``Tensor``'s operators and methods, attached to the class from above the modules that
implement them (as JAX's ``jax/_src/numpy/array_methods.py`` does for its arrays):
``frontend.tensor`` imports none of those modules, so none of them imports back up.

``install()`` (run once by ``tidu_compile.frontend``) sets on ``Tensor``:

* ``+ - * / %`` and unary ``-``: the recording fast path (``fast_ops``), else the
  frontend function (``x * y`` is ``multiply(x, y)``); ``//`` is ``floor_divide``;
* ``x[key]``: numpy's basic indexing (``indexing``: one ``Slice``) or advanced indexing
  (``gather``); ``x.at[key]``: ``updates``; ``x.backward()``: ``autograd``; numpy's
  ``__array_ufunc__`` and ``__array_function__``: ``dispatch``;
* comparisons, ``@``, ``.T``, ``.real``, ``.imag``, ``.astype()``, ``.sum()``,
  ``.mean()``, ``.reshape()``, ``.transpose()``: the frontend function of that name;
* ``abs()``, ``**`` and the other methods named as ndarray's (``.max()``, ``.clip()``,
  ...): the function of their name in ``FUNCTIONS``, looked up when called (a function
  added later works; a missing one raises ``AttributeError`` naming it);
* PyTorch's spellings (``torch_methods``: ``unsqueeze``, ``view``, ``x.exp()``...) and
  in-place changes (``inplace``: ``+=``, ``add_``, ``copy_``, ``zero_``...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile.frontend import autograd, dispatch, fast_ops
from tidu_compile.frontend.elementwise import compare, imag, real
from tidu_compile.frontend.gather import advanced_index
from tidu_compile.frontend.indexing import basic_index, is_basic_key, normalize_key, window
from tidu_compile.frontend.inplace import INPLACE_METHODS
from tidu_compile.frontend.linalg import matmul
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.promotion import astype
from tidu_compile.frontend.reductions import mean, sum
from tidu_compile.frontend.shapes import reshape, transpose
from tidu_compile.frontend.tensor import Tensor, as_tensor
from tidu_compile.frontend.torch_methods import TORCH_METHODS, axis_argument
from tidu_compile.frontend.updates import IndexUpdates

__all__ = ["NAMED_METHODS", "function_named", "install"]

#: Methods named as ndarray's -> the function they call with the tensor first.
NAMED_METHODS: dict[str, str] = {
    name: name for name in ("conj", "dot", "flatten", "ravel", "squeeze", "swapaxes",
                            "clip", "max", "min", "prod", "var", "std", "argmax", "argmin",
                            "all", "any")
} | {"conjugate": "conj"}  # fmt: skip

#: What ``==`` compares elementwise (anything else: ``NotImplemented``, so ``False``).
_ARRAY_LIKE = (Tensor, np.ndarray, np.generic, bool, int, float, complex, list, tuple)


def function_named(name: str, caller: str) -> Callable[..., Any]:
    """The frontend function ``name``; ``AttributeError`` naming it when it does not exist
    (yet): methods and operators that call a function by name look it up here."""
    function = FUNCTIONS.get(name)
    if function is None:
        raise AttributeError(f"{caller} needs tidu_compile.{name}, which does not exist yet")
    return function


def _getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` with numpy's basic and advanced indexing: a window of ``x`` reshaped
    (``frontend.indexing``), or a gather (``frontend.gather``)."""
    if type(key) is slice:  # ``gx[:8]``: the fast path's, when it takes it
        fast = fast_ops.slice_leading(x, key)
        if fast is not None:
            return fast
    x = as_tensor(x)
    items = normalize_key(key)
    if not is_basic_key(items):
        return advanced_index(x, items)
    index = basic_index(x.shape, items)
    part = window(x, index.start, index.step, index.counts)
    return reshape(part, index.shape) if part.shape != index.shape else part


def _by_name(function: str) -> Callable[..., Tensor]:
    """``function(*operands)``, the function looked up in ``FUNCTIONS`` when called."""

    def general(*operands: Any) -> Tensor:
        return FUNCTIONS[function](*operands)  # type: ignore[no-any-return]

    return general


def _reflected(function: str) -> Callable[[Any, Any], Tensor]:
    """``function(b, a)`` as the method ``a.__r<op>__(b)``."""
    general = _by_name(function)
    return lambda a, b: general(b, a)


def _named_method(name: str, function: str) -> Callable[..., Any]:
    """The method ``name``: ``function(self, ...)``, looked up when called."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return function_named(function, f"Tensor.{name}")(self, *args, **kwargs)

    method.__doc__ = f"``tidu_compile.{function}(self, ...)``, as numpy's ``ndarray.{name}``."
    return method


def _compare_or_not_implemented(direction: str) -> Callable[[Tensor, object], Any]:
    """``tensor <direction> other`` elementwise; ``NotImplemented`` for an operand that is
    not array-like (``t == None`` is then False, as for other Python objects)."""

    def method(tensor: Tensor, other: object) -> Any:
        if not isinstance(other, _ARRAY_LIKE):
            return NotImplemented
        return compare(direction, tensor, other)

    return method


def _sum(
    self: Tensor, axis: Any = None, keepdims: Any = False, *, dim: Any = None,
    keepdim: Any = None,
) -> Tensor:
    """``sum(self, axis, keepdims)``; PyTorch's ``dim=``/``keepdim=`` too."""
    return sum(self, *axis_argument("sum", axis, dim, keepdims, keepdim))


def _mean(
    self: Tensor, axis: Any = None, keepdims: Any = False, *, dim: Any = None,
    keepdim: Any = None,
) -> Tensor:
    """``mean(self, axis, keepdims)``; PyTorch's ``dim=``/``keepdim=`` too."""
    return mean(self, *axis_argument("mean", axis, dim, keepdims, keepdim))


def _reshape(self: Tensor, *shape: Any) -> Tensor:
    target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    return reshape(self, target)


def _transpose(self: Tensor, *axes: Any) -> Tensor:
    target = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
    return transpose(self, target or None)


def _astype(self: Tensor, dtype: Any) -> Tensor:
    """``self`` converted to ``dtype`` (recorded, so differentiable, between float and
    complex dtypes)."""
    return astype(self, dtype)


def _at(self: Tensor) -> IndexUpdates:
    """Functional updates, as in JAX: ``x.at[key].set(v)``, ``x.at[key].add(v)``."""
    return IndexUpdates(self)


def _methods() -> dict[str, Any]:
    """Every attribute ``install`` sets, by name."""
    methods: dict[str, Any] = {}
    for name, (op, function) in fast_ops.BINARY_OPERATORS.items():
        methods[f"__{name}__"] = fast_ops.fast_binary(op, _by_name(function))
        methods[f"__r{name}__"] = fast_ops.fast_binary(op, _by_name(function), reflected=True)
    for name, (op, function) in fast_ops.UNARY_OPERATORS.items():
        methods[f"__{name}__"] = fast_ops.fast_unary(op, _by_name(function))
    methods["__floordiv__"] = _by_name("floor_divide")
    methods["__rfloordiv__"] = _reflected("floor_divide")
    methods["__abs__"] = lambda self: function_named("abs", "abs(tensor)")(self)
    methods["__pow__"] = lambda self, y: function_named("power", "tensor ** y")(self, y)
    methods["__rpow__"] = lambda self, x: function_named("power", "x ** tensor")(x, self)
    methods["__matmul__"] = lambda self, other: matmul(self, other)
    methods["__rmatmul__"] = lambda self, other: matmul(other, self)
    for direction in ("lt", "le", "gt", "ge"):
        methods[f"__{direction}__"] = lambda self, other, d=direction: compare(d, self, other)
    methods["__eq__"] = _compare_or_not_implemented("eq")
    methods["__ne__"] = _compare_or_not_implemented("ne")
    methods["__getitem__"] = _getitem
    methods["__array_ufunc__"] = lambda self, ufunc, method, *inputs, **kwargs: (
        dispatch.dispatch_ufunc(ufunc, method, inputs, kwargs))  # fmt: skip
    methods["__array_function__"] = lambda self, func, types, args, kwargs: (
        dispatch.dispatch_function(func, types, args, kwargs))  # fmt: skip
    methods["backward"] = autograd.tensor_backward
    methods["T"] = property(lambda self: transpose(self))
    methods["real"] = property(real)
    methods["imag"] = property(imag)
    methods["at"] = property(_at)
    methods.update(astype=_astype, sum=_sum, mean=_mean, reshape=_reshape, transpose=_transpose)
    for name, function in NAMED_METHODS.items():
        methods[name] = _named_method(name, function)
    methods.update(TORCH_METHODS)
    methods.update(INPLACE_METHODS)
    return methods


def install() -> None:
    """Set ``Tensor``'s operators and methods (see the module docstring)."""
    for name, method in _methods().items():
        if callable(method):
            method.__name__ = name
            method.__qualname__ = f"Tensor.{name}"
        setattr(Tensor, name, method)

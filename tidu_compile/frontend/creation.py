"""Constructors, numpy's names, arguments and dtype rules: ``array``, ``asarray``,
``copy``, ``zeros``, ``ones``, ``empty``, ``full``, their ``*_like`` forms, ``eye``,
``identity``, ``arange`` and ``linspace``.

They return constant tensors (no gradient), computed by numpy, so dtypes follow numpy:
``zeros(3)`` is float64, ``arange(3)`` int64, ``full(2, 1)`` int64. Two take tensors and
keep their gradient: ``array(t)``/``asarray(t)`` of a tensor (``t`` itself, converted
with a recorded ``astype`` when a dtype is given) and ``full(shape, t)`` (``t`` broadcast);
``linspace`` and ``arange`` of float tensors that require gradients are numpy's formulas
of them (``start + i * step``), so the endpoints get their gradients.
Tensors inside lists (``array([a, 2 * a])``, as autograd and JAX users write it) are
stacked, so their gradients flow (``stack`` per nesting level, numbers made constants).
``empty`` and ``empty_like`` give zeros (a tensor's data is never uninitialized).
PyTorch's ``requires_grad=True`` makes the constant a leaf that requires gradients
(``zeros``, ``ones``, ``empty``, ``full`` of a number, ``eye`` and the ``*_like`` forms;
float and complex dtypes only, as in PyTorch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile.frontend.joining import stack
from tidu_compile.frontend.promotion import astype, broadcast_to
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import STACK_NESTED, Tensor, contains_tensor

__all__ = [
    "arange", "array", "asarray", "copy", "empty", "empty_like", "eye", "full", "full_like",
    "identity", "linspace", "ones", "ones_like", "zeros", "zeros_like",
]  # fmt: skip


def _constant(data: np.ndarray, name: str, requires_grad: bool = False) -> Tensor:
    """``data`` as a tensor: a constant, or with ``requires_grad`` (PyTorch's keyword) a
    leaf that requires gradients."""
    if data.dtype == object:
        raise TypeError(f"{name}: cannot make a tensor of Python objects")
    if requires_grad and data.dtype.kind not in "fc":
        raise TypeError(f"{name}: only float and complex tensors can require gradients "
                        f"(requires_grad=True), this one is {data.dtype}")  # fmt: skip
    tensor = Tensor(data)
    return tensor.requires_grad_() if requires_grad else tensor


def _static(value: Any, name: str, argument: str) -> Any:
    """``value`` with its tensors replaced by their values: arguments that set shapes or
    ranges are read, never differentiated (a tensor that requires gradients is a
    ``TypeError``, a traced one a ``TracedValueError``)."""
    if isinstance(value, Tensor):
        if value.requires_grad:
            raise TypeError(
                f"{name}: {argument} is a tensor that requires gradients; {name} makes "
                "constants (compute with the tensor instead, e.g. start + step * arange(n))"
            )
        return value._concrete(f"{name}({argument}=tensor)")
    if isinstance(value, (list, tuple)):
        return type(value)(_static(item, name, argument) for item in value)
    return value


def _stacked(value: Any) -> Any:
    """Nested lists holding tensors as one tensor: ``stack`` at every level that holds a
    tensor (``stack`` makes constants of the numbers and lists below)."""
    if isinstance(value, (list, tuple)) and contains_tensor(value):
        return stack([_stacked(item) for item in value])
    return value


def array(object: Any, dtype: Any = None, *, copy: bool = True, ndmin: int = 0) -> Tensor:  # noqa: A002 - numpy's name
    """A constant tensor of ``object`` (numpy's ``array``); a tensor is returned itself
    (tensors are immutable), converted to ``dtype`` and given ``ndmin`` dimensions by
    recorded ops, so it keeps its gradient."""
    if isinstance(object, Tensor):
        result = object if dtype is None else astype(object, dtype)
        if result.ndim < ndmin:
            result = reshape(result, (1,) * (ndmin - result.ndim) + result.shape)
        return result
    if contains_tensor(object):
        return array(_stacked(object), dtype, ndmin=ndmin)
    return _constant(np.array(object, dtype=dtype, copy=True, ndmin=ndmin), "array")


STACK_NESTED.append(array)


def asarray(a: Any, dtype: Any = None) -> Tensor:
    """``a`` as a tensor: ``a`` itself if it is one (converted to ``dtype``), else a
    constant tensor of it."""
    return array(a, dtype)


def copy(a: Any) -> Tensor:
    """numpy's ``copy``: a tensor is immutable, so ``copy(t)`` is ``t``; other data
    becomes a constant tensor."""
    return array(a)


def zeros(shape: Any, dtype: Any = float, *, requires_grad: bool = False) -> Tensor:
    """A constant tensor of zeros (default float64)."""
    data = np.zeros(_static(shape, "zeros", "shape"), dtype)
    return _constant(data, "zeros", requires_grad)


def ones(shape: Any, dtype: Any = float, *, requires_grad: bool = False) -> Tensor:
    """A constant tensor of ones (default float64)."""
    return _constant(np.ones(_static(shape, "ones", "shape"), dtype), "ones", requires_grad)


def empty(shape: Any, dtype: Any = float, *, requires_grad: bool = False) -> Tensor:
    """numpy's ``empty``: here zeros (a tensor's data is never uninitialized)."""
    data = np.zeros(_static(shape, "empty", "shape"), dtype)
    return _constant(data, "empty", requires_grad)


def full(shape: Any, fill_value: Any, dtype: Any = None, *,
         requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A tensor of ``shape`` filled with ``fill_value`` (its dtype by numpy's rules); a
    tensor ``fill_value`` is broadcast (recorded, so it keeps its gradient, and
    ``requires_grad`` is refused: the result is not a leaf)."""
    shape = _static(shape, "full", "shape")
    if requires_grad and contains_tensor(fill_value):
        raise TypeError("full: requires_grad=True makes a leaf; a tensor fill_value is "
                        "recorded (its gradient flows to it), so the result is none")
    if isinstance(fill_value, Tensor):
        value = fill_value if dtype is None else astype(fill_value, dtype)
        target = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return broadcast_to(value, target)
    if contains_tensor(fill_value):
        fill_value = array(fill_value)  # stacked: keeps the gradients
        return full(shape, fill_value, dtype)
    return _constant(np.full(shape, fill_value, dtype), "full", requires_grad)


def _like(a: Any, dtype: Any, shape: Any) -> tuple[Any, Any]:
    """The shape and dtype of ``a`` (read from a tensor without reading its values)."""
    like = a if isinstance(a, Tensor) else np.asarray(a)
    return (like.shape if shape is None else shape), (like.dtype if dtype is None else dtype)


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *,
               requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Zeros with the shape and dtype of ``a`` (a constant, even for a tensor ``a``)."""
    return zeros(*_like(a, dtype, shape), requires_grad=requires_grad)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *,
              requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Ones with the shape and dtype of ``a`` (a constant)."""
    return ones(*_like(a, dtype, shape), requires_grad=requires_grad)


def empty_like(a: Any, dtype: Any = None, shape: Any = None, *,
               requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Zeros with the shape and dtype of ``a`` (see ``empty``)."""
    return zeros(*_like(a, dtype, shape), requires_grad=requires_grad)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              requires_grad: bool = False) -> Tensor:  # fmt: skip
    """``fill_value`` with the shape and dtype of ``a``."""
    like_shape, like_dtype = _like(a, dtype, shape)
    return full(like_shape, fill_value, like_dtype, requires_grad=requires_grad)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float, *,  # noqa: N803 - numpy's names
        requires_grad: bool = False) -> Tensor:  # fmt: skip
    """The ``N`` x ``M`` matrix with ones on diagonal ``k``."""
    n, m, k = _static((N, M, k), "eye", "N, M, k")
    return _constant(np.eye(n, m, k, dtype), "eye", requires_grad)


def identity(n: int, dtype: Any = float) -> Tensor:
    """The ``n`` x ``n`` identity matrix."""
    return _constant(np.identity(_static(n, "identity", "n"), dtype), "identity")


def _differentiated(*values: Any) -> bool:
    """Whether any of ``values`` is a float tensor that requires gradients: then
    ``arange`` and ``linspace`` are formulas of it (``start + i * step``)."""
    return any(isinstance(v, Tensor) and v.requires_grad for v in values)


def arange(*args: Any, dtype: Any = None) -> Tensor:
    """numpy's ``arange([start,] stop[, step])``: integers for integer arguments. With a
    float tensor ``start`` or ``step`` that requires gradients, ``start + i * step``
    (numpy's values; ``stop`` sets only the length, so its gradient is 0)."""
    if not _differentiated(*args) or dtype is not None:
        bounds = _static(args, "arange", "start/stop/step")
        return _constant(np.arange(*bounds, dtype=dtype), "arange")
    start, _, step = (0.0, args[0], 1.0) if len(args) == 1 else (*args, 1.0)[:3]
    values = [float(v.numpy()) if isinstance(v, Tensor) else v for v in args]
    count = len(np.arange(*values))
    return start + Tensor(np.arange(count, dtype=float)) * step


def linspace(
    start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
    dtype: Any = None, axis: int = 0,
) -> Any:  # fmt: skip
    """``num`` evenly spaced values from ``start`` to ``stop`` (numpy's ``linspace``;
    with ``retstep``, the pair (values, step)). With float tensor endpoints that require
    gradients, numpy's formula ``start + i * (stop - start) / div`` (the last value
    ``stop`` itself with ``endpoint``), so both endpoints get their gradients."""
    if _differentiated(start, stop) and dtype is None:
        return _linspace_of_tensors(start, stop, _static(num, "linspace", "num"),
                                    endpoint, retstep, axis)  # fmt: skip
    start, stop, num = _static((start, stop, num), "linspace", "start/stop/num")
    values, step = np.linspace(start, stop, num, endpoint, retstep=True, dtype=dtype, axis=axis)
    result = _constant(np.asarray(values), "linspace")
    return (result, step) if retstep else result


def _linspace_of_tensors(
    start: Any, stop: Any, num: int, endpoint: bool, retstep: bool, axis: int
) -> Any:
    """numpy's ``linspace`` as a formula of (broadcast) tensor endpoints: the values along
    a new first axis, then moved to ``axis``."""
    start, stop = array(start) * 1.0, array(stop) * 1.0
    div = num - 1 if endpoint else num
    step = (stop - start) / div if div > 0 else (stop - start) * np.nan
    shape = (num, *np.broadcast_shapes(start.shape, stop.shape))
    steps = Tensor(np.arange(num, dtype=float).reshape((num,) + (1,) * (len(shape) - 1)))
    values = broadcast_to(start + steps * (step if div > 0 else 0.0), shape)
    if endpoint and num > 1:
        values = stack([*(values[i] for i in range(num - 1)), broadcast_to(stop, shape[1:])])
    order = list(range(1, values.ndim))
    order.insert(axis % values.ndim, 0)
    values = values.transpose(order)
    return (values, step) if retstep else values

"""numpy-style functions on ``Tensor``s, lowered to the standard primitives.

Broadcasting follows numpy and is recorded as ``BroadcastInDim`` (only for operands that
require gradients; constants are broadcast by numpy directly). Dtypes are promoted with
numpy's rules (Python scalars are weak); a promoted operand that requires gradients is
converted with a recorded ``Convert``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor, apply1, apply_op, as_tensor
from tidu_compile.ops.base import complex_dtype_of

__all__ = [
    "add", "subtract", "multiply", "divide", "negative", "power", "maximum", "where",
    "compare", "exp", "log", "sin", "cos", "tanh", "sqrt", "sincos", "conj", "real", "imag",
    "sum", "mean", "reshape", "transpose", "broadcast_to", "matmul", "astype",
]  # fmt: skip


# ------------------------------------------------------------------ coercion


def _operand_dtype(value: Any) -> Any:
    """The dtype ``value`` contributes to promotion (Python scalars are weak)."""
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (bool, int, float, complex)):
        return value  # the value, not its type: numpy (NEP 50) keeps only values weak
    return np.asarray(value).dtype


def _float_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _tracked(x: Tensor) -> bool:
    """Whether a layout or dtype change of ``x`` must be recorded as an op.

    Always inside a ``tidu_compile.function`` trace (for float/complex values): a value
    computed from the arguments never requires grad there, yet it must stay in the
    traced graph, or a replay would reuse its trace-time data as a constant.
    """
    return x.requires_grad or (current_capture() is not None and x.dtype.kind in "fc")


def astype(x: Tensor, dtype: Any) -> Tensor:
    """``x`` converted to ``dtype`` (recorded when ``x`` requires gradients)."""
    target = np.dtype(dtype)
    if x.dtype == target:
        return x
    if not _tracked(x) or target.kind not in "fc":
        return Tensor(x.numpy().astype(target))
    source = x.dtype.name
    if x.dtype.kind == "f" and target.kind == "c" and complex_dtype_of(source) != target.name:
        x = apply1(ops.Convert(complex_dtype_of(source), source), x)
        source = x.dtype.name
    return apply1(ops.Convert(target.name, source), x)


def broadcast_to(x: Any, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape`` with numpy's rules."""
    x = as_tensor(x)
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    try:
        np.broadcast_shapes(x.shape, shape)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}") from None
    if len(shape) < x.ndim or np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    if not _tracked(x):
        return Tensor(np.broadcast_to(x.numpy(), shape))
    offset = len(shape) - x.ndim
    dims = tuple(range(offset, len(shape)))
    return apply1(ops.BroadcastInDim(shape, dims, x.shape), x)


def _coerce(*values: Any, float_only: bool = True) -> list[Tensor]:
    """Promote dtypes and broadcast shapes of ``values`` (numpy's rules)."""
    dtype = np.result_type(*(_operand_dtype(v) for v in values))
    if float_only:
        dtype = _float_dtype(dtype)
    tensors = [astype(as_tensor(v) if isinstance(v, Tensor) else _constant(v, dtype), dtype)
               for v in values]  # fmt: skip
    try:
        shape = np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:
        shapes = " ".join(str(t.shape) for t in tensors)
        raise ValueError(f"operands could not be broadcast together with shapes {shapes}") from None
    return [broadcast_to(t, shape) for t in tensors]


def _constant(value: Any, dtype: np.dtype) -> Tensor:
    # A copy: the tape saves this data, so it must not alias the caller's array.
    return Tensor(np.array(value, dtype=dtype, copy=True))


def _unary_input(x: Any) -> Tensor:
    x = as_tensor(x)
    return astype(x, _float_dtype(x.dtype))


# ------------------------------------------------------------------ elementwise


def add(a: Any, b: Any) -> Tensor:
    return apply1(ops.Add(), *_coerce(a, b))


def subtract(a: Any, b: Any) -> Tensor:
    return apply1(ops.Sub(), *_coerce(a, b))


def multiply(a: Any, b: Any) -> Tensor:
    return apply1(ops.Mul(), *_coerce(a, b))


def divide(a: Any, b: Any) -> Tensor:
    return apply1(ops.Div(), *_coerce(a, b))


def maximum(a: Any, b: Any) -> Tensor:
    return apply1(ops.Maximum(), *_coerce(a, b))


def negative(x: Any) -> Tensor:
    return apply1(ops.Neg(), _unary_input(x))


def power(x: Any, exponent: Any) -> Tensor:
    """``x ** exponent`` for a constant (non-tensor) real exponent."""
    if isinstance(exponent, Tensor) or not isinstance(exponent, (int, float, np.number)):
        raise TypeError("power: the exponent must be a Python or numpy real number")
    return apply1(ops.Pow(float(exponent)), _unary_input(x))


def compare(direction: str, a: Any, b: Any) -> Tensor:
    """``a <direction> b`` as a bool tensor (never differentiated)."""
    return apply1(ops.Compare(direction), *_coerce(a, b, float_only=False))


def where(condition: Any, a: Any, b: Any) -> Tensor:
    """``a`` where ``condition`` else ``b``; ``condition`` is a bool array or tensor."""
    cond = as_tensor(condition)
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition has dtype {cond.dtype}, expected bool")
    a_t, b_t = _coerce(a, b)
    try:
        shape = np.broadcast_shapes(cond.shape, a_t.shape)
    except ValueError:
        raise ValueError(
            f"where: condition of shape {cond.shape} cannot be broadcast with {a_t.shape}"
        ) from None
    if cond.shape != shape and current_capture() is not None:
        # Traced: a mask computed from the arguments must stay in the graph. Bool values
        # do not broadcast as ops, so broadcast a 0/1 level and compare it.
        level = where(cond, np.ones(cond.shape), np.zeros(cond.shape))
        cond = compare("gt", broadcast_to(level, shape), 0.5)
    elif cond.shape != shape:
        cond = Tensor(np.broadcast_to(cond.numpy(), shape))
    return apply1(ops.Select(), cond, broadcast_to(a_t, shape), broadcast_to(b_t, shape))


def exp(x: Any) -> Tensor:
    return apply1(ops.Exp(), _unary_input(x))


def log(x: Any) -> Tensor:
    return apply1(ops.Log(), _unary_input(x))


def sin(x: Any) -> Tensor:
    return apply1(ops.Sin(), _unary_input(x))


def cos(x: Any) -> Tensor:
    return apply1(ops.Cos(), _unary_input(x))


def tanh(x: Any) -> Tensor:
    return apply1(ops.Tanh(), _unary_input(x))


def sqrt(x: Any) -> Tensor:
    return apply1(ops.Sqrt(), _unary_input(x))


def sincos(x: Any) -> tuple[Tensor, Tensor]:
    """``(sin(x), cos(x))`` through the two-output primitive."""
    s, c = apply_op(ops.SinCos(), [_unary_input(x)])
    return s, c


def conj(x: Any) -> Tensor:
    x = _unary_input(x)
    return apply1(ops.Conj(), x) if x.dtype.kind == "c" else x


def real(x: Any) -> Tensor:
    x = _unary_input(x)
    return apply1(ops.Real(), x) if x.dtype.kind == "c" else x


def imag(x: Any) -> Tensor:
    x = _unary_input(x)
    if x.dtype.kind == "c":
        return apply1(ops.Imag(), x)
    return Tensor(np.zeros(x.shape, dtype=x.dtype))


# ------------------------------------------------------------------ shapes


def _normalize_axes(axis: Any, ndim: int, name: str = "axis") -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (int, np.integer, tuple, list)):
        raise TypeError(f"{name}: expected None, an int or a tuple of ints, got {axis!r}")
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    normalized = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < ndim:
            raise ValueError(f"{name}: {a!r} is out of range for an array of rank {ndim}")
        normalized.append(int(a) % ndim if ndim else 0)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{name}: repeated axis in {axis!r}")
    return tuple(sorted(normalized))


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Sum over ``axis`` (None: all axes; int or tuple)."""
    x = _unary_input(x)
    axes = _normalize_axes(axis, x.ndim)
    result = apply1(ops.ReduceSum(axes, x.shape), x) if axes else x
    if keepdims:
        kept = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        result = reshape(result, kept)
    return result


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (None: all axes; int or tuple)."""
    x = _unary_input(x)
    axes = _normalize_axes(axis, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    total = sum(x, axis, keepdims)
    return apply1(ops.Scale(1.0 / count if count else math.nan), total)  # numpy: empty -> nan


def reshape(x: Any, shape: Any) -> Tensor:
    """Row-major reshape; one dimension may be -1."""
    x = as_tensor(x)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    try:
        target = np.empty(x.shape, dtype=np.bool_).reshape(shape).shape
    except ValueError:
        raise ValueError(f"reshape: cannot reshape array of shape {x.shape} to {shape}") from None
    if target == x.shape:
        return x
    if not _tracked(x):
        return Tensor(x.numpy().reshape(target))
    return apply1(ops.Reshape(target, x.shape), x)


def transpose(x: Any, axes: Any = None) -> Tensor:
    """Permute dimensions (default: reverse them)."""
    x = as_tensor(x)
    if axes is None:
        perm = tuple(reversed(range(x.ndim)))
    else:
        axes = tuple(axes)
        if any(not isinstance(a, (int, np.integer)) or not -x.ndim <= a < x.ndim for a in axes):
            raise ValueError(f"transpose: axes {axes} out of range for {x.ndim} dims")
        perm = tuple(int(a) % x.ndim for a in axes)
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError(
                f"transpose: axes {tuple(axes)} are not a permutation of {x.ndim} dims"
            )
    if perm == tuple(range(x.ndim)):
        return x
    if not _tracked(x):
        return Tensor(np.transpose(x.numpy(), perm))
    return apply1(ops.Transpose(perm), x)


def matmul(a: Any, b: Any) -> Tensor:
    """numpy's matmul: 1-d operands are vectors, leading dims broadcast as batch dims."""
    a_t, b_t = (as_tensor(a), as_tensor(b))
    if a_t.ndim == 0 or b_t.ndim == 0:
        raise ValueError("matmul: operands must have at least one dimension (use * for scalars)")
    dtype = _float_dtype(np.result_type(a_t.dtype, b_t.dtype))
    a_t, b_t = astype(a_t, dtype), astype(b_t, dtype)
    k_a = a_t.shape[-1]
    k_b = b_t.shape[0] if b_t.ndim == 1 else b_t.shape[-2]
    if k_a != k_b:
        raise ValueError(
            f"matmul: contracted dimensions differ: {a_t.shape} @ {b_t.shape} ({k_a} != {k_b})"
        )
    if a_t.ndim == 1 or b_t.ndim == 1:
        lhs_c = (a_t.ndim - 1,)
        rhs_c = (0,) if b_t.ndim == 1 else (b_t.ndim - 2,)
        op = ops.DotGeneral(lhs_c, rhs_c, (), (), a_t.shape, b_t.shape)
        return apply1(op, a_t, b_t)
    try:
        batch = np.broadcast_shapes(a_t.shape[:-2], b_t.shape[:-2])
    except ValueError:
        raise ValueError(
            f"matmul: batch dimensions do not broadcast: {a_t.shape} @ {b_t.shape}"
        ) from None
    a_t = broadcast_to(a_t, batch + a_t.shape[-2:])
    b_t = broadcast_to(b_t, batch + b_t.shape[-2:])
    nb = len(batch)
    batch_dims = tuple(range(nb))
    op = ops.DotGeneral((nb + 1,), (nb,), batch_dims, batch_dims, a_t.shape, b_t.shape)
    return apply1(op, a_t, b_t)

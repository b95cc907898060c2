"""numpy's dtype promotion and broadcasting for frontend functions.

Broadcasting follows numpy and is recorded as ``BroadcastInDim`` (only for operands that
require gradients, or inside a ``@tc.function`` trace; constants are broadcast by numpy
directly). Dtypes are promoted with numpy's rules (Python scalars are weak); a promoted
operand that requires gradients is converted with a recorded ``Convert``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor, contains_tensor
from tidu_compile.ops.base import complex_dtype_of

__all__ = [
    "astype", "broadcast_to", "coerce", "constant", "float_dtype", "tracked", "unary_input",
]  # fmt: skip


def _operand_dtype(value: Any) -> Any:
    """The dtype ``value`` contributes to promotion (Python scalars are weak)."""
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (bool, int, float, complex)):
        return value  # the value, not its type: numpy (NEP 50) keeps only values weak
    if contains_tensor(value):
        as_tensor(value)  # raises: a list of tensors is not an operand
    return np.asarray(value).dtype


def float_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` if float or complex, else float64 (numpy's result for int inputs)."""
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def tracked(x: Tensor) -> bool:
    """Whether a layout or dtype change of ``x`` must be recorded as an op.

    Always inside a ``tidu_compile.function`` trace for float/complex values, and for
    integer or bool values computed from the arguments (``argmax(x)``, ``any(x > 0)``):
    a value computed from the arguments never requires grad there, yet it must stay in
    the traced graph, or a replay would reuse its trace-time data as a constant.
    """
    if x.requires_grad:
        return True
    capture = current_capture()
    return capture is not None and (x.dtype.kind in "fc" or capture.is_traced(x))


def astype(x: Tensor, dtype: Any) -> Tensor:
    """``x`` converted to ``dtype`` (recorded when ``x`` requires gradients)."""
    target = np.dtype(dtype)
    if x.dtype == target:
        return x
    capture = current_capture()
    if x.dtype == np.bool_ and target.kind in "fc" and capture and capture.is_traced(x):
        # A mask computed from the arguments must stay in the traced graph: 1 where true.
        ones, zeros = Tensor(np.ones(x.shape, target)), Tensor(np.zeros(x.shape, target))
        return apply1(ops.Select(), x, ones, zeros)
    if not tracked(x) or target.kind not in "fc":
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
    if not tracked(x):
        return Tensor(np.broadcast_to(x.numpy(), shape))
    offset = len(shape) - x.ndim
    dims = tuple(range(offset, len(shape)))
    return apply1(ops.BroadcastInDim(shape, dims, x.shape), x)


def coerce(*values: Any, float_only: bool = True) -> list[Tensor]:
    """Promote dtypes and broadcast shapes of ``values`` (numpy's rules)."""
    dtype = np.result_type(*(_operand_dtype(v) for v in values))
    if float_only:
        dtype = float_dtype(dtype)
    tensors = [astype(v if isinstance(v, Tensor) else constant(v, dtype), dtype)
               for v in values]  # fmt: skip
    try:
        shape = np.broadcast_shapes(*(t.shape for t in tensors))
    except ValueError:
        shapes = " ".join(str(t.shape) for t in tensors)
        raise ValueError(f"operands could not be broadcast together with shapes {shapes}") from None
    return [broadcast_to(t, shape) for t in tensors]


def constant(value: Any, dtype: np.dtype) -> Tensor:
    """A constant tensor of ``value`` (a copy: the tape saves this data, so it must not
    alias the caller's array)."""
    return Tensor(np.array(value, dtype=dtype, copy=True))


def unary_input(x: Any) -> Tensor:
    """``x`` as a float or complex tensor (ints and bools become float64, as numpy)."""
    x = as_tensor(x)
    return astype(x, float_dtype(x.dtype))

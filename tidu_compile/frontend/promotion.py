"""numpy's dtype promotion and broadcasting for frontend functions.

Broadcasting follows numpy and is recorded as ``BroadcastInDim`` (only for operands that
require gradients, or inside a ``@tc.function`` trace; constants are broadcast by numpy
directly). Dtypes are promoted with numpy's rules (numpy 2: Python scalars are weak, so
``int32 + 1`` is int32 and ``int64 + 2.5`` float64); a promoted operand that requires
gradients (or is traced) is converted with a recorded ``Convert``. An op computes in the
promoted dtype where it has a loop for it (``computes_in``): integers and bool stay
exact for ``+ - *``, ``//``, ``%``, ``maximum``, comparisons and ``where``, and become
float64 for the functions that numpy computes in floating point (``/``, ``exp``...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor, contains_tensor
from tidu_compile.ops.base import INTEGER_DTYPES, TensorOp

__all__ = [
    "accumulated", "astype", "broadcast_to", "coerce", "computes_in", "constant",
    "float_dtype", "keep", "tracked", "unary_input",
]  # fmt: skip


def _operand_dtype(value: Any) -> Any:
    """The dtype ``value`` contributes to promotion (Python scalars are weak)."""
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (bool, int, float, complex)):
        return value  # the value, not its type: numpy (NEP 50) keeps only values weak
    if contains_tensor(value):
        return as_tensor(value).dtype
    return np.asarray(value).dtype


def float_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` if float or complex, else float64 (numpy's result for int inputs)."""
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def contraction_dtype(*dtypes: np.dtype) -> np.dtype:
    """The dtype a contraction (``matmul``, ``dot``, ``tensordot``...) of operands of
    ``dtypes`` computes in: numpy's result type, exact for integers (``int64 @ int64`` is
    int64) and bools (an or of ands, as numpy's)."""
    dtype = np.result_type(*dtypes)
    return dtype if dtype.kind in "iub" else float_dtype(dtype)


def keep(dtype: np.dtype) -> np.dtype:
    """``dtype`` itself: for ops with a loop for every dtype (``compare``, ``where``)."""
    return dtype


def computes_in(op: type[TensorOp], dtype: np.dtype) -> np.dtype:
    """The dtype the elementwise ``op`` computes in for operands of numpy's result type
    ``dtype``: ``dtype`` where ``op`` has a loop for it (``op.allowed_dtypes``); for
    bool operands of an op with integer loops only, its ``bool_as`` (numpy's int8 of
    ``floor_divide``, ``mod``, ``power``), or a ``TypeError`` where numpy has none
    (``subtract``, ``negative``, ``sign``); else float64, as numpy computes ``exp`` or
    ``/`` of integers."""
    allowed = op.allowed_dtypes  # type: ignore[attr-defined]
    if dtype.name in allowed:
        return dtype
    if dtype == np.bool_ and any(d in allowed for d in INTEGER_DTYPES):
        bool_as = getattr(op, "bool_as", None)
        if bool_as is None:
            raise TypeError(
                f"{op.__name__}: numpy has no loop for bool operands (use logical_xor or "
                "logical_not, or convert with astype)"
            )
        return np.dtype(bool_as)
    return float_dtype(dtype)


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
    """``x`` converted to ``dtype``, as numpy's ``astype`` (recorded when ``x`` requires
    gradients or is traced; only float and complex results carry a gradient). To bool
    it is ``x != 0``; recorded from complex to a real or integer dtype it is refused (use
    ``real``)."""
    target = np.dtype(dtype)
    if x.dtype == target:
        return x
    if not tracked(x):
        return Tensor(x.numpy().astype(target))
    if x.dtype.kind == "c" and target.kind != "c":
        raise TypeError(
            f"astype: converting {x.dtype} to {target} would drop the imaginary part; "
            "take real(x) first"
        )
    if target == np.bool_:
        return apply1(ops.Compare("ne"), x, Tensor(np.zeros(x.shape, x.dtype)))
    source = x.dtype.name
    if x.dtype.kind != "c" and target.kind == "c":  # through the real of its precision
        real = np.dtype(np.float32 if target == np.complex64 else np.float64)
        x = astype(x, real)
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


def coerce(
    *values: Any, computes: Callable[[np.dtype], np.dtype] = float_dtype
) -> list[Tensor]:
    """Promote dtypes and broadcast shapes of ``values`` (numpy's rules); the promoted
    dtype goes through ``computes`` (the dtype the op computes in: float64 for integers
    by default, ``keep`` for ops of every dtype, ``computes_in`` of an op)."""
    values = tuple(as_tensor(v) if contains_tensor(v) else v for v in values)
    dtype = computes(np.result_type(*(_operand_dtype(v) for v in values)))
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


def accumulated(x: Any) -> Tensor:
    """``x`` in the dtype numpy's ``sum``, ``prod``, ``cumsum`` and ``cumprod`` accumulate
    in: bool and signed integers as int64, unsigned ones as uint64 (exact, wrapping),
    floats and complex as they are."""
    x = as_tensor(x)
    kind = x.dtype.kind
    if kind in "bi":
        return astype(x, np.int64)
    return astype(x, np.uint64) if kind == "u" else x


def unary_input(x: Any, op: type[TensorOp] | None = None) -> Tensor:
    """``x`` in the dtype ``op`` computes in (``computes_in``); without ``op`` as a float
    or complex tensor (ints and bools become float64, as numpy)."""
    x = as_tensor(x)
    return astype(x, float_dtype(x.dtype) if op is None else computes_in(op, x.dtype))

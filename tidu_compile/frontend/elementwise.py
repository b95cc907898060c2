"""Elementwise frontend functions: generated from the op table, plus the special ones.

Every elementwise primitive with ``numpy_names`` gets its functions here, made from
the table (``ops.OP_TABLE``): a unary op takes anything array-like, a binary op
promotes and broadcasts its operands with numpy's rules; both compute in the dtype the
op has a loop for (``promotion.computes_in``: integers stay exact for ``negative``,
``abs``, ``add``, ``floor_divide``... and become float64 for ``exp``, ``divide``...).
``exp = unary_function(ops.Exp)`` is, as if written::

    def exp(x):
        \"\"\"``exp(x)``, elementwise (the primitive ``Exp``).\"\"\"
        return apply1(ops.Exp(), unary_input(x, ops.Exp))

Functions with parameters or special rules (``power``, ``where``, ``compare``,
``conj``, ``real``, ``imag``, ``sincos``) are written below by hand; formulas of
these (``abs``, ``clip``, ``sign``, ...) are in ``formulas``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend import fast_ops
from tidu_compile.frontend.fast_ops import SPECS
from tidu_compile.frontend.promotion import (
    astype,
    broadcast_to,
    coerce,
    computes_in,
    keep,
    unary_input,
)
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor, apply1, apply_op, as_tensor
from tidu_compile.ops import OP_TABLE, Elementwise, TensorOp, Unary

UnaryFunction = Callable[[Any], Tensor]
BinaryFunction = Callable[[Any, Any], Tensor]


def _summary(primitive: type[TensorOp]) -> str:
    return (primitive.__doc__ or "").strip().splitlines()[0]


def unary(primitive: type[TensorOp], x: Any) -> Tensor:
    """``primitive()`` applied to ``x`` as a float or complex tensor (``fast_ops`` first)."""
    fast = fast_ops.unary(primitive, x)
    return fast if fast is not None else apply1(primitive(), unary_input(x, primitive))


def binary(primitive: type[TensorOp], a: Any, b: Any) -> Tensor:
    """``primitive()`` applied to ``a`` and ``b``, promoted and broadcast as numpy does
    (``fast_ops`` first)."""
    fast = fast_ops.binary(primitive, a, b)
    return fast if fast is not None else apply1(primitive(), *promoted(primitive, a, b))


def promoted(primitive: type[TensorOp], a: Any, b: Any) -> list[Tensor]:
    """``a`` and ``b`` promoted (numpy's rules) to the dtype ``primitive`` computes in,
    and broadcast."""
    return coerce(a, b, computes=lambda dtype: computes_in(primitive, dtype))


F = TypeVar("F", bound=Callable[..., Any])


def _published(function: F, name: str, doc: str) -> F:
    """``function`` named ``name`` in this module (as the README's function list reads
    it), with ``doc``."""
    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__
    function.__doc__ = doc
    return function


def unary_function(primitive: type[TensorOp], name: str) -> UnaryFunction:
    """The frontend function ``name(x)`` of a unary elementwise primitive: ``fast_ops``'
    path made for it, else (and for ops it does not handle) the general one."""

    def general(x: Any) -> Tensor:
        return apply1(primitive(), unary_input(x, primitive))

    function = fast_ops.fast_unary(primitive, general) if primitive in SPECS else general
    return _published(function, name, f"``{name}(x)``, elementwise as in numpy. The "
                      f"primitive ``{primitive.__name__}``: {_summary(primitive)}")  # fmt: skip


def binary_function(primitive: type[TensorOp], name: str) -> BinaryFunction:
    """The frontend function ``name(a, b)`` of a binary elementwise primitive, as
    ``unary_function``."""

    def general(a: Any, b: Any) -> Tensor:
        return apply1(primitive(), *promoted(primitive, a, b))

    function = fast_ops.fast_binary(primitive, general) if primitive in SPECS else general
    return _published(function, name, f"``{name}(a, b)``, elementwise with numpy's promotion "
                      f"and broadcasting. The primitive ``{primitive.__name__}``: "
                      f"{_summary(primitive)}")  # fmt: skip


def _table_functions() -> dict[str, Callable[..., Tensor]]:
    functions: dict[str, Callable[..., Tensor]] = {}
    for primitive in OP_TABLE.values():
        for name in primitive.numpy_names:
            if issubclass(primitive, Unary) or (
                issubclass(primitive, Elementwise) and primitive.input_count == 1
            ):
                functions[name] = unary_function(primitive, name)
            elif issubclass(primitive, Elementwise) and primitive.input_count == 2:
                functions[name] = binary_function(primitive, name)
            else:
                raise TypeError(
                    f"{primitive.__name__}.numpy_names: only unary and binary elementwise "
                    "primitives get generated functions; write this one by hand"
                )
    return functions


#: The functions generated from the op table, by name (all also module attributes).
TABLE_FUNCTIONS: dict[str, Callable[..., Tensor]] = _table_functions()
globals().update(TABLE_FUNCTIONS)


# ------------------------------------------------------------------ by hand


def power(x: Any, exponent: Any) -> Tensor:
    """``x ** exponent``, numpy's promotion and broadcasting. A constant real exponent (a
    Python or numpy number) is the op ``Pow`` (small integers become multiplications);
    on integer or bool ``x`` an integer exponent keeps it exact (numpy's dtype; a
    negative one is numpy's ``ValueError``). Any other exponent (a tensor, an array, a
    complex number) is ``Power``, differentiable in both operands (``2 ** x`` is
    ``power(2, x)``)."""
    fast = fast_ops.power_by_number(x, exponent)  # a float tensor ** a Python number
    if fast is not None:
        return fast
    real_number = isinstance(exponent, (int, float, np.integer, np.floating))
    if real_number and not isinstance(exponent, bool):
        base = as_tensor(x)
        if base.dtype.kind in "biu" and isinstance(exponent, (int, np.integer)):
            dtype = np.result_type(base.dtype, exponent)
            if _out_of_range(base.dtype, exponent):  # numpy's error, before the sign's
                raise OverflowError(f"Python integer {exponent} out of bounds for {base.dtype}")
            if exponent < 0:
                raise ValueError("power: integers to negative integer powers are not allowed")
            if float(exponent) != exponent:  # beyond 2**53: an exact tensor exponent
                return binary(ops.Power, base, exponent)
            return apply1(ops.Pow(float(exponent)), astype(base, dtype))
        return apply1(ops.Pow(float(exponent)), unary_input(base))
    return binary(ops.Power, x, exponent)


def compare(direction: str, a: Any, b: Any) -> Tensor:
    """``a <direction> b`` as a bool tensor (never differentiated). A Python integer out
    of the range of the other operand's integer dtype compares exactly, as in numpy 2
    (``int8_tensor == 300`` is all False)."""
    for tensor, number, flipped in ((a, b, False), (b, a, True)):
        if isinstance(tensor, Tensor) and _out_of_range(tensor.dtype, number):
            above = number > 0  # the number is above (or below) every value of the tensor
            asked = _FLIPPED[direction] if flipped else direction
            truth = {"lt": above, "le": above, "gt": not above, "ge": not above,
                     "eq": False, "ne": True}[asked]  # fmt: skip
            return Tensor(np.full(tensor.shape, truth))
    return apply1(ops.Compare(direction), *coerce(a, b, computes=keep))


#: ``b <d> a`` is ``a <_FLIPPED[d]> b``.
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _out_of_range(dtype: np.dtype, number: Any) -> bool:
    """Whether ``number`` is a Python integer that ``dtype``, an integer dtype, cannot hold."""
    if type(number) is not int or dtype.kind not in "iu":
        return False
    info = np.iinfo(dtype)
    return not info.min <= number <= info.max


def where(condition: Any, a: Any, b: Any) -> Tensor:
    """``a`` where ``condition`` else ``b``; ``condition`` is a bool array or tensor."""
    cond = as_tensor(condition)
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition has dtype {cond.dtype}, expected bool")
    a_t, b_t = coerce(a, b, computes=keep)
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


def sincos(x: Any) -> tuple[Tensor, Tensor]:
    """``(sin(x), cos(x))`` through the two-output primitive."""
    s, c = apply_op(ops.SinCos(), [unary_input(x)])
    return s, c


def conj(x: Any) -> Tensor:
    """The complex conjugate: ``x`` itself, of its dtype, for real and integer values;
    for bools numpy's ``conjugate`` has no loop and gives int8."""
    x = as_tensor(x)
    if x.dtype.kind == "b":
        return astype(x, np.int8)
    return apply1(ops.Conj(), x) if x.dtype.kind == "c" else x


def real(x: Any) -> Tensor:
    """The real part (``x`` itself for real, integer and bool values)."""
    x = as_tensor(x)
    return apply1(ops.Real(), x) if x.dtype.kind == "c" else x


def imag(x: Any) -> Tensor:
    """The imaginary part (zeros of ``x``'s dtype for real, integer and bool values)."""
    x = as_tensor(x)
    if x.dtype.kind == "c":
        return apply1(ops.Imag(), x)
    return Tensor(np.zeros(x.shape, dtype=x.dtype))


__all__ = [
    *TABLE_FUNCTIONS, "binary", "compare", "conj", "imag", "power", "real", "sincos",
    "unary", "where",
]  # fmt: skip

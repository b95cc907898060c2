"""Elementwise numpy functions written as formulas of other functions: parameters,
complex cases, or an exact formula of primitives (so their gradients follow from the
primitives').

=============  ===============================================================
function       formula
=============  ===============================================================
absolute/abs   ``Abs``; complex: ``hypot(Re z, Im z)`` (real; gradient 0 at 0)
sign           ``Sign``; complex: ``z / |z|``, 0 at 0 (numpy 2)
clip           ``minimum(maximum(x, a_min), a_max)``: ties at a bound share the
               tangent, as for maximum
square         ``x * x``
reciprocal     ``1 / x``
round          ``rint`` (decimals = 0), else ``rint(x * 10^d) / 10^d`` (numpy's)
nan_to_num     selects of NaN, +inf, -inf (parts of a complex value separately)
angle          ``arctan2(Im z, Re z)`` (in degrees with ``deg=True``)
sinc           ``sin(y) / y``, ``y = pi * where(x == 0, 1e-20, x)`` (numpy's)
=============  ===============================================================

Like numpy's, they take tensors, arrays or numbers; integer inputs stay integers for
``abs``, ``sign``, ``clip``, ``square`` and ``round``, and become float64 elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.elementwise import binary, compare, imag, real, where
from tidu_compile.frontend.promotion import astype, unary_input
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor


def absolute(x: Any) -> Tensor:
    """``|x|`` elementwise; a complex ``x`` gives its real modulus. ``abs'(0) = 0``."""
    x = unary_input(x, ops.Abs)
    if x.dtype.kind == "c":
        return binary(ops.Hypot, real(x), imag(x))
    return apply1(ops.Abs(), x)


abs = absolute  # noqa: A001 - numpy's name


def sign(x: Any) -> Tensor:
    """-1, 0 or 1 by the sign of ``x`` (not differentiable); for complex ``x``,
    ``x / |x|`` (0 at 0), which is."""
    x = unary_input(x, ops.Sign)
    if x.dtype.kind != "c":
        return apply1(ops.Sign(), x)
    modulus = absolute(x)
    at_zero = compare("eq", modulus, 0.0)
    return where(at_zero, 0.0, x / where(at_zero, 1.0, modulus))


def clip(x: Any, a_min: Any = None, a_max: Any = None) -> Tensor:
    """``x`` limited to ``[a_min, a_max]`` (either may be None; bounds broadcast and may
    be tensors). At a bound the tangent is shared with the bound, as for ``maximum``."""
    result = as_tensor(x)
    if result.dtype.kind == "c":
        raise TypeError("clip: complex values are not ordered")
    if a_min is not None:
        result = binary(ops.Maximum, result, a_min)
    if a_max is not None:
        result = binary(ops.Minimum, result, a_max)
    return result


def square(x: Any) -> Tensor:
    """``x * x`` (bool: int8, as numpy)."""
    x = as_tensor(x)
    x = astype(x, np.int8) if x.dtype == np.bool_ else x
    return binary(ops.Mul, x, x)


def reciprocal(x: Any) -> Tensor:
    """``1 / x``."""
    return binary(ops.Div, 1.0, unary_input(x))


def round(x: Any, decimals: int = 0) -> Tensor:  # noqa: A001 - numpy's name
    """``x`` rounded to ``decimals`` decimals, halves to even (numpy's ``round``); not
    differentiable. Integers with ``decimals >= 0`` are themselves (numpy's)."""
    x = as_tensor(x)
    if x.dtype.kind in "iu" and decimals >= 0:
        return x
    x = unary_input(x)
    if x.dtype.kind == "c":
        raise TypeError("round: complex values are not supported")
    if decimals == 0:
        return apply1(ops.Round(), x)
    if decimals > 0:
        factor = 10.0**decimals
        return apply1(ops.Round(), x * factor) / factor
    factor = 10.0**-decimals
    return apply1(ops.Round(), x / factor) * factor


def nan_to_num(
    x: Any, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
    neginf: float | None = None,
) -> Tensor:
    """NaN replaced by ``nan``, infinities by ``posinf``/``neginf`` (default: the
    largest finite values of the dtype); complex parts separately. ``copy`` is accepted
    for numpy's signature (tensors are immutable)."""
    x = unary_input(x)
    if x.dtype.kind == "c":
        re = nan_to_num(real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return re + im * 1j
    largest = float(np.finfo(x.dtype).max)
    result = where(compare("ne", x, x), nan, x)
    result = where(compare("eq", x, np.inf), largest if posinf is None else posinf, result)
    return where(compare("eq", x, -np.inf), -largest if neginf is None else neginf, result)


def angle(z: Any, deg: bool = False) -> Tensor:
    """The argument of ``z``: ``arctan2(Im z, Re z)`` (0 or pi for real values), in
    radians or, with ``deg``, degrees. Its gradient at 0 is 0."""
    z = unary_input(z)
    result = binary(ops.Arctan2, imag(z), real(z))
    return result * (180.0 / np.pi) if deg else result


def sinc(x: Any) -> Tensor:
    """``sin(pi x) / (pi x)``, 1 at 0 (numpy's formula); ``sinc'(0) = 0``."""
    x = unary_input(x)
    y = where(compare("eq", x, 0.0), 1.0e-20, x) * np.pi
    return binary(ops.Div, apply1(ops.Sin(), y), y)


__all__ = [
    "abs", "absolute", "angle", "clip", "nan_to_num", "reciprocal", "round", "sign", "sinc",
    "square",
]  # fmt: skip

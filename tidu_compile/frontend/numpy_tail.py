"""The long tail of numpy's names, as formulas of the other frontend functions.

==============  ===========================================================================
function        formula
==============  ===========================================================================
deg2rad         ``x * (pi / 180)`` (numpy's constant); ``radians`` is the same function
rad2deg         ``x * (180 / pi)``; ``degrees`` is the same function
fabs            ``abs(x)`` of real values (numpy's ``fabs`` refuses complex ones)
real_if_close   ``real(a)`` when every ``|imag(a)| < tol * eps`` (``tol`` <= 1: absolute),
                else ``a``; the test reads the values (a ``TracedValueError`` in a trace)
select          ``where(c_0, v_0, where(c_1, v_1, ... default))``: the first true wins
gradient        numpy's second-order central differences ``(f[i+1] - f[i-1]) / 2h`` inside,
                one-sided first differences at the edges (``edge_order=1``); scalar
                spacings; one array per axis (a list for several)
argsort         the stable permutation (``Argsort``, recorded in traces), no gradient;
                complex values lexicographically (real part, then imaginary), as numpy
partition       numpy's ``argpartition`` permutation gathered (``take_along_axis``); in a
                trace, where the values are unknown, a full sort (also a partition)
fliplr, flipud  ``flip(m, 1)``, ``flip(m, 0)``
rot90           numpy's ``flip`` and ``transpose`` of the two ``axes``
rollaxis        ``transpose``, numpy's axis order
row_stack       ``vstack``; ``dsplit`` is ``split`` along axis 2
allclose        numpy's ``allclose`` / ``array_equal`` of the values: a Python bool, no
                gradient (reading values: a ``TracedValueError`` in a trace)
make_diagonal   autograd's own name (numpy has none): ``D[..., :, None] * eye(n)``, the
                last axis of ``D`` on the diagonal of new last two axes (autograd takes
                only ``offset=0, axis1=-1, axis2=-2``, and so do we)
==============  ===========================================================================
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.arrays import flip
from tidu_compile.frontend.elementwise import imag, real, where
from tidu_compile.frontend.formulas import absolute
from tidu_compile.frontend.gather import take_along_axis
from tidu_compile.frontend.joining import concatenate, split, vstack
from tidu_compile.frontend.promotion import astype, tracked, unary_input
from tidu_compile.frontend.shapes import expand_dims, reshape, transpose
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = [
    "allclose", "argsort", "array_equal", "deg2rad", "degrees", "dsplit", "fabs", "fliplr",
    "flipud", "gradient", "make_diagonal", "partition", "rad2deg", "radians", "real_if_close",
    "rollaxis", "rot90", "row_stack", "select",
]  # fmt: skip


def deg2rad(x: Any) -> Tensor:
    """Degrees to radians, ``x * (pi / 180)``."""
    return apply1(ops.Scale(math.pi / 180.0), _real_input(x, "deg2rad"))


def rad2deg(x: Any) -> Tensor:
    """Radians to degrees, ``x * (180 / pi)``."""
    return apply1(ops.Scale(180.0 / math.pi), _real_input(x, "rad2deg"))


radians, degrees = deg2rad, rad2deg


def _real_input(x: Any, name: str) -> Tensor:
    x = unary_input(x)
    if x.dtype.kind == "c":
        raise TypeError(f"{name}: numpy has no loop for complex values")
    return x


def fabs(x: Any) -> Tensor:
    """``|x|`` of real values (``abs'(0) = 0``)."""
    return absolute(_real_input(x, "fabs"))


def real_if_close(a: Any, tol: float = 100) -> Tensor:
    """``real(a)`` when the imaginary parts are all within ``tol`` machine epsilons of 0
    (``tol`` <= 1: an absolute bound), else ``a`` (numpy's ``real_if_close``)."""
    a = as_tensor(a)
    if a.dtype.kind != "c":
        return a
    bound = tol * np.finfo(a.dtype).eps if tol > 1 else tol
    if np.all(np.abs(imag(a)._concrete("real_if_close")) < bound):
        return real(a)
    return a


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Tensor:
    """The value of the first choice whose condition holds, else ``default`` (numpy's
    ``select``): nested ``where``s, the last condition innermost."""
    conditions, choices = list(condlist), list(choicelist)
    if len(conditions) != len(choices):
        raise ValueError("select: list of cases must be same length as list of conditions")
    result = as_tensor(default)
    for condition, choice in reversed(list(zip(conditions, choices, strict=True))):
        condition = as_tensor(condition)
        if condition.dtype != np.bool_:
            raise TypeError(f"select: invalid entry in condlist: should be boolean ndarray, "
                            f"got {condition.dtype}")  # fmt: skip
        result = where(condition, choice, result)
    return result


def _differences(f: Tensor, axis: int, spacing: float) -> Tensor:
    """numpy's ``gradient`` along one axis (``edge_order=1``) for a uniform spacing."""
    n = f.shape[axis]
    if n < 2:
        raise ValueError("gradient: shape of the array too small to calculate a numerical "
                         "gradient, at least (edge_order + 1) elements are required")  # fmt: skip

    def part(start: int, stop: int) -> Tensor:
        key = [slice(None)] * f.ndim
        key[axis] = slice(start, stop)
        return f[tuple(key)]

    inner = (part(2, n) - part(0, n - 2)) / (2.0 * spacing)
    first = (part(1, 2) - part(0, 1)) / spacing
    last = (part(n - 1, n) - part(n - 2, n - 1)) / spacing
    return concatenate([first, inner, last], axis=axis)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """numpy's ``gradient`` with scalar spacings: one tensor per axis of ``axis`` (all
    axes when None), a list when there are several."""
    f = unary_input(f)
    if edge_order != 1:
        raise TypeError("gradient: only edge_order=1 is differentiable here")
    axes = tuple(range(f.ndim)) if axis is None else (axis,) if np.ndim(axis) == 0 else axis
    axes = tuple(int(a) % f.ndim for a in axes)
    spacings = list(varargs) if len(varargs) > 1 else [varargs[0] if varargs else 1.0] * len(axes)
    if len(spacings) != len(axes) or any(np.ndim(h) != 0 for h in spacings):
        raise TypeError("gradient: give one scalar spacing, or one per axis")
    results = [_differences(f, a, float(h)) for a, h in zip(axes, spacings, strict=True)]
    return results[0] if len(results) == 1 else results


def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None) -> Tensor:
    """The stable sorting permutation along ``axis`` (None: of the flattened array), an
    int64 tensor without gradient; complex values in numpy's lexicographic order."""
    if order is not None:
        raise TypeError("argsort: order= (structured arrays) is not supported")
    x = as_tensor(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    axis = int(axis) % max(x.ndim, 1)
    if x.ndim == 0:
        return Tensor(np.zeros((), np.int64))
    if not tracked(x):
        return Tensor(np.argsort(x.numpy(), axis=axis, kind="stable").astype(np.int64))
    if x.dtype.kind == "c":  # stable sorts: by the imaginary part, then by the real part
        by_imag = apply1(ops.Argsort(axis), imag(x))
        by_real = apply1(ops.Argsort(axis), take_along_axis(real(x), by_imag, axis))
        return take_along_axis(by_imag, by_real, axis)
    return apply1(ops.Argsort(axis), astype(x, np.float64) if x.dtype.kind != "f" else x)


def partition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect") -> Tensor:
    """numpy's ``partition``: the ``kth`` element in its sorted place, smaller ones
    before it, larger after (numpy's own arrangement; the gradient goes back through
    the permutation)."""
    x = as_tensor(a)
    if axis is None:
        x, axis = reshape(x, (x.size,)), 0
    if current_capture() is not None:
        return take_along_axis(x, argsort(x, axis), axis)
    permutation = np.argpartition(x.numpy(), kth, axis=axis, kind=kind).astype(np.int64)
    return take_along_axis(x, Tensor(permutation), axis)


def fliplr(m: Any) -> Tensor:
    """``m`` with its columns reversed (axis 1)."""
    return flip(m, 1)


def flipud(m: Any) -> Tensor:
    """``m`` with its rows reversed (axis 0)."""
    return flip(m, 0)


def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Tensor:
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (numpy's)."""
    m = as_tensor(m)
    first, second = (int(a) % m.ndim for a in axes)
    if first == second or len(axes) != 2:
        raise ValueError("rot90: axes must be two different axes")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, first), second)
    order = list(range(m.ndim))
    order[first], order[second] = order[second], order[first]
    return transpose(flip(m, second), order) if k == 1 else flip(transpose(m, order), second)


def rollaxis(a: Any, axis: int, start: int = 0) -> Tensor:
    """``a`` with ``axis`` moved to before position ``start`` (numpy's ``rollaxis``)."""
    a = as_tensor(a)
    n = a.ndim
    axis = int(axis) % n
    start = int(start) + n if start < 0 else int(start)
    if not 0 <= start <= n:
        raise np.exceptions.AxisError(f"rollaxis: start {start} is out of range for {n} dims")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = [d for d in range(n) if d != axis]
    order.insert(start, axis)
    return transpose(a, order)


def row_stack(tup: Any) -> Tensor:
    """``vstack`` (numpy's older name)."""
    return vstack(tup)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Tensor]:
    """``split`` along the third axis (arrays of 3 or more dimensions)."""
    ary = as_tensor(ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def make_diagonal(D: Any, offset: int = 0, axis1: int = -1, axis2: int = -2) -> Tensor:  # noqa: N803 - autograd's name
    """autograd's ``make_diagonal``: an array of shape ``D.shape + D.shape[-1:]`` whose
    last two axes hold ``D``'s last axis on their diagonal, zeros elsewhere."""
    if (offset, axis1, axis2) != (0, -1, -2):
        raise NotImplementedError(
            "make_diagonal: only offset=0, axis1=-1, axis2=-2 (as autograd's make_diagonal)"
        )
    d = as_tensor(D)
    if d.ndim == 0:
        raise ValueError("make_diagonal: D must have at least one dimension")
    eye = np.eye(d.shape[-1], dtype=np.result_type(d.dtype, np.float32))
    return expand_dims(d, -1) * Tensor(eye)


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:  # fmt: skip
    """numpy's ``allclose`` of the values of ``a`` and ``b``."""
    return bool(np.allclose(as_tensor(a).numpy(), as_tensor(b).numpy(), rtol, atol, equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """numpy's ``array_equal`` of the values of ``a1`` and ``a2``."""
    return bool(np.array_equal(as_tensor(a1).numpy(), as_tensor(a2).numpy(), equal_nan))

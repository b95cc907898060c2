"""Reductions with numpy's ``axis`` (None, an int or a tuple) and ``keepdims``.

==============  ===================================================================
function        primitive (``ops.structural``, ``ops.reductions``)
==============  ===================================================================
sum, mean       ``ReduceSum`` (mean scaled by 1 / count; NaN over nothing)
max/amax        ``ReduceMax``: NaN propagates, ties share the gradient equally;
min/amin        ``ReduceMin``; over no elements a ``ValueError``, as numpy
prod            ``ReduceProd``: exact gradient at zeros (``ops.reductions``)
argmax, argmin  ``Argmax``, ``Argmin``: int64 indices, no gradient (``axis=None``
                indexes the flattened array)
any, all        ``ReduceMax``, ``ReduceMin`` of ``x != 0`` (bool results; False and
                True over no elements)
==============  ===================================================================

Integer and bool inputs stay exact, in numpy's dtypes: ``sum`` and ``prod`` accumulate
bool and signed integers in int64, unsigned ones in uint64; ``max`` and ``min`` keep
the dtype (bool stays bool, also for ``any`` and ``all``); ``mean`` is float64.
Complex values have no order: ``max``, ``min``, ``argmax`` and ``argmin`` refuse them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend import fast_ops
from tidu_compile.frontend.elementwise import compare, where
from tidu_compile.frontend.promotion import accumulated, unary_input
from tidu_compile.frontend.shapes import reshape
from tidu_compile.frontend.tensor import Tensor, apply1, as_tensor

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "max", "mean", "min", "normalize_axes",
    "prod", "sum",
]  # fmt: skip


def normalize_axes(axis: Any, ndim: int, name: str = "axis") -> tuple[int, ...]:
    """numpy's ``axis`` argument (None, an int or a tuple; negative counts from the end)
    as sorted non-negative axes; out-of-range or repeated axes are errors."""
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


def keep_dims(result: Tensor, shape: tuple[int, ...], axes: tuple[int, ...]) -> Tensor:
    """``result`` (reduced over ``axes`` of ``shape``) with those axes back as size 1."""
    return reshape(result, tuple(1 if d in axes else s for d, s in enumerate(shape)))


def reduced_count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    """How many elements each result element of a reduction over ``axes`` combines."""
    return math.prod(shape[a] for a in axes)


def _reduce(op: type[ops.Reduction], x: Tensor, axis: Any, keepdims: bool) -> Tensor:
    axes = normalize_axes(axis, x.ndim)
    result = apply1(op(axes, x.shape), x) if axes else x
    return keep_dims(result, x.shape, axes) if keepdims else result


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Sum over ``axis`` (None: all axes; int or tuple); integers and bool exactly, in
    int64 (uint64 for unsigned ones), as numpy."""
    if axis is None and not keepdims:  # a float tensor's total: the fast path's
        fast = fast_ops.sum_all(x)
        if fast is not None:
            return fast
    return _reduce(ops.ReduceSum, accumulated(x), axis, keepdims)


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (None: all axes; int or tuple)."""
    x = unary_input(x)
    count = reduced_count(x.shape, normalize_axes(axis, x.ndim))
    total = sum(x, axis, keepdims)
    return apply1(ops.Scale(1.0 / count if count else math.nan), total)  # numpy: empty -> nan


def _ordered_input(name: str, x: Any) -> Tensor:
    """``x`` as a real, integer or bool tensor (complex values have no order)."""
    x = as_tensor(x)
    if x.dtype.kind == "c":
        raise TypeError(f"{name}: complex values are not ordered")
    return x


def _extremum(name: str, op: type[ops.Reduction], x: Any, axis: Any, keepdims: bool) -> Tensor:
    x = as_tensor(x)
    if x.dtype.kind == "c":
        return _complex_extremum(name, op, x, axis, keepdims)
    axes = normalize_axes(axis, x.ndim)
    kept = [s for d, s in enumerate(x.shape) if d not in axes]
    if reduced_count(x.shape, axes) == 0 and math.prod(kept) > 0:
        raise ValueError(
            f"{name}: zero-size array of shape {x.shape} to reduction over axes {axes}, "
            "which has no identity (numpy's error)"
        )
    return _reduce(op, x, axis, keepdims)


def _complex_extremum(
    name: str, op: type[ops.Reduction], x: Tensor, axis: Any, keepdims: bool
) -> Tensor:
    """numpy's order of complex values (lexicographic: the real part, then the
    imaginary part) as formulas: ``m = max(Re x)``, then the extremal ``Im x`` among the
    elements whose real part is ``m``; the result is the mean of the elements equal to
    both (ties share the gradient equally)."""
    real_part = apply1(ops.Real(), x)
    imag_part = apply1(ops.Imag(), x)
    best_real = _extremum(name, op, real_part, axis, True)
    on_best = compare("eq", real_part, best_real)
    worst = -np.inf if op is ops.ReduceMax else np.inf
    candidates = where(on_best, imag_part, worst)
    best_imag = _extremum(name, op, candidates, axis, True)
    chosen = on_best * compare("eq", imag_part, best_imag)  # and, on bools
    picked = sum(where(chosen, x, 0.0), axis, keepdims)
    return picked / sum(chosen, axis, keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Maximum over ``axis``: NaN if a NaN is in the slice; ties share the gradient
    equally (JAX's convention); an empty slice is a ``ValueError``."""
    return _extremum("max", ops.ReduceMax, x, axis, keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Minimum over ``axis``: NaN if a NaN is in the slice; ties share the gradient
    equally; an empty slice is a ``ValueError``."""
    return _extremum("min", ops.ReduceMin, x, axis, keepdims)


amax, amin = max, min


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Product over ``axis`` (1 over no elements); the gradient is the product of the
    other elements, exact at zeros. Integers and bool exactly, as ``sum``."""
    return _reduce(ops.ReduceProd, accumulated(x), axis, keepdims)


def _arg_extremum(
    name: str, op: type[ops.Argmax | ops.Argmin], x: Any, axis: Any, keepdims: bool
) -> Tensor:
    x = _ordered_input(name, x)
    if axis is None:
        flat = reshape(x, (x.size,)) if x.ndim != 1 else x
        result = apply1(op(0), flat)
        return reshape(result, (1,) * x.ndim) if keepdims else result
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be None or an int, got {axis!r}")
    (a,) = normalize_axes(axis, x.ndim)
    if x.ndim == 0:
        raise ValueError(f"{name}: axis {axis} is out of range for a 0-d array")
    result = apply1(op(a), x)
    return keep_dims(result, x.shape, (a,)) if keepdims else result


def argmax(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The index of the first maximum along ``axis`` (None: of the flattened array), an
    int64 tensor without gradient; a NaN counts as the maximum."""
    return _arg_extremum("argmax", ops.Argmax, x, axis, keepdims)


def argmin(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The index of the first minimum along ``axis`` (None: of the flattened array), an
    int64 tensor without gradient; a NaN counts as the minimum."""
    return _arg_extremum("argmin", ops.Argmin, x, axis, keepdims)


def _truth(x: Any) -> Tensor:
    x = as_tensor(x)
    return x if x.dtype == np.bool_ else compare("ne", x, 0)


def any(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Whether any element along ``axis`` is nonzero (a bool tensor; False over none)."""
    return _reduce(ops.ReduceMax, _truth(x), axis, keepdims)


def all(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - numpy's name
    """Whether every element along ``axis`` is nonzero (a bool tensor; True over none)."""
    return _reduce(ops.ReduceMin, _truth(x), axis, keepdims)


"""``import tidu_compile.numpy as np``: numpy's names for the differentiable subset.

The only change an autograd or JAX program needs. It holds:

* every tidu_compile function that numpy has under the same name (``exp``, ``sum``,
  ``dot``, ``where``, ``zeros``, ``expand_dims``...), plus numpy's aliases of them
  (``pow`` for ``power``; derived from ``tidu_compile.frontend.FUNCTIONS``, so a
  function added there appears here);
* numpy's constants (``pi``, ``e``, ``inf``, ``nan``, ``newaxis``, ``euler_gamma``) and
  dtypes (``float32``, ``float64``, ``complex128``, ``int64``, ``bool_``, ``dtype``,
  ``finfo``...), and functions of shapes and dtypes only (``shape``, ``ndim``,
  ``result_type``...), which are numpy's own;
* ``lib.stride_tricks`` (``sliding_window_view``);
* ``r_`` and ``c_`` (``tidu_compile.numpy.index_tricks``), concatenating tensors;
* autograd's own additions to numpy that its users call (``AUTOGRAD_NAMES``:
  ``make_diagonal``);
* ``linalg`` (``tidu_compile.numpy.linalg``: solves, factorisations, norms,
  differentiable) and ``random`` (``tidu_compile.numpy.random``): numpy's, for data;
  inside ``@tidu_compile.function`` its functions raise (a draw would be frozen into
  the trace).

Constructors return constant tensors (no gradient). Any other numpy name raises
``AttributeError`` saying what to use instead: nothing here hands back plain numpy
that would drop a gradient. ``tidu_compile.numpy.names()`` lists what it holds.
"""

from __future__ import annotations

from typing import Any

import numpy

from tidu_compile.frontend import FUNCTIONS
from tidu_compile.frontend.dispatch import ALIASES
from tidu_compile.numpy import lib, linalg, random
from tidu_compile.numpy.index_tricks import c_, r_

#: numpy's constants, dtypes and functions of dtypes or shapes only, handed out as is.
NUMPY_AS_IS = (
    "pi", "e", "inf", "nan", "newaxis", "euler_gamma",
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "intp", "uintp", "int_", "uint", "float16", "float32", "float64", "half",
    "single", "double", "longdouble", "complex64", "complex128", "csingle", "cdouble",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
    "floating", "complexfloating", "dtype", "finfo", "iinfo", "ndarray",
    "issubdtype", "result_type", "promote_types", "can_cast", "isscalar", "shape", "ndim",
    "size", "iscomplexobj", "isrealobj",
    "errstate", "seterr", "geterr", "set_printoptions", "get_printoptions", "printoptions",
)  # fmt: skip

#: Names autograd's numpy adds and its programs call (numpy has none of them).
AUTOGRAD_NAMES = ("make_diagonal",)

#: numpy's other submodules: what to use instead.
SUBMODULES = {
    "fft": "tidu_compile has no Fourier transforms",
}


def _functions() -> dict[str, Any]:
    """tidu_compile's functions under numpy's names, and numpy's aliases of those names."""
    functions = {name: f for name, f in FUNCTIONS.items() if hasattr(numpy, name)}
    by_object = {id(getattr(numpy, name)): f for name, f in functions.items()}
    for name, value in vars(numpy).items():
        if not name.startswith("_") and name not in functions and id(value) in by_object:
            functions[name] = by_object[id(value)]  # pow is power, acos is arccos, ...
    for alias, name in ALIASES.items():
        if name in FUNCTIONS and hasattr(numpy, alias) and alias not in functions:
            functions[alias] = FUNCTIONS[name]  # amax -> max, around -> round
    return functions


_NAMESPACE: dict[str, Any] = {
    **{name: getattr(numpy, name) for name in NUMPY_AS_IS},
    **_functions(),
    **{name: FUNCTIONS[name] for name in AUTOGRAD_NAMES},
    "linalg": linalg,
    "random": random,
    "lib": lib,  # stride_tricks.sliding_window_view
    "r_": r_,
    "c_": c_,
}
globals().update(_NAMESPACE)

__version__ = numpy.__version__  # numpy's: the values and dtypes are numpy's
__all__ = sorted(_NAMESPACE)  # (shadows builtins here: sum, pow, bool; use none of them below)


def names() -> list[str]:
    """Every name ``tidu_compile.numpy`` holds."""
    return list(__all__)


def __getattr__(name: str) -> Any:
    """A numpy name tidu_compile does not have: ``AttributeError`` saying what to use."""
    if name in SUBMODULES:
        raise AttributeError(f"tidu_compile.numpy has no {name!r}: {SUBMODULES[name]}")
    if not name.startswith("_") and hasattr(numpy, name):
        raise AttributeError(
            f"tidu_compile.numpy has no {name!r} (not differentiable in tidu_compile yet). "
            f"For values without gradient, call numpy.{name} (import numpy) on t.numpy(); "
            "tidu_compile.numpy.names() lists what tidu_compile.numpy has"
        )
    raise AttributeError(f"module 'tidu_compile.numpy' has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*__all__, "names"]

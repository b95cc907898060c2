"""numpy functions called on a Tensor: ``__array_ufunc__`` and ``__array_function__``.

numpy hands a call such as ``np.exp(t)`` or ``np.sum(t, axis=0)`` to the Tensor, which
runs tidu_compile's function of that name (``namespace.FUNCTIONS``; numpy's aliases are
mapped: ``absolute`` -> ``abs``, ``amax`` -> ``max``, ``linalg.norm`` -> ``norm``) with
the same arguments, so the result is a Tensor that carries the gradient. Otherwise:

* functions of shapes and dtypes only (``np.shape``, ``np.ndim``, ``np.result_type``)
  answer from the tensors' shapes and dtypes;
* outside a ``@tc.function`` trace, numpy computes on the values when no argument
  requires gradients, or when every result is bool or integer (``np.isfinite``,
  ``np.argmax``): no gradient exists to drop;
* else ``TypeError`` naming the function (never a silently dropped gradient).

``out=`` is refused where a gradient or a tensor is involved (tensors are immutable);
keyword arguments the tidu_compile function does not take are refused by name.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile.frontend.matrix_norms import NUMPY_LINALG
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.frontend.trees import leaves, map_leaves

__all__ = ["dispatch_function", "dispatch_ufunc"]

#: numpy's name (qualified by module for submodules) -> the tidu_compile function's.
ALIASES = {
    "absolute": "abs", "conjugate": "conj", "true_divide": "divide", "amax": "max",
    "amin": "min", "around": "round", "round_": "round", "numpy.linalg.norm": "norm",
    "numpy.lib.stride_tricks.sliding_window_view": "sliding_window_view",
}  # fmt: skip

#: numpy functions of shapes and dtypes only: they run on stand-ins of the tensors.
SHAPE_FUNCTIONS = frozenset({"shape", "ndim", "size", "result_type", "iscomplexobj",
                             "isrealobj"})  # fmt: skip

#: A ufunc method (``np.add.reduce``) -> the tidu_compile function doing that.
UFUNC_METHODS = {("add", "reduce"): "sum", ("maximum", "reduce"): "max",
                 ("minimum", "reduce"): "min", ("multiply", "reduce"): "prod"}  # fmt: skip


def _replace_tensors(value: Any, replace: Callable[[Tensor], Any]) -> Any:
    return map_leaves(value, lambda leaf: replace(leaf) if isinstance(leaf, Tensor) else leaf)


def _traced(tensors: list[Tensor]) -> bool:
    capture = current_capture()
    return capture is not None and any(capture.is_traced(t) for t in tensors)


def _lookup(qualified: str, name: str) -> tuple[str, Callable[..., Any]] | None:
    """The tidu_compile function for numpy's ``qualified`` (``numpy.linalg.norm``) name."""
    if qualified in NUMPY_LINALG:
        return name, NUMPY_LINALG[qualified]
    candidates = [ALIASES.get(qualified), ALIASES.get(name) if qualified == name else None]
    if qualified == name:  # numpy's top-level namespace
        candidates.insert(0, name)
    for candidate in candidates:
        if candidate is not None and candidate in FUNCTIONS:
            return candidate, FUNCTIONS[candidate]
    return None


@functools.lru_cache(maxsize=512)
def _signature(function: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(function)


def _accepts(function: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> str | None:
    """None when ``function`` takes these arguments, else why not."""
    try:
        _signature(function).bind(*args, **kwargs)
    except TypeError as error:
        return str(error)
    return None


def _is_exact(result: Any) -> bool:
    """Whether every array in ``result`` is bool or integer (no gradient to carry)."""
    return all(
        np.asarray(item).dtype.kind in "biu" for item in leaves(result) if item is not None
    )


def _missing(name: str) -> str:
    """Why tidu_compile cannot run numpy's ``name``: it has no such function."""
    return f"tidu_compile has no {ALIASES.get(name, name)!r}"


def _rejected(found: tuple[str, Callable[..., Any]], why: str) -> str:
    """Why tidu_compile cannot run the call: its function does not take the arguments."""
    signature = _signature(found[1])
    plain = signature.replace(
        parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
        return_annotation=signature.empty,
    )
    return f"tidu_compile.{found[0]}{plain} does not take these arguments ({why})"


def _numpy_or_refuse(
    caller: str, problem: str, run: Callable[[], Any], tensors: list[Tensor]
) -> Any:
    """numpy on the values when no gradient can be dropped, else ``TypeError`` saying
    ``problem`` (why tidu_compile could not run the call)."""
    traced = _traced(tensors)
    result = None if traced else run()
    if traced or any(t.requires_grad for t in tensors) and not _is_exact(result):
        reason = "is traced in @tidu_compile.function" if traced else "requires gradients"
        raise TypeError(
            f"{caller} on a tensor that {reason}: {problem}, and numpy would drop the "
            "gradient. Use tidu_compile's functions (import tidu_compile.numpy as np), or "
            "call numpy on t.numpy() for the values without gradient"
        )
    return result


def dispatch_ufunc(
    ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``Tensor.__array_ufunc__``: ``np.exp(t)`` -> ``tidu_compile.exp(t)``."""
    name = ufunc.__name__
    caller = f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}"
    tensors = [v for v in leaves([inputs, kwargs]) if isinstance(v, Tensor)]

    def on_values() -> Any:
        data = _replace_tensors((inputs, kwargs), lambda t: t._data)
        return getattr(ufunc, method)(*data[0], **data[1])

    if "out" in kwargs:
        if any(isinstance(v, Tensor) for v in leaves(kwargs["out"])):
            raise TypeError(f"{caller}(..., out=tensor): a tensor is immutable; use the result")
        return _numpy_or_refuse(caller, "out= writes into an array", on_values, tensors)
    if method != "__call__":
        target = UFUNC_METHODS.get((name, method))
        problem = f"use tidu_compile.{target}" if target else "ufunc methods are not supported"
        return _numpy_or_refuse(caller, problem, on_values, tensors)
    found = _lookup(name, name)
    if found is None:
        return _numpy_or_refuse(caller, _missing(name), on_values, tensors)
    why = _accepts(found[1], inputs, kwargs)
    if why is None:
        return found[1](*inputs, **kwargs)
    return _numpy_or_refuse(caller, _rejected(found, why), on_values, tensors)


def dispatch_function(
    func: Callable[..., Any], types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``Tensor.__array_function__``: ``np.sum(t, axis=0)`` -> ``tidu_compile.sum``."""
    if not all(issubclass(t, (Tensor, np.ndarray)) for t in types):
        return NotImplemented
    name = func.__name__
    module = getattr(func, "__module__", "") or ""
    qualified = name if module == "numpy" else f"{module}.{name}"
    caller = f"{module}.{name}"
    tensors = [v for v in leaves([args, kwargs]) if isinstance(v, Tensor)]
    if module == "numpy" and name in SHAPE_FUNCTIONS:
        stand_ins = _replace_tensors(
            (args, kwargs), lambda t: np.broadcast_to(np.zeros((), t.dtype), t.shape)
        )
        return func(*stand_ins[0], **stand_ins[1])

    def on_values() -> Any:
        data = _replace_tensors((args, kwargs), lambda t: t._data)
        return func(*data[0], **data[1])

    found = _lookup(qualified, name)
    if found is None:
        return _numpy_or_refuse(caller, _missing(name), on_values, tensors)
    if "out" in kwargs:
        raise TypeError(f"{caller}(..., out=...): a tensor is immutable; use the result")
    why = _accepts(found[1], args, kwargs)
    if why is None:
        return found[1](*args, **kwargs)
    return _numpy_or_refuse(caller, _rejected(found, why), on_values, tensors)

"""In-place changes of tensors, as PyTorch's: ``p -= lr * g``, ``p.add_(u, alpha=-lr)``,
``p.copy_(v)``, ``p.zero_()``, ``p.data += u``.

The arrays tensors hold are never written: an in-place change computes the new values
and gives them to the tensor (the same Python object) as a new array
(``Tensor.replace_values``), so whatever holds the old array (the tape's saved values, a
compiled plan's arguments, a ``.numpy()`` view handed out before) keeps the values it
had. Which change it is follows PyTorch:

* not recorded (inside ``no_grad``, on a ``.data`` alias, or when neither the tensor nor
  the operand requires gradients): only the values change; the tensor keeps its tape key
  and history (a leaf stays the same leaf, so its ``.grad`` keeps accumulating).
  A leaf that requires gradients may change only so: outside ``no_grad`` it raises, as
  in PyTorch;
* recorded (``h += b`` of a computed ``h``, or ``c += w`` of a constant ``c`` with a
  ``w`` that requires gradients): the tensor becomes the recorded result, computed
  from the tensor as it was (a copy of its state), so nothing recorded reads the change.

Either way the tensor's version moves on (``eager.note_change``): nodes recorded before
that saved it raise at backward ("modified by an inplace operation") instead of giving
a gradient at values that are gone. Inside a ``@tc.function`` trace a tensor computed
in the trace may change in place (it is rebound in the trace); an argument may not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from tidu_compile.eager import note_change
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.state import current_capture, grad_enabled, no_grad
from tidu_compile.frontend.tensor import Tensor, as_tensor

__all__ = ["INPLACE_METHODS", "update"]

Casting = Literal["same_kind", "unsafe"]


def _fitted(result: Tensor, target: Tensor, name: str, casting: Casting) -> Tensor:
    """``result`` with ``target``'s shape and dtype (numpy's casting rule ``casting``)."""
    if result.shape != target.shape:
        raise ValueError(
            f"{name}: the result has shape {result.shape}, the tensor changed in place "
            f"{target.shape} (an in-place change cannot change the shape)"
        )
    if result.dtype == target.dtype:
        return result
    if not np.can_cast(result.dtype, target.dtype, casting=casting):
        raise TypeError(
            f"{name}: the result's dtype {result.dtype} cannot be cast to the tensor's "
            f"{target.dtype} with casting rule {casting!r}"
        )
    return FUNCTIONS["astype"](result, target.dtype)  # type: ignore[no-any-return]


def _state_of(target: Tensor) -> Tensor:
    """A new tensor holding ``target``'s value and history: what a recorded change reads."""
    return Tensor(target._data, target._requires_grad, target._key, target._trace)


def _become(target: Tensor, result: Tensor) -> None:
    """``target`` takes ``result``'s value and history (a recorded change)."""
    target._data = result._data
    target._requires_grad = result._requires_grad
    target._tape_key = result._tape_key
    target._trace = result._trace
    note_change(target)


def update(
    target: Tensor, compute: Callable[[Tensor], Any], name: str, casting: Casting = "same_kind"
) -> Tensor:
    """Change ``target`` in place to ``compute(target as it is)`` (see the module
    docstring); returns ``target``. ``casting`` is numpy's rule for the result's dtype."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(target).__name__}")
    capture = current_capture()
    if capture is not None:
        return _traced_update(capture, target, compute, name, casting)
    alias: Tensor | None = getattr(target, "_alias", None)
    recording = grad_enabled() and alias is None
    if recording and target._requires_grad and target._trace is None:
        raise RuntimeError(
            f"{name}: a leaf tensor that requires gradients is used in an in-place "
            "operation; change it inside `with tc.no_grad():` (as in PyTorch), or compute "
            "a new tensor (p = p - lr * g)"
        )
    before = _state_of(target)
    if recording:
        result = _fitted(as_tensor(compute(before)), target, name, casting)
    else:
        with no_grad():
            result = _fitted(as_tensor(compute(before)), target, name, casting)
    if recording and (target._requires_grad or result._requires_grad):
        _become(target, result)
        return target
    target.replace_values(result._data)
    if alias is not None:
        alias.replace_values(result._data)
    return target


def _traced_update(
    capture: Any, target: Tensor, compute: Callable[[Tensor], Any], name: str, casting: Casting
) -> Tensor:
    """``update`` inside a ``@tc.function`` trace: a tensor computed in the trace is
    rebound to the traced result; arguments and outside values refuse."""
    if not capture.is_produced(target):
        raise TypeError(
            f"{name}: inside @tidu_compile.function {capture.name!r} only tensors computed "
            "in the function can change in place (this one is an argument or a value from "
            "outside, which a call cannot change); compute a new tensor instead"
        )
    result = _fitted(as_tensor(compute(target)), target, name, casting)
    capture.rebind(target, result)
    return target


def _as_it_was(operand: Any, target: Tensor, before: Tensor) -> Any:
    """``operand``, or ``before`` when it is the tensor being changed (``h *= h``): the
    change must not record the tensor itself, whose state it replaces."""
    return before if operand is target else operand


def _operator(function: str, name: str) -> Callable[[Tensor, Any], Tensor]:
    """``tensor <op>= other``: ``update`` with ``FUNCTIONS[function]``."""

    def method(self: Tensor, other: Any) -> Tensor:
        return update(self, lambda t: FUNCTIONS[function](t, _as_it_was(other, self, t)), name)

    return method


def _scaled(other: Any, alpha: Any) -> Any:
    return other if isinstance(alpha, (int, float)) and alpha == 1 else alpha * as_tensor(other)


def _add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``self += alpha * other``, in place (PyTorch's ``add_``)."""
    return update(self, lambda t: t + _scaled(_as_it_was(other, self, t), alpha), "add_")


def _sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``self -= alpha * other``, in place (PyTorch's ``sub_``)."""
    return update(self, lambda t: t - _scaled(_as_it_was(other, self, t), alpha), "sub_")


def _mul_(self: Tensor, other: Any) -> Tensor:
    """``self *= other``, in place."""
    return update(self, lambda t: t * _as_it_was(other, self, t), "mul_")


def _div_(self: Tensor, other: Any) -> Tensor:
    """``self /= other``, in place."""
    return update(self, lambda t: t / _as_it_was(other, self, t), "div_")


def _clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's
    """``self`` limited to ``[min, max]``, in place (PyTorch's ``clamp_``)."""
    return update(self, lambda t: FUNCTIONS["clip"](t, min, max), "clamp_")


def _copy_(self: Tensor, src: Any) -> Tensor:
    """``src``'s values (broadcast to ``self``'s shape, cast to its dtype) into ``self``,
    in place (PyTorch's ``copy_``; the gradient flows to ``src`` when recorded)."""

    def values(t: Tensor) -> Tensor:
        source = as_tensor(_as_it_was(src, self, t))
        if source.shape != t.shape:
            source = FUNCTIONS["broadcast_to"](source, t.shape)
        return source

    return update(self, values, "copy_", casting="unsafe")


def _fill_(self: Tensor, value: Any) -> Tensor:
    """Every element set to ``value``, in place (a constant: no gradient flows)."""
    return update(self, lambda t: FUNCTIONS["full_like"](t, value), "fill_", casting="unsafe")


def _zero_(self: Tensor) -> Tensor:
    """Every element set to 0, in place (PyTorch's ``zero_``)."""
    return update(self, lambda t: FUNCTIONS["zeros_like"](t), "zero_")


def _masked_fill_(self: Tensor, mask: Any, value: Any) -> Tensor:
    """``value`` where ``mask``, in place (PyTorch's ``masked_fill_``)."""
    return update(self, lambda t: FUNCTIONS["where"](mask, value, t), "masked_fill_")


#: The in-place operators and methods ``tensor_methods`` sets on ``Tensor``.
INPLACE_METHODS: dict[str, Callable[..., Tensor]] = {
    "__iadd__": _operator("add", "+="),
    "__isub__": _operator("subtract", "-="),
    "__imul__": _operator("multiply", "*="),
    "__itruediv__": _operator("divide", "/="),
    "__ipow__": _operator("power", "**="),
    "add_": _add_,
    "sub_": _sub_,
    "mul_": _mul_,
    "div_": _div_,
    "clamp_": _clamp_,
    "copy_": _copy_,
    "fill_": _fill_,
    "zero_": _zero_,
    "masked_fill_": _masked_fill_,
}

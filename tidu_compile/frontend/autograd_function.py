"""``tidu_compile.autograd.Function``: a function with its own backward, as PyTorch's.

::

    class StraightThrough(tc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return tc.sign(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return tc.where(tc.abs(x) <= 1.0, g, 0.0)   # the gradient of clip(x, -1, 1)

    y = StraightThrough.apply(x)

``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` are written with
tidu_compile functions; ``apply`` traces them into one ``CustomVJPCall`` per signature
(``frontend.custom_rules.vjp_call_op``): the tensor arguments are its inputs, the other
arguments static (part of the trace key, passed as they are). ``backward`` returns one
gradient per argument of ``forward`` (None for a non-tensor one, or for no gradient),
a single tensor when there is one argument. ``ctx.save_for_backward(*tensors)`` keeps
tensors for ``ctx.saved_tensors``; other attributes set on ``ctx`` in ``forward`` are
read in ``backward`` as they were (a tensor computed in ``forward`` must be saved, or
it is a ``TypeError``); ``ctx.needs_input_grad`` has one flag per argument.
"""

from __future__ import annotations

from typing import Any

from tidu_compile.frontend.custom_rules import CustomCalls, recording, static_key, vjp_call_op
from tidu_compile.frontend.state import current_capture
from tidu_compile.frontend.tensor import Tensor

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """What ``forward`` and ``backward`` share (PyTorch's ``ctx``)."""

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.to_save: tuple[Tensor | None, ...] = ()
        self._saved: tuple[Tensor | None, ...] | None = None

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep ``tensors`` (arguments, outputs or intermediates of ``forward``, or None)
        for ``backward``'s ``ctx.saved_tensors``."""
        for index, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(f"save_for_backward: argument {index} is a "
                                f"{type(tensor).__name__}, expected a Tensor or None")  # fmt: skip
        self.to_save = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors ``forward`` saved (read in ``backward``)."""
        if self._saved is None:
            raise RuntimeError("ctx.saved_tensors is read in backward (forward saves them "
                               "with ctx.save_for_backward)")  # fmt: skip
        return self._saved


class Function:
    """Base class of a function with a custom backward: subclass it with static methods
    ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``, call ``.apply(*args)``
    (module docstring)."""

    _calls: CustomCalls

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._calls = CustomCalls()

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        raise NotImplementedError("a tidu_compile.autograd.Function defines forward(ctx, ...)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Any:
        raise NotImplementedError("a tidu_compile.autograd.Function defines backward(ctx, ...)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply: pass the arguments by position")
        if cls is Function:
            raise TypeError("apply a subclass of tidu_compile.autograd.Function")
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors: list[Tensor] = [args[i] for i in positions]
        if not recording(tensors):
            return cls.forward(FunctionCtx((False,) * len(args)), *args)
        inside = current_capture() is not None  # a trace may differentiate any float tensor
        needs = tuple(
            isinstance(a, Tensor) and (a._requires_grad or (inside and a.dtype.kind in "fc"))
            for a in args
        )
        key = (needs, tuple(static_key(a) for i, a in enumerate(args) if i not in positions))

        def merged(ts: tuple[Tensor, ...]) -> list[Any]:
            values = list(args)
            for position, tensor in zip(positions, ts, strict=True):
                values[position] = tensor
            return values

        def fwd(*ts: Tensor) -> tuple[Any, Any]:
            ctx = FunctionCtx(needs)
            out = cls.forward(ctx, *merged(ts))
            return out, (ctx, tuple(ctx.to_save))

        def bwd(residuals: Any, g: Any) -> Any:
            ctx, saved = residuals
            ctx._saved = tuple(saved)
            grads = cls.backward(ctx, *(g if isinstance(g, tuple) else (g,)))
            if not isinstance(grads, tuple):
                grads = (grads,)
            if len(grads) != len(args):
                raise TypeError(
                    f"{cls.__name__}.backward returned {len(grads)} gradients, expected "
                    f"{len(args)} (one per argument of forward)"
                )
            for index, grad in enumerate(grads):
                if index not in positions and grad is not None:
                    raise TypeError(
                        f"{cls.__name__}.backward returned a gradient for argument {index}, "
                        f"which is not a tensor (a {type(args[index]).__name__}): return None"
                    )
            return tuple(grads[i] for i in positions)

        return cls._calls.call(
            key, tensors, lambda: vjp_call_op(cls.__name__, tensors, fwd, bwd)
        )

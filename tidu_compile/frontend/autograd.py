"""``grad``, ``Tensor.backward`` and the shared backward driver of the frontend.

``Tensor.backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)`` is
PyTorch's: it adds ``d self / d leaf`` into ``leaf.grad`` in place (a ``Grad``: a numpy
array with ``zero_()``; a reference held before sees the sum) and, unless
``retain_graph`` (default: ``create_graph``), frees the saved data of the nodes it
visited, so a second pass through them raises. ``tc.grad`` keeps them by default.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

import numpy as np

from tidu_compile.eager import BackwardExecutor, backward, free_graph
from tidu_compile.frontend.higher_order import backward_recorded
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.state import get_default_executor
from tidu_compile.frontend.tensor import LEAVES, RETAINS_GRAD, Tensor
from tidu_compile.graph import ValueKey
from tidu_compile.ownership import exclusive_owner

__all__ = ["Grad", "grad", "run_backward", "tensor_backward", "user_array"]


class Grad(np.ndarray):
    """``Tensor.grad``: a numpy array with PyTorch's ``zero_()`` (zeros it in place).

    Arithmetic on it gives plain numpy arrays (``lr * p.grad``); slices are ``Grad``
    views (``p.grad[0].zero_()`` zeros a row).
    """

    def zero_(self) -> Grad:
        """Set every element to 0, in place; returns the array."""
        self.fill(0)
        return self

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        result = super().__array_wrap__(array, context, return_scalar)
        return result.view(np.ndarray) if type(result) is Grad else result


def _seed_for(output: Tensor, seed: Any) -> np.ndarray:
    if seed is None:
        if output.shape != ():
            raise ValueError(
                f"seed: the output has shape {output.shape}; a seed is required for a "
                "non-scalar output"
            )
        if output.dtype.kind == "c":
            raise ValueError(
                "seed: the output is complex; a gradient is implied only for a real scalar "
                "output (as in PyTorch): pass a seed, or differentiate a real function of it"
            )
        return np.ones((), dtype=output.dtype)
    array = seed.numpy() if isinstance(seed, Tensor) else np.asarray(seed)
    if array.shape != output.shape:
        raise ValueError(f"seed: shape {array.shape} does not match the output's {output.shape}")
    if not np.can_cast(array.dtype, output.dtype, casting="same_kind"):
        raise TypeError(f"seed: dtype {array.dtype} cannot be cast to the output's {output.dtype}")
    return np.array(array, dtype=output.dtype, copy=True)


def user_array(cotangent: Any, dtype: np.dtype, taken: set[int]) -> np.ndarray:
    """``cotangent`` as an array the user may keep and mutate: itself when it is a fresh,
    unshared array of ``dtype`` (a kernel's output), else a copy.

    ``taken`` holds the memory owners already handed out by this call (two results never
    share memory: ``x + x`` gives one cotangent array for both operands).
    """
    owner = exclusive_owner(cotangent)
    if owner is None or id(owner) in taken or cotangent.dtype != dtype:
        return np.array(cotangent, dtype=dtype, copy=True)
    taken.add(id(owner))
    return cotangent  # type: ignore[no-any-return]


def run_backward(
    output: Tensor,
    seed: Any,
    executor: BackwardExecutor | None,
    retain_graph: bool = True,
    wanted: Container[ValueKey] | None = None,
) -> dict[ValueKey, Any]:
    """Cotangents of every tape value reached from ``output`` (or of those ``wanted``
    at least: ``eager.backward``), by tape key; without ``retain_graph`` the visited
    nodes' saved data are freed afterwards."""
    if not isinstance(output, Tensor):
        raise TypeError(f"output: expected a Tensor, got {type(output).__name__}")
    if not output.requires_grad:
        raise ValueError("output: does not require gradients (no input requires grad)")
    executor = executor if executor is not None else get_default_executor()
    seed_array = _seed_for(output, seed)
    cotangents = backward(output._key, output._trace, seed_array, executor, wanted=wanted)
    if not retain_graph and output._trace is not None:
        free_graph(output._trace)
    return cotangents


def _add_into_grad(tensor: Tensor, ct: Any, taken: set[int]) -> None:
    """``tensor.grad += ct``: in place when ``.grad`` is a writable array of the tensor's
    shape and dtype (a reference held before sees the sum), else a new ``Grad``; a
    recorded sum when either is a ``Tensor`` (``create_graph=True``)."""
    current = tensor.grad
    if isinstance(ct, Tensor) or isinstance(current, Tensor):
        tensor.grad = ct if current is None else FUNCTIONS["add"](current, ct)
        return
    if current is None:
        tensor.grad = user_array(ct, tensor.dtype, taken).view(Grad)
    elif (
        isinstance(current, np.ndarray)
        and current.flags.writeable
        and current.shape == tensor.shape
        and current.dtype == tensor.dtype
    ):
        np.add(current, ct, out=current)
    else:
        tensor.grad = (np.asarray(current) + np.asarray(ct, dtype=tensor.dtype)).view(Grad)


def tensor_backward(
    self: Tensor,
    gradient: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
    *,
    seed: Any = None,
) -> None:
    """Add ``d self / d t`` into ``t.grad`` for every leaf ``t`` that requires gradients
    (and every tensor that called ``retain_grad()``), or for ``inputs`` only, as PyTorch's
    ``backward``. ``gradient`` (or ``seed``) is the cotangent of ``self`` (implied 1 for a
    real scalar); ``retain_graph`` (default ``create_graph``) keeps the saved values for
    another pass; ``create_graph=True`` makes the gradients ``Tensor``s recorded on the
    tape (differentiable again)."""
    if gradient is not None and seed is not None:
        raise TypeError("backward: pass the cotangent as gradient= or seed=, not both")
    seed = gradient if gradient is not None else seed
    retain = create_graph if retain_graph is None else bool(retain_graph)
    chosen = _chosen_inputs(inputs)
    if create_graph:
        keys = None if chosen is None else [t._key for t in chosen]
        cotangents = _recorded_cotangents(self, seed, None, keys)
    else:
        wanted = _LeavesAndRetained() if chosen is None else {t._key for t in chosen}
        cotangents = run_backward(self, seed, None, retain, wanted)
    taken: set[int] = set()
    if chosen is not None:
        targets = [(t, cotangents.get(t._key)) for t in chosen]
    else:
        targets = [(leaf, ct) for key, ct in cotangents.items()
                   if (leaf := LEAVES.get(key)) is not None]  # fmt: skip
        targets += [(t, cotangents.get(t._key)) for t in list(RETAINS_GRAD)
                    if t._requires_grad and LEAVES.get(t._key) is not t]  # fmt: skip
    for tensor, ct in targets:
        if ct is not None and not (tensor is self and self._trace is not None):
            _add_into_grad(tensor, ct, taken)


class _LeavesAndRetained:
    """The keys ``Tensor.backward`` reads without ``inputs``: leaves' and those of the
    tensors that called ``retain_grad()``."""

    __slots__ = ("retained",)

    def __init__(self) -> None:
        self.retained = {t._key for t in list(RETAINS_GRAD)}

    def __contains__(self, key: object) -> bool:
        # LEAVES.data: the weak dictionary's own dict (a C lookup; a leaf that just died
        # may still be in it, which costs one unread cotangent at most)
        return key in LEAVES.data or key in self.retained  # type: ignore[attr-defined]


def _chosen_inputs(inputs: Tensor | Sequence[Tensor] | None) -> list[Tensor] | None:
    """``backward``'s ``inputs``, checked: the tensors to fill ``.grad`` of (None: all)."""
    if inputs is None:
        return None
    chosen = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for i, t in enumerate(chosen):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward: inputs[{i}] is a {type(t).__name__}, expected a Tensor")
        if not t.requires_grad:
            raise ValueError(f"backward: inputs[{i}] does not require gradients")
    return chosen


def grad(
    output: Tensor,
    inputs: Tensor | Sequence[Tensor],
    seed: Any = None,
    executor: BackwardExecutor | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
    allow_unused: bool = True,
) -> list[Any]:
    """Gradients of ``output`` with respect to ``inputs`` (vector-Jacobian product with ``seed``).

    Returns one numpy array per input, with that input's dtype, or None for an input
    with no path to ``output`` (with ``allow_unused=False`` such an input is a
    ``ValueError``, as PyTorch's default). Inputs may be intermediate tensors. The saved
    values stay for further passes unless ``retain_graph=False`` (PyTorch frees them by
    default; here the default is to keep them).

    With ``create_graph=True`` the gradients are ``Tensor``s recorded on the tape (each
    backward node is recorded as a node of its own, and still runs compiled), so they can
    be differentiated again, as PyTorch's ``create_graph``; ``seed`` may then be a tensor
    that requires gradients itself.
    """
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    elif not isinstance(inputs, Sequence):
        raise TypeError(
            f"inputs: expected a Tensor or a sequence of Tensors, got {type(inputs).__name__}"
        )
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"inputs[{i}]: expected a Tensor, got {type(t).__name__}")
    if create_graph:
        gradients: list[Any] = _recorded_gradients(output, inputs, seed, executor)
    else:
        retain = True if retain_graph is None else bool(retain_graph)
        cotangents = run_backward(output, seed, executor, retain, {t._key for t in inputs})
        gradients = []
        taken: set[int] = set()
        for t in inputs:
            ct = cotangents.get(t._key) if t.requires_grad else None
            gradients.append(None if ct is None else user_array(ct, t.dtype, taken))
    if not allow_unused:
        for i, g in enumerate(gradients):
            if g is None:
                raise ValueError(
                    f"inputs[{i}]: the output does not depend on it (it was not used in "
                    "the recorded computation, or does not require gradients); pass "
                    "allow_unused=True to get None for it"
                )
    return gradients


def _recorded_cotangents(
    output: Tensor,
    seed: Any,
    executor: BackwardExecutor | None,
    wanted: Sequence[ValueKey] | None = None,
) -> dict[ValueKey, Tensor]:
    """The cotangents (tensors recorded on the tape) of every value reached from
    ``output``; of the ``wanted`` keys at least, when given (``backward_recorded``)."""
    if not isinstance(output, Tensor):
        raise TypeError(f"output: expected a Tensor, got {type(output).__name__}")
    if not output.requires_grad:
        raise ValueError("output: does not require gradients (no input requires grad)")
    if isinstance(seed, Tensor):
        _seed_for(output, seed)  # the checks; the tensor itself is the seed
        seed_tensor = seed if seed.dtype == output.dtype else Tensor(_seed_for(output, seed))
    else:
        seed_tensor = Tensor(_seed_for(output, seed))
    executor = executor if executor is not None else get_default_executor()
    return backward_recorded([(output, seed_tensor)], executor, wanted)


def _recorded_gradients(
    output: Tensor, inputs: Sequence[Tensor], seed: Any, executor: BackwardExecutor | None
) -> list[Tensor | None]:
    """``grad`` with ``create_graph=True``: tensors recorded on the tape."""
    cotangents = _recorded_cotangents(output, seed, executor, [t._key for t in inputs])
    return [cotangents.get(t._key) if t.requires_grad else None for t in inputs]

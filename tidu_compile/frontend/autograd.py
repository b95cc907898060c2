"""``grad`` and the shared backward driver of the frontend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.eager import BackwardExecutor, backward
from tidu_compile.frontend.higher_order import backward_recorded
from tidu_compile.frontend.state import get_default_executor
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.graph import ValueKey
from tidu_compile.ownership import exclusive_owner

__all__ = ["grad", "run_backward", "user_array"]


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
    output: Tensor, seed: Any, executor: BackwardExecutor | None
) -> dict[ValueKey, Any]:
    """Cotangents of every tape value reached from ``output``, by tape key."""
    if not isinstance(output, Tensor):
        raise TypeError(f"output: expected a Tensor, got {type(output).__name__}")
    if not output.requires_grad:
        raise ValueError("output: does not require gradients (no input requires grad)")
    executor = executor if executor is not None else get_default_executor()
    return backward(output._key, output._trace, _seed_for(output, seed), executor)


def grad(
    output: Tensor,
    inputs: Tensor | Sequence[Tensor],
    seed: Any = None,
    executor: BackwardExecutor | None = None,
    create_graph: bool = False,
) -> list[Any]:
    """Gradients of ``output`` with respect to ``inputs`` (vector-Jacobian product with ``seed``).

    Returns one numpy array per input, with that input's dtype, or None for an input
    with no path to ``output``. Inputs may be intermediate tensors.

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
        return _recorded_gradients(output, inputs, seed, executor)
    cotangents = run_backward(output, seed, executor)
    result: list[np.ndarray | None] = []
    taken: set[int] = set()
    for t in inputs:
        ct = cotangents.get(t._key) if t.requires_grad else None
        result.append(None if ct is None else user_array(ct, t.dtype, taken))
    return result


def _recorded_gradients(
    output: Tensor, inputs: Sequence[Tensor], seed: Any, executor: BackwardExecutor | None
) -> list[Tensor | None]:
    """``grad`` with ``create_graph=True``: tensors recorded on the tape."""
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
    cotangents = backward_recorded([(output, seed_tensor)], executor)
    return [cotangents.get(t._key) if t.requires_grad else None for t in inputs]

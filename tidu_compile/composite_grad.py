"""``func.value_and_grad`` of a ``@tc.function`` as ONE program: forward and backward.

The general path runs the traced forward program (reading the inputs, writing the loss
and what the tape keeps), records a tape node, then runs its backward program (reading
the inputs again). When nothing outside can observe the tape (no argument is tracked by
an outer transform) and the trace is a real scalar loss of float data, this module
builds one graph instead (integer index data, such as token ids, is first checked with
numpy by the trace's ``ForwardPlan.check_indices``, as on the general path, so native
code never reads an index out of range; an index computed from float data, which cannot
be checked first, keeps the general path) and runs ``compiler.fused_grad``'s graph (the
forward's ops, then the backward's at seed 1: loss, then gradients) with
``executor.run_graph``: compiled, fusion puts the forward's ops and the backward's that
read them (``exp(-x)``, ``tanh(...)``) in one loop nest, so W1 reads ``x`` and ``y``
once and writes the loss, ``gx`` and ``gy``. The arguments are
read in place (nothing is recorded, so nothing needs a copy).
The first call of a signature traces (``trace_for``) and goes straight to the fused
program: no forward program of its own is compiled, so the first call compiles one
program, as ``jax.jit(jax.value_and_grad(f))`` does; ``fused_value_and_grad`` returns None
whenever the fused path does not apply.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile.collections_pause import fewer_collections
from tidu_compile.compiler.fused_grad import build_fused
from tidu_compile.frontend.composite_forward import UNBUILT
from tidu_compile.frontend.state import current_capture, get_default_executor, grad_enabled
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.frontend.trees import leaves as tree_leaves
from tidu_compile.frontend.trees import map_leaves
from tidu_compile.ops import DIFFERENTIABLE_DTYPES, dtype_name, type_of

__all__ = ["fused_value_and_grad"]


def fused_value_and_grad(
    wrapper: Any, args: tuple[Any, ...], argnums: tuple[int, ...]
) -> tuple[Tensor, list[list[Tensor]]] | None:
    """``(loss, gradients per leaf of each args[n], n in argnums)`` by one fused program
    of the ``@tc.function`` ``wrapper``, or None (then the general path runs)."""
    lookup = getattr(wrapper, "trace_for", None)
    if lookup is None or not grad_enabled() or current_capture() is not None:
        return None
    if any(isinstance(leaf, Tensor) and leaf._requires_grad for leaf in tree_leaves(args)):
        return None  # an outer transform tracks an argument: the tape must see the call
    stand_ins: list[list[Tensor]] = []
    call_args = list(args)
    for n in argnums:
        fresh: list[Tensor] = []

        def variable(leaf: Any, fresh: list[Tensor] = fresh) -> Any:
            data = leaf._data if isinstance(leaf, Tensor) else leaf
            if (not isinstance(data, np.ndarray)
                    or dtype_name(data.dtype) not in DIFFERENTIABLE_DTYPES):
                raise _NotFusable
            stand_in = Tensor(data.view(), True)  # read in place, never recorded
            fresh.append(stand_in)
            return stand_in

        try:
            call_args[n] = map_leaves(args[n], variable)
        except _NotFusable:
            return None
        stand_ins.append(fresh)
    found = lookup(tuple(call_args))
    if found is None:
        return None
    traced, leaves = found
    plan = traced.forward_plan
    position = {id(leaf): i for i, leaf in enumerate(leaves)}
    inputs = [leaf._data if isinstance(leaf, Tensor) else leaf for leaf in leaves]
    inputs += traced.constants
    if plan.indexing or plan.prelude:  # integer index data: checked before native code
        if not plan.checkable:
            return None
        plan.check_indices(inputs)
    needed = tuple(isinstance(x, Tensor) and x._requires_grad for x in leaves) + (
        (False,) * len(traced.constants)
    )
    if not any(needed):
        return None
    fused = traced.fused
    if fused is UNBUILT:
        types = tuple(type_of(x) for x in inputs)
        with fewer_collections():  # a first call: the graphs are many young objects
            fused = traced.fused = build_fused(traced.recorded, types, needed)
    if fused is None:
        return None
    results = get_default_executor().run_graph(fused.recorded, inputs)
    gradient = dict(zip(fused.with_gradient, results[1:], strict=True))
    trees = []
    for fresh in stand_ins:
        grads = []
        for stand_in in fresh:
            g = gradient.get(position[id(stand_in)])
            grads.append(Tensor(np.zeros(stand_in.shape, stand_in.dtype) if g is None
                                else np.asarray(g)))  # fmt: skip
        trees.append(grads)
    return Tensor(np.asarray(results[0])), trees


class _NotFusable(Exception):
    """A leaf the fused path does not take (a number, an integer array)."""


"""``func.value_and_grad`` of a ``@tc.function`` as ONE program: forward and backward.

The general path runs the traced forward program (reading the inputs, writing the loss
and what the tape keeps), records a tape node, then runs its backward program (reading
the inputs again). When nothing outside can observe the tape (no argument is tracked by
an outer transform) and the trace is a real scalar loss of float data, this module
builds one graph instead (integer index data, such as token ids, is first checked with
numpy by the trace's ``ForwardPlan.check_indices``, as on the general path, so native
code never reads an index out of range; an index computed from float data, which cannot
be checked first, keeps the general path)::

    inputs x, y
    forward ops       -> loss                  (the traced graph)
    Constant(1.0)     -> seed
    backward program  -> d loss/dx, d loss/dy  (node_program: its residuals read
                                                from the forward's values)
    outputs (loss, gx, gy)

and runs it with ``executor.run_graph``: compiled, fusion puts the forward's ops and
the backward's that read them (``exp(-x)``, ``tanh(...)``) in one loop nest, so W1
reads ``x`` and ``y`` once and writes the loss, ``gx`` and ``gy``. The arguments are
read in place (nothing is recorded, so nothing needs a copy).
The first call of a signature traces (``trace_for``) and goes straight to the fused
program: no forward program of its own is compiled, so the first call compiles one
program, as ``jax.jit(jax.value_and_grad(f))`` does; ``fused_value_and_grad`` returns None
whenever the fused path does not apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.collections_pause import fewer_collections
from tidu_compile.compiler.program import (
    infer_value_types,
    node_program,
    saved_value_order,
)
from tidu_compile.eager import RecordedGraph
from tidu_compile.frontend.composite_forward import copy_operations
from tidu_compile.frontend.composite_function import UNBUILT
from tidu_compile.frontend.state import current_capture, get_default_executor, grad_enabled
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.frontend.trees import leaves as tree_leaves
from tidu_compile.frontend.trees import map_leaves
from tidu_compile.graph import GraphBuilder, Primary
from tidu_compile.ops import DIFFERENTIABLE_DTYPES, Constant, dtype_name, type_of

__all__ = ["FusedGrad", "build_fused", "fused_value_and_grad"]


class FusedGrad:
    """A fused program: ``recorded`` returns the loss, then the gradient of every input
    in ``with_gradient`` (recorded-graph input positions); ``None`` inputs have none."""

    def __init__(self, recorded: RecordedGraph, with_gradient: tuple[int, ...]) -> None:
        self.recorded = recorded
        self.with_gradient = with_gradient


def build_fused(
    traced_graph: RecordedGraph, input_types: Sequence[Any], needed: tuple[bool, ...]
) -> FusedGrad | None:
    """The fused program of ``traced_graph`` (one real scalar output) for inputs of
    ``input_types``, computing the gradients of the inputs with ``needed``; None when
    the loss is not a real scalar or does not depend on the inputs."""
    if len(traced_graph.output_keys) != 1:
        return None
    graph = traced_graph.graph
    types = infer_value_types(traced_graph, input_types)
    out_type = types[graph.outputs[0]]
    if out_type.shape != () or np.dtype(out_type.dtype).kind != "f":
        return None
    linear = traced_graph.linearize([0])
    if linear.tangent_outputs[0] is None:
        return None  # the loss does not depend on the inputs
    # Every forward value is at hand: the backward reads its residuals, not recomputing
    # them (half the ops for the pipeline to import and CSE to merge back).
    order = saved_value_order(traced_graph, [graph.values[i].key for i in types])
    at = {key: graph.local_id(key) for key in order}  # every key of order is the graph's
    saved = [types.get(at[key]) for key in order]  # type: ignore[arg-type]
    program = node_program(traced_graph, linear, [out_type], order, saved,
                           None if all(needed) else needed)  # fmt: skip
    builder = GraphBuilder()
    local: dict[int, int] = {}
    for i in graph.inputs:
        local[i] = builder.add_input(graph.values[i].key.key)  # type: ignore[union-attr]
    copy_operations(builder, graph.operations, local)
    value: dict[int, int] = {}
    for position, source in enumerate(program.arg_sources):
        if source.kind == "seed":
            (value[position],) = builder.add_operation(
                Constant(1.0, (), out_type.dtype), [], Primary()
            )
        else:  # a saved value of the traced graph: an input or a forward value
            value[position] = local[at[order[source.index]]]  # type: ignore[index]
    for instr in program.instrs:
        outputs = builder.add_operation(instr.op, [value[i] for i in instr.inputs], Primary())
        value.update(zip(instr.outputs, outputs, strict=True))
    with_gradient = tuple(i for i, r in enumerate(program.results) if r is not None)
    builder.set_outputs([local[graph.outputs[0]]] +
                        [value[program.results[i]] for i in with_gradient])  # type: ignore[index]
    return FusedGrad(RecordedGraph.from_graph(builder.build()), with_gradient)


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


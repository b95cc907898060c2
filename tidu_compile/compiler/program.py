"""Building the backward program of one tape node (a ``NodeProgram``: ``ssa_program``).

``build_program`` joins three graphs into one flat, typed program:

* the recorded graph (primal ops; its inputs and retained outputs are the saved data),
* the linear graph of the active output slots (``Primary`` residual ops),
* the transposed linear graph (the VJP ops).

Arguments are the cotangent seeds followed by the saved values the VJP reads; residuals
such as ``cos(x)`` are *recomputed* from saved inputs (never stored by the forward pass);
results are one cotangent (or None) per recorded-graph input::

    program(seed0: 8:float64, in0: 8:float64) {
      v2 = Cos()(v1)
      v3 = Conj()(v2)
      v4 = Mul()(v0, v3)
      return (v4,)
    }

Value ids are positional, so two nodes with the same structure and types give equal
programs whatever the tape's keys were: the program is the compiler's cache identity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tidu_compile.ad import LinearizedGraph, linear_transpose
from tidu_compile.compiler.calls import inline_calls
from tidu_compile.compiler.empty import fold_empty_values
from tidu_compile.compiler.simplify import simplify_program
from tidu_compile.compiler.ssa_program import (
    ArgSource,
    Instr,
    NodeProgram,
    live_instructions,
    renumbered,
)
from tidu_compile.eager import RecordedGraph
from tidu_compile.graph import Local, ProducedDef, ValueKey, resolve
from tidu_compile.ops.base import UNSIGNED_DTYPES, TensorType
from tidu_compile.ops.control_flow import ControlFlow, Scan
from tidu_compile.ops.custom_calls import CustomVJPLinear

__all__ = [
    "MissingSavedValue", "UnsupportedNode", "build_program", "compilable", "graph_program",
    "infer_output_types", "needed_mask", "node_program", "prune_results", "saved_value_order",
]  # fmt: skip


class UnsupportedNode(TypeError):
    """The node uses primitives without type rules (a user's own primitive set)."""


class MissingSavedValue(KeyError):
    """The backward program needs a value the tape did not save (the caller's error)."""


def _infer(op: Any, types: Sequence[TensorType]) -> tuple[TensorType, ...]:
    infer = getattr(op, "infer_types", None)
    if infer is None:
        raise UnsupportedNode(f"{op!r} has no type rule (infer_types); it cannot be compiled")
    return tuple(infer(*types))


def infer_output_types(
    recorded: RecordedGraph, input_types: Sequence[TensorType]
) -> tuple[TensorType, ...]:
    """The types of ``recorded``'s outputs for inputs of ``input_types`` (its type rules).

    Only the ops the outputs depend on are typed: a recorded graph is memoized by its
    structure (its input and output keys), which an op nothing reads is not part of, so
    another graph of the same structure may hold that op with other shapes.

    Raises ``UnsupportedNode`` for ops without a type rule, and the rule's own
    ``ValueError``/``TypeError`` when the inputs do not type-check.
    """
    types = infer_value_types(recorded, input_types)
    return tuple(types[i] for i in recorded.graph.outputs)


def infer_value_types(
    recorded: RecordedGraph, input_types: Sequence[TensorType]
) -> dict[int, TensorType]:
    """The types of ``recorded``'s inputs and of the values its outputs depend on, by
    local id (``infer_output_types``, which raises what this raises)."""
    graph = recorded.graph
    types: dict[int, TensorType] = dict(zip(graph.inputs, input_types, strict=True))
    for node in _live_operations(graph):
        if not all(isinstance(ref, Local) for ref in node.inputs):
            raise UnsupportedNode(f"{recorded!r} reads values of another graph")
        outputs = _infer(node.operation, [types[ref.id] for ref in node.inputs])  # type: ignore[union-attr]
        types.update(zip(node.outputs, outputs, strict=True))
    return types


def _live_operations(graph: Any) -> list[Any]:
    """The operations of ``graph`` its outputs depend on, in order."""
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.operations):
        if live.intersection(node.outputs):
            kept.append(node)
            live.update(ref.id for ref in node.inputs if isinstance(ref, Local))
    kept.reverse()
    return kept


def build_program(
    recorded: RecordedGraph,
    linear: LinearizedGraph,
    seed_types: Sequence[TensorType],
    saved_types: Mapping[ValueKey, TensorType],
    transposed: LinearizedGraph | None = None,
    saved_order: Sequence[ValueKey] | None = None,
) -> NodeProgram:
    """Build the backward program of ``recorded`` for the linearization ``linear``.

    ``seed_types`` has one type per *present* tangent output (``linear.graph.outputs``);
    ``saved_types`` gives the type of every saved value by the recorded graph's keys.
    ``saved_order`` numbers the saved values for ``ArgSource``: by default the graph's
    input keys then its output keys; callers append the keys of retained intermediates
    (``tidu_compile.function`` keeps contraction results), which the program then
    reads instead of recomputing.
    """
    transposed = transposed if transposed is not None else linear_transpose(linear)
    graph = transposed.graph
    if len(seed_types) != len(transposed.tangent_inputs):
        raise ValueError(
            f"seed_types: expected {len(transposed.tangent_inputs)}, got {len(seed_types)}"
        )
    if saved_order is None:
        saved_order = list(recorded.input_value_keys) + list(recorded.output_keys)
    view = resolve([linear.graph])
    types: list[TensorType] = []
    sources: list[ArgSource] = []
    instrs: list[Instr] = []
    by_key: dict[ValueKey, int] = {}
    by_local: dict[int, int] = {}

    for index, ((_, local_id), seed_type) in enumerate(
        zip(transposed.tangent_inputs, seed_types, strict=True)
    ):
        by_local[local_id] = len(types)
        sources.append(ArgSource("seed", index))
        types.append(seed_type)

    # Saved values become arguments on first use, so collect them before any instruction.
    needed = _primal_leaves(view, graph, saved_types)
    for position, key in enumerate(saved_order):
        if key in needed:
            by_key[key] = len(types)
            sources.append(ArgSource("saved", position))
            types.append(saved_types[key])

    def emit(op: Any, inputs: list[int]) -> list[int]:
        out_types = _infer(op, [types[i] for i in inputs])
        outputs = list(range(len(types), len(types) + len(out_types)))
        types.extend(out_types)
        instrs.append(Instr(op, tuple(inputs), tuple(outputs)))
        return outputs

    def not_saved(key: ValueKey) -> MissingSavedValue:
        return MissingSavedValue(
            f"saved data: the backward program needs {key!r}, which was not saved"
        )

    def materialize(key: ValueKey) -> int:
        view.compute([key], by_key, lambda d, ids: emit(d.operation, ids), not_saved)
        return by_key[key]

    for node in graph.operations:
        inputs = [
            by_local[ref.id] if isinstance(ref, Local) else materialize(ref.key)
            for ref in node.inputs
        ]
        for local_id, value_id in zip(node.outputs, emit(node.operation, inputs), strict=True):
            by_local[local_id] = value_id

    results = tuple(None if r is None else by_local[r] for r in transposed.tangent_outputs)
    return NodeProgram(tuple(sources), tuple(types), tuple(instrs), results)


def graph_program(recorded: RecordedGraph, input_types: Sequence[TensorType]) -> NodeProgram:
    """The program evaluating ``recorded`` itself: arguments are its inputs (``saved``
    0, 1, ...), results its outputs. What forward mode and higher order run natively
    (``CompiledExecutor.run_graph``)::

        program(saved0: 8:float64, saved1: 8:float64) {
          v2 = Exp()(v0)
          v3 = Mul()(v2, v1)
          return (v3,)
        }
    """
    graph = recorded.graph
    if len(input_types) != len(graph.inputs):
        raise ValueError(f"input_types: expected {len(graph.inputs)}, got {len(input_types)}")
    types = list(input_types)
    by_local = {local_id: index for index, local_id in enumerate(graph.inputs)}
    instrs: list[Instr] = []
    for node in graph.operations:
        if not all(isinstance(ref, Local) for ref in node.inputs):
            raise UnsupportedNode(f"{recorded!r} reads values of another graph")
        inputs = [by_local[ref.id] for ref in node.inputs]  # type: ignore[union-attr]
        out_types = _infer(node.operation, [types[i] for i in inputs])
        outputs = list(range(len(types), len(types) + len(out_types)))
        types.extend(out_types)
        by_local.update(zip(node.outputs, outputs, strict=True))
        instrs.append(Instr(node.operation, tuple(inputs), tuple(outputs)))
    sources = tuple(ArgSource("saved", i) for i in range(len(graph.inputs)))
    results = tuple(by_local[o] for o in graph.outputs)
    return compilable(NodeProgram(sources, tuple(types), tuple(instrs), results))


def prune_results(program: NodeProgram, needed: Sequence[bool]) -> NodeProgram:
    """``program`` computing only the results with ``needed[i]`` (the others None).

    Instructions and arguments nothing needed reads are dropped and value ids renumbered
    in order, so the pruned program is canonical too. For ``x @ w`` (2x3 by 3x4) with
    only ``w`` needing a gradient, the ``ct @ w^T`` contraction and ``w`` disappear::

        program(seed0: 2x4, saved0: 2x3, saved1: 3x4) {
          v3 = Conj()(v1)
          v4 = DotGeneral(lhs_contracting=(0,), rhs_contracting=(0,), ...)(v3, v0)
          v5 = Conj()(v2)
          v6 = DotGeneral(lhs_contracting=(1,), rhs_contracting=(1,), ...)(v0, v5)
          return (v6, v4,)
        }
        ==> with needed = (False, True)
        program(seed0: 2x4, saved0: 2x3) {
          v2 = Conj()(v1)
          v3 = DotGeneral(lhs_contracting=(0,), rhs_contracting=(0,), ...)(v2, v0)
          return (None, v3,)
        }
    """
    if len(needed) != len(program.results):
        raise ValueError(f"needed: expected {len(program.results)} flags, got {len(needed)}")
    results = tuple(r if keep else None for r, keep in zip(program.results, needed, strict=True))
    kept = live_instructions(program.instrs, results)
    live = {r for r in results if r is not None} | {i for instr in kept for i in instr.inputs}
    arg_ids = [i for i in range(program.arg_count) if i in live]
    return renumbered(program, arg_ids, kept, results)


def saved_value_order(
    recorded: RecordedGraph, saved_keys: Iterable[ValueKey]
) -> tuple[ValueKey, ...]:
    """How a node's saved values are numbered (``ArgSource.index``): the recorded graph's
    input keys, its output keys, then the other saved keys (retained intermediates) in
    the tape's order."""
    known = recorded.structure[0] + recorded.structure[1]
    present = set(known)
    return known + tuple(k for k in saved_keys if k not in present)


def needed_mask(linear: LinearizedGraph, needed: Sequence[bool]) -> tuple[bool, ...] | None:
    """``backward``'s needed-inputs flags as ``node_program`` takes them: None when every
    input is needed; ``ValueError`` unless there is one flag per tangent input."""
    flags = tuple(bool(n) for n in needed)
    if len(flags) != len(linear.tangent_inputs):
        raise ValueError(f"needed: expected {len(linear.tangent_inputs)} flags, got {len(flags)}")
    return None if all(flags) else flags


def node_program(
    recorded: RecordedGraph,
    linear: LinearizedGraph,
    seed_types: Sequence[TensorType],
    saved_order: Sequence[ValueKey],
    saved_types: Sequence[TensorType | None],
    needed: Sequence[bool] | None = None,
    transposed: LinearizedGraph | None = None,
) -> NodeProgram:
    """THE program the compiled executor runs for one tape node (``tidu-compile dump``
    shows this one too): ``build_program`` reading every saved value present (retained
    values are read, not recomputed), pruned to the ``needed`` cotangents.

    ``seed_types``: one per present tangent output of ``linear``; ``saved_types``: one per
    key of ``saved_order`` (``saved_value_order``), None for a value the tape lacks;
    ``needed``: the tape's needed-inputs mask (None: every input). Zero-size values are
    folded out (``compilable``). Raises what ``build_program`` raises.
    """
    saved = {k: t for k, t in zip(saved_order, saved_types, strict=True) if t is not None}
    program = build_program(recorded, linear, seed_types, saved, transposed, saved_order)
    if needed is not None:
        program = prune_results(program, needed)
    return compilable(program)


def compilable(program: NodeProgram) -> NodeProgram:
    """``program`` with its calls of traced functions inlined (``compiler.calls``) and
    its zero-size values folded out (``compiler.empty``): xDSL cannot lower zero-size
    memrefs, and an op on nothing has nothing to compute. A program of unsigned integers
    is ``UnsupportedNode`` (the tidu dialect's integers are signed), and so is one that
    evaluates a custom_vjp's tangent map (forward mode: the reference path raises why)."""
    for instr in program.instrs:
        if isinstance(instr.op, CustomVJPLinear):
            raise UnsupportedNode(str(instr.op.forward_mode_error()))
    program = inline_calls(program)
    unsigned = sorted({t.dtype for t in program.types if t.dtype in UNSIGNED_DTYPES})
    if unsigned:
        raise UnsupportedNode(f"values of {', '.join(unsigned)} are not compiled")
    for instr in program.instrs:  # a loop's value on nothing is not zeros (compiler.empty)
        if isinstance(instr.op, ControlFlow) and not (
            isinstance(instr.op, Scan) and instr.op.length == 0
        ) and any(0 in program.types[v].shape for v in (*instr.inputs, *instr.outputs)):
            raise UnsupportedNode(f"{type(instr.op).__name__} over zero-size values is not "
                                  "compiled")  # fmt: skip

    return simplify_program(fold_empty_values(program))


def _primal_leaves(view: Any, graph: Any, saved: Mapping[ValueKey, TensorType]) -> set[ValueKey]:
    """Saved keys that the transposed graph reads, directly or through residual ops."""
    found: set[ValueKey] = set()
    stack = [
        ref.key for node in graph.operations for ref in node.inputs if not isinstance(ref, Local)
    ]
    seen: set[ValueKey] = set()
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        if key in saved:
            found.add(key)
            continue
        definition = view.resolve_value(key)
        if isinstance(definition, ProducedDef):
            stack.extend(definition.input_keys)
    return found

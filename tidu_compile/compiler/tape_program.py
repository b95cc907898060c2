"""One program for a whole backward sweep: the tape's node programs spliced together.

``backward`` visits a tape's nodes consumers first and runs each node's backward
program (``compiler.program.node_program``) on the cotangents its outputs received,
adding the cotangents that reach one value. ``tape_program`` does the same walk at
build time over value ids instead of arrays: each node's program is renumbered into one
SSA program whose instructions read the accumulated cotangents as its seeds, and each
addition of two cotangents becomes an ``Add`` instruction, in ``backward``'s order (so
the sums round as the per-node path's do). For ``sum(exp(x) * y)`` (two nodes, the
gradient of ``x`` wanted)::

    program(seed0: ():float64, saved0: 3:float64, saved1: 3:float64) {
      v3 = BroadcastInDim(shape=(3,), broadcast_dimensions=(), operand_shape=())(v0)
      v4 = Conj()(v1)                      # ReduceSum's VJP, then Mul's: ct * conj(y)
      v5 = Mul()(v3, v4)
      v6 = Conj()(v2)                      # Exp's: ct * conj(exp(x)), from the saved exp
      v7 = Mul()(v5, v6)
      return (v7,)
    }

Values are named by *address*: ``("leaf", i)`` for the ``i``-th distinct leaf of the
tape, ``("out", position, slot)`` for an output of the node at ``position`` in the
visiting order. Arguments are the root's seed, then every saved value some node program
reads (``TapeProgram.saved``: ``(position, saved index)``); results are the wanted
addresses that received a cotangent. Positional ids make the text the cache identity,
as for one node: two tapes of one structure and types give equal programs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tidu_compile import ops
from tidu_compile.compiler.program import UnsupportedNode, compilable, prune_results
from tidu_compile.compiler.ssa_program import ArgSource, Instr, NodeProgram
from tidu_compile.ops.base import TensorType

__all__ = ["Address", "NodeBuilder", "TapeNode", "TapeProgram", "tape_program"]

#: ``("leaf", i)`` or ``("out", position, slot)``: a tape value, independent of its key.
Address = tuple

#: ``build(slots, seed_types)``: the node's backward program for the output ``slots``
#: that received cotangents (``seed_types``, one per slot), and the slot of each of its
#: seeds (the slots with a tangent; ``ArgSource("seed", i)`` reads ``seed_slots[i]``).
NodeBuilder = Callable[
    [tuple[int, ...], tuple[TensorType, ...]], tuple[NodeProgram, tuple[int, ...]]
]


@dataclass(frozen=True)
class TapeNode:
    """One node of the tape as the splice sees it."""

    #: Per input of the node: where its cotangent goes (None: it needs no gradient).
    targets: tuple[Address | None, ...]
    build: NodeBuilder


@dataclass(frozen=True)
class TapeProgram:
    """The spliced program and where its arguments and results live on the tape."""

    program: NodeProgram
    #: Per ``saved`` argument: ``(position of the node, index into its saved order)``.
    saved: tuple[tuple[int, int], ...]
    #: Per result: the address whose accumulated cotangent it is.
    results: tuple[Address, ...]


def tape_program(
    seed_type: TensorType,
    root_slot: int,
    nodes: Sequence[TapeNode],
    wanted: Callable[[Address], bool],
) -> TapeProgram:
    """Splice the backward programs of ``nodes`` (the visiting order, root first) into
    one program seeded at output ``root_slot`` of the root with a ``seed_type`` value.

    Raises what a node's ``build`` raises, and the type rules' errors for cotangents
    that cannot be added.
    """
    built: list[tuple[int, NodeProgram, tuple[int, ...]] | None] = []
    # Pass 1: which node programs run, with which seed types; the arguments first.
    incoming: dict[int, dict[int, TensorType]] = {0: {root_slot: seed_type}}
    for position, node in enumerate(nodes):
        received = incoming.pop(position, None)
        if not received:
            built.append(None)
            continue
        slots = tuple(sorted(received))
        program, seed_slots = node.build(slots, tuple(received[s] for s in slots))
        built.append((position, program, seed_slots))
        for target, result in zip(node.targets, program.results, strict=True):
            if target is not None and result is not None and target[0] == "out":
                incoming.setdefault(target[1], {}).setdefault(target[2], program.types[result])
    saved: dict[tuple[int, int], int] = {}  # (position, saved index) -> argument id
    types: list[TensorType] = [seed_type]
    for item in built:
        if item is not None:
            position, program, _ = item
            arg_types = program.types[: program.arg_count]
            for source, arg_type in zip(program.arg_sources, arg_types, strict=True):
                if source.kind == "saved" and (position, source.index) not in saved:
                    saved[(position, source.index)] = len(types)
                    types.append(arg_type)
    # Pass 2: the instructions, renumbered, with an Add wherever two cotangents meet.
    instrs: list[Instr] = []
    values: dict[Address, int] = {("out", 0, root_slot): 0}

    def emit(op: object, inputs: tuple[int, ...], out_types: Sequence[TensorType]) -> list[int]:
        outputs = list(range(len(types), len(types) + len(out_types)))
        types.extend(out_types)
        instrs.append(Instr(op, inputs, tuple(outputs)))
        return outputs

    for item, node in zip(built, nodes, strict=True):
        if item is None:
            continue
        position, program, seed_slots = item
        ids: dict[int, int] = {}
        for local, source in enumerate(program.arg_sources):
            ids[local] = (
                values[("out", position, seed_slots[source.index])]
                if source.kind == "seed"
                else saved[(position, source.index)]
            )
        for instr in program.instrs:
            out_types = [program.types[o] for o in instr.outputs]
            outputs = emit(instr.op, tuple(ids[i] for i in instr.inputs), out_types)
            ids.update(zip(instr.outputs, outputs, strict=True))
        for target, result in zip(node.targets, program.results, strict=True):
            if target is None or result is None:
                continue
            previous = values.get(target)
            if previous is None:
                values[target] = ids[result]
            else:
                add = ops.Add()
                sum_type = add.infer_types(types[previous], types[ids[result]])
                values[target] = emit(add, (previous, ids[result]), sum_type)[0]
    results = tuple(a for a in values if a != ("out", 0, root_slot) and wanted(a))
    sources = (ArgSource("seed", 0), *(ArgSource("saved", i) for i in range(len(saved))))
    whole = NodeProgram(sources, tuple(types), tuple(instrs), tuple(values[a] for a in results))
    # What no result reads goes (the cotangents of values nobody wants, their arguments),
    # and the saved arguments left are numbered again in order.
    whole = prune_results(whole, [True] * len(results))
    refs = tuple(saved)
    kept = tuple(refs[s.index] for s in whole.arg_sources if s.kind == "saved")
    renumbered = (ArgSource("seed", 0), *(ArgSource("saved", i) for i in range(len(kept))))
    if whole.arg_sources[:1] != (ArgSource("seed", 0),):
        raise UnsupportedNode("the tape's cotangents do not depend on its seed")
    whole = NodeProgram(renumbered, whole.types, whole.instrs, whole.results)
    return TapeProgram(compilable(whole), kept, results)

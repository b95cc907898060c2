"""Values must be defined before they are used: the check xDSL's verifier does not make.

MLIR requires every operand to dominate its use; xDSL's ``verify()`` does not check it,
so parsed text like ``%0 = tidu.scale %1 ...`` followed by ``%1 = tidu.scale %0 ...``
verifies, and a rewrite pattern folding the cycle would never stop. ``check_ssa_order``
rejects such IR up front (the CLI runs it on every file it parses).

In a single-block region an operand must be a block argument, an earlier op's result,
or visible from an enclosing region at the point of the op holding the region. In a
region of several blocks (a CFG) it must be defined in that region or visible from
outside it; the block order there is a graph, which this check does not analyze.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, Region, SSAValue

__all__ = ["SSAOrderError", "check_ssa_order"]


class SSAOrderError(ValueError):
    """An operand used before (or without) its definition."""


def check_ssa_order(op: Operation) -> None:
    """Raise ``SSAOrderError`` naming the first op that uses a value not yet defined."""
    stack: list[tuple[Operation, frozenset[SSAValue]]] = [(op, frozenset())]
    while stack:
        current, visible = stack.pop()
        for region in current.regions:
            _check_region(region, visible, stack)


def _check_region(
    region: Region,
    visible: frozenset[SSAValue],
    stack: list[tuple[Operation, frozenset[SSAValue]]],
) -> None:
    blocks = list(region.blocks)
    if len(blocks) > 1:  # a CFG: anything defined in the region counts
        defined = set(visible)
        for block in blocks:
            defined.update(block.args)
            for inner in block.ops:
                defined.update(inner.results)
        for block in blocks:
            _check_block(block, frozenset(defined), stack, ordered=False)
    elif blocks:
        _check_block(blocks[0], visible, stack, ordered=True)


def _check_block(
    block: Block,
    visible: frozenset[SSAValue],
    stack: list[tuple[Operation, frozenset[SSAValue]]],
    ordered: bool,
) -> None:
    defined = set(visible)
    defined.update(block.args)
    for op in block.ops:
        for index, operand in enumerate(op.operands):
            if operand not in defined:
                raise SSAOrderError(
                    f"{op.name}: operand {index} is used before it is defined "
                    "(or is not visible here)"
                )
        if op.regions:
            stack.append((op, frozenset(defined)))
        if ordered:
            defined.update(op.results)

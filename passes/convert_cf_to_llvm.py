"""``convert-cf-to-llvm``: ``cf.br``/``cf.cond_br`` to ``llvm.br``/``llvm.cond_br``.

Block arguments carry over unchanged (the llvmlite translation turns them into
phis). Precondition: none beyond valid ``cf``. ``cf.switch`` (xDSL's llvm dialect
has no switch) and ``cf.assert`` have no rule and raise.

Before::

    cf.cond_br %c, ^bb1(%x : f64), ^bb2
  ^bb1(%a: f64):
    cf.br ^bb2

After::

    llvm.cond_br %c, ^bb1(%x : f64), ^bb2
  ^bb1(%a: f64):
    llvm.br ^bb2
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from .lowering_utils import TableRewrite, check_no_leftover, rewrite_each_op


def _br(op: Operation) -> Operation:
    assert isinstance(op, cf.BranchOp)
    return llvm.BrOp(op.successor, *op.arguments)


def _cond_br(op: Operation) -> Operation:
    assert isinstance(op, cf.ConditionalBranchOp)
    return llvm.CondBrOp(
        op.cond, op.then_block, op.then_arguments, op.else_block, op.else_arguments
    )


_BRANCHES: dict[type[Operation], Callable[[Operation], Operation]] = {
    cf.BranchOp: _br,
    cf.ConditionalBranchOp: _cond_br,
}
"""Unconditional and conditional branches, successors and operands kept."""


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ModulePass):
    """Lower ``cf`` branches to ``llvm``; a leftover ``cf`` op is an error."""

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_each_op(op, TableRewrite(_BRANCHES))
        check_no_leftover(op, ("cf.",), self.name)

"""``tidu-convert-scf-to-cf``: xDSL's ``convert-scf-to-cf`` and ``scf.while`` to branches.

xDSL 0.74's ``convert-scf-to-cf`` lowers ``scf.for``, ``scf.if`` and
``scf.index_switch``, not ``scf.while``; this pass, which the ``llvm`` stage runs in its
place, applies its three patterns and ``WhileLowering`` (MLIR's) in one walk. The
block holding a loop is split at it; the ``before`` region becomes the condition
block (its arguments the loop's values), the ``after`` region the body, whose
``scf.yield`` branches back::

    %r = scf.while (%a = %init) : (i64) -> i64 {
      %c = arith.cmpi slt, %a, %n : i64
      scf.condition(%c) %a : i64
    } do {
    ^bb0(%b: i64):
      %next = arith.addi %b, %one : i64
      scf.yield %next : i64
    }
    "use"(%r) : (i64) -> ()

becomes::

    cf.br ^before(%init : i64)
  ^before(%a: i64):
    %c = arith.cmpi slt, %a, %n : i64
    cf.cond_br %c, ^after(%a : i64), ^continue
  ^after(%b: i64):
    %next = arith.addi %b, %one : i64
    cf.br ^before(%next : i64)
  ^continue:
    "use"(%a) : (i64) -> ()

The loop's results are the values ``scf.condition`` forwards (the block holding it
dominates the continuation). Regions of several blocks (a loop whose region held a
loop lowered first) are moved whole, as ``ForLowering`` moves its body.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering

__all__ = ["ConvertScfToCfPass", "WhileLowering"]


class WhileLowering(RewritePattern):
    """Lowers ``scf.while`` to a condition block and a body block (module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, loop: scf.WhileOp, rewriter: PatternRewriter, /) -> None:
        entry = loop.parent_block()
        assert entry is not None
        condition_block, body_block = loop.before_region.first_block, loop.after_region.first_block
        condition_end, body_end = loop.before_region.last_block, loop.after_region.last_block
        assert condition_block and body_block and condition_end and body_end
        condition, yielded = condition_end.last_op, body_end.last_op
        assert isinstance(condition, scf.ConditionOp) and isinstance(yielded, scf.YieldOp)
        rest = entry.split_before(loop)
        rewriter.inline_region(loop.before_region, BlockInsertPoint.before(rest))
        rewriter.inline_region(loop.after_region, BlockInsertPoint.before(rest))
        forwarded = list(condition.args)
        rewriter.replace(condition, cf.ConditionalBranchOp(
            condition.condition, body_block, forwarded, rest, ()))  # fmt: skip
        rewriter.replace(yielded, cf.BranchOp(condition_block, *yielded.operands))
        rewriter.insert(cf.BranchOp(condition_block, *loop.arguments), InsertPoint.at_end(entry))
        rewriter.replace(loop, [], forwarded)


@dataclass(frozen=True)
class ConvertScfToCfPass(ModulePass):
    """Lower ``scf.for``, ``scf.if``, ``scf.index_switch`` and ``scf.while`` to ``cf``."""

    name = "tidu-convert-scf-to-cf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [SwitchLowering(), IfLowering(), ForLowering(), WhileLowering()]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)

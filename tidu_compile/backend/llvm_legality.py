"""The post-condition of the ``llvm`` stage: only ``llvm.*`` ops and no ``index`` values.

``xdsl.backend.llvm.convert.convert_module`` takes nothing else, and would fail on a
leftover op with an error that names neither the op nor the pass that missed it. The
stage (``compiler.stages.lower_to_llvm_dialect``) checks its result here::

    llvm.func @f(%a: f64) -> f64 {
      %0 = "test.op"(%a) : (f64) -> f64
      llvm.return %0 : f64
    }
    ==> IllegalIRError: lower-to-llvm: IR is not legal LLVM dialect; left over: test.op x1
"""

from __future__ import annotations

from collections import Counter

from xdsl.dialects.builtin import IndexType, ModuleOp

from tidu_compile.passes.errors import IllegalIRError

__all__ = ["check_llvm_legal"]


def check_llvm_legal(module: ModuleOp, stage: str = "lower-to-llvm") -> None:
    """Raise :class:`IllegalIRError` naming every non-``llvm`` op and ``index`` value."""
    counts: Counter[str] = Counter()
    for op in module.walk():
        if op is not module and not op.name.startswith("llvm."):
            counts[op.name] += 1
        for value in op.results:
            if isinstance(value.type, IndexType):
                counts["index-typed value"] += 1
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    if isinstance(arg.type, IndexType):
                        counts["index-typed value"] += 1
    if counts:
        raise IllegalIRError(stage, dict(counts))

"""Standard MLIR dialects (func, scf, memref, arith, math, cf) to the ``llvm`` dialect.

``lower_to_llvm_dialect`` runs the passes of the ``llvm`` stage of the pipeline table
(``compiler.stages``, where their order is explained) in place, verifying after every
pass, then checks that only ``llvm.*`` ops and no ``index`` values are left, so
``xdsl.backend.llvm.convert.convert_module`` can take the result.

Input::

    func.func @scale(%x: memref<?xf64>, %y: memref<?xf64>, %n: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %v = memref.load %x[%i] : memref<?xf64>
        %e = math.exp %v : f64
        memref.store %e, %y[%i] : memref<?xf64>
      }
      func.return
    }

Output (abridged)::

    llvm.func @scale(%x: !llvm.ptr {llvm.noalias}, %y: !llvm.ptr {llvm.noalias}, %n: i64) {
      ...
    ^bb2:
      %p = llvm.getelementptr inbounds %x[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      %v = llvm.load %p : !llvm.ptr -> f64
      %e = llvm.intr.exp(%v) : (f64) -> f64
      ...
    }
"""

from __future__ import annotations

from collections import Counter

from xdsl.dialects.builtin import IndexType, ModuleOp

from tidu_compile.compiler import stages
from tidu_compile.passes.errors import IllegalIRError


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


def lower_to_llvm_dialect(
    module: ModuleOp,
    *,
    passes: str | None = None,
    verify_each: bool = True,
    after_pass: stages.AfterPass | None = None,
) -> ModuleOp:
    """Lower ``module`` in place to the ``llvm`` dialect and return it.

    ``passes`` replaces the ``llvm`` stage's pass spec (a test turning an option off);
    ``verify_each`` verifies after every pass (the module is always verified at the
    end); ``after_pass(pass, module)`` hears every pass. Raises ``LoweringError`` from
    a pass, ``VerifyException`` from the verifier, or ``IllegalIRError`` when ops other
    than ``llvm.*`` remain.
    """
    spec = stages.stage("llvm").spec if passes is None else passes
    stages.run_passes(module, spec, after_pass=after_pass, verify_each=verify_each)
    check_llvm_legal(module)
    return module

"""Standard MLIR dialects (func, scf, memref, arith, math, cf) to the ``llvm`` dialect.

``lower_to_llvm_dialect`` runs ``LOWERING_PIPELINE`` in place, verifying after
every pass, then checks that only ``llvm.*`` ops and no ``index`` values are left,
so ``xdsl.backend.llvm.convert.convert_module`` can take the result.

Two departures from the order measured in the notes, both keeping its result:
  * ``convert-index-to-i64`` runs right after the pointer passes, before the
    arith/func conversions: the ``llvm`` ops and ``llvm.func`` signatures refuse
    ``index``, so retyping it first keeps the IR valid after every pass;
  * ``convert-ptr-to-llvm-fast`` replaces xDSL's ``convert-ptr-to-llvm`` (same
    final IR, checked by the tests; ~0.4 ms instead of ~15 ms per kernel).

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

import time
from collections import Counter
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.passes import ModulePass

from tidu_compile.passes.errors import IllegalIRError

LOWERING_PIPELINE: tuple[str, ...] = (
    "convert-scf-to-cf",
    "convert-memref-to-ptr{lower_func=true}",
    "convert-ptr-type-offsets",
    "convert-ptradd-to-gep",
    "convert-ptr-to-llvm-fast",
    "convert-index-to-i64",
    "convert-arith-to-llvm",
    "convert-math-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",
    "reconcile-unrealized-casts",
)
"""Pass order of :func:`lower_to_llvm_dialect`, in ``xdsl-opt -p`` spelling."""

AfterPass = Callable[[str, ModuleOp, float], None]
"""Called after each pass with its name, the module and the seconds it took."""


def build_passes(*, contract: bool = True, noalias: bool = True) -> list[ModulePass]:
    """Instances of the ``LOWERING_PIPELINE`` passes, in order."""
    from xdsl.transforms.convert_memref_to_ptr import ConvertMemRefToPtr
    from xdsl.transforms.convert_ptr_type_offsets import ConvertPtrTypeOffsetsPass
    from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
    from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

    from tidu_compile.passes.convert_arith_to_llvm import ConvertArithToLLVMPass
    from tidu_compile.passes.convert_cf_to_llvm import ConvertCfToLLVMPass
    from tidu_compile.passes.convert_func_to_llvm import ConvertFuncToLLVMPass
    from tidu_compile.passes.convert_index_to_i64 import ConvertIndexToI64Pass
    from tidu_compile.passes.convert_math_to_llvm import ConvertMathToLLVMPass
    from tidu_compile.passes.convert_ptr_to_llvm_fast import ConvertPtrToLLVMFastPass
    from tidu_compile.passes.convert_ptradd_to_gep import ConvertPtrAddToGEPPass

    passes: list[ModulePass] = [
        ConvertScfToCf(),
        ConvertMemRefToPtr(lower_func=True),
        ConvertPtrTypeOffsetsPass(),
        ConvertPtrAddToGEPPass(),
        ConvertPtrToLLVMFastPass(),
        ConvertIndexToI64Pass(),
        ConvertArithToLLVMPass(contract=contract),
        ConvertMathToLLVMPass(),
        ConvertCfToLLVMPass(),
        ConvertFuncToLLVMPass(noalias=noalias),
        ReconcileUnrealizedCastsPass(),
    ]
    assert [p.name for p in passes] == [s.split("{")[0] for s in LOWERING_PIPELINE]
    return passes


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
    verify_each: bool = True,
    contract: bool = True,
    noalias: bool = True,
    after_pass: AfterPass | None = None,
) -> ModuleOp:
    """Lower ``module`` in place to the ``llvm`` dialect and return it.

    ``verify_each`` verifies after every pass (the module is always verified at
    the end); ``contract`` and ``noalias`` are the options of
    ``convert-arith-to-llvm`` and ``convert-func-to-llvm``. Raises
    ``LoweringError`` from a pass, ``VerifyException`` from the verifier, or
    ``IllegalIRError`` when ops other than ``llvm.*`` remain.
    """
    ctx = Context()
    for ir_pass in build_passes(contract=contract, noalias=noalias):
        start = time.perf_counter()
        ir_pass.apply(ctx, module)
        seconds = time.perf_counter() - start
        if verify_each:
            module.verify()
        if after_pass is not None:
            after_pass(ir_pass.name, module, seconds)
    if not verify_each:
        module.verify()
    check_llvm_legal(module)
    return module

"""tidu_compile.passes: xDSL module passes, one per file.

``get_all_passes()`` maps each pass name to a zero-argument function returning
the pass class, so listing the passes imports none of them. Registering a pass
is one line in ``_PASSES``: ``"pass-name": ("module_name", "ClassName")``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial

from xdsl.passes import ModulePass

_PASSES: dict[str, tuple[str, str]] = {
    "convert-arith-to-llvm": ("convert_arith_to_llvm", "ConvertArithToLLVMPass"),
    "convert-cf-to-llvm": ("convert_cf_to_llvm", "ConvertCfToLLVMPass"),
    "convert-func-to-llvm": ("convert_func_to_llvm", "ConvertFuncToLLVMPass"),
    "convert-index-to-i64": ("convert_index_to_i64", "ConvertIndexToI64Pass"),
    "convert-math-to-llvm": ("convert_math_to_llvm", "ConvertMathToLLVMPass"),
    "convert-memref-to-ptr-fast": ("convert_memref_to_ptr_fast", "ConvertMemRefToPtrFastPass"),
    "convert-ptr-to-llvm-fast": ("convert_ptr_to_llvm_fast", "ConvertPtrToLLVMFastPass"),
    "convert-ptradd-to-gep": ("convert_ptradd_to_gep", "ConvertPtrAddToGEPPass"),
    "expand-math-polynomials": ("expand_math_polynomials", "ExpandMathPolynomialsPass"),
    "tidu-convert-scf-to-cf": ("convert_scf_to_cf", "ConvertScfToCfPass"),
    "tidu-fuse-elementwise": ("tidu_fuse_elementwise", "TiduFuseElementwisePass"),
    "tidu-lower-control": ("tidu_lower_control", "TiduLowerControlPass"),
    "tidu-lower-linalg": ("tidu_lower_linalg", "TiduLowerLinalgPass"),
    "tidu-lower-to-loops": ("tidu_lower_to_loops", "TiduLowerToLoopsPass"),
}

def _load(module_name: str, class_name: str) -> type[ModulePass]:
    module = importlib.import_module(f"{__name__}.{module_name}")
    pass_class: type[ModulePass] = getattr(module, class_name)
    return pass_class

def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass of this package by name, each behind a lazy loader."""
    return {name: partial(_load, *where) for name, where in _PASSES.items()}

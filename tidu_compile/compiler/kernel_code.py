"""A node's kernels as the code they compile to: canonical text, and its key.

The object code of a node is a pure function of the ``llvm`` stage's input, the kernel
functions that ``extract_kernel_module`` copies out of the ``loops`` stage (with every
memref argument's leading extent dynamic). ``kernel_code(module)`` makes that input
canonical and keys it:

1. the kernel functions are renamed by position (``@k0, @k1, ...``) and printed: the
   *kernel text*;
2. ``digest`` = the kernel text + the code generator's fingerprint + the compilation
   environment (``compiler.native``);
3. the functions are renamed ``@tk<digest[:24]>_<i>``: code loaded once in the process's
   engine is found again by every program with the same kernels.

Small kernels are a size class of their own: when no kernel buffer of the module holds
more than ``SCALAR_LOOP_ELEMENTS`` elements, the module carries ``tidu.scalar_loops``
(``backend.jit.SCALAR_LOOPS_ATTR``), in its text and so in its key, and LLVM's loop vectorizer
leaves its loops alone (``backend.jit.optimize``): a vectorized loop with runtime bounds,
its epilogue and its remainder cost most of O3 and machine code for kernels of a few
dozen elements and run them no faster. The unrolled GRU of ``bench --small`` (172 kernels
of 8-192 elements): compiled in 5.3 -> 3.3 s, its step 0.18 ms either way; attention's
16 x 16 scores (256 elements) ran ~10% slower in scalar loops (Intel Xeon, 2026-12-04).

Two programs share object code exactly when their kernel texts are equal. Nothing is
inferred about what the code depends on: whatever the lowering baked in (a slice's
start, a pad's border, a loop bound, a reduction's extent, a constant) is in the text,
so programs that differ there have different keys; what is not in the text (the
``[lo, hi)`` rows of a chunked kernel, the leading extents of its buffers) the code
reads at run time. For the MLP's ``tanh`` node at batch 256 and at batch 33::

    func.func @tidu_9be1..._k0(%in0: memref<256x40xf64>, ..., %lo: index, %hi: index)
    func.func @tidu_04c7..._k0(%in0: memref<33x40xf64>, ..., %lo: index, %hi: index)
    ==> both  func.func @k0(%in0: memref<?x40xf64>, ..., %lo: index, %hi: index)
    ==> both  @tk5d0e..._0, compiled once
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, UnitAttr

from tidu_compile.backend.jit import SCALAR_LOOPS_ATTR
from tidu_compile.compiler import native
from tidu_compile.compiler.cache import cache_key
from tidu_compile.compiler.objects import kernel_symbol
from tidu_compile.passes.tidu_lower_to_loops import KERNEL_ATTR, extract_kernel_module

__all__ = ["SCALAR_LOOP_ELEMENTS", "KernelCode", "kernel_code"]

#: Modules whose kernel buffers all hold at most this many elements: scalar loops.
SCALAR_LOOP_ELEMENTS = 192


@dataclass(frozen=True)
class KernelCode:
    """The ``kernels`` stage of one ``loops``-stage module, ready for the ``llvm`` stage.

    ``module``: the kernel functions, named ``@tk<digest[:24]>_<i>``; ``text``: their
    canonical text (named ``@k<i>``); ``digest``: the key of their object code;
    ``symbols``: the old symbol of each kernel (``@node_k<i>``) -> its new one.
    """

    module: ModuleOp
    text: str
    digest: str
    symbols: dict[str, str]

    def __str__(self) -> str:
        """The ``kernels`` stage as ``dump`` prints it: ``module``, what LLVM compiles."""
        return str(self.module)


def kernel_code(module: ModuleOp, take: bool = False) -> KernelCode:
    """The canonical kernels of ``module`` (a ``loops``-stage module, not modified;
    ``take``: its kernel functions are moved out, not copied, and it is dropped)."""
    largest = max((math.prod(t.get_shape()) for op in module.ops
                   if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes
                   for t in op.function_type.inputs if isinstance(t, MemRefType)),
                  default=0)  # fmt: skip
    kernels = extract_kernel_module(module, take)
    if largest <= SCALAR_LOOP_ELEMENTS:
        kernels.attributes[SCALAR_LOOPS_ATTR] = UnitAttr()
    functions = [op for op in kernels.ops
                 if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]  # fmt: skip
    old = [f.sym_name.data for f in functions]
    for index, function in enumerate(functions):
        function.sym_name = StringAttr(f"k{index}")
    text = str(kernels)
    digest = cache_key("kernels", native.code_fingerprint(), native.environment_fingerprint(), text)
    new = [kernel_symbol(digest, index) for index in range(len(functions))]
    for function, name in zip(functions, new, strict=True):
        function.sym_name = StringAttr(name)
    return KernelCode(kernels, text, digest, dict(zip(old, new, strict=True)))

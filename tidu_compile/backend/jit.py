"""The work of the LLVM stages of the stage table, from an ``llvm``-dialect module on.

The table (``compiler.stages``) runs these, one per stage; nothing here walks stages::

    llvm-ir   kernels_llvm_ir (the executor's way, from the ``kernels`` stage: the text
              ``llvm_text`` writes) or llvm_ir (from an ``llvm``-dialect module:
              convert_module) -> triple + data layout -> host additions (array entry
              points, math variants, preferred vector width, interleaving of heavy
              loops: ``kernel_hints``, vector-math attributes) -> llvmlite parse +
              verify                                   (LlvmIr: its text and the module)
    opt-ir    optimize: O3 through the new pass manager (the module, optimised in place)
    asm       assembly: the target machine's assembly   (text)
    codegen   object_code: ELF object bytes             (CompiledObject, from opt-ir)

Loading the object into the process is ``engine.load``. Example::

    ir = llvm_ir(lower_to_llvm_dialect(parse(text)))   # the llvm stage: compiler.stages
    obj = object_code(optimize(ir))                    # CompiledObject
    addrs = load(obj, ["w1"])                          # {"w1": 0x7f...}
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.passes.expand_math_polynomials import MATH_FUNCTION_PREFIX

from .array_entry import add_array_entry_points
from .elf import read_elf_symbols
from .engine import DuplicateSymbolError, JitEngine, UnresolvedSymbolError, get_engine, load
from .kernel_hints import add_kernel_hints
from .llvm_text import emit_module
from .math_variants import add_math_variants
from .target import TARGET_LOCK, host_target, host_target_machine, vector_math_abi
from .vecmath import add_vector_variants

__all__ = [
    "CompiledObject",
    "DuplicateSymbolError",
    "JitEngine",
    "SCALAR_LOOPS_ATTR",
    "SCALAR_LOOPS_NOTE",
    "LlvmIr",
    "UnresolvedSymbolError",
    "assembly",
    "get_engine",
    "host_ir_text",
    "kernels_ir_text",
    "kernels_llvm_ir",
    "llvm_ir",
    "llvm_ir_text",
    "parse_ir",
    "load",
    "object_code",
    "optimize",
]


@dataclass(frozen=True)
class CompiledObject:
    """Host object code and what the loader needs to know about it.

    ``defined`` are the global symbols the object exports (its kernels),
    ``undefined`` the external symbols it needs (libm, libmvec, memset...).
    ``target_key`` identifies the host it was built for (triple, CPU, features,
    llvmlite version), the part of a disk-cache key that is not the source.
    """

    object_code: bytes
    defined: tuple[str, ...]
    undefined: tuple[str, ...]
    vector_math: bool = False
    target_key: str = ""


@dataclass(frozen=True)
class LlvmIr:
    """The ``llvm-ir`` stage: the text llvmlite's IR builder printed, and that text parsed
    and verified (``module``, which ``optimize`` changes in place); ``vectorize_loops``:
    False for a module of small kernels (``tidu.scalar_loops``: its text says so in a
    comment), whose loops O3 leaves scalar."""

    text: str
    module: llvm.ModuleRef
    vectorize_loops: bool = True

    def __str__(self) -> str:
        return self.text


def _use_vector_math(requested: bool | None) -> bool:
    if requested is False:
        return False
    available = vector_math_abi() is not None
    if requested and not available:
        raise RuntimeError("vector math requested but libmvec or AVX2/AVX-512 is missing")
    return available


def llvm_ir_text(module: ModuleOp, *, vector_math: bool | None = None) -> str:
    """Unoptimised LLVM IR for an ``llvm``-dialect module (not modified), by xDSL's
    ``convert_module``, with the host's additions (``host_ir_text``).

    ``vector_math``: ``None`` uses libmvec where the host supports it, ``True``
    requires it, ``False`` keeps scalar libm calls.
    """
    from xdsl.backend.llvm.convert import convert_module

    host = host_target()
    ir_module = convert_module(
        module, fallback_target_triple=host.triple, data_layout=host.data_layout
    )
    # convert_module ignores linkage: restore `internal` for private definitions; the
    # outlined math functions are inlined, or called through vector variants
    # (`add_math_variants`).
    for op in module.ops:
        if (
            isinstance(op, llvm_dialect.FuncOp)
            and op.body.blocks
            and op.linkage.linkage.data in ("internal", "private")
        ):
            ir_module.get_global(op.sym_name.data).linkage = "internal"
    return host_ir_text(str(ir_module), vector_math=vector_math)


def kernels_ir_text(module: ModuleOp, *, vector_math: bool | None = None) -> str:
    """Unoptimised LLVM IR for a ``kernels``-stage module (not modified), written by
    ``llvm_text.emit_module``: the text ``llvm_ir_text`` gives for the module's ``llvm``
    stage, but for the numbers of local names, with the host's additions."""
    host = host_target()
    return host_ir_text(emit_module(module, host.triple, host.data_layout),
                        vector_math=vector_math)  # fmt: skip


def host_ir_text(text: str, *, vector_math: bool | None = None) -> str:
    """The host's additions to a module's LLVM IR: the kernels' array entry points, the
    vector variants of the math functions, the kernel hints and libmvec's variants."""
    host = host_target()
    text = add_array_entry_points(text)
    text, _ = add_math_variants(text, MATH_FUNCTION_PREFIX, host.tuning.lanes)
    text = add_kernel_hints(text, host.tuning)
    abi = vector_math_abi()
    if _use_vector_math(vector_math) and abi is not None:
        text, _ = add_vector_variants(text, abi)
    return text


def parse_ir(text: str, *, vectorize_loops: bool = True) -> LlvmIr:
    """The ``llvm-ir`` stage of LLVM IR text: the text, parsed and verified by LLVM
    (with ``vectorize_loops=False``, the comment ``SCALAR_LOOPS_NOTE`` first)."""
    if not vectorize_loops:
        text = f"{SCALAR_LOOPS_NOTE}\n{text}"
    with TARGET_LOCK:
        parsed = llvm.parse_assembly(text)
        parsed.verify()
    return LlvmIr(text, parsed, vectorize_loops)


SCALAR_LOOPS_ATTR = "tidu.scalar_loops"
"""The module attribute of small kernels (set by ``compiler.kernel_code``)."""
SCALAR_LOOPS_NOTE = f"; {SCALAR_LOOPS_ATTR}: small kernels, O3 without the loop vectorizer"


def _vectorize_loops(module: ModuleOp) -> bool:
    return SCALAR_LOOPS_ATTR not in module.attributes


def llvm_ir(module: ModuleOp, *, vector_math: bool | None = None) -> LlvmIr:
    """The ``llvm-ir`` stage of an ``llvm``-dialect module: ``llvm_ir_text``, parsed and
    verified by LLVM."""
    return parse_ir(llvm_ir_text(module, vector_math=vector_math),
                    vectorize_loops=_vectorize_loops(module))  # fmt: skip


def kernels_llvm_ir(module: ModuleOp, *, vector_math: bool | None = None) -> LlvmIr:
    """The ``llvm-ir`` stage straight from a ``kernels``-stage module:
    ``kernels_ir_text``, parsed and verified by LLVM."""
    return parse_ir(kernels_ir_text(module, vector_math=vector_math),
                    vectorize_loops=_vectorize_loops(module))  # fmt: skip


def optimize(ir: LlvmIr) -> llvm.ModuleRef:
    """The ``opt-ir`` stage: ``ir.module`` after the O3 pipeline for the host (in place;
    the loop vectorizer off for a module of small kernels: ``ir.vectorize_loops``)."""
    with TARGET_LOCK:
        tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        tuning.loop_vectorization = ir.vectorize_loops
        tuning.slp_vectorization = True
        builder = llvm.create_pass_builder(host_target_machine(), tuning)
        builder.getModulePassManager().run(ir.module, builder)
    return ir.module


def assembly(optimized: llvm.ModuleRef) -> str:
    """The ``asm`` stage: the host target machine's assembly of an optimised module."""
    with TARGET_LOCK:
        return str(host_target_machine().emit_assembly(optimized))


def object_code(optimized: llvm.ModuleRef) -> CompiledObject:
    """The ``codegen`` stage: the host target machine's object code of an optimised module."""
    with TARGET_LOCK:
        code = host_target_machine().emit_object(optimized)
    defined, undefined = read_elf_symbols(code)
    return CompiledObject(
        object_code=code,
        defined=defined,
        undefined=undefined,
        vector_math=any(name.startswith("_ZGV") for name in undefined),
        target_key=host_target().key,
    )

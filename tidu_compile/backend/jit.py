"""Compile an ``llvm``-dialect module to host object code, and dump each stage.

Stages, in order (``STAGES`` names the ones a CLI can print)::

    llvm-ir   convert_module -> triple + data layout -> host hints (preferred
              vector width, interleaving of heavy loops: ``kernel_hints``)
              -> vector-math attributes -> llvmlite parse + verify
                                                  (text: unoptimised LLVM IR)
    opt-ir    O3 through the new pass manager     (text: optimised LLVM IR)
    asm       the target machine's assembly       (text only)
    codegen   ``emit_object``: ELF object bytes   (what ``compile_module`` returns)

``compile_module`` records the seconds spent in ``llvm-ir``, ``opt-ir`` and
``codegen``. Loading the object into the process is ``engine.load``.

Example::

    module = lower_to_llvm_dialect(parse(text))
    obj = compile_module(module)                    # CompiledObject
    addrs = load(obj, ["w1"])                       # {"w1": 0x7f...}
    print(dump_stage(module, "asm"))
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import llvmlite.binding as llvm
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import ModuleOp

from .array_entry import add_array_entry_points
from .elf import read_elf_symbols
from .engine import DuplicateSymbolError, JitEngine, UnresolvedSymbolError, get_engine, load
from .kernel_hints import add_kernel_hints
from .target import TARGET_LOCK, host_target, host_target_machine, vector_math_abi
from .vecmath import add_vector_variants

__all__ = [
    "STAGES",
    "CompiledObject",
    "DuplicateSymbolError",
    "JitEngine",
    "UnresolvedSymbolError",
    "assembly_text",
    "compile_module",
    "dump_stage",
    "get_engine",
    "llvm_ir_text",
    "load",
    "optimized_ir_text",
]

Stage = Literal["llvm-ir", "opt-ir", "asm"]
STAGES: tuple[Stage, ...] = ("llvm-ir", "opt-ir", "asm")
"""Stages whose text ``dump_stage`` can return, in pipeline order."""


@dataclass(frozen=True)
class CompiledObject:
    """Host object code and what the loader needs to know about it.

    ``defined`` are the global symbols the object exports (its kernels),
    ``undefined`` the external symbols it needs (libm, libmvec, memset...).
    ``timings`` holds seconds per stage: ``llvm-ir``, ``opt-ir``, ``codegen``.
    ``target_key`` identifies the host it was built for (triple, CPU, features,
    llvmlite version), the part of a disk-cache key that is not the source.
    """

    object_code: bytes
    defined: tuple[str, ...]
    undefined: tuple[str, ...]
    timings: dict[str, float] = field(default_factory=dict)
    vector_math: bool = False
    target_key: str = ""


def _use_vector_math(requested: bool | None) -> bool:
    if requested is False:
        return False
    available = vector_math_abi() is not None
    if requested and not available:
        raise RuntimeError("vector math requested but libmvec or AVX2/AVX-512 is missing")
    return available


def llvm_ir_text(module: ModuleOp, *, vector_math: bool | None = None) -> str:
    """Unoptimised LLVM IR for an ``llvm``-dialect module (not modified).

    ``vector_math``: ``None`` uses libmvec where the host supports it, ``True``
    requires it, ``False`` keeps scalar libm calls.
    """
    from xdsl.backend.llvm.convert import convert_module

    host = host_target()
    ir_module = convert_module(
        module, fallback_target_triple=host.triple, data_layout=host.data_layout
    )
    # convert_module ignores linkage: restore `internal` for private definitions.
    for op in module.ops:
        if (
            isinstance(op, llvm_dialect.FuncOp)
            and op.body.blocks
            and op.linkage.linkage.data in ("internal", "private")
        ):
            ir_module.get_global(op.sym_name.data).linkage = "internal"
    add_array_entry_points(ir_module)
    text = add_kernel_hints(str(ir_module), host.tuning)
    abi = vector_math_abi()
    if _use_vector_math(vector_math) and abi is not None:
        text, _ = add_vector_variants(text, abi)
    return text


def _parse(ir_text: str) -> llvm.ModuleRef:
    parsed = llvm.parse_assembly(ir_text)
    parsed.verify()
    return parsed


def _optimize(parsed: llvm.ModuleRef) -> None:
    """Run the O3 pipeline in place (the caller holds ``TARGET_LOCK``)."""
    tm = host_target_machine()
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    builder = llvm.create_pass_builder(tm, tuning)
    builder.getModulePassManager().run(parsed, builder)


def compile_module(
    llvm_dialect_module: ModuleOp, *, vector_math: bool | None = None
) -> CompiledObject:
    """Compile a fully lowered module to host object code, timing each stage."""
    start = time.perf_counter()
    text = llvm_ir_text(llvm_dialect_module, vector_math=vector_math)
    with TARGET_LOCK:
        parsed = _parse(text)
        parsed_at = time.perf_counter()
        _optimize(parsed)
        optimized_at = time.perf_counter()
        object_code = host_target_machine().emit_object(parsed)
    done = time.perf_counter()
    defined, undefined = read_elf_symbols(object_code)
    return CompiledObject(
        object_code=object_code,
        defined=defined,
        undefined=undefined,
        timings={
            "llvm-ir": parsed_at - start,
            "opt-ir": optimized_at - parsed_at,
            "codegen": done - optimized_at,
        },
        vector_math=any(name.startswith("_ZGV") for name in undefined),
        target_key=host_target().key,
    )


def dump_stage(
    llvm_dialect_module: ModuleOp, stage: Stage, *, vector_math: bool | None = None
) -> str:
    """The text of one stage: ``llvm-ir``, ``opt-ir`` or ``asm``."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")
    text = llvm_ir_text(llvm_dialect_module, vector_math=vector_math)
    if stage == "llvm-ir":
        return text
    with TARGET_LOCK:
        parsed = _parse(text)
        _optimize(parsed)
        if stage == "opt-ir":
            return str(parsed)
        return str(host_target_machine().emit_assembly(parsed))


def optimized_ir_text(llvm_dialect_module: ModuleOp, *, vector_math: bool | None = None) -> str:
    """LLVM IR after O3."""
    return dump_stage(llvm_dialect_module, "opt-ir", vector_math=vector_math)


def assembly_text(llvm_dialect_module: ModuleOp, *, vector_math: bool | None = None) -> str:
    """Host assembly after O3."""
    return dump_stage(llvm_dialect_module, "asm", vector_math=vector_math)

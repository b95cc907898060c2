"""Compile one backward node by walking the stage table (``compiler.stages``).

``compile_program`` takes the node's program through the stages ``tidu`` .. ``loops``,
reads the node's ``Plan`` off the ``loops`` form of ``@node``, makes its kernels
canonical (``compiler.kernel_code``) and, unless their object code was compiled before
(``compiler.objects``: another program with the same kernel text, such as the next
batch size), lowers them to the ``llvm`` stage and compiles them; the result is an
``Artifact``, which is what the disk cache stores (``compiler.native`` keys it,
``native.bind`` loads its object code into the process's engine). ``lower_through`` is
the same walk for ``tidu-compile dump`` and ``opt``: they print the IR the executor
compiles, stage by stage.
"""

from __future__ import annotations

import time

from xdsl.dialects.builtin import ModuleOp

from tidu_compile.backend.array_abi import ENTRY_SUFFIX
from tidu_compile.backend.lower_to_llvm import lower_to_llvm_dialect
from tidu_compile.compiler.native import COMPILE_LOCK, Artifact, CodegenRefused
from tidu_compile.compiler.objects import ObjectStore
from tidu_compile.compiler.plan_builder import build_plan
from tidu_compile.compiler.program import NodeProgram
from tidu_compile.compiler.stages import AfterPass, Stage, run_passes, stage, stages_between

__all__ = ["compile_program", "import_stage", "lower", "lower_through"]

# ------------------------------------------------------------------ stages


def import_stage(program: NodeProgram, name: str) -> ModuleOp:
    """The ``tidu`` stage: ``program`` as ``func.func @<name>`` of tidu ops (verified)."""
    from tidu_compile.compiler.to_tidu import import_program

    module = import_program(program, name)
    module.verify()
    return module


def lower(
    module: ModuleOp, to: Stage, verify_each: bool = True, after_pass: AfterPass | None = None
) -> ModuleOp:
    """The IR of the MLIR stage ``to`` from the IR of the stage before it (in place,
    except ``llvm``, which starts from a copy of the kernel functions)."""
    if to.kind != "mlir":
        raise ValueError(f"stage {to.name!r} is not an MLIR stage")
    if to.name == "llvm":  # its step: the kernel functions only (the plan calls them)
        from tidu_compile.passes.tidu_lower_to_loops import extract_kernel_module

        return lower_to_llvm_dialect(
            extract_kernel_module(module), verify_each=verify_each, after_pass=after_pass
        )
    return run_passes(module, to.spec, after_pass=after_pass, verify_each=verify_each)


def lower_through(
    module: ModuleOp, first: str, last: str, after_pass: AfterPass | None = None
) -> ModuleOp | str:
    """``module``, at the MLIR stage ``first``, taken through every stage up to ``last``
    as the executor does (verifying after every pass); for a text stage (``llvm-ir``,
    ``opt-ir``, ``asm``), its text."""
    if stage(first).kind != "mlir":
        raise ValueError(f"stage {first!r} is not an MLIR stage")
    for step in stages_between(first, last):
        if step.kind == "text":
            from tidu_compile.backend.jit import dump_stage

            return dump_stage(module, last)  # type: ignore[arg-type]
        module = lower(module, step, after_pass=after_pass)
    return module


def compile_program(
    program: NodeProgram, digest: str, objects: ObjectStore | None = None, codegen: bool = True
) -> tuple[Artifact, bool]:
    """Compile ``program`` into a plan and the native code of its kernels.

    The object code comes from ``objects`` when it holds the program's kernel text
    (``compiler.kernel_code``: the same kernels compiled for another program), else
    from LLVM, and is then added to ``objects``. Returns the artifact and whether LLVM
    ran; with ``codegen=False``, needing LLVM raises ``CodegenRefused``.
    """
    from tidu_compile.backend.jit import compile_module
    from tidu_compile.compiler.kernel_code import kernel_code

    seconds: dict[str, float] = {}
    generated = False
    with COMPILE_LOCK:
        start = time.perf_counter()
        module = import_stage(program, f"tidu_{digest[:24]}")
        seconds["tidu"] = time.perf_counter() - start
        for step in stages_between("tidu", "loops"):  # each stage's result is verified
            start = time.perf_counter()
            module = lower(module, step, verify_each=False)  # the tests verify each pass
            seconds[step.name] = time.perf_counter() - start
        plan = build_plan(module, program)
        object_code: bytes | None = None
        kernels_digest: str | None = None
        if plan.kernel_symbols:
            kernels = kernel_code(module)
            plan = plan.renamed(kernels.symbols)
            kernels_digest = kernels.digest
            object_code = objects.get(kernels.digest) if objects is not None else None
            if object_code is None:
                if not codegen:
                    raise CodegenRefused(f"the kernels of this program were never compiled:\n"
                                         f"{program}")  # fmt: skip
                start = time.perf_counter()
                llvm_module = lower_to_llvm_dialect(kernels.module, verify_each=False)
                seconds["llvm"] = time.perf_counter() - start
                compiled = compile_module(llvm_module)
                seconds.update(compiled.timings)
                object_code, generated = compiled.object_code, True
                if objects is not None:
                    objects.put(kernels.digest, object_code)
    symbols = plan.kernel_symbols + tuple(s + ENTRY_SUFFIX for s in plan.kernel_symbols)
    artifact = Artifact(digest, plan, object_code, symbols, seconds, kernels_digest)
    return artifact, generated

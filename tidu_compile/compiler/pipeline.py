"""Compile one backward node by walking the stage table (``compiler.stages``).

``compile_program`` walks the node's program to the ``loops`` stage and reads the
node's ``Plan`` off it, walks on to ``kernels`` (the kernels made canonical,
``compiler.kernel_code``) and, unless their object code was compiled before
(``compiler.objects``: another program with the same kernel text, such as the next
batch size), on to ``codegen``; the result is an ``Artifact``, which is what the disk
cache stores (``compiler.native`` keys it, ``native.bind`` loads its object code into
the process's engine). ``tidu-compile dump`` and ``opt`` print the same walk's stages.
"""

from __future__ import annotations

import os

from tidu_compile.backend.array_abi import ENTRY_SUFFIX
from tidu_compile.collections_pause import fewer_collections
from tidu_compile.compiler.native import COMPILE_LOCK, Artifact, CodegenRefused
from tidu_compile.compiler.objects import ObjectStore
from tidu_compile.compiler.plan_builder import build_plan
from tidu_compile.compiler.ssa_program import NodeProgram
from tidu_compile.compiler.stages import RunOptions, walk

__all__ = ["VERIFY_ENV", "compile_program"]

VERIFY_ENV = "TIDU_COMPILE_VERIFY"
"""``TIDU_COMPILE_VERIFY=1``: the compile path verifies every MLIR stage's result too
(the test suite sets it). By default it verifies the imported ``tidu`` module (the
ops' contract) and leaves the rest to LLVM's verifier (``llvm-ir``): xDSL's verifier
was 16-18% of a compile (100 and 800-op traces, znver4)."""


def compile_program(
    program: NodeProgram, digest: str, objects: ObjectStore | None = None, codegen: bool = True
) -> tuple[Artifact, bool]:
    """Compile ``program`` into a plan and the native code of its kernels.

    The object code comes from ``objects`` when it holds the program's kernel text
    (``compiler.kernel_code``: the same kernels compiled for another program), else
    from LLVM, and is then added to ``objects``. Returns the artifact and whether LLVM
    ran; with ``codegen=False``, needing LLVM raises ``CodegenRefused``. The artifact's
    ``stage_seconds`` hold the seconds of each stage walked, by stage name.
    """
    seconds: dict[str, float] = {}
    # the tests verify each pass (and, by VERIFY_ENV, each stage's result here)
    options = RunOptions(function=f"tidu_{digest[:24]}", verify_each=False,
                         verify_results=os.environ.get(VERIFY_ENV) == "1",
                         take_input=True)  # fmt: skip
    generated = False
    object_code: bytes | None = None
    kernels_digest: str | None = None
    with COMPILE_LOCK, fewer_collections():
        module = walk(program, "program", "loops", options, seconds)
        plan = build_plan(module, program)
        if plan.kernel_symbols:
            kernels = walk(module, "loops", "kernels", options, seconds)
            plan = plan.renamed(kernels.symbols)
            kernels_digest = kernels.digest
            object_code = objects.get(kernels.digest) if objects is not None else None
            if object_code is None:
                if not codegen:
                    raise CodegenRefused(f"the kernels of this program were never compiled:\n"
                                         f"{program}")  # fmt: skip
                object_code = walk(kernels, "kernels", "codegen", options, seconds).object_code
                generated = True
                if objects is not None:
                    objects.put(kernels.digest, object_code)
    symbols = plan.kernel_symbols + tuple(s + ENTRY_SUFFIX for s in plan.kernel_symbols)
    artifact = Artifact(digest, plan, object_code, symbols, seconds, kernels_digest)
    return artifact, generated

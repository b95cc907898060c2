"""Compile one backward node by walking the stage table (``compiler.stages``).

``compile_program`` takes the node's program through the stages ``tidu`` .. ``loops``,
reads the node's ``Plan`` off the ``loops`` form of ``@node``, lowers the kernels to the
``llvm`` stage and compiles them to object code; the result is an ``Artifact``, which
is what the disk cache stores. ``bind`` loads the object code into the process's engine.
``lower_through`` is the same walk for ``tidu-compile dump`` and ``opt``: they print the
IR the executor compiles, stage by stage.

The disk-cache key of a program (``program_digest``) is its text plus everything the
generated code depends on: the project's version, xDSL's version, a digest of the code
generator's own source (``compiler``, ``backend``, ``dialects``, ``passes``: an edit or an
upgrade never loads a stale kernel) and the target (llvmlite version, triple, CPU name
and features).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from tidu_compile import forksafe
from tidu_compile.backend.array_entry import ENTRY_SUFFIX
from tidu_compile.compiler.cache import cache_key
from tidu_compile.compiler.generic import baked_integers
from tidu_compile.compiler.plan import BoundPlan, Plan
from tidu_compile.compiler.plan_builder import build_plan
from tidu_compile.compiler.program import NodeProgram
from tidu_compile.compiler.stages import AfterPass, Stage, run_passes, stage, stages_between
from tidu_compile.passes.tidu_lower_to_loops import KERNEL_ATTR

__all__ = [
    "Artifact",
    "artifact_matches",
    "bind",
    "code_fingerprint",
    "compile_program",
    "environment_fingerprint",
    "import_stage",
    "lower",
    "lower_through",
    "program_digest",
]

#: The packages whose source generates code: their text is part of every cache key.
CODE_PACKAGES = (
    "tidu_compile.compiler", "tidu_compile.backend", "tidu_compile.dialects",
    "tidu_compile.passes",
)  # fmt: skip


@dataclass(frozen=True)
class Artifact:
    """What compiling one node produces, and what the disk cache stores."""

    digest: str
    plan: Plan
    object_code: bytes | None
    symbols: tuple[str, ...]
    stage_seconds: dict[str, float] = field(default_factory=dict)
    #: The integers the kernels' loop nests spell out (``generic.baked_integers``):
    #: what decides which extents of the program the code fixes (``compiler.store``;
    #: None: unknown, all of them).
    baked: frozenset[int] | None = None


@functools.cache
def environment_fingerprint() -> str:
    """llvmlite version, target triple, CPU name and features: what object code depends on."""
    from tidu_compile.backend.target import host_target

    return host_target().key


@functools.cache
def code_fingerprint() -> str:
    """The project's version, xDSL's version and a digest of the code generator's source
    (~50 files, ~3 ms once per process)."""
    import xdsl

    import tidu_compile

    source = hashlib.sha256()
    for package in CODE_PACKAGES:
        for directory in importlib.import_module(package).__path__:
            for path in sorted(Path(directory).glob("*.py")):
                source.update(f"{package}.{path.stem}\0".encode())
                source.update(path.read_bytes())
    versions = f"tidu_compile-{tidu_compile.__version__}|xdsl-{installed_version(xdsl)}"
    return f"{versions}|{source.hexdigest()}"


def installed_version(package: ModuleType) -> str:
    """An installed package's version, read off its ``<name>-<version>.dist-info``
    directory beside it; else from ``importlib.metadata`` (whose import alone costs
    ~0.1 s, which a fresh process's first backward pass would pay)."""
    name = package.__name__
    for info in Path(package.__path__[0]).parent.glob(f"{name}-*.dist-info"):
        return info.name.removeprefix(f"{name}-").removesuffix(".dist-info")
    from importlib.metadata import version

    return version(name)


def program_digest(program: NodeProgram) -> str:
    """The cache key of a program in this environment."""
    return cache_key(code_fingerprint(), environment_fingerprint(), str(program))


def artifact_matches(artifact: object, digest: str) -> bool:
    """True when a cached object is an ``Artifact`` made for ``digest``."""
    return isinstance(artifact, Artifact) and artifact.digest == digest


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
        from tidu_compile.backend.lower_to_llvm import lower_to_llvm_dialect
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


_COMPILE_LOCK = forksafe.Lock()  # xDSL contexts and passes are not shared across threads


def compile_program(program: NodeProgram, digest: str) -> Artifact:
    """Compile ``program`` into a plan and the native code of its kernels."""
    from tidu_compile.backend.jit import compile_module

    seconds: dict[str, float] = {}
    with _COMPILE_LOCK:
        start = time.perf_counter()
        module = import_stage(program, f"tidu_{digest[:24]}")
        seconds["tidu"] = time.perf_counter() - start
        for step in stages_between("tidu", "loops"):  # each stage's result is verified
            start = time.perf_counter()
            module = lower(module, step, verify_each=False)  # the tests verify each pass
            seconds[step.name] = time.perf_counter() - start
        plan = build_plan(module, program)
        baked = baked_integers(
            op for op in module.ops if isinstance(op, FuncOp) and KERNEL_ATTR in op.attributes
        )
        object_code: bytes | None = None
        if plan.kernel_symbols:
            start = time.perf_counter()
            llvm_module = lower(module, stage("llvm"), verify_each=False)
            seconds["llvm"] = time.perf_counter() - start
            compiled = compile_module(llvm_module)
            seconds.update(compiled.timings)
            object_code = compiled.object_code
    symbols = plan.kernel_symbols + tuple(s + ENTRY_SUFFIX for s in plan.kernel_symbols)
    return Artifact(digest, plan, object_code, symbols, seconds, baked)


def bind(artifact: Artifact) -> BoundPlan:
    """Load the artifact's object code (once per process) and bind its plan."""
    if artifact.object_code is None:
        return artifact.plan.bind({})
    from tidu_compile.backend.engine import get_engine

    engine = get_engine()
    with _COMPILE_LOCK:
        if all(engine.is_loaded(s) for s in artifact.symbols):
            addresses = {s: engine.address_of(s) for s in artifact.symbols}
        else:
            addresses = engine.load(artifact.object_code, artifact.symbols)
    return artifact.plan.bind(addresses)

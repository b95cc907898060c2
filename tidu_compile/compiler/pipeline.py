"""The compilation pipeline of one backward node, cut at named stages.

=========== ==================================================== =========================
stage       what                                                 made by
=========== ==================================================== =========================
graph       the recorded node                                    the tape
linear      its JVP graph for the active output slots            ``linearize``
transposed  the VJP graph                                        ``linear_transpose``
tidu        one ``func.func @node`` of tidu ops on tensors       ``to_tidu``
fused       + canonicalize, cse, dce, fusion into kernels        ``tidu-fuse-elementwise``
loops       kernels outlined to func/scf/memref/arith/math       ``tidu-lower-to-loops``
llvm        the kernels in the xDSL llvm dialect                 ``lower_to_llvm_dialect``
llvm-ir     LLVM IR text                                         ``backend.jit``
opt-ir      LLVM IR after O3                                     ``backend.jit``
asm         host assembly                                        ``backend.jit``
=========== ==================================================== =========================

``compile_program`` runs every stage and returns an ``Artifact``: the node's ``Plan``
(read off the ``loops`` form of ``@node``) and the object code of its kernels, which is
what the disk cache stores. ``bind`` loads the object code into the process's engine.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from tidu_compile.backend.array_entry import ENTRY_SUFFIX
from tidu_compile.compiler.cache import cache_key
from tidu_compile.compiler.plan import BoundPlan, Plan
from tidu_compile.compiler.program import NodeProgram

__all__ = [
    "Artifact",
    "FUSION_PIPELINE",
    "PIPELINE_VERSION",
    "STAGES",
    "bind",
    "compile_program",
    "program_digest",
    "tidu_context",
]

#: Bump when generated code or the artifact format changes: old disk entries become misses.
PIPELINE_VERSION = "7"

STAGES = (
    "graph", "linear", "transposed", "tidu", "fused", "loops", "llvm", "llvm-ir", "opt-ir", "asm",
)  # fmt: skip

#: Passes from the ``tidu`` stage to the ``fused`` stage, in ``-p`` spelling.
FUSION_PIPELINE = (
    "canonicalize", "cse", "dce", "tidu-fuse-elementwise{complex_kernels=true}", "dce",
)  # fmt: skip


@dataclass(frozen=True)
class Artifact:
    """What compiling one node produces, and what the disk cache stores."""

    digest: str
    plan: Plan
    object_code: bytes | None
    symbols: tuple[str, ...]
    stage_seconds: dict[str, float] = field(default_factory=dict)


@functools.cache
def environment_fingerprint() -> str:
    """llvmlite version, target triple, CPU name and features: what object code depends on."""
    from tidu_compile.backend.target import host_target

    return host_target().key


def program_digest(program: NodeProgram) -> str:
    """The cache key of a program in this environment."""
    return cache_key(PIPELINE_VERSION, environment_fingerprint(), str(program))


def artifact_matches(artifact: object, digest: str) -> bool:
    """True when a cached object is an ``Artifact`` made for ``digest``."""
    return isinstance(artifact, Artifact) and artifact.digest == digest


# ------------------------------------------------------------------ contexts and passes


def tidu_context() -> Context:
    """A context with the tidu dialect and every standard dialect the pipeline uses."""
    from xdsl.dialects import get_all_dialects

    from tidu_compile.dialects.tidu import Tidu

    context = Context(allow_unregistered=False)
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    context.load_dialect(Tidu)
    return context


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes plus ours, by name (ours win on a clash)."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    from tidu_compile.passes import get_all_passes

    return {**xdsl_passes(), **get_all_passes()}


def run_passes(
    module: ModuleOp,
    spec: str,
    context: Context | None = None,
    callback: Callable[[ModulePass | None, ModuleOp, ModulePass | None], None] | None = None,
    verify_each: bool = True,
) -> ModuleOp:
    """Run a comma-separated pass pipeline in place, verifying after every pass (or,
    with ``verify_each=False``, only the result: the compile path, whose passes the
    tests verify one by one)."""
    from xdsl.utils.exceptions import ArgSpecParseError

    context = context or tidu_context()
    available = available_passes()
    try:
        passes = PassPipeline.parse_spec(available, spec).passes
    except ArgSpecParseError as error:  # a BaseException in xDSL 0.74: make it an error
        raise ValueError(f"bad pass pipeline {spec!r}: {error}") from None

    def verify_after(
        previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
    ) -> None:
        if previous is None:
            return  # called once before the first pass
        if verify_each:
            module.verify()
        if callback is not None:
            callback(previous, module, following)

    PassPipeline(passes, verify_after).apply(context, module)
    module.verify()
    return module


# ------------------------------------------------------------------ stages


def tidu_stage(program: NodeProgram, name: str = "node") -> ModuleOp:
    from tidu_compile.compiler.to_tidu import import_program

    module = import_program(program, name)
    module.verify()
    return module


def fused_stage(module: ModuleOp, verify_each: bool = True) -> ModuleOp:
    return run_passes(module, ",".join(FUSION_PIPELINE), verify_each=verify_each)


def loops_stage(module: ModuleOp, verify_each: bool = True) -> ModuleOp:
    return run_passes(
        module,
        "tidu-lower-to-loops{chunked=true},expand-math-polynomials{only_in_loops=true}",
        verify_each=verify_each,
    )


def llvm_stage(module: ModuleOp, verify_each: bool = True) -> ModuleOp:
    """The kernels in the llvm dialect; ``verify_each=False`` verifies only the result."""
    from tidu_compile.backend.lower_to_llvm import lower_to_llvm_dialect
    from tidu_compile.passes.tidu_lower_to_loops import extract_kernel_module

    kernels = extract_kernel_module(module)
    return lower_to_llvm_dialect(kernels, verify_each=verify_each)  # verifies the result


def text_stage(llvm_module: ModuleOp, stage: str) -> str:
    from tidu_compile.backend.jit import dump_stage

    return dump_stage(llvm_module, stage)  # type: ignore[arg-type]


_COMPILE_LOCK = threading.Lock()  # xDSL contexts and passes are not shared across threads


def compile_program(program: NodeProgram, digest: str) -> Artifact:
    """Compile ``program`` into a plan and the native code of its kernels."""
    from tidu_compile.backend.jit import compile_module
    from tidu_compile.compiler.plan_builder import build_plan

    seconds: dict[str, float] = {}

    def timed(stage: str, start: float) -> float:
        now = time.perf_counter()
        seconds[stage] = now - start
        return now

    with _COMPILE_LOCK:
        start = time.perf_counter()
        module = tidu_stage(program, f"tidu_{digest[:24]}")
        start = timed("tidu", start)
        module = fused_stage(module, verify_each=False)  # each stage's result is verified
        start = timed("fused", start)
        module = loops_stage(module, verify_each=False)
        start = timed("loops", start)
        plan = build_plan(module, program)
        if plan.kernel_symbols:
            llvm_module = llvm_stage(module, verify_each=False)  # the tests verify each pass
            start = timed("llvm", start)
            compiled = compile_module(llvm_module)
            seconds.update(compiled.timings)
            object_code: bytes | None = compiled.object_code
        else:
            object_code = None
    symbols = plan.kernel_symbols + tuple(s + ENTRY_SUFFIX for s in plan.kernel_symbols)
    return Artifact(digest, plan, object_code, symbols, seconds)


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

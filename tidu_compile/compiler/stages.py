"""The pipeline of one backward node as ONE ordered table of stages, and the pass runner.

As MLIR's Toy tutorial cuts one pipeline at ``-emit=`` stages, every reader of the
pipeline reads this table: the executor (``compiler.pipeline``), ``tidu-compile dump``
(``--stage``), ``tidu-compile opt`` (``--emit``) and ``tidu-compile passes``. A stage's
``passes`` are the pass specs, in ``xdsl-opt -p`` spelling, that make its IR from the
IR of the stage before it; ``step`` names the work that is not an xDSL pass.

=========== ======= ===========================================================
stage       kind    made from the stage before by
=========== ======= ===========================================================
graph       graph   the tape (the recorded node)
linear      graph   ``linearize`` (the JVP graph of the active output slots)
transposed  graph   ``linear_transpose`` (the VJP graph)
tidu        mlir    ``node_program`` + ``to_tidu.import_program``
fused       mlir    canonicalize, cse, dce, tidu-fuse-elementwise, dce
loops       mlir    tidu-lower-to-loops, expand-math-polynomials
llvm        mlir    ``extract_kernel_module``, then the convert-*-to-llvm passes
llvm-ir     text    xDSL's ``convert_module``, llvmlite parse and verify
opt-ir      text    LLVM O3 for the host CPU
asm         text    the host target machine
=========== ======= ===========================================================
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

__all__ = [
    "GRAPH_STAGES",
    "PIPELINE",
    "STAGE_NAMES",
    "Stage",
    "parse_passes",
    "run_passes",
    "stage",
    "stages_between",
    "tidu_context",
]

StageKind = Literal["graph", "mlir", "text"]


@dataclass(frozen=True)
class Stage:
    """One stage: its name, the kind of its IR, and how the stage before becomes it."""

    name: str
    kind: StageKind
    ir: str  # what the IR of this stage is
    step: str = ""  # the work that is not an xDSL pass, run before ``passes``
    passes: tuple[str, ...] = ()  # pass specs in ``xdsl-opt -p`` spelling, in order

    @property
    def spec(self) -> str:
        """``passes`` as one ``-p`` argument."""
        return ",".join(self.passes)

    def how(self) -> str:
        """How the stage before becomes this one, in one line."""
        parts = [self.step] if self.step else []
        if self.passes:
            parts.append(f"-p {self.spec}")
        return ", then ".join(parts)


PIPELINE: tuple[Stage, ...] = (
    Stage("graph", "graph", "the recorded node", step="the tape"),
    Stage("linear", "graph", "its JVP graph for the active output slots", step="linearize"),
    Stage("transposed", "graph", "the VJP graph", step="linear_transpose"),
    Stage("tidu", "mlir", "func.func @node of tidu ops on tensors",
          step="node_program, import_program"),
    Stage("fused", "mlir", "elementwise ops, broadcasts and reductions fused into tidu.kernel",
          passes=("canonicalize", "cse", "dce", "tidu-fuse-elementwise{complex_kernels=true}",
                  "dce")),
    Stage("loops", "mlir", "each kernel a func/scf/memref/arith function over a chunk of rows",
          passes=("tidu-lower-to-loops{chunked=true runtime_scales=true}",
                  "expand-math-polynomials{only_in_loops=true}")),
    Stage("llvm", "mlir", "the kernel functions in the llvm dialect",
          step="extract_kernel_module",
          passes=("convert-scf-to-cf", "convert-memref-to-ptr{lower_func=true}",
                  "convert-ptr-type-offsets", "convert-ptradd-to-gep",
                  "convert-ptr-to-llvm-fast", "convert-index-to-i64", "convert-arith-to-llvm",
                  "convert-math-to-llvm", "convert-cf-to-llvm", "convert-func-to-llvm",
                  "reconcile-unrealized-casts")),
    Stage("llvm-ir", "text", "LLVM IR", step="convert_module, llvmlite parse and verify"),
    Stage("opt-ir", "text", "LLVM IR after O3", step="LLVM O3 for the host CPU"),
    Stage("asm", "text", "host assembly", step="the host target machine"),
)  # fmt: skip
"""The stages in order. Two departures of ``llvm`` from the order of the notes, both
keeping its result: ``convert-index-to-i64`` runs right after the pointer passes (the
``llvm`` ops refuse ``index``, so retyping it first keeps the IR valid after every
pass), and ``convert-ptr-to-llvm-fast`` replaces xDSL's ``convert-ptr-to-llvm`` (the
same IR, ~0.4 ms instead of ~15 ms per kernel)."""

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in PIPELINE)
GRAPH_STAGES: tuple[str, ...] = tuple(s.name for s in PIPELINE if s.kind == "graph")

_BY_NAME = {s.name: s for s in PIPELINE}


def stage(name: str) -> Stage:
    """The stage called ``name``; ``ValueError`` naming the stages if there is none."""
    found = _BY_NAME.get(name)
    if found is None:
        raise ValueError(f"unknown stage {name!r}; expected one of {', '.join(STAGE_NAMES)}")
    return found


def stages_between(first: str, last: str) -> tuple[Stage, ...]:
    """The stages after ``first`` up to and including ``last``, in order."""
    start, end = STAGE_NAMES.index(stage(first).name), STAGE_NAMES.index(stage(last).name)
    if end < start:
        raise ValueError(f"stage {last!r} comes before stage {first!r}")
    return PIPELINE[start + 1 : end + 1]


# ------------------------------------------------------------------ running passes


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


@functools.lru_cache(maxsize=64)
def parse_passes(spec: str) -> tuple[ModulePass, ...]:
    """The pass instances of a ``-p`` spec (cached: passes are frozen and stateless).

    ``ValueError`` for an unknown pass or a malformed spec.
    """
    from xdsl.utils.exceptions import ArgSpecParseError

    try:
        return tuple(PassPipeline.parse_spec(available_passes(), spec).passes)
    except ArgSpecParseError as error:  # a BaseException in xDSL 0.74: make it an error
        raise ValueError(f"bad pass pipeline {spec!r}: {error}") from None


AfterPass = Callable[[ModulePass, ModuleOp], None]
"""Called after each pass with the pass and the module."""


def run_passes(
    module: ModuleOp,
    spec: str,
    context: Context | None = None,
    after_pass: AfterPass | None = None,
    verify_each: bool = True,
) -> ModuleOp:
    """Run a comma-separated pass pipeline on ``module`` in place, verifying after every
    pass (or, with ``verify_each=False``, only the result: the compile path, whose
    passes the tests verify one by one)."""
    context = context or tidu_context()
    for ir_pass in parse_passes(spec):
        ir_pass.apply(context, module)
        if verify_each:
            module.verify()
        if after_pass is not None:
            after_pass(ir_pass, module)
    module.verify()
    return module

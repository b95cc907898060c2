"""The pipeline of one backward node as ONE ordered table of stages, and its one walk.

As MLIR's Toy tutorial compiles and dumps with the same function (``loadAndProcessMLIR``,
cut at ``-emit=``), every stage carries how it is made (``Stage.run``, or its
``passes``) and ``walk`` is the only way through the table: the executor compiles with
it (``compiler.pipeline``), ``tidu-compile dump --stage`` and ``opt --emit`` print what
it makes, ``tidu-compile passes`` lists the table and ``bench --kernels`` compiles its
math kernels with it. A stage is made from the IR of the stage before it, or of the
stage or walk input named in ``made_from``; ``passes`` are pass specs in ``xdsl-opt
-p`` spelling; ``RunOptions`` are what one walk does differently from another.

=========== ======= ========== ========================================================
stage       kind    made from  by
=========== ======= ========== ========================================================
graph       graph   node       the tape (the recorded node)
linear      graph   node       ``linearize`` (the JVP graph of the active output slots)
transposed  graph   node       ``linear_transpose`` (the VJP graph)
tidu        mlir    program    ``import_program`` of the node's ``node_program``
fused       mlir    tidu       canonicalize, cse, dce, tidu-fuse-elementwise, dce
loops       mlir    fused      tidu-lower-to-loops, tidu-lower-linalg, expand-math-polynomials,
                               tidu-lower-control (a scan of kernels: one scf.for kernel)
kernels     kernels loops      ``kernel_code``: the kernel functions, canonical, keyed
llvm        mlir    kernels    the convert-*-to-llvm passes, then ``check_llvm_legal``
llvm-ir     text    llvm       xDSL's ``convert_module``, host hints, llvmlite parse; a walk
                               through ``kernels`` skips ``llvm``: ``backend.llvm_text``
                               writes the same LLVM IR straight from the kernels
opt-ir      text    llvm-ir    LLVM O3 for the host CPU
asm         text    opt-ir     the host target machine's assembly
codegen     object  opt-ir     the host target machine's object code
=========== ======= ========== ========================================================

A walk's inputs are a ``node`` (a tape node as the executor is handed it: its
``recorded`` graph and its ``linear`` graph, ``tools.dump.BackwardNode``) and a
``program`` (the node's ``NodeProgram``). The IR of a stage is, by kind: a ``Graph``; an
xDSL ``ModuleOp``; a ``KernelCode``; LLVM IR or assembly (``str()`` is its text); a
``CompiledObject``. The executor walks ``program`` to ``loops`` (its plan is read off
that), on to ``kernels`` (the key of the object code) and on to ``codegen`` only when
that object code is not known::

    module = walk(program, "program", "loops", options, seconds)
    kernels = walk(module, "loops", "kernels", options, seconds)
    compiled = walk(kernels, "kernels", "codegen", options, seconds)
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tidu_compile.ad import linear_transpose

if TYPE_CHECKING:  # xDSL is imported by the first walk, not by the table (the CLI's parser)
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

__all__ = [
    "GRAPH_STAGES",
    "INPUTS",
    "PIPELINE",
    "STAGE_NAMES",
    "AfterPass",
    "RunOptions",
    "Stage",
    "lower_to_llvm_dialect",
    "parse_passes",
    "route",
    "run_passes",
    "stage",
    "stages_between",
    "tidu_context",
    "walk",
]

StageKind = Literal["graph", "mlir", "kernels", "text", "object"]

AfterPass = Callable[["ModulePass", "ModuleOp"], None]
"""Called after each pass with the pass and the module."""


@dataclass(frozen=True)
class RunOptions:
    """How a walk runs its stages: all that the executor's walk and the CLI's differ in."""

    function: str = "node"  # the ``func.func`` the ``tidu`` stage imports the program as
    verify_each: bool = True  # verify after every pass (else a stage's result only)
    #: verify each MLIR stage's result; False: only the imported ``tidu`` module (the
    #: ops' contract: shapes, dtypes), LLVM's verifier checks the final IR (``llvm-ir``)
    verify_results: bool = True
    after_pass: AfterPass | None = None  # hears every pass of the MLIR stages
    vector_math: bool | None = None  # llvm-ir: libmvec if the host has it, required, or off
    #: kernels: move the kernel functions out of the ``loops`` module instead of copying
    #: them (the caller drops it: the executor's compile, which has built its plan)
    take_input: bool = False


Run = Callable[[Any, RunOptions], Any]
"""Makes a stage's IR from the IR it is made from."""


@dataclass(frozen=True)
class Stage:
    """One stage: its name, the kind of its IR, and how it is made."""

    name: str
    kind: StageKind
    ir: str  # what the IR of this stage is
    run: Run | None = None  # how it is made; None: by running ``passes``
    made_from: str = ""  # the stage or input whose IR ``run`` takes ("": the stage before)
    does: str = ""  # what ``run`` does, in words
    passes: tuple[str, ...] = ()  # pass specs in ``xdsl-opt -p`` spelling, in order
    #: made straight from the earlier stage ``direct_from`` by ``direct`` when a walk
    #: wants none of the stages between (and no ``after_pass``): the same IR, faster
    direct_from: str = ""
    direct: Run | None = None

    @property
    def spec(self) -> str:
        """``passes`` as one ``-p`` argument."""
        return ",".join(self.passes)

    def how(self) -> str:
        """How this stage is made, in one line."""
        parts = [self.does] if self.does else []
        if self.passes:
            parts.append(f"-p {self.spec}")
        made = ", then ".join(parts)
        return made if self.made_from in ("", *INPUTS) else f"from {self.made_from}: {made}"


INPUTS = ("node", "program")
"""What a walk can start from besides a stage (see the module docstring)."""


# ------------------------------------------------------------------ how each stage is made


def _recorded_graph(node: Any, options: RunOptions) -> Any:
    return node.recorded.graph


def _linear_graph(node: Any, options: RunOptions) -> Any:
    return node.linear.graph


def _transposed_graph(node: Any, options: RunOptions) -> Any:
    return linear_transpose(node.linear).graph


def _import_program(program: Any, options: RunOptions) -> ModuleOp:
    """``program`` as ``func.func @<options.function>`` of tidu ops (verified)."""
    from tidu_compile.compiler.to_tidu import import_program, verify_imported

    module = import_program(program, options.function)
    verify_imported(module)
    return module


def _kernel_code(module: ModuleOp, options: RunOptions) -> Any:
    from tidu_compile.compiler.kernel_code import kernel_code

    return kernel_code(module, take=options.take_input)


def _llvm_dialect(kernels: Any, options: RunOptions) -> ModuleOp:
    """The kernels lowered to the ``llvm`` dialect (a copy, unless ``take_input``: the
    kernels stay what their object code is keyed by and made from)."""
    module = kernels.module if options.take_input else kernels.module.clone()
    return lower_to_llvm_dialect(
        module, verify_each=options.verify_each, after_pass=options.after_pass,
        verify_result=options.verify_results,
    )


def _llvm_ir(module: ModuleOp, options: RunOptions) -> Any:
    from tidu_compile.backend.jit import llvm_ir

    return llvm_ir(module, vector_math=options.vector_math)


def _llvm_ir_of_kernels(kernels: Any, options: RunOptions) -> Any:
    from tidu_compile.backend.jit import kernels_llvm_ir

    return kernels_llvm_ir(kernels.module, vector_math=options.vector_math)


def _optimized(ir: Any, options: RunOptions) -> Any:
    from tidu_compile.backend.jit import optimize

    return optimize(ir)


def _assembly(optimized: Any, options: RunOptions) -> str:
    from tidu_compile.backend.jit import assembly

    return assembly(optimized)


def _object_code(optimized: Any, options: RunOptions) -> Any:
    from tidu_compile.backend.jit import object_code

    return object_code(optimized)


PIPELINE: tuple[Stage, ...] = (
    Stage("graph", "graph", "the recorded node", _recorded_graph, "node", "the tape"),
    Stage("linear", "graph", "its JVP graph for the active output slots", _linear_graph,
          "node", "linearize"),
    Stage("transposed", "graph", "the VJP graph", _transposed_graph, "node", "linear_transpose"),
    Stage("tidu", "mlir", "func.func @node of tidu ops on tensors", _import_program, "program",
          "node_program, import_program"),
    Stage("fused", "mlir", "elementwise ops, broadcasts and reductions fused into tidu.kernel",
          passes=("canonicalize", "cse", "dce", "tidu-fuse-elementwise{complex_kernels=true}",
                  "dce")),
    Stage("loops", "mlir", "each kernel a func/scf/memref/arith function over a chunk of rows",
          passes=("tidu-lower-to-loops{chunked=true runtime_scales=true}", "tidu-lower-linalg",
                  "expand-math-polynomials{only_in_loops=true outline=true}",
                  "tidu-lower-control")),
    Stage("kernels", "kernels", "the kernel functions, canonical: what their object code is "
          "keyed by", _kernel_code,
          does="kernel_code: extract_kernel_module, named by their text's digest"),
    Stage("llvm", "mlir", "the kernel functions in the llvm dialect", _llvm_dialect,
          passes=("tidu-convert-scf-to-cf", "convert-memref-to-ptr-fast",
                  "convert-ptr-type-offsets", "convert-ptradd-to-gep",
                  "convert-ptr-to-llvm-fast", "convert-index-to-i64", "convert-arith-to-llvm",
                  "convert-math-to-llvm", "convert-cf-to-llvm", "convert-func-to-llvm",
                  "reconcile-unrealized-casts")),
    Stage("llvm-ir", "text", "LLVM IR", _llvm_ir,
          does="convert_module, llvmlite parse and verify (a walk through kernels: "
               "llvm_text.emit_module straight from them, the same IR)", direct_from="kernels",
          direct=_llvm_ir_of_kernels),
    Stage("opt-ir", "text", "LLVM IR after O3", _optimized, does="LLVM O3 for the host CPU"),
    Stage("asm", "text", "host assembly", _assembly, does="the host target machine's assembly"),
    Stage("codegen", "object", "host object code", _object_code, "opt-ir",
          "the host target machine's object code (what the executor loads)"),
)  # fmt: skip
"""The stages in order. Two departures of ``llvm`` from the order of the notes, both
keeping its result: ``convert-index-to-i64`` runs right after the pointer passes (the
``llvm`` ops refuse ``index``, so retyping it first keeps the IR valid after every
pass), and ``convert-ptr-to-llvm-fast`` replaces xDSL's ``convert-ptr-to-llvm`` (the
same IR, ~0.4 ms instead of ~15 ms per kernel), and ``convert-memref-to-ptr-fast`` xDSL's
``convert-memref-to-ptr{lower_func=true}`` (the same IR by xDSL's own patterns, each op
offered once: 0.7x its time on a GRU segment's kernels)."""

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in PIPELINE)
GRAPH_STAGES: tuple[str, ...] = tuple(s.name for s in PIPELINE if s.kind == "graph")


def stage(name: str) -> Stage:
    """The stage called ``name``; ``ValueError`` naming the stages if there is none."""
    for found in PIPELINE:
        if found.name == name:
            return found
    raise ValueError(f"unknown stage {name!r}; expected one of {', '.join(STAGE_NAMES)}")


def stages_between(first: str, last: str) -> tuple[Stage, ...]:
    """The stages a walk from ``first`` (a stage or an input) runs to make ``last``, in order.

    ``ValueError`` when ``last`` is not made from ``first``.
    """
    if first not in INPUTS and STAGE_NAMES.index(stage(last).name) < STAGE_NAMES.index(
        stage(first).name
    ):
        raise ValueError(f"stage {last!r} comes before stage {first!r}")
    path: list[Stage] = []
    name = last
    while name != first:
        if name in INPUTS:
            raise ValueError(f"stage {last!r} is not made from {first!r}")
        path.append(stage(name))
        name = path[-1].made_from or STAGE_NAMES[STAGE_NAMES.index(name) - 1]
    return tuple(reversed(path))


def walk(
    ir: Any, first: str, last: str, options: RunOptions | None = None,
    seconds: dict[str, float] | None = None,
) -> Any:  # fmt: skip
    """``ir``, the IR of ``first`` (a stage, or an input: ``node``, ``program``), taken
    through every stage that makes ``last``; the IR of ``last``. ``seconds`` gets the
    time each stage took, by stage name."""
    options = options or RunOptions()
    for step in route(first, last, options):
        start = time.perf_counter()
        if step.run is None:
            ir = run_passes(ir, step.spec, after_pass=options.after_pass,
                            verify_each=options.verify_each,
                            verify_result=options.verify_results)  # fmt: skip
        else:
            ir = step.run(ir, options)
        if seconds is not None:
            seconds[step.name] = time.perf_counter() - start
    return ir


def route(first: str, last: str, options: RunOptions | None = None) -> list[Stage]:
    """The stages ``walk`` runs from ``first`` to make ``last``: ``stages_between``, but
    for the stages a later stage is made straight from (``Stage.direct``), left out when
    the walk passes its ``direct_from`` and hears no passes (``options.after_pass``):
    kernels -> llvm-ir by ``backend.llvm_text`` instead of kernels -> llvm -> llvm-ir (the
    same LLVM IR: ``tests/backend/test_llvm_text.py``)."""
    path = list(stages_between(first, last))
    if options is not None and options.after_pass is not None:
        return path
    for index, step in enumerate(path):
        if step.direct is None:
            continue
        before = [first, *(s.name for s in path[:index])]
        if step.direct_from in before[:-1]:
            start = before.index(step.direct_from)
            shortcut = Stage(step.name, step.kind, step.ir, step.direct, step.direct_from,
                             f"from {step.direct_from} directly")  # fmt: skip
            return [*path[:start], shortcut, *path[index + 1:]]
    return path


# ------------------------------------------------------------------ running passes


def tidu_context() -> Context:
    """A context with the tidu dialect and every standard dialect the pipeline uses."""
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects

    from tidu_compile.dialects.tidu import Tidu

    context = Context(allow_unregistered=False)
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    context.load_dialect(Tidu)
    return context


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes plus ours, by name (ours win on a clash), ``tidu-lower-control``
    given the compiler's side (``_install_scan_bodies``)."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    from tidu_compile.passes import get_all_passes

    _install_scan_bodies()
    return {**xdsl_passes(), **get_all_passes()}


@functools.cache
def _install_scan_bodies() -> None:
    """Give ``tidu-lower-control`` this table's walk for scan bodies, once, before any
    pass runs (here, not at import: the table is imported without xDSL)."""
    from tidu_compile.compiler import scan_bodies

    scan_bodies.install(_body_to_loops)


@functools.lru_cache(maxsize=64)
def parse_passes(spec: str) -> tuple[ModulePass, ...]:
    """The pass instances of a ``-p`` spec (cached: passes are frozen and stateless).

    ``ValueError`` for an unknown pass or a malformed spec.
    """
    from xdsl.passes import PassPipeline
    from xdsl.utils.exceptions import ArgSpecParseError

    try:
        return tuple(PassPipeline.parse_spec(available_passes(), spec).passes)
    except ArgSpecParseError as error:  # a BaseException in xDSL 0.74: make it an error
        raise ValueError(f"bad pass pipeline {spec!r}: {error}") from None


def run_passes(
    module: ModuleOp,
    spec: str,
    context: Context | None = None,
    after_pass: AfterPass | None = None,
    verify_each: bool = True,
    verify_result: bool = True,
) -> ModuleOp:
    """Run a comma-separated pass pipeline on ``module`` in place, verifying after every
    pass (or, with ``verify_each=False``, only the result, and with
    ``verify_result=False`` not even that: the compile path, whose passes the tests
    verify one by one)."""
    context = context or tidu_context()
    passes = parse_passes(spec)
    for ir_pass in passes:
        ir_pass.apply(context, module)
        if verify_each:
            module.verify()
        if after_pass is not None:
            after_pass(ir_pass, module)
    if verify_result and not (verify_each and passes):
        module.verify()
    return module


def lower_to_llvm_dialect(
    module: ModuleOp,
    *,
    passes: str | None = None,
    verify_each: bool = True,
    after_pass: AfterPass | None = None,
    verify_result: bool = True,
) -> ModuleOp:
    """The ``llvm`` stage's work on ``module`` (func, scf, memref, arith, math, cf), in
    place: its passes, then ``backend.llvm_legality.check_llvm_legal``, so xDSL's
    ``convert_module`` can take the result::

        func.func @scale(%x: memref<?xf64>, %y: memref<?xf64>, %n: index) {
          scf.for %i = %c0 to %n step %c1 {
            %v = memref.load %x[%i] : memref<?xf64>
            %e = math.exp %v : f64
            memref.store %e, %y[%i] : memref<?xf64>
          } ...
        ==> llvm.func @scale(%x: !llvm.ptr {llvm.noalias}, %y: !llvm.ptr {llvm.noalias}, %n: i64) {
            ^bb2:
              %p = llvm.getelementptr inbounds %x[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
              %v = llvm.load %p : !llvm.ptr -> f64
              %e = llvm.intr.exp(%v) : (f64) -> f64 ...

    ``passes`` replaces the stage's pass spec (a test turning an option off);
    ``verify_each`` verifies after every pass (``verify_result`` at the end);
    ``after_pass(pass, module)`` hears every pass (and then every math function is
    lowered; else one lowered before is reused: ``compiler.lowered_math``). Raises
    ``LoweringError`` from a pass, ``VerifyException`` from the verifier, or
    ``IllegalIRError`` when ops other than ``llvm.*`` remain.
    """
    from tidu_compile.backend.llvm_legality import check_llvm_legal
    from tidu_compile.compiler.lowered_math import lower_reusing_math

    spec = stage("llvm").spec if passes is None else passes

    if after_pass is None:  # the result verified with the reused functions in it
        reused = lower_reusing_math(module, spec, lambda target: run_passes(
            target, spec, verify_each=verify_each, verify_result=False))  # fmt: skip
        if (verify_result and not (verify_each and spec)) or (verify_each and reused):
            module.verify()
    else:
        run_passes(module, spec, after_pass=after_pass, verify_each=verify_each,
                   verify_result=verify_result)  # fmt: skip
    check_llvm_legal(module)
    return module


def _body_to_loops(program: Any) -> ModuleOp:
    """A scan body's ``loops``-stage module, for ``tidu-lower-control``."""
    options = RunOptions(function="body", verify_each=False, verify_results=False)
    return walk(program, "program", "loops", options)  # type: ignore[no-any-return]

"""``tidu-compile``: dump every stage of the backward compiler, run passes, manage the cache.

    tidu-compile dump --example mlp --stage fused
    tidu-compile dump model.py:loss --input x=256x512:f32 --input w=512:f32 --stage asm --node 0
    tidu-compile opt kernel.mlir -p canonicalize,tidu-fuse-elementwise --print-between-passes
    tidu-compile opt node.mlir --emit loops
    tidu-compile passes
    tidu-compile cache info
    tidu-compile cache clear
    tidu-compile bench --quick --workload W1,W3 --json out.json
    tidu-compile demo --example logistic_regression

``dump`` and ``opt --emit`` walk the executor's stage table (``compiler.stages``) and
``passes`` lists it: they show the IR and the passes the executor compiles with.
User mistakes (missing file, bad shape spec, unknown stage, pass or argument, malformed
IR) print one line on stderr and exit with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main"]

DTYPES = {"f32": "float32", "f64": "float64", "c64": "complex64", "c128": "complex128"}
#: Dtypes an ``--input`` may also have: labels, which need no gradient.
LABEL_DTYPES = {"i32": "int32", "i64": "int64"}
#: Integer inputs hold random integers in [0, LABEL_BOUND).
LABEL_BOUND = 10
#: The largest ``--input`` dump draws (random data, allocated before recording).
MAX_INPUT_BYTES = 1 << 32


class CliError(Exception):
    """A user mistake: printed as one line, exit status 2."""


# ------------------------------------------------------------------ dump


def parse_input_spec(spec: str) -> tuple[str, tuple[int, ...], str]:
    """``x=256x512:f32`` -> ("x", (256, 512), "float32"); ``s=:f64`` is a 0-d input."""
    name, sep, rest = spec.partition("=")
    shape_text, sep2, dtype_text = rest.partition(":")
    if not sep or not name.isidentifier():
        raise CliError(f"--input {spec!r}: expected NAME=SHAPE:DTYPE, e.g. x=256x512:f32")
    dtypes = DTYPES | LABEL_DTYPES
    dtype = dtypes.get(dtype_text or "f64")
    if dtype is None:
        raise CliError(f"--input {spec!r}: unknown dtype {dtype_text!r} (use {', '.join(dtypes)})")
    try:
        shape = tuple(int(d) for d in shape_text.split("x")) if shape_text else ()
    except ValueError:
        raise CliError(f"--input {spec!r}: bad shape {shape_text!r} (use e.g. 4x8)") from None
    if any(d < 0 for d in shape):
        raise CliError(f"--input {spec!r}: negative dimension in {shape_text!r}")
    size = math.prod(shape) * np.dtype(dtype).itemsize  # Python ints: no overflow
    if size > MAX_INPUT_BYTES:
        raise CliError(
            f"--input {name}: {'x'.join(map(str, shape))} {dtype} is {_bytes(size)}, more "
            f"than the {_bytes(MAX_INPUT_BYTES)} an input may have"
        )
    return name, shape, dtype


def _bytes(size: int) -> str:
    """``4294967296`` -> ``4 GiB``; ``8e19`` -> ``69 EiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024:
            return f"{size:.3g} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size:.3g} EiB"


def load_target(target: str) -> Callable[..., Any]:
    """``path/to/file.py:function`` -> the function."""
    path_text, sep, function_name = target.rpartition(":")
    if not sep or not function_name:
        raise CliError(f"target {target!r}: expected path/to/file.py:function")
    path = Path(path_text)
    if not path.is_file():
        raise CliError(f"target {target!r}: no such file {path_text}")
    spec = importlib.util.spec_from_file_location(f"_tidu_target_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CliError(f"target {target!r}: cannot load {path_text} as Python")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SystemExit as error:  # sys.exit() on import: not a function to dump
        raise CliError(f"target {target!r}: importing it called sys.exit({error.code!r})") from None
    except Exception as error:  # noqa: BLE001 - the user's module failed to import
        raise CliError(
            f"target {target!r}: importing it raised {type(error).__name__}: {error}"
        ) from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise CliError(f"target {target!r}: {path_text} defines no function {function_name!r}")
    return function


def _random_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype in LABEL_DTYPES.values():
        return rng.integers(0, LABEL_BOUND, size=shape).astype(dtype)
    data = rng.normal(size=shape)
    if dtype.startswith("complex"):
        data = data + 1j * rng.normal(size=shape)
    return data.astype(dtype)


def _target_inputs(
    function: Callable[..., Any], target: str, input_specs: Sequence[str], rng: np.random.Generator
) -> list[np.ndarray]:
    """Random arrays for the function's parameters, from the ``--input`` specs."""
    specs: dict[str, tuple[tuple[int, ...], str]] = {}
    for name, shape, dtype in map(parse_input_spec, input_specs):
        if name in specs:
            raise CliError(f"--input {name}: given twice")
        specs[name] = (shape, dtype)
    parameters = list(inspect.signature(function).parameters)
    takes = f"{target} takes ({', '.join(parameters)})"
    unknown = [n for n in specs if n not in parameters]
    if unknown:
        raise CliError(f"--input {unknown[0]}: unknown argument {unknown[0]!r}; {takes}")
    missing = [p for p in parameters if p not in specs]
    if missing:
        raise CliError(f"--input: missing {', '.join(missing)}; {takes}")
    return [_random_input(rng, *specs[p]) for p in parameters]


def _record(args: argparse.Namespace) -> Any:
    import tidu_compile as tc
    from tidu_compile.ops import DIFFERENTIABLE_DTYPES

    if args.seed < 0:
        raise CliError(f"--seed {args.seed}: a seed is a non-negative integer")
    rng = np.random.default_rng(args.seed)
    if args.example:
        from tidu_compile.tools.examples import EXAMPLES

        if args.target:
            raise CliError("give a TARGET (file.py:function) or --example NAME, not both")
        if args.input:
            raise CliError("--input is not valid with --example (an example makes its own "
                           "inputs; --dtype picks their dtype)")  # fmt: skip
        example = EXAMPLES[args.example]
        arrays = example.make_inputs(rng, np.dtype(DTYPES[args.dtype]).type)
        function: Callable[..., Any] = example.function
    else:
        if not args.target:
            raise CliError("dump: give a TARGET (file.py:function) or --example NAME")
        function = load_target(args.target)
        arrays = _target_inputs(function, args.target, args.input, rng)
    inputs = [tc.tensor(a, requires_grad=a.dtype.name in DIFFERENTIABLE_DTYPES)
              for a in arrays]  # fmt: skip
    try:
        # recorded by numpy: on a CompiledExecutor a @tc.function's scalar loss would come
        # with its gradient (``frontend.joint_forward``); the dump shows the tape's nodes
        with tc.use_executor(tc.ReferenceExecutor()):
            loss = function(*inputs)
    except SystemExit as error:
        raise CliError(f"recording the function: it called sys.exit({error.code!r})") from None
    except Exception as error:  # noqa: BLE001 - the user's function failed
        raise CliError(f"recording the function raised {type(error).__name__}: {error}") from None
    if not isinstance(loss, tc.Tensor) or loss.shape != ():
        raise CliError("the function must return a scalar (0-d) Tensor")
    return loss


def command_dump(args: argparse.Namespace) -> None:
    from tidu_compile.tools.dump import backward_nodes, stage_text

    from tidu_compile.compiler.stages import GRAPH_STAGES

    if args.format == "dot" and args.stage not in GRAPH_STAGES:
        raise CliError(f"--format dot draws only the graph stages ({', '.join(GRAPH_STAGES)})")
    loss = _record(args)
    if not loss.requires_grad:
        raise CliError("the function's result does not depend on any float input")
    nodes = backward_nodes(loss)
    if args.node is not None:
        if not 0 <= args.node < len(nodes):
            raise CliError(f"--node {args.node}: the backward pass has nodes 0..{len(nodes) - 1}")
        nodes = [nodes[args.node]]
    for node in nodes:
        print(f"// ===== {node.title()} =====")
        print(stage_text(node, args.stage, args.format))


# ------------------------------------------------------------------ opt, passes, cache


def command_opt(args: argparse.Namespace) -> None:
    from xdsl.parser import Parser

    from tidu_compile.compiler.ssa_order import check_ssa_order
    from tidu_compile.compiler.stages import RunOptions, run_passes, tidu_context, walk

    if args.passes and args.emit:
        raise CliError("-p and --emit exclude each other (--emit runs the executor's passes)")
    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"{args.file}: no such file")
    context = tidu_context()
    try:
        module = Parser(context, path.read_text(), str(path)).parse_module()
        module.verify()
        check_ssa_order(module)
    except Exception as error:  # noqa: BLE001 - malformed IR is a user mistake
        raise CliError(f"{args.file}: {_first_line(error)}") from None

    def show(ir_pass: Any, module: Any) -> None:
        print(f"// -----// IR Dump After {ir_pass.name} //----- //")
        print(module)

    after_pass = show if args.print_between_passes else None
    try:
        if args.emit:
            print(walk(module, args.start, args.emit, RunOptions(after_pass=after_pass)))
            return
        if args.passes:
            run_passes(module, args.passes, context, after_pass)
    except Exception as error:  # noqa: BLE001 - unknown pass or a pass rejected the IR
        what = f"-p {args.passes}" if args.passes else f"--emit {args.emit}"
        raise CliError(f"{what}: {_first_line(error)}") from None
    print(module)


def command_passes(args: argparse.Namespace) -> None:
    from tidu_compile.passes import get_all_passes

    from tidu_compile.compiler.stages import PIPELINE

    print("The executor's pipeline (dump --stage NAME prints the IR of a stage but codegen;")
    print("opt --emit NAME runs the stages up to it):")
    for stage in PIPELINE:
        print(f"  {stage.name:11} {stage.how()}")
    print()
    print("Passes of this package (the others are xDSL's):")
    for name, load in sorted(get_all_passes().items()):
        doc = inspect.getdoc(load()) or inspect.getdoc(sys.modules[load().__module__]) or ""
        print(f"  {name:26} {doc.splitlines()[0] if doc else ''}")


def command_cache(args: argparse.Namespace) -> None:
    from tidu_compile.compiler.cache import DiskCache, default_cache_dir

    if args.dir is not None and not args.dir.strip():
        raise CliError(f"--dir {args.dir!r}: an empty path (omit --dir for the default cache)")
    cache = DiskCache(default_cache_dir() if args.dir is None else args.dir)
    if args.action == "info":
        entries = cache.entries()
        size = sum(p.stat().st_size for p in entries if p.exists())
        print(f"directory: {cache.directory}")
        print(f"entries:   {len(entries)}")
        print(f"bytes:     {size}")
    else:
        print(f"removed {cache.clear()} entries from {cache.directory}")


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 else f"{type(error).__name__}: " + " | ".join(lines[:6])


# ------------------------------------------------------------------ main


def build_parser() -> argparse.ArgumentParser:
    from tidu_compile.tools.examples import EXAMPLES

    from tidu_compile.compiler.stages import PIPELINE

    parser = argparse.ArgumentParser(prog="tidu-compile", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    printable = [s.name for s in PIPELINE if s.kind != "object"]  # codegen: object code
    examples = "; ".join(f"{e.name}: {e.description.replace('``', '').rstrip('.')}"
                         for e in EXAMPLES.values())  # fmt: skip
    dump = sub.add_parser("dump", help="dump the IR of every backward node at one stage")
    dump.add_argument("target", nargs="?", help="path/to/file.py:function")
    dump.add_argument("--example", choices=tuple(EXAMPLES),
                      help=f"a built-in example instead of a target ({examples})")
    dump.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE:DTYPE",
                      help="one per argument of the target, e.g. x=256x512:f32; dtypes "
                      f"{', '.join(DTYPES)}, and {', '.join(LABEL_DTYPES)} for labels "
                      f"(random integers in [0, {LABEL_BOUND}), no gradient)")
    dump.add_argument("--stage", required=True, choices=printable)
    dump.add_argument("--node", type=int, help="only this node (backward order)")
    dump.add_argument("--format", choices=("text", "dot"), default="text")
    dump.add_argument("--dtype", choices=tuple(DTYPES), default="f64", help="for --example")
    dump.add_argument("--seed", type=int, default=0, help="random seed of the inputs")
    dump.set_defaults(run=command_dump)

    ir_stages = [s.name for s in PIPELINE if s.kind not in ("graph", "object")]
    mlir_stages = [s.name for s in PIPELINE if s.kind == "mlir"]
    opt = sub.add_parser("opt", help="parse IR text, run passes, print")
    opt.add_argument("file")
    opt.add_argument("-p", "--passes", default="", help="comma-separated pass pipeline")
    opt.add_argument("--emit", choices=ir_stages,
                     help="run the executor's stages from --from up to this stage")
    opt.add_argument("--from", dest="start", choices=mlir_stages, default="tidu",
                     help="the stage of the input IR, for --emit (default: tidu)")
    opt.add_argument("--print-between-passes", action="store_true")
    opt.set_defaults(run=command_opt)

    passes = sub.add_parser("passes", help="the executor's stages and passes; every pass")
    passes.set_defaults(run=command_passes)

    cache = sub.add_parser("cache", help="inspect or clear the on-disk kernel cache")
    cache.add_argument("action", choices=("info", "clear"))
    cache.add_argument("--dir", help="cache directory (default: the user cache directory)")
    cache.set_defaults(run=command_cache)

    from tidu_compile.tools.demo import add_arguments as add_demo_arguments
    from tidu_compile.tools.demo import cli_command as command_demo

    demo = sub.add_parser("demo", help="check (and train) a built-in example's gradients")
    add_demo_arguments(demo)
    demo.set_defaults(run=command_demo)

    from tidu_compile.tools.bench.main import add_arguments as add_bench_arguments
    from tidu_compile.tools.bench.main import cli_command as command_bench

    bench = sub.add_parser("bench", help="time the compiled backward against numpy, torch, jax")
    add_bench_arguments(bench)
    bench.set_defaults(run=command_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except CliError as error:
        print(f"tidu-compile: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

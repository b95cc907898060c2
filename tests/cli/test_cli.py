"""``tidu-compile``: every subcommand and its error paths.

Most tests run the command as a subprocess; the dump of every stage and the user errors
call ``tools.cli.main`` in this process (``run_here``: a subprocess per case cost ~5 s
of the suite's budget each), with the same exit codes and output streams.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "tidu_compile.tools.cli"]

TARGET = """
import tidu_compile as tc

def loss(x, w):
    return tc.sum(tc.tanh(x @ w) * 2.0)

def not_scalar(x, w):
    return x @ w

def labeled(x, labels):
    return tc.sum(tc.where(labels > 4, x * x, -x))
"""

KERNEL_IR = """
func.func @node(%x: tensor<8xf64>, %y: tensor<8xf64>) -> tensor<8xf64> {
  %0 = tidu.mul %x, %y : tensor<8xf64>
  %1 = tidu.neg %0 : tensor<8xf64>
  %2 = tidu.neg %1 : tensor<8xf64>
  %3 = tidu.exp %2 : tensor<8xf64>
  func.return %3 : tensor<8xf64>
}
"""


def run(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if cache is not None:
        env["TIDU_COMPILE_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=300, env=env
    )


def run_here(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``run`` in this process: ``tools.cli.main`` (an uncaught exception fails the test)."""
    from tidu_compile.tools.cli import main

    try:
        code = main(list(args))
    except SystemExit as stop:  # argparse's usage errors
        code = stop.code if isinstance(stop.code, int) else 2
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "model.py"
    path.write_text(TARGET)
    return path


def assert_user_error(result: subprocess.CompletedProcess[str], text: str) -> None:
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert text in result.stderr


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        ("graph", "Tanh()"),
        ("linear", "[linear 1 0]"),
        ("transposed", "Conj()"),
        ("tidu", "tidu.dot_general"),
        ("fused", "tidu.kernel"),
        ("loops", "scf.for"),
        ("llvm", "llvm.func"),
        ("llvm-ir", "define void"),
        ("opt-ir", "noalias"),
        ("asm", ".globl"),
    ],
)
def test_dump_every_stage_of_a_file_target(
    target: Path, stage: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_here(capsys, "dump", f"{target}:loss", "--input", "x=4x3:f32",
                      "--input", "w=3x5:f32", "--stage", stage)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "// ===== node 0:" in result.stdout
    assert expected in result.stdout


def test_dump_one_node_of_an_example_as_dot() -> None:
    result = run("dump", "--example", "mlp", "--stage", "transposed", "--node", "2",
                 "--format", "dot")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("digraph") == 1
    assert "node 2:" in result.stdout and "node 3:" not in result.stdout
    if shutil.which("dot"):
        lines = result.stdout.splitlines()
        body = "\n".join(line for line in lines if not line.startswith("//"))
        rendered = subprocess.run(["dot", "-Tsvg"], input=body, capture_output=True, text=True)
        assert rendered.returncode == 0, rendered.stderr


def test_dump_examples_in_f32() -> None:
    result = run("dump", "--example", "broadcast", "--dtype", "f32", "--stage", "fused")
    assert result.returncode == 0, result.stderr
    assert "xf32>" in result.stdout and "maps [[0, 1]] -> [[1]]" in result.stdout  # column sum


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dump", "missing.py:loss", "--stage", "tidu"], "no such file"),
        (["dump", "{target}:nothing", "--stage", "tidu"], "defines no function 'nothing'"),
        (["dump", "{target}", "--stage", "tidu"], "expected path/to/file.py:function"),
        (["dump", "{target}:loss", "--input", "x=4xq:f32", "--stage", "tidu"], "bad shape"),
        (["dump", "{target}:loss", "--input", "x=4:f16", "--stage", "tidu"], "unknown dtype"),
        (["dump", "{target}:loss", "--input", "x=4x3:f32", "--stage", "tidu"], "missing w"),
        (["dump", "{target}:loss", "--input", "x=4x3:f32", "--input", "y=8:f64", "--stage",
          "tidu"], "--input y: unknown argument 'y'; {target}:loss takes (x, w)"),
        (["dump", "{target}:loss", "--input", "x=4x3", "--input", "x=4x3", "--stage", "tidu"],
         "--input x: given twice"),
        (["dump", "--example", "mlp", "--input", "x=axb:f99", "--stage", "tidu"],
         "--input is not valid with --example"),
        (["dump", "{target}:loss", "--example", "mlp", "--stage", "tidu"], "not both"),
        (["dump", "{target}:loss", "--input", "x=4x3:f32", "--input", "w=4x2:f32",
          "--stage", "tidu"], "contracted dimensions differ"),
        (["dump", "{target}:not_scalar", "--input", "x=4x3:f32", "--input", "w=3x2:f32",
          "--stage", "tidu"], "scalar (0-d) Tensor"),
        (["dump", "--example", "nope", "--stage", "tidu"], "invalid choice: 'nope'"),
        (["dump", "--example", "mlp", "--stage", "tidu", "--node", "99"], "--node 99"),
        (["dump", "--example", "mlp", "--stage", "loops", "--format", "dot"], "graph stages"),
        (["dump", "--stage", "tidu"], "give a TARGET"),
    ],
)
def test_dump_user_errors(
    target: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_here(capsys, *(a.format(target=target) for a in args))
    assert_user_error(result, message.format(target=target))


def test_a_user_error_as_a_command(target: Path) -> None:
    """The same as a subprocess: exit status 2, the message, no traceback."""
    assert_user_error(run("dump", f"{target}:nothing", "--stage", "tidu"),
                      "defines no function 'nothing'")  # fmt: skip


def test_dump_help_lists_the_examples() -> None:
    from tidu_compile.tools.examples import EXAMPLES

    result = run("dump", "--help")
    assert result.returncode == 0
    for name in EXAMPLES:
        assert f"{name}: " in " ".join(result.stdout.split()) + " "


def test_dump_takes_integer_labels(target: Path) -> None:
    result = run("dump", f"{target}:labeled", "--input", "x=6:f64", "--input", "labels=6:i64",
                 "--stage", "fused")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "tensor<6xi1>" in result.stdout  # the saved mask labels > 4
    assert "needed inputs [False, True, True]" in result.stdout  # no cotangent for the mask
    i32 = run("dump", f"{target}:labeled", "--input", "x=6:f32", "--input", "labels=6:i32",
              "--stage", "graph")  # fmt: skip
    assert i32.returncode == 0, i32.stderr


def test_dump_unknown_stage_is_rejected_by_argparse() -> None:
    result = run("dump", "--example", "mlp", "--stage", "bogus")
    assert result.returncode == 2 and "invalid choice: 'bogus'" in result.stderr


def test_opt_runs_passes_and_prints_between(tmp_path: Path) -> None:
    path = tmp_path / "node.mlir"
    path.write_text(KERNEL_IR)
    result = run("opt", str(path), "-p", "canonicalize,tidu-fuse-elementwise",
                 "--print-between-passes")  # fmt: skip
    assert result.returncode == 0, result.stderr
    dumps = result.stdout.split("// -----// IR Dump After ")
    assert dumps[1].startswith("canonicalize") and "tidu.neg" not in dumps[1]
    assert dumps[2].startswith("tidu-fuse-elementwise") and "tidu.kernel" in dumps[2]


@pytest.mark.parametrize(
    ("text", "passes", "message"),
    [
        ("garbage", "cse", "not registered"),
        (KERNEL_IR, "no-such-pass", "no-such-pass"),
        (KERNEL_IR.replace("tensor<8xf64>) -> tensor<8xf64> {", "tensor<4xf64>) -> "
                           "tensor<8xf64> {", 1), "cse", "tidu.mul"),
    ],
    ids=["parse", "unknown-pass", "verify"],
)
def test_opt_user_errors(
    tmp_path: Path, text: str, passes: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    assert_user_error(run_here(capsys, "opt", str(path), "-p", passes), message)
    assert_user_error(run_here(capsys, "opt", str(tmp_path / "absent.mlir")), "no such file")


CYCLES = {
    "self": "  %0 = tidu.scale %0, 2.0 : tensor<4xf64>\n  func.return %0 : tensor<4xf64>\n",
    "pair": "  %0 = tidu.scale %1, 2.0 : tensor<4xf64>\n  %1 = tidu.scale %0, 3.0 : "
            "tensor<4xf64>\n  func.return %1 : tensor<4xf64>\n",
    "nested": "  %0 = tidu.kernel ins(%x : tensor<4xf64>) domain [4] maps [[0]] -> [[0]] {\n"
              "  ^bb0(%a: f64):\n    %b = tidu.neg %c : f64\n    %c = tidu.neg %a : f64\n"
              "    tidu.yield %b : f64\n  } : tensor<4xf64>\n"
              "  func.return %0 : tensor<4xf64>\n",
}


@pytest.mark.parametrize("body", CYCLES.values(), ids=CYCLES.keys())
def test_opt_rejects_values_used_before_their_definition(tmp_path: Path, body: str) -> None:
    path = tmp_path / "cycle.mlir"
    path.write_text(f"func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {{\n{body}}}\n")
    result = run("opt", str(path), "-p", "canonicalize")  # used to loop forever
    assert_user_error(result, "used before it is defined")


def test_a_scale_cycle_across_blocks_ends(tmp_path: Path) -> None:
    path = tmp_path / "cfg.mlir"
    path.write_text("func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {\n"
                    "  %0 = tidu.scale %1, 2.0 : tensor<4xf64>\n  cf.br ^bb1\n^bb1:\n"
                    "  %1 = tidu.scale %0, 3.0 : tensor<4xf64>\n"
                    "  func.return %1 : tensor<4xf64>\n}\n")  # fmt: skip
    result = run("opt", str(path), "-p", "canonicalize")
    assert result.returncode in (0, 2) and "Traceback" not in result.stderr


def test_passes_lists_every_pass_with_a_description() -> None:
    result = run("passes")
    assert result.returncode == 0, result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    for name in ("tidu-fuse-elementwise", "tidu-lower-to-loops", "convert-arith-to-llvm"):
        line = next(text for text in lines if text.startswith(name))
        assert len(line.split(maxsplit=1)) == 2


def test_passes_prints_the_pass_specs_the_executor_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    import tidu_compile as tc
    from tidu_compile.compiler import stages

    specs: list[str] = []
    parse = stages.parse_passes
    monkeypatch.setattr(stages, "parse_passes", lambda spec: specs.append(spec) or parse(spec))
    x = tc.tensor(np.linspace(0.5, 1.5, 7), requires_grad=True)
    tc.grad(tc.sum(tc.exp(x) * x), [x], executor=tc.CompiledExecutor(cache_dir=False))
    assert len(set(specs)) == 2  # fused, loops (per node; llvm-ir is written from kernels)
    listing = run("passes").stdout
    for spec in specs:
        assert f"-p {spec}" in listing
    assert ("tidu-lower-to-loops{chunked=true runtime_scales=true},tidu-lower-linalg,"
            "expand-math-polynomials{only_in_loops=true outline=true},tidu-lower-control") in specs


def test_opt_emit_runs_the_executors_passes_up_to_a_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = run_here(capsys, "dump", "--example", "chain", "--stage", "tidu", "--node", "1")
    assert node.returncode == 0, node.stderr
    path = tmp_path / "node.mlir"
    path.write_text(node.stdout)
    for stage in ("fused", "loops", "llvm"):
        dumped = run_here(capsys, "dump", "--example", "chain", "--stage", stage,
                          "--node", "1").stdout  # fmt: skip
        emitted = run_here(capsys, "opt", str(path), "--emit", stage)
        assert emitted.returncode == 0, emitted.stderr
        assert emitted.stdout.strip() == dumped.split("\n", 1)[1].strip()
    asm = run_here(capsys, "opt", str(path), "--emit", "asm")
    assert asm.returncode == 0 and ".globl" in asm.stdout
    between = run_here(capsys, "opt", str(path), "--emit", "llvm", "--print-between-passes").stdout
    from tidu_compile.compiler.stages import stages_between

    names = [spec.split("{")[0] for s in stages_between("tidu", "llvm") for spec in s.passes]
    dumped_after = [part.split(" ", 1)[0] for part in between.split("IR Dump After ")[1:]]
    assert dumped_after == names


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--emit", "loops", "-p", "cse"], "exclude each other"),
        (["--from", "loops", "--emit", "tidu"], "comes before"),
        (["--emit", "bogus"], "invalid choice: 'bogus'"),
    ],
)
def test_opt_emit_user_errors(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "node.mlir"
    path.write_text(KERNEL_IR)
    assert_user_error(run_here(capsys, "opt", str(path), *args), message)


def test_cache_info_and_clear(tmp_path: Path) -> None:
    (tmp_path / f"{'a' * 64}.tidu").write_bytes(b"x" * 10)
    info = run("cache", "info", cache=tmp_path)
    assert info.returncode == 0 and "entries:   1" in info.stdout
    cleared = run("cache", "clear", "--dir", str(tmp_path))
    assert cleared.returncode == 0 and "removed 1 entries" in cleared.stdout
    assert not list(tmp_path.glob("*.tidu"))


def test_stock_xdsl_opt_sees_the_dialect_and_passes(tmp_path: Path) -> None:
    path = tmp_path / "node.mlir"
    path.write_text(KERNEL_IR)
    xdsl_opt = Path(sys.executable).with_name("xdsl-opt")
    result = subprocess.run([str(xdsl_opt), str(path), "-p", "tidu-fuse-elementwise"],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "tidu.kernel" in result.stdout

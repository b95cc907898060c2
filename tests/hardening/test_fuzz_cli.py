"""Fuzzing ``tidu-compile opt`` with random IR text, and the CLI's other inputs.

Seeds are valid tidu programs (the pass tests' random generator and the CLI test's
kernel); each trial mutates one (cut, duplicate, splice, insert tokens, change numbers,
swap lines, truncate, flip bytes) and runs ``opt`` in-process with a random pipeline.
The only acceptable outcomes are exit status 0 (printed IR) or 2 (one line on stderr,
no traceback); an escaping exception or a hang (10 s alarm) is a failure.
"""

from __future__ import annotations

import contextlib
import io
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import numpy as np
import pytest
from fuzz_report import FuzzCounts, budget_seconds, first_seed
from test_passes_random_programs import random_program
from tidu_compile.tools.cli import main

KERNEL_IR = """func.func @node(%x: tensor<8xf64>, %y: tensor<8xf64>) -> tensor<8xf64> {
  %0 = tidu.mul %x, %y : tensor<8xf64>
  %1 = tidu.neg %0 : tensor<8xf64>
  %2 = tidu.exp %1 : tensor<8xf64>
  func.return %2 : tensor<8xf64>
}
"""

TOKENS = ["tidu.add", "tidu.mul", "tidu.reduce_sum", "tidu.broadcast_in_dim", "tidu.kernel",
          "tidu.dot_general", "%0", "%x0", "%v3", ":", ",", "(", ")", "{", "}", "[", "]",
          "tensor<4x6xf64>", "tensor<f64>", "tensor<0xf64>", "tensor<?xf64>", "complex<f64>",
          "xf32", "->", "=", "0x7FF8000000000000", "-1", "99999999999999999999", "1.0e309",
          "dims = [7]", "axes = [0, 0]", "func.return", "\n", '"', "^bb0:", "@node", "\x00",
          "é", "tidu.yield", "memref<4xf64>", "scf.for"]  # fmt: skip

PIPELINES = ["", "canonicalize", "cse,dce", "canonicalize,cse,dce,tidu-fuse-elementwise",
             "tidu-fuse-elementwise{complex_kernels=true}", "tidu-lower-to-loops",
             "tidu-fuse-elementwise,tidu-lower-to-loops{chunked=true}", "no-such-pass",
             "tidu-fuse-elementwise{bogus=1}", "canonicalize,,cse"]  # fmt: skip


def seeds() -> list[str]:
    texts = [KERNEL_IR]
    for seed in range(6):
        texts.append(random_program(seed, 10, "f64"))
        texts.append(random_program(seed, 10, "complex<f64>"))
    return texts


def mutate(rng: np.random.Generator, text: str) -> str:
    for _ in range(int(rng.integers(1, 4))):
        n = max(1, len(text))
        i, j = sorted(int(v) for v in rng.integers(0, n, 2))
        kind = int(rng.integers(8))
        if kind == 0:
            text = text[:i] + text[j:]  # cut
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]  # duplicate
        elif kind == 2:
            text = text[:i] + str(rng.choice(TOKENS)) + text[i:]  # insert a token
        elif kind == 3:
            digits = [k for k, c in enumerate(text) if c.isdigit()]
            if digits:
                k = digits[int(rng.integers(len(digits)))]
                text = text[:k] + str(int(rng.integers(10))) + text[k + 1 :]
        elif kind == 4:
            lines = text.splitlines()
            if len(lines) > 2:
                a, b = (int(v) for v in rng.integers(0, len(lines), 2))
                lines[a], lines[b] = lines[b], lines[a]
                text = "\n".join(lines)
        elif kind == 5:
            text = text[:j]  # truncate
        elif kind == 6:
            data = bytearray(text.encode(errors="surrogateescape"))
            if data:
                data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
            text = data.decode(errors="surrogateescape")
        else:
            other = seeds()[int(rng.integers(len(seeds())))]
            text = text[:i] + other[i:]  # splice two programs
    return text


class Hang(BaseException):  # not an Exception: the CLI must not swallow it
    pass


@contextlib.contextmanager
def alarm(seconds: int) -> Iterator[None]:
    def ring(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as exit_:  # argparse rejects the command line
            status = int(exit_.code or 0)
    return status, out.getvalue(), err.getvalue()


def test_fuzz_opt_with_random_ir(tmp_path: Path) -> None:
    counts = FuzzCounts("tidu-compile opt fuzzer")
    texts = seeds()
    counts.programs = len(texts)
    deadline = time.perf_counter() + budget_seconds(10.0)
    seed = first_seed()
    outcomes = {0: 0, 2: 0}
    slowest = (0.0, -1)
    path = tmp_path / "fuzz.mlir"
    while time.perf_counter() < deadline or counts.inputs < 30:
        rng = np.random.default_rng(seed)
        text = mutate(rng, texts[int(rng.integers(len(texts)))])
        pipeline = str(rng.choice(PIPELINES))
        path.write_bytes(text.encode(errors="surrogateescape"))
        args = ["opt", str(path)] + (["-p", pipeline] if pipeline else [])
        if rng.random() < 0.2:
            args.append("--print-between-passes")
        started = time.perf_counter()
        try:
            with alarm(10):
                status, _, err = run_cli(args)
            slowest = max(slowest, (time.perf_counter() - started, seed))
            if status not in outcomes:
                counts.fail(f"seed {seed}: exit status {status}: {err[:300]}")
            elif status == 2 and ("Traceback" in err or len(err.strip().splitlines()) != 1):
                counts.fail(f"seed {seed}: error is not one line: {err[:300]}")
            else:
                outcomes[status] += 1
        except Exception as error:  # noqa: BLE001 - escaping the CLI is the finding
            counts.fail(f"seed {seed}: {type(error).__name__}: {error} (pipeline {pipeline!r})")
        counts.inputs += 1
        seed += 1
    counts.finish()
    print(counts.line(), outcomes, f"slowest input: {slowest[0]:.2f}s (seed {slowest[1]})")
    assert outcomes[2] > 0  # the mutations really produce bad IR
    assert not counts.failures, "\n".join(counts.failures[:10])


@pytest.mark.parametrize(
    ("content", "args"),
    [
        (b"", []),
        (b"\x00\xff\xfe binary \x80", []),
        (b"\xef\xbb\xbf" + KERNEL_IR.encode(), ["-p", "cse"]),
        (KERNEL_IR.encode() * 2, ["-p", "cse"]),
        (b"builtin.module {" * 2000, []),
        (KERNEL_IR.encode(), ["-p", ","]),
        (KERNEL_IR.replace("  %1", '" %1', 1).encode() + b"x" * 200, []),
    ],
    ids=["empty", "binary", "bom", "duplicate-symbol", "deep-nesting", "empty-pass",
         "unterminated-string"],  # fmt: skip
)
def test_opt_rejects_odd_files(tmp_path: Path, content: bytes, args: list[str]) -> None:
    path = tmp_path / "odd.mlir"
    path.write_bytes(content)
    with alarm(30):
        status, _, err = run_cli(["opt", str(path), *args])
    assert status in (0, 2) and "Traceback" not in err
    if status == 2:
        assert len(err.strip().splitlines()) == 1, err


def test_opt_on_a_directory_and_dump_input_specs(tmp_path: Path) -> None:
    status, _, err = run_cli(["opt", str(tmp_path)])
    assert status == 2 and "no such file" in err
    model = tmp_path / "model.py"
    model.write_text("import tidu_compile as tc\ndef f(x):\n    return tc.sum(tc.sin(x))\n")
    for spec, message in [("x=3x:f64", "bad shape"), ("x=-1:f64", "negative"),
                          ("x=3:i8", "unknown dtype"), ("3=3:f64", "NAME=SHAPE"),
                          ("y=3:f64", "unknown argument 'y'")]:  # fmt: skip
        status, _, err = run_cli(["dump", f"{model}:f", "--input", spec, "--stage", "graph"])
        assert status == 2 and message in err, (spec, err)
    status, out, err = run_cli(["dump", f"{model}:f", "--input", "x=0:f64", "--stage", "asm"])
    assert status == 0, err  # a zero-size input is fine
    status, out, err = run_cli(["dump", f"{model}:f", "--input", "x=:f64", "--stage", "loops"])
    assert status == 0 and "func.func" in out, err

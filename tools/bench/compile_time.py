"""``tidu-compile bench --compile``: seconds to the first forward + backward of a long trace.

The program is the chain of issue 23, ``ops`` operations on 64 float64 elements::

    for _ in range(ops // 4):
        h = tanh(h * w + 0.1) - 0.5 * h
    loss = sum(h)

Ours, on a ``CompiledExecutor`` with blocking compiles and no disk cache (so everything
is compiled, and ``stats.stage_seconds`` says where the time went): ``@tc.function`` of
it, its gradient with respect to ``h`` and ``w`` by ``tc.grad`` (the tape's path: one
joint forward program computing the loss and its gradient, ``frontend.joint_forward``),
and ``func.value_and_grad`` of the
``@tc.function`` (JAX's form: one fused program from the first call). The peer:
``jax.jit(jax.value_and_grad(f, argnums=(0, 1)))``, first call. Each measurement runs in
a fresh process (``python -m tidu_compile.tools.bench.compile_time CHILD``), which first
compiles a 4-op chain so that imports and one-time set-up are not counted, then prints
one ``@@bench`` JSON line. The rows alternate ours and the peer per size, so load
affects both alike; a peer run past ``--compile-timeout`` seconds is reported as such.
The gradients of ours are checked against the reference executor's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from tidu_compile.tools.bench.peers import MARKER, peer_installed
from tidu_compile.tools.bench.report import cpu_model, finish, tidu_failures

__all__ = ["SIZES", "QUICK_SIZES", "command", "main", "run"]

SIZES = (100, 800, 3200)
QUICK_SIZES = (40,)
ELEMENTS = 64


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    return np.linspace(-1.0, 1.0, ELEMENTS), np.full(ELEMENTS, 0.9)


def _tidu_child(ops: int, fused: bool = False) -> dict[str, Any]:
    import tidu_compile as tc
    from tidu_compile import func
    from tidu_compile.executors.compiled import CompiledExecutor
    from tidu_compile.executors.reference import ReferenceExecutor

    def gradient(steps: int, executor: Any) -> tuple[list[np.ndarray], float, float]:
        @tc.function
        def chain(h: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
            for _ in range(steps):
                h = tc.tanh(h * w + 0.1) - 0.5 * h
            return tc.sum(h)

        start, cpu = time.perf_counter(), time.process_time()
        with tc.use_executor(executor):
            if fused:
                _, grads = func.value_and_grad(chain, (0, 1))(*_inputs())
            else:
                h, w = (tc.tensor(a, requires_grad=True) for a in _inputs())
                grads = tc.grad(chain(h, w), [h, w])
        return ([np.asarray(g) for g in grads], time.perf_counter() - start,
                time.process_time() - cpu)  # fmt: skip

    gradient(1, CompiledExecutor(False, background=False))  # imports, set-up
    executor = CompiledExecutor(False, background=False)
    grads, seconds, cpu = gradient(ops // 4, executor)
    expected, _, _ = gradient(ops // 4, ReferenceExecutor())
    error = max(float(np.max(np.abs(g - e)) / (np.max(np.abs(e)) + 1e-300))
                for g, e in zip(grads, expected, strict=True))  # fmt: skip
    return {
        "seconds": seconds, "cpu_seconds": cpu, "relative_error": error,
        "stages": dict(executor.stats.stage_seconds), "compiles": executor.stats.compiles,
        "fallbacks": executor.stats.fallbacks,
    }  # fmt: skip


def _jax_child(ops: int) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def first_call(steps: int) -> tuple[float, float]:
        def chain(h: Any, w: Any) -> Any:
            for _ in range(steps):
                h = jnp.tanh(h * w + 0.1) - 0.5 * h
            return jnp.sum(h)

        h, w = (jnp.asarray(a) for a in _inputs())
        start, cpu = time.perf_counter(), time.process_time()
        _, grads = jax.jit(jax.value_and_grad(chain, argnums=(0, 1)))(h, w)
        jax.block_until_ready(grads)
        return time.perf_counter() - start, time.process_time() - cpu

    first_call(1)
    seconds, cpu = first_call(ops // 4)
    return {"seconds": seconds, "cpu_seconds": cpu}


def _measure(who: str, ops: int, timeout: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "tidu_compile.tools.bench.compile_time", who, str(ops)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"more than {timeout:.0f} s (stopped)"}
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            return dict(json.loads(line[len(MARKER):]))
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {done.returncode}: {last}"}


def run(sizes: Sequence[int], timeout: float, peers: bool = True) -> dict[str, Any]:
    """Every size, ours then jax's (when installed), each in a fresh process."""
    with_jax = peers and peer_installed("jax")
    rows = []
    for ops in sizes:
        row: dict[str, Any] = {"ops": ops, "tidu": _measure("tidu", ops, timeout),
                               "tidu_fused": _measure("tidu-fused", ops, timeout)}
        if with_jax:
            row["jax"] = _measure("jax", ops, timeout)
        rows.append(row)
    return {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu_model(),
            "elements": ELEMENTS, "rows": rows}  # fmt: skip


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if "error" in result:
        return result["error"]
    return f"{result['seconds']:.2f} s (cpu {result['cpu_seconds']:.2f})"


def _ratios(ours: dict[str, Any] | None, peer: dict[str, Any] | None) -> tuple[str, str]:
    """Wall and CPU seconds of ``ours`` over ``peer``'s ("-" when either failed)."""
    if ours is None or peer is None or "error" in ours or "error" in peer:
        return "-", "-"
    return (f"{ours['seconds'] / peer['seconds']:.2f}",
            f"{ours['cpu_seconds'] / peer['cpu_seconds']:.2f}")  # fmt: skip


def format_compile(document: dict[str, Any]) -> str:
    """One line per size: ours by ``tc.grad`` and by ``func.value_and_grad``, jax's, the
    ratios of wall and CPU seconds of each of ours to jax's, and where the fused one's
    seconds went."""
    lines = [
        f"tidu-compile bench --compile: first forward + backward of an n-op @tc.function "
        f"chain on {document['elements']} float64 elements, cpu: {document['cpu']}",
        f"{'ops':>6}  {'tc.grad':<24}{'func.value_and_grad':<24}{'jax.jit':<24}"
        f"{'ratio':>6}{'cpu':>6}{'vag':>6}{'cpu':>6}  stages of value_and_grad (s)",
    ]
    for row in document["rows"]:
        ours, fused, peer = row["tidu"], row.get("tidu_fused"), row.get("jax")
        ratio, cpu = _ratios(ours, peer)
        fused_ratio, fused_cpu = _ratios(fused, peer)
        stages = " ".join(f"{k} {v:.2f}" for k, v in (fused or {}).get("stages", {}).items())
        lines.append(f"{row['ops']:>6}  {_cell(ours):<24}{_cell(fused):<24}{_cell(peer):<24}"
                     f"{ratio:>6}{cpu:>6}{fused_ratio:>6}{fused_cpu:>6}  {stages}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compile", action="store_true",
                        help="instead: seconds to the first forward + backward of 100-, "
                        "800- and 3200-op @tc.function chains against jax.jit")
    parser.add_argument("--compile-timeout", type=float, default=600.0, metavar="S",
                        help="--compile: stop a run after S seconds (default 600)")


def command(args: argparse.Namespace) -> int:
    """Print the table, write ``--json``; 1 when a gradient is off the reference's or a
    program fell back to the reference path."""
    sizes = QUICK_SIZES if args.quick else SIZES
    document = run(sizes, args.compile_timeout, peers=not args.no_peers)
    failures = [*tidu_failures(document["rows"], "{ops} ops"),
                *tidu_failures(document["rows"], "{ops} ops (value_and_grad)", "tidu_fused")]
    return finish(document, args.json, format_compile(document), failures)


def main(argv: Sequence[str] | None = None) -> int:
    """The child: ``tidu|tidu-fused|jax OPS``; prints one ``@@bench`` line."""
    who, ops = (argv if argv is not None else sys.argv[1:])[:2]
    result = _jax_child(int(ops)) if who == "jax" else _tidu_child(int(ops), who == "tidu-fused")
    print(MARKER + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

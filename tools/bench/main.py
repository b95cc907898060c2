"""``tidu-compile bench``: the compiled backward against numpy, torch and jax.

    tidu-compile bench                      # everything, torch and jax if installed
    tidu-compile bench --quick --workload W1 --no-peers --json out.json
    tidu-compile bench --kernels            # math functions and fused kernels, ns/element
    tidu-compile bench --hvp                # W1 Hessian-vector product against jax, torch
    tidu-compile bench --optim              # Adam.step() over 1M parameters against torch
    tidu-compile bench --per-example        # vmap(grad) of an MLP against jax, torch
    tidu-compile bench --small              # GRU, attention, GMM training steps vs jax.jit
    tidu-compile bench --conv               # a conv2d layer, forward + backward, vs torch
    tidu-compile bench --train              # an MLP trained from a cold start, vs torch, jax
    tidu-compile bench --compile            # seconds to compile 100..3200-op traces, vs jax
    tidu-compile bench --loops              # the scan examples: compile + step, vs jax, torch
    tidu-compile bench --workload recording # us per recorded op against numpy, torch
    tidu-compile bench --workload step      # W1 n=1e7 step: numpy, @tc.function, jax.jit

Per workload, in this process: the hand-written numpy backward, then tidu (a fresh
``CompiledExecutor`` on an empty cache directory: cold first call, then warm calls of
the backward, then full steps: forward and backward), its gradients checked against
numpy's, and in a fresh subprocess the warm-from-disk first call. Then each installed
peer (torch, jax) in its own subprocess, timed like for like (see ``peers``). Exit
status: 0, or 1 when a tidu gradient check failed or tidu raised, 2 for a usage mistake.
``--kernels`` runs ``bench.kernels`` instead, ``--hvp`` ``bench.hvp``, ``--optim``
``bench.optim``, ``--per-example`` ``bench.per_example``, ``--small``
``bench.small_steps``, ``--conv`` ``bench.conv``, ``--train`` ``bench.train``,
``--compile`` ``bench.compile_time``, ``--loops`` ``bench.loops``, ``--workload
recording`` ``bench.recording``, ``--workload step`` ``bench.step``.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from tidu_compile.tools.bench import compile_time, loops
from tidu_compile.tools.bench.peers import PEERS, peer_installed, run_peer
from tidu_compile.tools.bench.report import (
    finish,
    format_report,
    machine_info,
    ratio,
)
from tidu_compile.tools.bench.row import COMPOSITE_UNAVAILABLE, Workload, relative_errors
from tidu_compile.tools.bench.timing import Policy, measure
from tidu_compile.tools.bench.workloads import select_workloads

__all__ = ["BenchError", "Progress", "add_arguments", "command", "main", "run"]


class BenchError(Exception):
    """A usage mistake: one line on stderr, exit status 2."""


class Progress:
    """``[3/12] W1 n=1e6 torch...`` on stderr (rewritten in place on a terminal)."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.count = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def step(self, label: str) -> None:
        """Announce the next step."""
        self.count += 1
        self.total = max(self.total, self.count)
        text = f"[{self.count}/{self.total}] {label}..."
        self.stream.write(f"\r\x1b[K{text}" if self.tty else text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the progress line."""
        if self.tty and self.count:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench options (shared by ``tidu-compile bench`` and ``python -m ...bench``)."""
    parser.add_argument("--quick", action="store_true",
                        help="fewer repetitions, no n=1e7, small W4, W5, W6 (for tests)")
    parser.add_argument("--workload", metavar="W1,W3",
                        help="comma-separated groups (W1..W7) or row names to run; "
                        "'recording' instead: us per op recorded on the tape; 'step': "
                        "the W1 step against numpy by hand and jax.jit")
    parser.add_argument("--repeat", type=int, metavar="N",
                        help="exactly N timed runs per measurement (default: adaptive)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--no-peers", action="store_true", help="skip torch and jax")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the inputs")
    parser.add_argument("--kernels", action="store_true",
                        help="instead: each math function and the fused W1/W4 kernels in ns "
                        "per element, one thread and all, against numpy and memory bandwidth")
    parser.add_argument("--hvp", action="store_true",
                        help="instead: the W1 Hessian-vector product (n = 1e6) against "
                        "jax.jit and torch.func in the same process")
    parser.add_argument("--optim", action="store_true",
                        help="instead: one Adam.step() over 1M float32 parameters against "
                        "torch.optim.Adam (default, foreach, fused) in the same process")
    parser.add_argument("--per-example", action="store_true",
                        help="instead: per-example gradients of a small MLP (batch 256, "
                        "func.vmap(func.grad)) against jax.vmap(jax.grad) and torch.func")
    parser.add_argument("--small", action="store_true",
                        help="instead: one training step (loss and gradient) of a GRU over "
                        "token ids, causal attention with layer norm and a Gaussian mixture "
                        "fit, @tc.function against jax.jit in the same process")
    parser.add_argument("--conv", action="store_true",
                        help="instead: a conv2d layer (MNIST-sized, float32) forward and "
                        "backward against torch and jax.jit in the same process")
    parser.add_argument("--train", action="store_true",
                        help="instead: an MLP trained 100 steps over batch sizes "
                        "256/200/128/64/33 from a cold cache, each framework in a fresh "
                        "process: wall time and compiles against torch and jax.jit")
    compile_time.add_arguments(parser)
    loops.add_arguments(parser)


def _policy(args: argparse.Namespace) -> Policy:
    if args.repeat is not None:
        if args.repeat < 1:
            raise BenchError(f"--repeat {args.repeat}: must be >= 1")
        return Policy.fixed(args.repeat)
    return Policy.quick() if args.quick else Policy.default()


def _composite_available() -> bool:
    import tidu_compile as tc

    return callable(getattr(tc, "function", None))


def _grad_check(workload: Workload, grads: Sequence[Any], reference: Sequence[Any]) -> dict:
    errors = relative_errors(grads, reference)
    return {
        "passed": all(e <= workload.rtol for e in errors),
        "rtol": workload.rtol,
        "errors": dict(zip(workload.grad_names, errors, strict=True)),
    }


def _first_line(error: BaseException) -> str:
    text = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _load_average() -> float | None:
    """The 1-minute load average (other processes compete for the cores), or None."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _measure_numpy(workload: Workload, arrays: Sequence[Any], policy: Policy) -> dict:
    saved = workload.numpy_forward(*arrays)
    timing = measure(lambda: workload.numpy_backward(saved), policy)
    step = workload.numpy_step
    step_timing = None if step is None else measure(lambda: step(*arrays), policy)
    return {"timing": timing, "step_timing": step_timing,
            "grads": workload.numpy_backward(saved)}  # fmt: skip


def _per_node_disk_load(warm: dict[str, Any]) -> float | None:
    """Seconds per node the warm-from-disk child spent loading artifacts (no compiling)."""
    stats = warm.get("stats") or {}
    hits = stats.get("disk_hits") or 0
    return stats["disk_seconds"] / hits if hits and "disk_seconds" in stats else None


def _compile_entry(tidu: dict[str, Any], warm: dict[str, Any]) -> dict[str, Any]:
    stats = tidu["stats"]
    compiles = stats["compiles"]
    return {
        "first_call_seconds": tidu["first_call_seconds"],
        "cold_seconds": tidu["cold_seconds"],
        "warm_disk_seconds": warm.get("warm_disk_seconds"),
        "disk_load_per_node_seconds": _per_node_disk_load(warm),
        "compiles": compiles,
        "compile_seconds": stats["compile_seconds"],
        "per_node_seconds": stats["compile_seconds"] / compiles if compiles else None,
        "stage_seconds": stats["stage_seconds"],
        "fallbacks": stats["fallbacks"],
        "errors": stats["errors"],
        "warm_disk": warm,
    }


def run(args: argparse.Namespace, progress_stream: TextIO | None = None) -> dict[str, Any]:
    """Run the benchmark; the JSON-ready result document (see ``report``)."""
    from tidu_compile.tools.bench.tidu_runner import process_warmup, run_tidu, run_warm_disk

    try:
        workloads = select_workloads(args.workload, quick=args.quick)
    except ValueError as error:
        raise BenchError(str(error)) from None
    policy = _policy(args)
    composite = _composite_available()
    peer_status: dict[str, dict[str, Any]] = {}
    for peer in PEERS:
        if args.no_peers:
            peer_status[peer] = {"status": "disabled"}
        elif not peer_installed(peer):
            peer_status[peer] = {"status": "not installed"}
        else:
            peer_status[peer] = {"status": "pending"}
    active_peers = [p for p in PEERS if peer_status[p]["status"] == "pending"]
    runnable = [w for w in workloads if w.recording != "composite" or composite]
    problems = list(dict.fromkeys(w.problem for w in workloads))
    total = 1 + len(problems) + 2 * len(runnable) + len(active_peers) * len(problems)
    progress = Progress(total, progress_stream)

    load_start = _load_average()
    progress.step("tidu process warm-up")
    warmup_seconds = process_warmup()
    numpy_runs: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tidu-bench-") as root:
        for index, workload in enumerate(workloads):
            arrays = workload.make_inputs(args.seed)
            if workload.problem not in numpy_runs:
                progress.step(f"{workload.key} numpy")
                numpy_runs[workload.problem] = _measure_numpy(workload, arrays, policy)
            reference = numpy_runs[workload.problem]
            row: dict[str, Any] = {
                "workload": workload.key,
                "group": workload.group,
                "description": workload.description,
                "dtype": workload.dtype,
                "recording": workload.recording,
                "problem": workload.problem,
                "status": "ok",
                "note": None,
                "tidu": None,
                "tidu_step": None,
                "numpy": reference["timing"].to_json(),
                "numpy_step": reference["step_timing"] and reference["step_timing"].to_json(),
                "grad_check": None,
                "compile": None,
            }
            rows.append(row)
            if workload.recording == "composite" and not composite:
                row["status"], row["note"] = "n/a", COMPOSITE_UNAVAILABLE
                continue
            progress.step(f"{workload.key} tidu")
            cache_dir = Path(root) / f"w{index}"
            try:
                tidu = run_tidu(workload, arrays, policy, cache_dir)
            except Exception as error:  # noqa: BLE001 - reported as a failing row
                row["status"], row["note"] = "error", _first_line(error)
                failures.append(f"{workload.key}: tidu raised {row['note']}")
                progress.step(f"{workload.key} tidu warm-from-disk (skipped)")
                continue
            row["tidu"] = tidu["timing"].to_json()
            row["tidu_step"] = tidu["step_timing"].to_json()
            check = _grad_check(workload, tidu["grads"], reference["grads"])
            row["grad_check"] = check
            if not check["passed"]:
                row["status"] = "FAIL"
                bad = {k: f"{e:.2e}" for k, e in check["errors"].items() if not e <= check["rtol"]}
                failures.append(f"{workload.key}: relative error {bad} > rtol {check['rtol']:g}")
            progress.step(f"{workload.key} tidu warm-from-disk")
            warm = run_warm_disk(workload, args.seed, cache_dir)
            row["compile"] = _compile_entry(tidu, warm)
            del tidu, arrays
            gc.collect()
    del numpy_runs
    gc.collect()

    for peer in active_peers:
        outcome = run_peer(peer, workloads, policy, args.seed,
                           on_start=lambda key, p=peer: progress.step(f"{key} {p}"))  # fmt: skip
        peer_status[peer] = {"status": "error" if outcome["error"] else "ok",
                             "info": outcome["info"], "error": outcome["error"]}  # fmt: skip
        for row in rows:
            row[peer] = outcome["results"].get(row["problem"])
    progress.close()

    for row in rows:
        row["ratios"] = {
            "numpy": ratio(row["tidu"], row["numpy"]),
            **{p: ratio(row["tidu"], (row.get(p) or {}).get("timing")) for p in PEERS},
        }
        row["step_ratios"] = {
            "numpy": ratio(row["tidu_step"], row.get("numpy_step")),
            **{p: ratio(row["tidu_step"], (row.get(p) or {}).get("step_timing")) for p in PEERS},
        }
    infos = {p: s.get("info") or {} for p, s in peer_status.items()}
    machine = machine_info(infos)
    machine["load_average"] = {"start": load_start, "end": _load_average()}
    return {
        "version": 2,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "options": {"quick": args.quick, "workload": args.workload, "repeat": args.repeat,
                    "no_peers": args.no_peers, "seed": args.seed,
                    "policy": policy.to_json()},  # fmt: skip
        "machine": machine,
        "peers": peer_status,
        "process_warmup_seconds": warmup_seconds,
        "composite_recording_available": composite,
        "workloads": rows,
        "failures": failures,
        "passed": not failures,
    }


def check_options(args: argparse.Namespace) -> None:
    """The mistakes a bench would otherwise find only after running (``BenchError``): a
    negative ``--seed`` or ``--compile-timeout``, a ``--json`` path that cannot be
    written (tried now: opened for appending if it exists, else created and removed)."""
    seed = getattr(args, "seed", 0)
    if seed < 0:
        raise BenchError(f"--seed {seed}: a seed is a non-negative integer")
    timeout = getattr(args, "compile_timeout", 600.0)
    if timeout <= 0:
        raise BenchError(f"--compile-timeout {timeout}: a number of seconds above 0")
    json_path = getattr(args, "json", None)
    if json_path is None:
        return
    path = Path(json_path)
    if path.is_dir():
        raise BenchError(f"--json {json_path}: a directory, not a file")
    try:
        if path.exists():
            with path.open("a"):
                pass
        else:
            with path.open("x"):
                pass
            path.unlink()
    except OSError as error:
        raise BenchError(f"--json {json_path}: cannot write it: {error.strerror}") from None


def command(args: argparse.Namespace) -> int:
    """Run, print the table, write ``--json``; the exit status.

    Every timing but ``--train``'s is of native code and every "cold" figure the compile
    itself, so executors compile on the calling thread (``TIDU_COMPILE_BACKGROUND=0``,
    inherited by the warm-from-disk child); ``--train`` times the background default
    and sets its children's mode itself.
    """
    check_options(args)
    os.environ["TIDU_COMPILE_BACKGROUND"] = "0"
    if getattr(args, "kernels", False):
        from tidu_compile.tools.bench.kernels import command as kernels_command

        return kernels_command(args)
    if getattr(args, "hvp", False):
        from tidu_compile.tools.bench.hvp import command as hvp_command

        return hvp_command(args)
    if getattr(args, "optim", False):
        from tidu_compile.tools.bench.optim import command as optim_command

        return optim_command(args)
    if getattr(args, "per_example", False):
        from tidu_compile.tools.bench.per_example import command as per_example_command

        return per_example_command(args)
    if getattr(args, "small", False):
        from tidu_compile.tools.bench.small_steps import command as small_command

        return small_command(args)
    if getattr(args, "conv", False):
        from tidu_compile.tools.bench.conv import command as conv_command

        return conv_command(args)
    if getattr(args, "train", False):
        from tidu_compile.tools.bench.train import command as train_command

        return train_command(args)
    if getattr(args, "compile", False):
        return compile_time.command(args)
    if getattr(args, "loops", False):
        return loops.command(args)
    special = (getattr(args, "workload", None) or "").strip().lower()
    if special == "recording":
        from tidu_compile.tools.bench.recording import command as recording_command

        return recording_command(args)
    if special == "step":
        from tidu_compile.tools.bench.step import command as step_command

        return step_command(args)
    document = run(args)
    return finish(document, args.json, format_report(document), document["failures"])


def cli_command(args: argparse.Namespace) -> None:
    """``tidu-compile bench`` (the CLI's ``run`` hook): exits non-zero on failure."""
    try:
        status = command(args)
    except BenchError as error:
        print(f"tidu-compile: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    if status:
        raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tidu_compile.tools.bench``."""
    parser = argparse.ArgumentParser(prog="tidu-compile bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return command(args)
    except BenchError as error:
        print(f"tidu-compile: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``tidu-compile bench --train``'s MLP row: per-op training against torch, cold and warm.

A 784-256-10 MLP, ``loss = sum((tanh(X@W1 + b1)@W2 + b2 - Y)**2)``, float32, batch 128,
trained by SGD for ``STEPS`` steps the way a PyTorch user writes it (``zero_grad()``,
``loss.backward()``, ``opt.step()``), by three runners in ONE process (a fresh one, so
like is measured for like), every thread pool pinned to one thread
(``OMP/OPENBLAS/MKL_NUM_THREADS``, ``TIDU_COMPILE_THREADS``, ``torch.set_num_threads``;
the table prints what each reports):

* ``torch eager``: ``torch.optim.SGD`` on torch tensors;
* ``tidu per-op``: the same program on ``tc.tensor``s with ``tc.optim.SGD``: the eager
  tape, each backward on a ``CompiledExecutor`` (whole-backward capture on: from the
  second step on, one program per backward);
* ``tidu per-op, capture=False``: the same, node by node;
* ``tidu @tc.function``: the loss wrapped in ``tc.function`` (one tape node).

Each runner has two phases: *cold*, the first ``STEPS`` steps, for tidu on a new
``CompiledExecutor`` with an empty cache directory of its own and default background
compilation (nodes run on the reference path until a worker has compiled them); and
*warm*, ``STEPS`` more steps after ``wait_for_background()`` and ``SETTLE_STEPS`` more
(torch: the same steps). The ratios are to torch's same phase (the first tidu runner
also pays the process's one-time start: the workers importing the compiler). The
batches (``BATCHES`` distinct ones, cycled) are made before the clock starts, as
tensors of each framework.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile.compiler.background import BACKGROUND_ENV

__all__ = ["SIZES", "STEPS", "format_mlp", "run_child", "train_all"]

SIZES = (784, 256, 10)
BATCH = 128
STEPS = 100
BATCHES = 8
#: Steps between the phases (tidu: after ``wait_for_background``), the same for all.
SETTLE_STEPS = 2
LEARNING_RATE = 1e-4
RUNNERS = ("torch eager", "tidu per-op", "tidu per-op, capture=False", "tidu @tc.function")
MARKER = "@@train-mlp "
#: Environment variables that pin the thread pools (set before numpy is imported).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "TIDU_COMPILE_THREADS")  # fmt: skip

#: ``phase(steps) -> final loss``: run that many SGD steps of one runner.
Phase = Callable[[int], float]


def make_data(seed: int = 0) -> tuple[list[np.ndarray], list[tuple[np.ndarray, np.ndarray]]]:
    """Initial ``[W1, b1, W2, b2]`` and ``BATCHES`` batches ``(X, Y)`` (float32)."""
    rng = np.random.default_rng(seed)
    features, hidden, outputs = SIZES
    params = [rng.standard_normal((features, hidden)) * features**-0.5, np.zeros(hidden),
              rng.standard_normal((hidden, outputs)) * hidden**-0.5, np.zeros(outputs)]  # fmt: skip
    data = [(rng.standard_normal((BATCH, features)), rng.standard_normal((BATCH, outputs)))
            for _ in range(BATCHES)]  # fmt: skip
    return ([p.astype(np.float32) for p in params],
            [(x.astype(np.float32), y.astype(np.float32)) for x, y in data])  # fmt: skip


def _torch_phases(seed: int) -> tuple[Phase, dict[str, Any]]:
    import torch

    torch.set_num_threads(1)
    arrays, data = make_data(seed)
    params = [torch.tensor(p, requires_grad=True) for p in arrays]
    batches = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in data]
    opt = torch.optim.SGD(params, lr=LEARNING_RATE)
    w1, b1, w2, b2 = params
    position = [0]

    def phase(steps: int) -> float:
        value = 0.0
        for _ in range(steps):
            x, y = batches[position[0] % BATCHES]
            position[0] += 1
            opt.zero_grad()
            loss = torch.sum((torch.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)
            loss.backward()
            opt.step()
            value = loss.item()
        return value

    return phase, {"torch_threads": torch.get_num_threads(), "torch": torch.__version__}


def _tidu_phases(seed: int, runner: str, cache_dir: str) -> tuple[Phase, Any]:
    import tidu_compile as tc

    composite = "@tc.function" in runner
    executor = tc.CompiledExecutor(cache_dir, capture="capture=False" not in runner)
    tc.set_default_executor(executor)
    arrays, data = make_data(seed)
    params = [tc.tensor(p, requires_grad=True) for p in arrays]
    batches = [(tc.tensor(x), tc.tensor(y)) for x, y in data]
    opt = tc.optim.SGD(params, lr=LEARNING_RATE)

    def loss_of(x: Any, y: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        return tc.sum((tc.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    loss_fn = tc.function(loss_of) if composite else loss_of
    position = [0]

    def phase(steps: int) -> float:
        value = 0.0
        for _ in range(steps):
            x, y = batches[position[0] % BATCHES]
            position[0] += 1
            opt.zero_grad()
            loss = loss_fn(x, y, *params)
            loss.backward()
            opt.step()
            value = float(loss.numpy())
        return value

    return phase, executor


def _timed(phase: Phase, steps: int) -> tuple[float, float]:
    started = time.perf_counter()
    loss = phase(steps)
    return time.perf_counter() - started, loss


def train_all(steps: int = STEPS, seed: int = 0) -> dict[str, Any]:
    """Every runner, cold then warm, in this process (threads pinned by the caller)."""
    rows = []
    machine: dict[str, Any] = {v: os.environ.get(v) for v in (*THREAD_VARIABLES, BACKGROUND_ENV)}
    try:
        torch_phase, torch_info = _torch_phases(seed)
    except ImportError:
        torch_phase = None
    if torch_phase is not None:
        machine.update(torch_info)
        cold, _ = _timed(torch_phase, steps)
        torch_phase(SETTLE_STEPS)
        warm, loss = _timed(torch_phase, steps)
        rows.append({"runner": "torch eager", "cold": cold, "warm": warm, "final_loss": loss})
    for runner in RUNNERS[1:]:
        with tempfile.TemporaryDirectory(prefix="tidu-train-mlp-") as cache:
            phase, executor = _tidu_phases(seed, runner, cache)
            cold, _ = _timed(phase, steps)
            executor.wait_for_background()
            phase(SETTLE_STEPS)  # what the workers compiled is collected
            warm, loss = _timed(phase, steps)
            stats = executor.stats
            rows.append({"runner": runner, "cold": cold, "warm": warm, "final_loss": loss,
                         "compiles": stats.compiles, "captured": stats.captured,
                         "fallbacks": stats.fallbacks,
                         "background_runs": stats.background_runs})  # fmt: skip
    return {"sizes": list(SIZES), "batch": BATCH, "steps": steps, "machine": machine,
            "rows": rows}  # fmt: skip


def run_child(steps: int = STEPS, seed: int = 0) -> dict[str, Any]:
    """``train_all`` in a fresh process with every thread pool pinned to one thread, in
    the default background mode (``tidu-compile bench`` sets ``TIDU_COMPILE_BACKGROUND=0``
    for its own timings: inherited, every cold node would compile on the caller)."""
    env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, "1"), BACKGROUND_ENV: "1"}
    done = subprocess.run(
        [sys.executable, "-m", "tidu_compile.tools.bench.train_mlp", str(steps), str(seed)],
        capture_output=True, text=True, env=env, timeout=3600, check=False,
    )  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            return json.loads(line.removeprefix(MARKER))  # type: ignore[no-any-return]
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit status {done.returncode}: {tail}", "rows": []}


def format_mlp(document: dict[str, Any]) -> str:
    """The MLP table: cold and warm wall times and their ratios to torch eager."""
    if "error" in document:
        return f"MLP {'-'.join(map(str, SIZES))}: error: {document['error']}"
    rows = {row["runner"]: row for row in document["rows"]}
    torch_row = rows.get("torch eager", {})
    machine = ", ".join(f"{k}={v}" for k, v in document["machine"].items())
    lines = [
        f"MLP {'-'.join(map(str, document['sizes']))} f32, batch {document['batch']}, "
        f"{document['steps']} SGD steps per phase, one process; threads: {machine}",
        f"{'runner':28}{'cold':>9}{'/torch':>8}{'warm':>9}{'/torch':>8}"
        f"{'compiles':>10}{'captured':>10}{'fallbacks':>11}{'final loss':>12}",
    ]
    for name, row in rows.items():
        ratios = [f"{row[p] / torch_row[p]:.2f}" if p in torch_row else "-"
                  for p in ("cold", "warm")]  # fmt: skip
        lines.append(
            f"{name:28}{row['cold']:>7.3f} s{ratios[0]:>8}{row['warm']:>7.3f} s{ratios[1]:>8}"
            f"{row.get('compiles', '-'):>10}{row.get('captured', '-'):>10}"
            f"{row.get('fallbacks', '-'):>11}{row['final_loss']:>12.5g}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Child entry point: ``STEPS SEED``; prints one ``MARKER`` JSON line."""
    print(MARKER + json.dumps(train_all(int(argv[0]), int(argv[1]))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

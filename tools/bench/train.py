"""``tidu-compile bench --train``: an MLP trained from a cold start, wall time and compiles.

    tidu-compile bench --train [--quick] [--json out.json]

The W3 model, ``loss = sum((tanh(X@W1 + b1)@W2 + b2 - Y)**2)`` (f32, 512 features,
512 hidden, 10 outputs), trained by plain SGD for ``STEPS`` steps whose batch sizes cycle
through ``BATCHES`` (a smaller last batch, variable-length data): every framework meets
each batch size for the first time within the first five steps.

Each runner starts in a fresh process (``python -m tidu_compile.tools.bench.train RUNNER
SPEC``) with an empty tidu cache directory, so the wall time includes every compile:

* ``tidu per-op`` and ``tidu @tc.function``: ``tc.grad`` on the default
  ``CompiledExecutor`` (background compilation: a node runs on the reference path
  until a worker has compiled it); compiles are its ``stats.compiles`` (made on the
  calling thread), ``on reference`` its ``stats.background_runs``;
* ``tidu @tc.function, blocking``: the same with ``TIDU_COMPILE_BACKGROUND=0``, every
  node compiled on the calling thread before it runs;
* ``torch``: forward and ``loss.backward()`` (nothing to compile);
* ``jax.jit``: ``jax.jit(jax.value_and_grad(loss))``; compiles are the jitted function's
  cache entries (one per batch size).

The clock runs from the first step to the last (imports and data excluded, reported
apart). All runners start from the same parameters and batches, so their final losses
must agree (checked: relative difference below ``LOSS_RTOL``).

A second table is the 784-256-10 MLP row (``train_mlp``): torch eager, per-op and
``@tc.function`` in one process, threads pinned to one, cold and warm.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["BATCHES", "RUNNERS", "command", "run", "train"]

BATCHES = (256, 200, 128, 64, 33)
STEPS = 100
QUICK_STEPS = 10
FEATURES, HIDDEN, OUTPUTS = 512, 512, 10
LEARNING_RATE = 1e-3
LOSS_RTOL = 1e-3
RUNNERS = ("tidu per-op", "tidu @tc.function", "tidu @tc.function, blocking", "torch",
           "jax.jit")  # fmt: skip
MARKER = "@@train "

Params = list[np.ndarray]
#: ``step(params, x, y) -> (loss, gradients)`` of one framework, on numpy arrays.
Step = Callable[[Params, np.ndarray, np.ndarray], tuple[float, Params]]


def make_data(seed: int = 0) -> tuple[Params, np.ndarray, np.ndarray]:
    """Initial parameters ``[W1, b1, W2, b2]`` and a dataset ``(X, Y)`` of ``sum(BATCHES)``
    rows (each batch size taken once per cycle), f32."""
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal((FEATURES, HIDDEN)) * FEATURES**-0.5,
              np.zeros(HIDDEN), rng.standard_normal((HIDDEN, OUTPUTS)) * HIDDEN**-0.5,
              np.zeros(OUTPUTS)]  # fmt: skip
    rows = sum(BATCHES)
    x = rng.standard_normal((rows, FEATURES))
    y = np.tanh(x[:, :OUTPUTS])  # a learnable target
    return [p.astype(np.float32) for p in params], x.astype(np.float32), y.astype(np.float32)


def batches(x: np.ndarray, y: np.ndarray, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``steps`` batches, sizes cycling through ``BATCHES``, rows in dataset order."""
    offsets = np.cumsum((0, *BATCHES))
    return [(x[offsets[k]:offsets[k + 1]], y[offsets[k]:offsets[k + 1]])
            for k in (step % len(BATCHES) for step in range(steps))]  # fmt: skip


def _tidu_step(composite: bool) -> tuple[Step, Callable[[], int]]:
    import tidu_compile as tc

    def loss(x: Any, y: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        return tc.sum((tc.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    recorded = tc.function(loss) if composite else loss

    def step(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, Params]:
        tensors = [tc.tensor(p, requires_grad=True) for p in params]
        value = recorded(x, y, *tensors)
        return float(value.numpy()), tc.grad(value, tensors)

    def compiles() -> int:
        return int(tc.get_default_executor().stats.compiles)  # type: ignore[attr-defined]

    return step, compiles


def _torch_step() -> tuple[Step, Callable[[], int]]:
    import torch

    def step(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, Params]:
        w1, b1, w2, b2 = (torch.from_numpy(p).requires_grad_() for p in params)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        value = torch.sum((torch.tanh(xt @ w1 + b1) @ w2 + b2 - yt) ** 2)
        value.backward()
        return float(value), [t.grad.numpy() for t in (w1, b1, w2, b2)]  # type: ignore[union-attr]

    return step, lambda: 0


def _jax_step() -> tuple[Step, Callable[[], int]]:
    import jax
    import jax.numpy as jnp

    def loss(params: Any, x: Any, y: Any) -> Any:
        w1, b1, w2, b2 = params
        return jnp.sum((jnp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    jitted = jax.jit(jax.value_and_grad(loss))

    def step(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, Params]:
        value, grads = jitted(params, x, y)
        return float(value), [np.asarray(g) for g in grads]

    return step, jitted._cache_size  # type: ignore[attr-defined]


def _make_step(runner: str) -> tuple[Step, Callable[[], int]]:
    if runner.startswith("tidu"):
        return _tidu_step(composite="@tc.function" in runner)
    return _torch_step() if runner == "torch" else _jax_step()


def train(runner: str, steps: int, seed: int = 0) -> dict[str, Any]:
    """Train with ``runner`` in this process; its wall time, compiles and final loss."""
    started = time.perf_counter()
    step, compiles = _make_step(runner)
    params, x, y = make_data(seed)
    data = batches(x, y, steps)
    ready = time.perf_counter()
    first_cycle = min(len(BATCHES), steps)
    compiles_after_first_cycle = 0
    losses = []
    for index, (xb, yb) in enumerate(data):
        value, grads = step(params, xb, yb)
        params = [p - LEARNING_RATE * g for p, g in zip(params, grads, strict=True)]
        losses.append(value)
        if index == first_cycle - 1:
            compiles_after_first_cycle = compiles()
    done = time.perf_counter()
    return {"runner": runner, "steps": steps, "seconds": done - ready,
            "setup_seconds": ready - started, "compiles": compiles(),
            "reference_runs": _reference_runs(runner),
            "compiles_after_first_cycle": compiles_after_first_cycle,
            "first_loss": losses[0], "final_loss": losses[-1]}  # fmt: skip


def _reference_runs(runner: str) -> int:
    """Node runs on the reference path while their code compiled (tidu runners)."""
    if not runner.startswith("tidu"):
        return 0
    import tidu_compile as tc

    return int(tc.get_default_executor().stats.background_runs)  # type: ignore[attr-defined]


def _available(runner: str) -> bool:
    import importlib.util

    module = {"torch": "torch", "jax.jit": "jax"}.get(runner)
    return module is None or importlib.util.find_spec(module) is not None


def _run_child(runner: str, steps: int, seed: int) -> dict[str, Any]:
    """``train`` in a fresh process with an empty tidu cache directory."""
    with tempfile.TemporaryDirectory(prefix="tidu-train-") as cache:
        env = {**os.environ, "TIDU_COMPILE_CACHE_DIR": cache,
               "TIDU_COMPILE_BACKGROUND": "0" if runner.endswith("blocking") else "1"}  # fmt: skip
        if runner == "jax.jit":
            env["JAX_PLATFORMS"] = "cpu"
        done = subprocess.run(
            [sys.executable, "-m", "tidu_compile.tools.bench.train", runner, str(steps), str(seed)],
            capture_output=True, text=True, env=env, timeout=1800, check=False,
        )  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            return json.loads(line.removeprefix(MARKER))
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"runner": runner, "error": f"exit status {done.returncode}: {tail}"}


def run(steps: int = STEPS, seed: int = 0) -> dict[str, Any]:
    """Every installed runner, each in its own fresh process; the JSON-ready document."""
    from tidu_compile.tools.bench import train_mlp
    from tidu_compile.tools.bench.report import cpu_model

    rows = [_run_child(r, steps, seed) for r in RUNNERS if _available(r)]
    finals = [row["final_loss"] for row in rows if "error" not in row]
    reference = finals[0] if finals else None
    for row in rows:
        if "error" not in row and reference is not None:
            row["loss_agrees"] = abs(row["final_loss"] - reference) <= LOSS_RTOL * abs(reference)
    return {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu_model(),
            "steps": steps, "batches": list(BATCHES), "rows": rows,
            "mlp": train_mlp.run_child(steps, seed)}  # fmt: skip


def format_train(document: dict[str, Any]) -> str:
    """The table printed by ``--train``: wall time, ratios to torch and jax.jit, compiles."""
    rows = {row["runner"]: row for row in document["rows"]}
    peers = {p: rows[p]["seconds"] for p in ("torch", "jax.jit") if "seconds" in rows.get(p, {})}
    lines = [
        f"tidu-compile bench --train: W3 MLP f32 {FEATURES}-{HIDDEN}-{OUTPUTS}, "
        f"{document['steps']} SGD steps, batch sizes {document['batches']} cycling, "
        f"cold start in a fresh process each; cpu: {document['cpu']}",
        f"{'runner':29}{'wall':>8}{'/torch':>8}{'/jax.jit':>9}{'compiles':>10}"
        f"{'after 1st cycle':>17}{'on reference':>14}{'final loss':>12}",
    ]
    for name, row in rows.items():
        if "error" in row:
            lines.append(f"{name:29}error: {row['error']}")
            continue
        ratios = [f"{row['seconds'] / peers[p]:.2f}" if p in peers else "-"
                  for p in ("torch", "jax.jit")]  # fmt: skip
        later = row["compiles"] - row["compiles_after_first_cycle"]
        agrees = "" if row.get("loss_agrees", True) else " (DIFFERS)"
        lines.append(f"{name:29}{row['seconds']:>6.2f} s{ratios[0]:>8}{ratios[1]:>9}"
                     f"{row['compiles']:>10}{later:>17}{row['reference_runs']:>14}"
                     f"{row['final_loss']:>12.4g}{agrees}")
    if "mlp" in document:
        from tidu_compile.tools.bench.train_mlp import format_mlp

        lines += ["", format_mlp(document["mlp"])]
    return "\n".join(lines)


def command(args: argparse.Namespace) -> int:
    """``tidu-compile bench --train``: print the table, write ``--json``; 1 when a runner
    failed or its final loss differs from the others'."""
    document = run(steps=QUICK_STEPS if args.quick else STEPS, seed=args.seed)
    from tidu_compile.tools.bench.report import finish

    bad = [f"{row['runner']}: failed or its final loss differs" for row in document["rows"]
           if "error" in row or not row.get("loss_agrees", True)]  # fmt: skip
    if "error" in document["mlp"]:
        bad.append(f"MLP row: {document['mlp']['error']}")
    return finish(document, args.json, format_train(document), bad)


def main(argv: list[str]) -> None:
    """Child entry point: ``RUNNER STEPS SEED``; prints one ``MARKER`` JSON line."""
    runner, steps, seed = argv[0], int(argv[1]), int(argv[2])
    print(MARKER + json.dumps(train(runner, steps, seed)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

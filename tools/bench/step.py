"""``tidu-compile bench --workload step``: the W1 training step, forward and backward.

    L = sum(tanh(x*y + exp(-x)) * y),   n = 1e7 float64 (1e5 with --quick)

Timed in turn round by round in one process (so load affects all alike), each giving
the loss and both gradients from the input arrays:

* ``numpy by hand``: the loss and gradients written out, each intermediate once;
* ``tidu @tc.function``: the traced forward (one compiled program) then ``tc.grad``;
* ``tidu value_and_grad``: ``func.value_and_grad`` of the ``@tc.function``: forward and
  backward as one fused program (``tidu_compile.composite_grad``);
* ``jax.jit(value_and_grad)`` when jax is installed.

Every result is checked against numpy's first; the table gives milliseconds and the
ratios to numpy and jax.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tidu_compile.tools.bench.report import cpu_model, finish, timing_table
from tidu_compile.tools.bench.timing import interleaved
from tidu_compile.tools.bench.workloads import make_w1

__all__ = ["command", "format_step", "run"]

Step = Callable[[], tuple[Any, Any, Any]]


def _tidu_steps(x: np.ndarray, y: np.ndarray) -> dict[str, Step]:
    import tidu_compile as tc
    from tidu_compile import func

    @tc.function
    def w1(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.tanh(a * b + tc.exp(-a)) * b)

    tx, ty = tc.tensor(x, requires_grad=True), tc.tensor(y, requires_grad=True)
    value_and_grad = func.value_and_grad(w1, argnums=(0, 1))

    def recorded() -> tuple[Any, Any, Any]:
        loss = w1(tx, ty)
        gx, gy = tc.grad(loss, [tx, ty])
        return loss.numpy(), gx, gy

    def fused() -> tuple[Any, Any, Any]:
        loss, (gx, gy) = value_and_grad(x, y)
        return loss.numpy(), gx.numpy(), gy.numpy()

    return {"tidu @tc.function": recorded, "tidu value_and_grad": fused}


def _jax_step(x: np.ndarray, y: np.ndarray) -> Step | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    step = jax.jit(jax.value_and_grad(
        lambda a, b: jnp.sum(jnp.tanh(a * b + jnp.exp(-a)) * b), argnums=(0, 1)))  # fmt: skip
    a, b = jnp.asarray(x), jnp.asarray(y)

    def call() -> tuple[Any, Any, Any]:
        loss, (gx, gy) = step(a, b)
        gy.block_until_ready()
        return np.asarray(loss), np.asarray(gx), np.asarray(gy)

    return call


def _error(got: tuple[Any, ...], want: tuple[Any, ...]) -> float:
    return max(float(np.max(np.abs(np.asarray(g) - w)) / (np.max(np.abs(w)) + 1e-300))
               for g, w in zip(got, want, strict=True))  # fmt: skip


def run(n: int = 10**7, rounds: int = 15) -> dict[str, Any]:
    """Check and time every step; the JSON-ready document."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    by_hand = make_w1(n).numpy_step  # the loss and gradients written out
    assert by_hand is not None
    calls: dict[str, Step] = {"numpy by hand": lambda: by_hand(x, y), **_tidu_steps(x, y)}
    jax_step = _jax_step(x, y)
    if jax_step is not None:
        calls["jax.jit"] = jax_step
    want = calls["numpy by hand"]()
    errors = {name: _error(call(), want) for name, call in calls.items()}  # also warms up
    seconds = interleaved(calls, rounds)  # type: ignore[arg-type]
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": cpu_model(),
        "elements": n,
        "rows": [{"name": name, "seconds": seconds[name], "relative_error": errors[name]}
                 for name in calls],  # fmt: skip
    }


def format_step(document: dict[str, Any]) -> str:
    """The table: median milliseconds, ratios to numpy and jax.jit."""
    title = (f"tidu-compile bench --workload step: W1 loss and gradients, "
             f"n = {document['elements']:.0e} float64, cpu: {document['cpu']}")
    baselines = [("numpy", "numpy by hand"), ("jax.jit", "jax.jit")]
    return timing_table(title, document["rows"], baselines, 22)


def command(args: argparse.Namespace) -> int:
    """Print the table, write ``--json``; 1 when a result is off numpy's (above 1e-9)."""
    document = run(n=10**5 if args.quick else 10**7, rounds=5 if args.quick else 15)
    bad = [f"{row['name']}: off numpy's loss or gradients"
           for row in document["rows"] if row["relative_error"] > 1e-9]  # fmt: skip
    return finish(document, args.json, format_step(document), bad)

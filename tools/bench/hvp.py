"""``tidu-compile bench --hvp``: the Hessian-vector product of W1, forward over reverse.

    f(x, y) = sum(tanh(x*y + exp(-x)) * y)
    H v = jvp(grad(f), (x, y), (vx, vy))          # both arguments, n elements each

Ours: ``func.jvp(func.grad(f, argnums=(0, 1)), (x, y), (vx, vy))`` on the default
``CompiledExecutor`` (every node compiled: the recorded forward, the gradient recorded
with its own nodes, then the tangents pushed through both), per op and with ``f`` a
``@tc.function``. Peers, when installed, in this same process and interleaved with ours
round by round (so load affects all alike): ``jax.jit`` of ``jax.jvp(jax.grad(f))`` and
``torch.func.jvp(torch.func.grad(f))``. Each is checked against a central difference
of the gradient, ``(grad f(p + h v) - grad f(p - h v)) / 2h``, before it is timed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tidu_compile.tools.bench.report import cpu_model, finish, timing_table
from tidu_compile.tools.bench.timing import interleaved

__all__ = ["command", "run"]

Call = Callable[[], tuple[np.ndarray, np.ndarray]]


def _w1_numpy_grad(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of W1 by hand (for the difference check)."""
    u = x * y + np.exp(-x)
    t = np.tanh(u)
    du = (1 - t * t) * y
    return du * (y - np.exp(-x)), t + du * x


def _expected(x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> tuple:
    h = 1e-5
    plus = _w1_numpy_grad(x + h * vx, y + h * vy)
    minus = _w1_numpy_grad(x - h * vx, y - h * vy)
    return tuple((p - m) / (2 * h) for p, m in zip(plus, minus, strict=True))


def _tidu_calls(x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> dict[str, Call]:
    import tidu_compile as tc
    from tidu_compile import func

    def w1(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.tanh(a * b + tc.exp(-a)) * b)

    # Tensors made once, as the peers' arrays are (jnp.asarray, torch.from_numpy): a
    # numpy array argument would be copied at every call (the tape keeps its values).
    tx, ty, tvx, tvy = (tc.tensor(a) for a in (x, y, vx, vy))

    def hvp(f: Callable[..., tc.Tensor]) -> Call:
        gradient = func.grad(f, argnums=(0, 1))

        def call() -> tuple[np.ndarray, np.ndarray]:
            _, (hx, hy) = func.jvp(gradient, (tx, ty), (tvx, tvy))
            return hx.numpy(), hy.numpy()

        return call

    return {"tidu per-op": hvp(w1), "tidu @tc.function": hvp(tc.function(w1))}


def _jax_call(x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> Call | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def w1(a: Any, b: Any) -> Any:
        return jnp.sum(jnp.tanh(a * b + jnp.exp(-a)) * b)

    hvp = jax.jit(lambda p, q, s, t: jax.jvp(jax.grad(w1, argnums=(0, 1)), (p, q), (s, t))[1])
    args = [jnp.asarray(a) for a in (x, y, vx, vy)]

    def call() -> tuple[np.ndarray, np.ndarray]:
        hx, hy = hvp(*args)
        hx.block_until_ready()
        return np.asarray(hx), np.asarray(hy)

    return call


def _torch_call(x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> Call | None:
    try:
        import torch
        from torch.func import grad, jvp
    except ImportError:
        return None

    def w1(a: Any, b: Any) -> Any:
        return torch.sum(torch.tanh(a * b + torch.exp(-a)) * b)

    args = [torch.from_numpy(a) for a in (x, y, vx, vy)]

    def call() -> tuple[np.ndarray, np.ndarray]:
        _, (hx, hy) = jvp(grad(w1, argnums=(0, 1)), (args[0], args[1]), (args[2], args[3]))
        return hx.numpy(), hy.numpy()

    return call


def run(n: int = 10**6, rounds: int = 15) -> dict[str, Any]:
    """Check and time every HVP; the JSON-ready document."""
    rng = np.random.default_rng(0)
    x, y, vx, vy = (rng.standard_normal(n) for _ in range(4))
    calls: dict[str, Call] = _tidu_calls(x, y, vx, vy)
    for name, make in (("jax.jit", _jax_call), ("torch.func", _torch_call)):
        peer = make(x, y, vx, vy)
        if peer is not None:
            calls[name] = peer
    expected = _expected(x, y, vx, vy)
    errors = {}
    for name, call in calls.items():
        got = call()  # also the warm-up: compiles
        errors[name] = max(
            float(np.max(np.abs(g - e)) / (np.max(np.abs(e)) + 1e-300))
            for g, e in zip(got, expected, strict=True)
        )
    seconds = interleaved(calls, rounds)
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": cpu_model(),
        "elements": n,
        "dtype": "float64",
        "rows": [
            {"name": name, "seconds": seconds[name], "relative_error": errors[name]}
            for name in calls
        ],  # fmt: skip
    }


def format_hvp(document: dict[str, Any]) -> str:
    """The table printed by ``--hvp``: median time and the ratio to jax.jit."""
    title = (f"tidu-compile bench --hvp: W1 Hessian-vector product (forward over reverse), "
             f"n = {document['elements']:.0e} {document['dtype']}, cpu: {document['cpu']}")
    return timing_table(title, document["rows"], [("jax.jit", "jax.jit")], 20)


def command(args: argparse.Namespace) -> int:
    """``tidu-compile bench --hvp``: print the table, write ``--json``; 1 when a result
    is off the central difference (relative error above 1e-6)."""
    document = run(n=10**4 if args.quick else 10**6, rounds=3 if args.quick else 15)
    bad = [f"{row['name']}: the HVP is off the central difference"
           for row in document["rows"] if row["relative_error"] > 1e-6]  # fmt: skip
    return finish(document, args.json, format_hvp(document), bad)

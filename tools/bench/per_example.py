"""``tidu-compile bench --per-example``: per-example gradients of a small MLP.

    loss(p, x, y) = sum((tanh(x @ W1 + b1) @ W2 + b2 - y) ** 2)     one example
    vmap(grad(loss), in_axes=(None, 0, 0))(params, X, Y)            B = 256 examples

Ours: ``func.vmap(func.grad(loss), in_axes=(None, 0, 0))`` on the default
``CompiledExecutor`` (the batched forward one node, its VJP another, both compiled).
Peers, when installed, in this same process and interleaved with ours round by round:
``jax.jit(jax.vmap(jax.grad(loss)))`` and ``torch.func.vmap(torch.func.grad(loss))``.
Each is checked against the per-example gradients by hand in numpy before it is timed.
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

Params = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
Call = Callable[[], list[np.ndarray]]


def _inputs(batch: int, rng: np.random.Generator) -> tuple[Params, np.ndarray, np.ndarray]:
    n_in, hidden, n_out = 32, 64, 8
    params = (rng.standard_normal((n_in, hidden)) / np.sqrt(n_in), np.zeros(hidden),
              rng.standard_normal((hidden, n_out)) / np.sqrt(hidden), np.zeros(n_out))
    return params, rng.standard_normal((batch, n_in)), rng.standard_normal((batch, n_out))


def _expected(params: Params, x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """Every example's gradient by hand: ``dW2[b] = h_b d_b^T`` and so on."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    d_out = 2 * (h @ w2 + b2 - y)
    dz = (d_out @ w2.T) * (1 - h * h)
    return [np.einsum("bi,bj->bij", x, dz), dz, np.einsum("bi,bj->bij", h, d_out), d_out]


def _tidu_call(params: Params, x: np.ndarray, y: np.ndarray) -> Call:
    import tidu_compile as tc
    from tidu_compile import func

    def loss(p: Any, xi: Any, yi: Any) -> Any:
        w1, b1, w2, b2 = p
        return tc.sum((tc.tanh(xi @ w1 + b1) @ w2 + b2 - yi) ** 2)

    tensors = tuple(tc.tensor(a) for a in params)
    tx, ty = tc.tensor(x), tc.tensor(y)
    per_example = func.vmap(func.grad(loss), in_axes=(None, 0, 0))

    def call() -> list[np.ndarray]:
        return [g.numpy() for g in per_example(tensors, tx, ty)]

    return call


def _jax_call(params: Params, x: np.ndarray, y: np.ndarray) -> Call | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def loss(p: Any, xi: Any, yi: Any) -> Any:
        w1, b1, w2, b2 = p
        return jnp.sum((jnp.tanh(xi @ w1 + b1) @ w2 + b2 - yi) ** 2)

    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    arrays = tuple(jnp.asarray(a) for a in params)
    jx, jy = jnp.asarray(x), jnp.asarray(y)

    def call() -> list[np.ndarray]:
        grads = per_example(arrays, jx, jy)
        grads[0].block_until_ready()
        return [np.asarray(g) for g in grads]

    return call


def _torch_call(params: Params, x: np.ndarray, y: np.ndarray) -> Call | None:
    try:
        import torch
        from torch.func import grad, vmap
    except ImportError:
        return None

    def loss(p: Any, xi: Any, yi: Any) -> Any:
        w1, b1, w2, b2 = p
        return torch.sum((torch.tanh(xi @ w1 + b1) @ w2 + b2 - yi) ** 2)

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    tensors = tuple(torch.from_numpy(a) for a in params)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def call() -> list[np.ndarray]:
        return [g.numpy() for g in per_example(tensors, tx, ty)]

    return call


def run(batch: int = 256, rounds: int = 30) -> dict[str, Any]:
    """Check and time every per-example gradient; the JSON-ready document."""
    params, x, y = _inputs(batch, np.random.default_rng(0))
    calls: dict[str, Call] = {"tidu vmap(grad)": _tidu_call(params, x, y)}
    for name, make in (("jax.jit", _jax_call), ("torch.func", _torch_call)):
        peer = make(params, x, y)
        if peer is not None:
            calls[name] = peer
    expected = _expected(params, x, y)
    errors = {}
    for name, call in calls.items():
        got = call()  # also the warm-up: compiles
        errors[name] = max(float(np.max(np.abs(g - e)) / (np.max(np.abs(e)) + 1e-300))
                           for g, e in zip(got, expected, strict=True))  # fmt: skip
    seconds = interleaved(calls, rounds)
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": cpu_model(),
        "batch": batch,
        "dtype": "float64",
        "rows": [{"name": name, "seconds": seconds[name], "relative_error": errors[name]}
                 for name in calls],  # fmt: skip
    }


def format_per_example(document: dict[str, Any]) -> str:
    """The table printed by ``--per-example``: median time and the ratio to jax.jit."""
    title = (f"tidu-compile bench --per-example: per-example gradients of an MLP 32-64-8, "
             f"batch {document['batch']} {document['dtype']}, cpu: {document['cpu']}")
    return timing_table(title, document["rows"], [("jax.jit", "jax.jit")], 20)


def command(args: argparse.Namespace) -> int:
    """``tidu-compile bench --per-example``: print the table, write ``--json``; 1 when a
    gradient is off the hand-written one (relative error above 1e-10)."""
    document = run(batch=16 if args.quick else 256, rounds=3 if args.quick else 30)
    bad = [f"{row['name']}: per-example gradients off the hand-written ones"
           for row in document["rows"] if row["relative_error"] > 1e-10]  # fmt: skip
    return finish(document, args.json, format_per_example(document), bad)

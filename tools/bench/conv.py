"""``tidu-compile bench --conv``: a 2-d convolution layer, forward and backward.

    y = conv(x, w, padding="SAME")        x (N, C, 28, 28), w (O, C, K, K), float32, NCHW
    L = sum(y * y) / 2;  dL/dx, dL/dw

Ours: ``tc.conv`` (a window ``Gather`` and one ``DotGeneral``: im2col on numpy's BLAS)
on a ``CompiledExecutor``, per op and as one ``@tc.function``; the loss and both
gradients from the arrays at every call. Peers, when installed, in this same process and
interleaved round by round: ``torch.nn.functional.conv2d`` + ``autograd.grad`` and
``jax.jit(jax.value_and_grad(lax.conv_general_dilated))``. Every result is checked
against the ``ReferenceExecutor``'s gradients first.
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

#: (batch, in channels, out channels, kernel): a CNN's first and second layer on MNIST.
LAYERS = ((64, 1, 16, 5), (64, 16, 32, 3))


def _tidu_calls(x: np.ndarray, w: np.ndarray) -> dict[str, Call]:
    import tidu_compile as tc

    def loss(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        y = tc.conv(a, b, padding="SAME")
        return tc.sum(y * y) * 0.5

    tx, tw = tc.tensor(x, requires_grad=True), tc.tensor(w, requires_grad=True)

    def step(f: Callable[..., tc.Tensor]) -> Call:
        def call() -> tuple[np.ndarray, np.ndarray]:
            gx, gw = tc.grad(f(tx, tw), [tx, tw])
            return gx, gw

        return call

    return {"tidu per-op": step(loss), "tidu @tc.function": step(tc.function(loss))}


def _expected(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import tidu_compile as tc

    with tc.use_executor(tc.ReferenceExecutor()):
        tx, tw = (tc.tensor(a.astype(np.float64), requires_grad=True) for a in (x, w))
        y = tc.conv(tx, tw, padding="SAME")
        gx, gw = tc.grad(tc.sum(y * y) * 0.5, [tx, tw])
    return gx, gw


def _torch_call(x: np.ndarray, w: np.ndarray) -> Call | None:
    try:
        import torch
        import torch.nn.functional as F  # noqa: N812 - torch's spelling
    except ImportError:
        return None
    tx, tw = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()

    def call() -> tuple[np.ndarray, np.ndarray]:
        y = F.conv2d(tx, tw, padding="same")
        gx, gw = torch.autograd.grad((y * y).sum() * 0.5, [tx, tw])
        return gx.numpy(), gw.numpy()

    return call


def _jax_call(x: np.ndarray, w: np.ndarray) -> Call | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None

    def loss(a: Any, b: Any) -> Any:
        y = jax.lax.conv_general_dilated(a, b, (1, 1), "SAME")  # NCHW, OIHW
        return jnp.sum(y * y) * 0.5

    step = jax.jit(jax.grad(loss, argnums=(0, 1)))
    jx, jw = jnp.asarray(x), jnp.asarray(w)

    def call() -> tuple[np.ndarray, np.ndarray]:
        gx, gw = step(jx, jw)
        gx.block_until_ready()
        return np.asarray(gx), np.asarray(gw)

    return call


def run(rounds: int = 15, layers: tuple[tuple[int, int, int, int], ...] = LAYERS) -> dict:
    """Check and time every layer; the JSON-ready document."""
    rng = np.random.default_rng(0)
    documents = []
    for batch, channels, out_channels, kernel in layers:
        x = rng.standard_normal((batch, channels, 28, 28)).astype(np.float32)
        w = (rng.standard_normal((out_channels, channels, kernel, kernel)) * 0.1).astype(np.float32)
        calls = _tidu_calls(x, w)
        for name, make in (("torch", _torch_call), ("jax.jit", _jax_call)):
            peer = make(x, w)
            if peer is not None:
                calls[name] = peer
        expected = _expected(x, w)
        errors = {}
        for name, call in calls.items():
            got = call()  # also the warm-up: compiles
            errors[name] = max(
                float(np.max(np.abs(g - e)) / (np.max(np.abs(e)) + 1e-300))
                for g, e in zip(got, expected, strict=True)
            )
        seconds = interleaved(calls, rounds)
        documents.append({
            "layer": {"batch": batch, "channels": channels, "out_channels": out_channels,
                      "kernel": kernel, "size": 28},
            "rows": [{"name": n, "seconds": seconds[n], "relative_error": errors[n]}
                     for n in calls],
        })  # fmt: skip
    return {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu_model(),
            "dtype": "float32", "layers": documents}  # fmt: skip


def format_conv(document: dict[str, Any]) -> str:
    """The tables printed by ``--conv``: median time and the ratio to torch, per layer."""
    tables = []
    for layer in document["layers"]:
        shape = layer["layer"]
        title = (f"tidu-compile bench --conv: conv2d SAME forward + backward, x "
                 f"({shape['batch']}, {shape['channels']}, 28, 28), w ({shape['out_channels']}, "
                 f"{shape['channels']}, {shape['kernel']}, {shape['kernel']}) "
                 f"{document['dtype']}, cpu: {document['cpu']}")  # fmt: skip
        tables.append(timing_table(title, layer["rows"], [("torch", "torch")], 20))
    return "\n\n".join(tables)


def command(args: argparse.Namespace) -> int:
    """``tidu-compile bench --conv``: print the tables, write ``--json``; 1 when a
    gradient is off the reference's (relative error above 1e-4, float32)."""
    layers = ((8, 1, 4, 5), (8, 4, 8, 3)) if args.quick else LAYERS
    document = run(rounds=3 if args.quick else 15, layers=layers)
    bad = [f"{row['name']}: the gradient is off the reference executor's"
           for layer in document["layers"] for row in layer["rows"]
           if row["relative_error"] > 1e-4]  # fmt: skip
    return finish(document, args.json, format_conv(document), bad)

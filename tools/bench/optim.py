"""``tidu-compile bench --optim``: one ``Adam.step()`` over a 1M-parameter model.

The parameters of an MLP 784-1024-192 (weights and biases, 1,000,640 float32 values in
four tensors) with fixed gradients; each call is one optimizer step (the gradients are
not consumed, so every call does the same work). Ours: ``tc.optim.Adam(...).step()`` on
the default ``CompiledExecutor`` (one compiled program for the four parameters). Peers,
when torch is installed, in this same process and interleaved with ours round by round
(so load affects all alike): ``torch.optim.Adam`` with its CPU default (the
single-tensor loop), ``foreach=True`` and ``fused=True``. After timing, every
optimizer has taken the same number of steps from the same start: its parameters are
checked against Adam in float64 numpy.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tidu_compile.tools.bench.report import cpu_model, finish, timing_table
from tidu_compile.tools.bench.timing import interleaved

__all__ = ["command", "run"]

#: The parameter shapes: W1, b1, W2, b2 of an MLP 784-1024-192.
SHAPES = ((784, 1024), (1024,), (1024, 192), (192,))
LR = 1e-3


class Stepper:
    """One framework's optimizer: ``step()`` takes one step, ``values()`` reads the
    parameters (float64 copies)."""

    def __init__(self, step: Callable[[], object], values: Callable[[], list[np.ndarray]]) -> None:
        self.step = step
        self.values = values


def _tidu(start: list[np.ndarray], grads: list[np.ndarray]) -> Stepper:
    import tidu_compile as tc

    params = [tc.tensor(p.copy(), requires_grad=True) for p in start]
    for p, g in zip(params, grads, strict=True):
        p.grad = g.copy()
    optimizer = tc.optim.Adam(params, lr=LR)
    return Stepper(optimizer.step, lambda: [p.numpy().astype(np.float64) for p in params])


def _torch(start: list[np.ndarray], grads: list[np.ndarray], **options: bool) -> Stepper | None:
    try:
        import torch
    except ImportError:
        return None
    params = [torch.tensor(p.copy(), requires_grad=True) for p in start]
    for p, g in zip(params, grads, strict=True):
        p.grad = torch.from_numpy(g.copy())
    optimizer = torch.optim.Adam(params, lr=LR, **options)
    return Stepper(optimizer.step,
                   lambda: [p.detach().numpy().astype(np.float64) for p in params])  # fmt: skip


def _torch_threads() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return int(torch.get_num_threads())


def _numpy_adam(start: list[np.ndarray], grads: list[np.ndarray], steps: int) -> list[np.ndarray]:
    """Adam with constant gradients, in float64 (torch's formulas)."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    out = []
    for p0, g0 in zip(start, grads, strict=True):
        p, g = p0.astype(np.float64), g0.astype(np.float64)
        m, v = np.zeros_like(p), np.zeros_like(p)
        for t in range(1, steps + 1):
            m = m + (1 - beta1) * (g - m)
            v = v * beta2 + (1 - beta2) * g * g
            denom = np.sqrt(v) / (1 - beta2**t) ** 0.5 + eps
            p = p + (-LR / (1 - beta1**t)) * m / denom
        out.append(p)
    return out


def run(rounds: int = 15) -> dict[str, Any]:
    """Time every optimizer's step and check where each ended; the JSON-ready document."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    steppers: dict[str, Stepper] = {"tidu Adam": _tidu(start, grads)}
    for name, options in (("torch Adam (default)", {}), ("torch foreach=True", {"foreach": True}),
                          ("torch fused=True", {"fused": True})):  # fmt: skip
        peer = _torch(start, grads, **options)
        if peer is not None:
            steppers[name] = peer
    seconds = interleaved({name: s.step for name, s in steppers.items()}, rounds)
    expected = _numpy_adam(start, grads, rounds + 1)  # interleaved's warm-up call + rounds
    rows = []
    for name, stepper in steppers.items():
        error = max(float(np.max(np.abs(got - e)) / np.max(np.abs(e)))
                    for got, e in zip(stepper.values(), expected, strict=True))  # fmt: skip
        rows.append({"name": name, "seconds": seconds[name], "relative_error": error})
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": cpu_model(),
        "load_average": os.getloadavg()[0],
        "torch_threads": _torch_threads(),
        "parameters": sum(int(np.prod(s)) for s in SHAPES),
        "tensors": len(SHAPES),
        "dtype": "float32",
        "rows": rows,
    }


def format_optim(document: dict[str, Any]) -> str:
    """The table printed by ``--optim``: median step time and the ratios to torch."""
    title = (f"tidu-compile bench --optim: Adam.step() over {document['parameters']:,} "
             f"{document['dtype']} parameters in {document['tensors']} tensors, "
             f"cpu: {document['cpu']}, load {document['load_average']:.1f}, torch threads: "
             f"{document['torch_threads']}")  # fmt: skip
    baselines = [("torch", "torch Adam (default)"), ("fused", "torch fused=True")]
    return timing_table(title, document["rows"], baselines, 24)


def command(args: argparse.Namespace) -> int:
    """``tidu-compile bench --optim``: print the table, write ``--json``; 1 when an
    optimizer ends off Adam in float64 (relative error above 1e-5)."""
    document = run(rounds=3 if args.quick else 30)
    bad = [f"{row['name']}: the parameters are off Adam's"
           for row in document["rows"] if row["relative_error"] > 1e-5]  # fmt: skip
    return finish(document, args.json, format_optim(document), bad)

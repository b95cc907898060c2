"""``tidu-compile bench --workload recording``: the cost of recording one op on the tape.

A chain of ``steps`` scalar steps ``x = sin(x * a + b)`` (3 ops each, 0-d float64, ``x``,
``a``, ``b`` requiring gradients) is run, in turn round by round (so load affects all
alike), by

* numpy on 0-d arrays (what the ops cost without any tape: the baseline),
* tidu_compile, recording every op on the tape (per-op recording; nothing is compiled),
* torch on 0-d tensors requiring grad (its autograd graph), when installed;

and reported in microseconds per op, with the ratios to numpy and torch. Every chain's
value is checked against numpy's first.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tidu_compile.tools.bench.report import cpu_model, finish
from tidu_compile.tools.bench.timing import interleaved

__all__ = ["command", "format_recording", "run"]

#: Ops per step of the chain: a multiply, an add, a sine.
OPS_PER_STEP = 3
INPUTS = (0.3, 0.9, 0.2)  # x0, a, b: |a| < 1 keeps the chain bounded


def _chain(sin: Callable[[Any], Any], steps: int) -> Callable[[Any, Any, Any], Any]:
    def chain(x: Any, a: Any, b: Any) -> Any:
        for _ in range(steps):
            x = sin(x * a + b)
        return x

    return chain


def _calls(steps: int) -> dict[str, Callable[[], float]]:
    """The chain per library, each returning its value as a float."""
    import tidu_compile as tc

    numpy_chain = _chain(np.sin, steps)
    tidu_chain = _chain(tc.sin, steps)
    arrays = [np.array(v) for v in INPUTS]

    def numpy_call() -> float:
        return float(numpy_chain(*arrays))

    def tidu_call() -> float:
        tensors = [tc.tensor(a, requires_grad=True) for a in arrays]
        out = tidu_chain(*tensors)
        assert out._trace is not None, "the chain was not recorded"
        return float(out.item())

    calls = {"numpy 0-d": numpy_call, "tidu_compile": tidu_call}
    try:
        import torch
    except ImportError:
        return calls
    torch_chain = _chain(torch.sin, steps)

    def torch_call() -> float:
        tensors = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in INPUTS]
        return float(torch_chain(*tensors).item())

    calls["torch"] = torch_call
    return calls


def run(steps: int = 300, rounds: int = 15) -> dict[str, Any]:
    """Check and time every chain; the JSON-ready document."""
    calls = _calls(steps)
    expected = calls["numpy 0-d"]()
    errors = {name: abs(call() - expected) for name, call in calls.items()}
    seconds = interleaved(calls, rounds)
    ops = steps * OPS_PER_STEP
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": cpu_model(),
        "ops": ops,
        "rows": [
            {"name": name, "us_per_op": seconds[name] / ops * 1e6, "error": errors[name]}
            for name in calls
        ],  # fmt: skip
    }


def format_recording(document: dict[str, Any]) -> str:
    """The table: microseconds per op and the ratios to numpy and torch."""
    rows = {row["name"]: row for row in document["rows"]}
    numpy_us = rows["numpy 0-d"]["us_per_op"]
    torch_us = rows["torch"]["us_per_op"] if "torch" in rows else None
    lines = [
        f"tidu-compile bench --workload recording: {document['ops']} scalar ops "
        f"(x = sin(x*a + b), 0-d float64, requiring grad), cpu: {document['cpu']}",
        f"{'':16}{'us/op':>9}{'/numpy':>9}{'/torch':>9}",
    ]
    for name, row in rows.items():
        us = row["us_per_op"]
        per_torch = "-" if torch_us is None else f"{us / torch_us:.2f}"
        lines.append(f"{name:16}{us:>9.3f}{us / numpy_us:>9.2f}{per_torch:>9}")
    return "\n".join(lines)


def command(args: argparse.Namespace) -> int:
    """Print the table, write ``--json``; 1 when a chain's value is off numpy's."""
    document = run(steps=30 if args.quick else 300, rounds=5 if args.quick else 15)
    bad = [f"{row['name']}: the chain's value is off numpy's"
           for row in document["rows"] if row["error"] > 1e-12]  # fmt: skip
    return finish(document, args.json, format_recording(document), bad)

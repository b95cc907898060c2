"""Torch and jax peers, each run in a subprocess of its own so thread pools do not fight.

The parent calls ``run_peer(name, workloads, ...)``, which starts
``python -m tidu_compile.tools.bench.peers SPEC`` (``SPEC`` a JSON object) and reads
its standard output: one event per line, each ``@@bench `` followed by JSON
(``info``, then ``start`` / ``result`` or ``error`` per workload). The child rebuilds
the inputs from the seed, checks its gradients against the hand-written numpy ones
and times, like for like with tidu:

* the backward alone (``timing``), from what the peer's forward saved:
  torch runs the forward once with ``requires_grad``, then
  ``torch.autograd.grad(loss, inputs, retain_graph=True)`` on its saved graph; jax runs
  ``jax.vjp`` once and times a jitted call of the returned ``vjp_fn`` (its residuals
  are the arguments of the jitted function, like tidu's saved values);
* the full step (``step_timing``): torch's forward and ``autograd.grad``;
  ``jax.jit(jax.value_and_grad(f, argnums=...))``.

torch uses its default thread settings (``torch.get_num_threads()`` is reported); jax
has x64 enabled. jax's first calls (trace and compile) are reported separately as
``compile_seconds``; later calls are timed with ``block_until_ready``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tidu_compile.tools.bench import workloads_indexing as indexing
from tidu_compile.tools.bench import workloads_linalg as linalg
from tidu_compile.tools.bench.row import Workload, relative_errors
from tidu_compile.tools.bench.timing import Policy, measure
from tidu_compile.tools.bench.workloads import find_workload, w2_chain, w2_ops

__all__ = ["PEERS", "MARKER", "peer_installed", "peer_version", "run_peer", "main"]

PEERS = ("torch", "jax")
MARKER = "@@bench "


def peer_installed(name: str) -> bool:
    """True when the peer's package can be imported (checked without importing it)."""
    return importlib.util.find_spec(name) is not None


def peer_version(name: str) -> str | None:
    """The installed distribution version of ``name``, or None."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# ------------------------------------------------------------------ parent side


def run_peer(
    name: str,
    workloads: Sequence[Workload],
    policy: Policy,
    seed: int,
    on_start: Callable[[str], None] | None = None,
    timeout: float = 3600.0,
) -> dict[str, Any]:
    """Run the peer ``name`` on ``workloads`` in a subprocess.

    Returns ``{"info": {...}, "results": {problem: {...}}, "error": str | None}``;
    ``on_start(problem)`` is called as the child starts each workload (for progress).
    """
    problems = list(dict.fromkeys(w.problem for w in workloads))
    spec = {"peer": name, "workloads": problems, "seed": seed, "policy": policy.to_json()}
    command = [sys.executable, "-m", "tidu_compile.tools.bench.peers", json.dumps(spec)]
    outcome: dict[str, Any] = {"info": {}, "results": {}, "error": None}
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, bufsize=1
        )
        if process.stdout is None:  # Popen with PIPE always sets it; this narrows the type
            raise RuntimeError("peer subprocess has no stdout pipe")
        for line in process.stdout:
            if not line.startswith(MARKER):
                continue
            event = json.loads(line[len(MARKER):])
            kind = event.pop("event")
            if kind == "info":
                outcome["info"] = event
            elif kind == "start":
                if on_start is not None:
                    on_start(event["workload"])
            else:
                outcome["results"][event.pop("workload")] = event
            if time.monotonic() > deadline:
                process.kill()
                outcome["error"] = f"timed out after {timeout:.0f} s"
                break
        status = process.wait()
        if status != 0 and outcome["error"] is None:
            stderr.seek(0)
            tail = [line for line in stderr.read().splitlines() if line.strip()][-3:]
            outcome["error"] = f"exit status {status}: " + " | ".join(tail)
    return outcome


# ------------------------------------------------------------------ torch


def _torch_loss(workload: Workload, args: Sequence[Any]) -> Any:
    import torch

    if workload.group in indexing.GROUPS:
        return indexing.torch_loss(workload, args)
    if workload.group in linalg.GROUPS:
        return linalg.torch_loss(workload, args)
    if workload.group == "W1":
        x, y = args
        return torch.sum(torch.tanh(x * y + torch.exp(-x)) * y)
    if workload.group == "W2":
        return w2_chain(w2_ops(workload.size), torch.sin)(*args)
    if workload.group == "W3":
        x, w1, b1, w2, b2, y = args
        return torch.sum((torch.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)
    a, v = args
    return torch.sum(torch.exp(a - v[None, :]) ** 2)


def _run_torch(workload: Workload, arrays: list[np.ndarray], policy: Policy) -> dict[str, Any]:
    import torch

    tensors = [
        torch.from_numpy(a.copy()).requires_grad_(i in workload.grad_inputs)
        for i, a in enumerate(arrays)
    ]
    wrt = [tensors[i] for i in workload.grad_inputs]
    loss = _torch_loss(workload, tensors)

    def backward() -> Any:
        return torch.autograd.grad(loss, wrt, retain_graph=True)

    def step() -> Any:
        return torch.autograd.grad(_torch_loss(workload, tensors), wrt)

    timing = measure(backward, policy)
    grads = [g.detach().numpy() for g in backward()]
    return {"timing": timing.to_json(), "step_timing": measure(step, policy).to_json(),
            "grads": grads}  # fmt: skip


def _torch_info() -> dict[str, Any]:
    import torch

    return {"version": torch.__version__, "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads()}  # fmt: skip


# ------------------------------------------------------------------ jax


def _jax_loss(workload: Workload, args: Sequence[Any]) -> Any:
    import jax.numpy as jnp

    if workload.group in indexing.GROUPS:
        return indexing.jax_loss(workload, args)
    if workload.group in linalg.GROUPS:
        return linalg.jax_loss(workload, args)
    if workload.group == "W1":
        x, y = args
        return jnp.sum(jnp.tanh(x * y + jnp.exp(-x)) * y)
    if workload.group == "W2":
        return w2_chain(w2_ops(workload.size), jnp.sin)(*args)
    if workload.group == "W3":
        x, w1, b1, w2, b2, y = args
        return jnp.sum((jnp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)
    a, v = args
    return jnp.sum(jnp.exp(a - v[None, :]) ** 2)


def _run_jax(workload: Workload, arrays: list[np.ndarray], policy: Policy) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    args = [jnp.asarray(a) for a in arrays]
    jax.block_until_ready(args)
    wrt = workload.grad_inputs

    def loss(*values: Any) -> Any:
        return _jax_loss(workload, values)

    def loss_of_wrt(*differentiated: Any) -> Any:
        full = list(args)
        for i, value in zip(wrt, differentiated, strict=True):
            full[i] = value
        return loss(*full)

    value, vjp_fn = jax.vjp(loss_of_wrt, *(args[i] for i in wrt))
    seed = jnp.ones_like(value)
    apply_vjp = jax.jit(lambda fn, cotangent: fn(cotangent))  # residuals: arguments

    def backward() -> Any:
        return jax.block_until_ready(apply_vjp(vjp_fn, seed))

    value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=wrt))

    def step() -> Any:
        return jax.block_until_ready(value_and_grad(*args))

    start = time.perf_counter()
    backward()
    first = time.perf_counter() - start
    timing = measure(backward, policy)
    start = time.perf_counter()
    step()
    first_step = time.perf_counter() - start
    step_timing = measure(step, policy)
    grads = [np.asarray(g) for g in backward()]
    compile_seconds = max(first - timing.median, 0.0) + max(first_step - step_timing.median, 0.0)
    return {"timing": timing.to_json(), "step_timing": step_timing.to_json(), "grads": grads,
            "compile_seconds": compile_seconds}  # fmt: skip


def _jax_info() -> dict[str, Any]:
    import jax
    import jaxlib

    return {"version": jax.__version__, "jaxlib": jaxlib.__version__,
            "devices": [str(d) for d in jax.devices()]}  # fmt: skip


# ------------------------------------------------------------------ child side


_RUNNERS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[..., dict[str, Any]]]] = {
    "torch": (_torch_info, _run_torch),
    "jax": (_jax_info, _run_jax),
}


def _emit(event: str, **fields: Any) -> None:
    print(MARKER + json.dumps({"event": event, **fields}), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Child entry point: ``python -m tidu_compile.tools.bench.peers SPEC``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m tidu_compile.tools.bench.peers SPEC_JSON", file=sys.stderr)
        return 2
    spec = json.loads(args[0])
    name = spec["peer"]
    if name == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
    info, run = _RUNNERS[name]
    _emit("info", **info())
    policy = Policy.from_json(spec["policy"])
    for key in spec["workloads"]:
        _emit("start", workload=key)
        try:
            workload = find_workload(key)
            arrays = workload.make_inputs(int(spec["seed"]))
            reference = workload.numpy_gradients(arrays)
            result = run(workload, arrays, policy)
            errors = relative_errors(result.pop("grads"), reference)
            result["grad_errors"] = dict(zip(workload.grad_names, errors, strict=True))
            result["grad_ok"] = all(e <= workload.rtol for e in errors)
            _emit("result", workload=key, **result)
        except Exception as error:  # noqa: BLE001 - reported as the peer's row, not a crash
            _emit("result", workload=key, error=f"{type(error).__name__}: {error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

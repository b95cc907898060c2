"""``tidu-compile bench --small``: one training step (loss and gradient) of three small
programs, where the cost is per call rather than per element (issue 24 §2):

* ``gru``: a GRU language model over 24 token ids (vocabulary 12, hidden 8), the time
  loop a Python loop (unrolled into the trace, as ``jax.jit`` unrolls one);
* ``attention``: causal self-attention of 16 positions of width 16 and a layer norm;
* ``gmm``: the negative log-likelihood of 256 points in 2-d under a mixture of 3
  diagonal Gaussians (logits, means, log-scales).

Per program, timed in turn round by round in one process (medians after warm-up):
``tidu value_and_grad`` (``func.value_and_grad`` of the ``@tc.function``: one fused
program), ``tidu @tc.function + grad`` (the traced forward, then ``tc.grad``) and
``jax.jit(value_and_grad)`` when jax is installed. Every result is checked first
against the per-op value and gradient on the ``ReferenceExecutor``. float64.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tidu_compile.tools.bench.report import cpu_model, finish, timing_table
from tidu_compile.tools.bench.timing import interleaved

__all__ = ["PROGRAMS", "command", "run"]

Arrays = dict[str, np.ndarray]
Step = Callable[[], list[np.ndarray]]  # the loss, then the gradients by parameter name
VOCABULARY, HIDDEN, LENGTH = 12, 8, 24
POSITIONS, WIDTH = 16, 16
POINTS, DIM, COMPONENTS = 256, 2, 3


def _gru(np_: Any, p: Any, tokens: Any) -> Any:
    """The mean next-token negative log-likelihood (``np_``: tc or jax.numpy)."""
    h = np_.zeros(HIDDEN)
    total = 0.0
    for t in range(LENGTH - 1):
        x = p["embed"][tokens[t]]
        gx, gh = x @ p["w"] + p["b"], h @ p["u"]
        z = 1.0 / (1.0 + np_.exp(-(gx[:HIDDEN] + gh[:HIDDEN])))
        r = 1.0 / (1.0 + np_.exp(-(gx[HIDDEN : 2 * HIDDEN] + gh[HIDDEN : 2 * HIDDEN])))
        n = np_.tanh(gx[2 * HIDDEN :] + r * gh[2 * HIDDEN :])
        h = (1.0 - z) * n + z * h
        logits = h @ p["w_out"] + p["b_out"]
        top = np_.max(logits)
        log_z = np_.log(np_.sum(np_.exp(logits - top))) + top
        total = total + (log_z - logits[tokens[t + 1]])
    return total / (LENGTH - 1)


def _attention(np_: Any, p: Any, x: Any) -> Any:
    """``mean(layer_norm(x + softmax(causal(q k^T / sqrt(d))) v) ** 2)``."""
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    scores = (q @ k.T) / math.sqrt(WIDTH)
    mask = np.tril(np.ones((POSITIONS, POSITIONS), dtype=bool))
    scores = np_.where(mask, scores, -1e9)
    top = np_.max(scores, axis=1, keepdims=True)
    weights = np_.exp(scores - top)
    weights = weights / np_.sum(weights, axis=1, keepdims=True)
    y = x + weights @ v
    mean = np_.mean(y, axis=1, keepdims=True)
    var = np_.mean((y - mean) ** 2, axis=1, keepdims=True)
    normed = (y - mean) / np_.sqrt(var + 1e-5) * p["gamma"] + p["beta"]
    return np_.mean(normed**2)


def _gmm(np_: Any, p: Any, x: Any) -> Any:
    """``-mean_i log sum_k pi_k N(x_i; mu_k, diag(sigma_k^2))``, pi = softmax(logits)."""
    top = np_.max(p["logits"])
    log_pi = p["logits"] - (np_.log(np_.sum(np_.exp(p["logits"] - top))) + top)
    diff = (x[:, None, :] - p["means"][None, :, :]) / np_.exp(p["log_scales"])[None, :, :]
    log_normal = (-0.5 * np_.sum(diff**2, axis=2) - np_.sum(p["log_scales"], axis=1)
                  - 0.5 * DIM * math.log(2 * math.pi))  # fmt: skip
    joint = log_pi + log_normal
    peak = np_.max(joint, axis=1, keepdims=True)
    return -np_.mean(np_.log(np_.sum(np_.exp(joint - peak), axis=1)) + peak[:, 0])


def _inputs(name: str, rng: np.random.Generator) -> tuple[Arrays, np.ndarray]:
    if name == "gru":
        h3 = 3 * HIDDEN
        return ({"embed": 0.5 * rng.standard_normal((VOCABULARY, HIDDEN)),
                 "w": 0.3 * rng.standard_normal((HIDDEN, h3)),
                 "u": 0.3 * rng.standard_normal((HIDDEN, h3)), "b": 0.1 * rng.standard_normal(h3),
                 "w_out": 0.3 * rng.standard_normal((HIDDEN, VOCABULARY)),
                 "b_out": np.zeros(VOCABULARY)},
                rng.integers(0, VOCABULARY, LENGTH).astype(np.int64))  # fmt: skip
    if name == "attention":
        scale = 1 / math.sqrt(WIDTH)
        weights = {w: scale * rng.standard_normal((WIDTH, WIDTH)) for w in ("wq", "wk", "wv")}
        return ({**weights, "gamma": np.ones(WIDTH), "beta": np.zeros(WIDTH)},
                rng.standard_normal((POSITIONS, WIDTH)))  # fmt: skip
    return ({"logits": rng.standard_normal(COMPONENTS),
             "means": rng.standard_normal((COMPONENTS, DIM)),
             "log_scales": 0.1 * rng.standard_normal((COMPONENTS, DIM))},
            rng.standard_normal((POINTS, DIM)))  # fmt: skip


#: Program name -> the loss, written once for tidu_compile and jax.numpy alike.
PROGRAMS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "gru": _gru, "attention": _attention, "gmm": _gmm,
}  # fmt: skip


def _flat(loss: Any, grads: dict[str, Any]) -> list[np.ndarray]:
    return [np.asarray(loss), *(np.asarray(grads[k]) for k in sorted(grads))]


def _tidu_steps(name: str, params: Arrays, data: np.ndarray) -> tuple[dict[str, Step], Step]:
    """The two timed tidu steps, and the per-op step on the reference executor."""
    import tidu_compile as tc
    from tidu_compile import func

    program = PROGRAMS[name]

    @tc.function
    def loss(p: Any, x: Any) -> Any:
        return program(tc, p, x)

    value_and_grad = func.value_and_grad(loss)
    tensors = {k: tc.tensor(v, requires_grad=True) for k, v in params.items()}
    keys = sorted(params)

    def fused() -> list[np.ndarray]:
        value, grads = value_and_grad(params, data)
        return [value.numpy(), *(grads[k].numpy() for k in keys)]

    def recorded() -> list[np.ndarray]:
        value = loss(tensors, data)
        return [value.numpy(), *tc.grad(value, [tensors[k] for k in keys])]

    def reference() -> list[np.ndarray]:
        with tc.use_executor(tc.ReferenceExecutor()):
            value, grads = func.value_and_grad(lambda p: program(tc, p, data))(params)
            return [value.numpy(), *(grads[k].numpy() for k in keys)]

    return {"tidu value_and_grad": fused, "tidu @tc.function + grad": recorded}, reference


def _jax_step(name: str, params: Arrays, data: np.ndarray) -> Step | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    program = PROGRAMS[name]
    step = jax.jit(jax.value_and_grad(lambda p, x: program(jnp, p, x)))
    arrays = {k: jnp.asarray(v) for k, v in params.items()}
    x = jnp.asarray(data)

    def call() -> list[np.ndarray]:
        value, grads = step(arrays, x)
        value.block_until_ready()
        return _flat(value, grads)

    return call


def _error(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(g - w)) / (np.max(np.abs(w)) + 1e-300))
               for g, w in zip(got, want, strict=True))  # fmt: skip


def run(names: tuple[str, ...] = tuple(PROGRAMS), rounds: int = 200) -> dict[str, Any]:
    """Check and time every step of every program; the JSON-ready document."""
    programs = []
    for name in names:
        params, data = _inputs(name, np.random.default_rng(0))
        calls, reference = _tidu_steps(name, params, data)
        jax_step = _jax_step(name, params, data)
        if jax_step is not None:
            calls["jax.jit"] = jax_step
        want = reference()
        errors = {label: _error(call(), want) for label, call in calls.items()}  # warms up
        seconds = interleaved(calls, rounds)  # type: ignore[arg-type]
        programs.append({"program": name, "rows": [
            {"name": label, "seconds": seconds[label], "relative_error": errors[label]}
            for label in calls]})  # fmt: skip
    return {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu_model(),
            "dtype": "float64", "programs": programs}  # fmt: skip


def format_small(document: dict[str, Any]) -> str:
    """One table per program: median time and the ratio to jax.jit."""
    return "\n\n".join(
        timing_table(f"tidu-compile bench --small: {p['program']} training step (loss and "
                     f"gradient), {document['dtype']}, cpu: {document['cpu']}",
                     p["rows"], [("jax.jit", "jax.jit")], 26)
        for p in document["programs"])  # fmt: skip


def command(args: argparse.Namespace) -> int:
    """``tidu-compile bench --small``: print the tables, write ``--json``; 1 when a step
    is off the per-op reference (relative error above 1e-10)."""
    document = run(rounds=5 if args.quick else 200)
    bad = [f"{p['program']} {row['name']}: off the per-op reference"
           for p in document["programs"] for row in p["rows"]
           if row["relative_error"] > 1e-10]  # fmt: skip
    return finish(document, args.json, format_small(document), bad)

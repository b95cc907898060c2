"""``tidu-compile bench --loops``: the scan examples, compile time and step time, against
``jax.jit`` with ``lax.scan`` and torch eager, in one run.

Programs (the same weights, from ``init_params`` with seed 0):

* ``neural_ode``: ``tools/examples/neural_ode.py``, RK4 over 50 steps of a 2-16-2 MLP;
* ``gru``: ``tools/examples/gru_language_model.py``, 64 steps over integer token ids;
* ``rnn``: ``h = tanh(h @ W + x)`` over 1000 rows of width 16, the loss ``sum(h)`` of
  every step.

Per program and peer, in a fresh process (``python -m tidu_compile.tools.bench.loops
CHILD PROGRAM``, which first runs a tiny scan so imports and one-time set-up are not
counted): *cold*, the seconds to the first loss and gradient (ours on a
``CompiledExecutor`` with blocking compiles and no disk cache: everything compiled,
each scan then one native loop; jax's first call of
``jax.jit(jax.value_and_grad(loss))``; torch's first eager forward and
``torch.autograd.grad``, its loops Python loops); *step*, the best of later calls (ours
eager, which traces the scan's body again at every call, and in a ``@tc.function``,
which replays its trace). Our
gradients are checked against the reference executor's and must have no fallback.
The last rows are what ``scan(checkpoint=True)`` saves: the bytes the tape keeps for
the scan node with and without it, and our step time with it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tidu_compile.tools.bench.peers import MARKER, peer_installed
from tidu_compile.tools.bench.report import cpu_model, finish, tidu_failures

__all__ = ["PROGRAMS", "command", "main", "run"]

PROGRAMS = ("neural_ode", "gru", "rnn")
GRU_STEPS, RNN_STEPS, RNN_WIDTH = 64, 1000, 16
#: Seconds each step time may spend repeating its call.
STEP_BUDGET = 1.0


def _arrays(program: str) -> dict[str, np.ndarray]:
    """The program's inputs: weights, then the data (token ids, rows, an initial state)."""
    from tidu_compile.tools.examples import gru_language_model as gru
    from tidu_compile.tools.examples import neural_ode as ode

    rng = np.random.default_rng(0)
    if program == "neural_ode":
        return {**ode.init_params(rng), "y0": np.array([1.0, -0.5])}
    if program == "gru":
        return {**gru.init_params(rng), "tokens": gru.tokens(rng, GRU_STEPS + 1)}
    return {"w": 0.3 * rng.standard_normal((RNN_WIDTH, RNN_WIDTH)),
            "xs": rng.standard_normal((RNN_STEPS, RNN_WIDTH))}  # fmt: skip


def _best(call: Callable[[], Any], at_most: int = 50) -> float:
    """The fastest of repeated calls (at least 3, until ``STEP_BUDGET`` seconds or
    ``at_most`` calls)."""
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < 3 or (len(times) < at_most
                             and time.perf_counter() - started < STEP_BUDGET):  # fmt: skip
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


# ------------------------------------------------------------------------- ours


def _tidu_loss(program: str, checkpoint: bool = False) -> tuple[Callable[..., Any], list[str]]:
    """Our loss of the differentiated inputs (by name), and their names."""
    from tidu_compile.tools.examples import gru_language_model as gru
    from tidu_compile.tools.examples import neural_ode as ode

    import tidu_compile as tc

    arrays = _arrays(program)
    if program == "neural_ode":
        return (lambda w1, b1, w2, y0: ode.loss({"w1": w1, "b1": b1, "w2": w2}, y0, checkpoint),
                [*ode.PARAMETERS, "y0"])  # fmt: skip
    if program == "gru":
        def gru_loss(*weights: Any) -> Any:
            params = dict(zip(gru.PARAMETERS, weights, strict=True))
            _, nll = tc.scan(lambda h, pair: gru.gru_step(params, h, *pair), tc.zeros(gru.HIDDEN),
                             (arrays["tokens"][:-1], arrays["tokens"][1:]),
                             checkpoint=checkpoint)  # fmt: skip
            return tc.mean(nll)

        return gru_loss, list(gru.PARAMETERS)
    xs = tc.tensor(arrays["xs"])

    def rnn_loss(w: Any) -> Any:
        def step(h: Any, x: Any) -> Any:
            h = tc.tanh(h @ w + x)
            return h, tc.sum(h)

        _, ys = tc.scan(step, tc.zeros(RNN_WIDTH), xs, checkpoint=checkpoint)
        return tc.sum(ys)

    return rnn_loss, ["w"]


def _tidu_child(program: str) -> dict[str, Any]:
    import tidu_compile as tc
    from tidu_compile.executors.compiled import CompiledExecutor
    from tidu_compile.executors.reference import ReferenceExecutor

    traced = tc.function(_tidu_loss(program)[0])

    def gradient(executor: Any, checkpoint: bool = False, function: bool = False) -> list[Any]:
        loss, names = _tidu_loss(program, checkpoint)
        arrays = _arrays(program)
        inputs = [tc.tensor(arrays[n], requires_grad=True) for n in names]
        with tc.use_executor(executor):
            value = (traced if function else loss)(*inputs)
            return [np.asarray(g) for g in tc.grad(value, inputs)]

    with tc.use_executor(CompiledExecutor(False, background=False)):  # imports, set-up
        tc.grad(tc.sum(tc.scan(lambda c, x: (c * x, None), tc.tensor(1.0, requires_grad=True),
                               tc.tensor(np.ones(3)))[0]), [])  # fmt: skip
    executor = CompiledExecutor(False, background=False)
    start, cpu = time.perf_counter(), time.process_time()
    grads = gradient(executor)
    cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu
    compiles, stages = executor.stats.compiles, dict(executor.stats.stage_seconds)
    step = _best(lambda: gradient(executor))
    function_step = _best(lambda: gradient(executor, function=True))
    checkpointed = _best(lambda: gradient(executor, checkpoint=True))
    expected = gradient(ReferenceExecutor())
    traced_grads = gradient(executor, function=True)
    error = max(float(np.max(np.abs(g - e)) / (np.max(np.abs(e)) + 1e-300))
                for got in (grads, traced_grads)
                for g, e in zip(got, expected, strict=True))  # fmt: skip
    return {
        "seconds": cold, "cpu_seconds": cold_cpu, "step_seconds": step,
        "checkpoint_step_seconds": checkpointed, "function_step_seconds": function_step,
        "relative_error": error,
        "compiles": compiles, "fallbacks": executor.stats.fallbacks, "stages": stages,
        "saved_bytes": _saved_bytes(program, False),
        "checkpoint_saved_bytes": _saved_bytes(program, True),
    }  # fmt: skip


def _saved_bytes(program: str, checkpoint: bool) -> int:
    """What the tape keeps for the program's nodes (the scan's history, unless
    checkpointed), in bytes."""
    import tidu_compile as tc

    loss, names = _tidu_loss(program, checkpoint)
    arrays = _arrays(program)
    with tc.use_executor(tc.ReferenceExecutor()):  # the general path's tape (a joint
        # forward's keeps the gradients instead: ``frontend.joint_forward``)
        value = loss(*(tc.tensor(arrays[n], requires_grad=True) for n in names))
    seen: set[int] = set()
    total, stack = 0, [value._trace]
    while stack:  # every node of the tape behind the loss
        trace = stack.pop()
        if trace is None or id(trace) in seen:
            continue
        seen.add(id(trace))
        total += sum(np.asarray(v).nbytes for v in trace.saved_values.values())
        stack.extend(edge.trace for edge in trace.inputs)
    return total


# ------------------------------------------------------------------------ peers


def _jax_child(program: str) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    from tidu_compile.tools.examples import gru_language_model as gru
    from tidu_compile.tools.examples import neural_ode as ode

    jax.config.update("jax_enable_x64", True)
    arrays = {k: jnp.asarray(v) for k, v in _arrays(program).items()}

    def ode_loss(w1: Any, b1: Any, w2: Any, y0: Any) -> Any:
        def f(y: Any) -> Any:
            return jnp.tanh(y @ w1 + b1) @ w2

        def step(y: Any, _: Any) -> Any:
            k1 = f(y)
            k2 = f(y + ode.DT / 2 * k1)
            k3 = f(y + ode.DT / 2 * k2)
            k4 = f(y + ode.DT * k3)
            return y + ode.DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None

        final, _ = jax.lax.scan(step, y0, None, length=ode.STEPS)
        return jnp.sum((final - jnp.asarray(ode.TARGET)) ** 2)

    def gru_loss(embed: Any, w: Any, u: Any, b: Any, w_out: Any, b_out: Any) -> Any:
        hidden = gru.HIDDEN

        def step(h: Any, pair: Any) -> Any:
            token, following = pair
            gates_x, gates_h = embed[token] @ w + b, h @ u
            z = jax.nn.sigmoid(gates_x[:hidden] + gates_h[:hidden])
            r = jax.nn.sigmoid(gates_x[hidden : 2 * hidden] + gates_h[hidden : 2 * hidden])
            n = jnp.tanh(gates_x[2 * hidden :] + r * gates_h[2 * hidden :])
            h = (1.0 - z) * n + z * h
            return h, -jax.nn.log_softmax(h @ w_out + b_out)[following]

        tokens = arrays["tokens"]
        _, nll = jax.lax.scan(step, jnp.zeros(hidden), (tokens[:-1], tokens[1:]))
        return jnp.mean(nll)

    def rnn_loss(w: Any) -> Any:
        def step(h: Any, x: Any) -> Any:
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h)

        _, ys = jax.lax.scan(step, jnp.zeros(RNN_WIDTH), arrays["xs"])
        return jnp.sum(ys)

    losses: dict[str, tuple[Callable[..., Any], list[str]]] = {
        "neural_ode": (ode_loss, [*ode.PARAMETERS, "y0"]), "gru": (gru_loss, list(gru.PARAMETERS)),
        "rnn": (rnn_loss, ["w"]),
    }  # fmt: skip
    loss, names = losses[program]
    inputs = [arrays[n] for n in names]
    warm = jax.jit(jax.value_and_grad(lambda x: jnp.sum(jax.lax.scan(
        lambda c, y: (c * y, None), x, jnp.ones(3))[0])))  # fmt: skip
    jax.block_until_ready(warm(jnp.asarray(1.0)))
    jitted = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(len(inputs)))))
    start, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(jitted(*inputs))
    cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu
    step = _best(lambda: jax.block_until_ready(jitted(*inputs)))
    return {"seconds": cold, "cpu_seconds": cold_cpu, "step_seconds": step}


def _torch_child(program: str) -> dict[str, Any]:
    import torch
    from tidu_compile.tools.examples import gru_language_model as gru
    from tidu_compile.tools.examples import neural_ode as ode

    raw = _arrays(program)

    def ode_loss(w1: Any, b1: Any, w2: Any, y0: Any) -> Any:
        def f(y: Any) -> Any:
            return torch.tanh(y @ w1 + b1) @ w2

        y = y0
        for _ in range(ode.STEPS):
            k1 = f(y)
            k2 = f(y + ode.DT / 2 * k1)
            k3 = f(y + ode.DT / 2 * k2)
            k4 = f(y + ode.DT * k3)
            y = y + ode.DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return torch.sum((y - torch.as_tensor(ode.TARGET)) ** 2)

    def gru_loss(embed: Any, w: Any, u: Any, b: Any, w_out: Any, b_out: Any) -> Any:
        hidden, tokens = gru.HIDDEN, raw["tokens"].tolist()
        h, terms = torch.zeros(hidden, dtype=torch.float64), []
        for token, following in zip(tokens[:-1], tokens[1:], strict=True):
            gates_x, gates_h = embed[token] @ w + b, h @ u
            z = torch.sigmoid(gates_x[:hidden] + gates_h[:hidden])
            r = torch.sigmoid(gates_x[hidden : 2 * hidden] + gates_h[hidden : 2 * hidden])
            n = torch.tanh(gates_x[2 * hidden :] + r * gates_h[2 * hidden :])
            h = (1.0 - z) * n + z * h
            terms.append(-torch.log_softmax(h @ w_out + b_out, 0)[following])
        return torch.mean(torch.stack(terms))

    xs = torch.as_tensor(raw.get("xs", np.zeros((0, RNN_WIDTH))))

    def rnn_loss(w: Any) -> Any:
        h, total = torch.zeros(RNN_WIDTH, dtype=torch.float64), 0.0
        for x in xs:
            h = torch.tanh(h @ w + x)
            total = total + torch.sum(h)
        return total

    losses: dict[str, tuple[Callable[..., Any], list[str]]] = {
        "neural_ode": (ode_loss, [*ode.PARAMETERS, "y0"]), "gru": (gru_loss, list(gru.PARAMETERS)),
        "rnn": (rnn_loss, ["w"]),
    }  # fmt: skip
    loss, names = losses[program]
    inputs = [torch.tensor(raw[n], requires_grad=True) for n in names]

    def gradient() -> Any:
        return torch.autograd.grad(loss(*inputs), inputs)

    start, cpu = time.perf_counter(), time.process_time()
    gradient()
    cold, cold_cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": cold, "cpu_seconds": cold_cpu, "step_seconds": _best(gradient)}


# ----------------------------------------------------------------------- parent


def _measure(who: str, program: str, timeout: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "tidu_compile.tools.bench.loops", who, program]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"more than {timeout:.0f} s (stopped)"}
    for line in done.stdout.splitlines():
        if line.startswith(MARKER):
            return dict(json.loads(line[len(MARKER):]))
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {done.returncode}: {last}"}


def run(programs: Sequence[str], timeout: float, peers: bool = True) -> dict[str, Any]:
    """Every program: ours, then jax's and torch's (when installed), each in a fresh
    process."""
    who = ["tidu", *(p for p in ("jax", "torch") if peers and peer_installed(p))]
    rows = [{"program": p, **{w: _measure(w, p, timeout) for w in who}} for p in programs]
    return {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpu": cpu_model(), "rows": rows}


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if "error" in result:
        return result["error"][:40]
    return f"{result['seconds']:.2f} s / {result['step_seconds'] * 1e3:.2f} ms"


def format_loops(document: dict[str, Any]) -> str:
    """One line per program (cold seconds / step milliseconds of each), then the
    checkpoint rows."""
    lines = [
        "tidu-compile bench --loops: cold (first loss + gradient) / step (best later one), "
        f"cpu: {document['cpu']}",
        f"{'program':<12}{'tidu_compile':<24}{'@tc.function':<14}{'jax.jit + lax.scan':<24}"
        f"{'torch eager':<24}compiles  stages (s)",
    ]
    for row in document["rows"]:
        ours = row["tidu"]
        stages = " ".join(f"{k} {v:.2f}" for k, v in ours.get("stages", {}).items())
        function = (f"{ours['function_step_seconds'] * 1e3:.2f} ms" if "error" not in ours
                    else "-")  # fmt: skip
        lines.append(f"{row['program']:<12}{_cell(ours):<24}{function:<14}"
                     f"{_cell(row.get('jax')):<24}{_cell(row.get('torch')):<24}"
                     f"{ours.get('compiles', '-')!s:<10}{stages}")
    lines.append("scan(checkpoint=True): bytes the tape keeps, without / with; our step with it")
    for row in document["rows"]:
        ours = row["tidu"]
        if "error" not in ours:
            lines.append(f"{row['program']:<12}{ours['saved_bytes']:>10} B / "
                         f"{ours['checkpoint_saved_bytes']:>8} B   step "
                         f"{ours['checkpoint_step_seconds'] * 1e3:.2f} ms")  # fmt: skip
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loops", action="store_true",
                        help="instead: the scan examples (neural ODE, GRU, a 1000-step RNN), "
                        "compile and step time against jax.jit + lax.scan and torch eager")


def command(args: argparse.Namespace) -> int:
    """Print the table, write ``--json``; 1 when a gradient is off the reference's or a
    program fell back to the reference path."""
    programs = ("rnn",) if args.quick else PROGRAMS
    document = run(programs, getattr(args, "compile_timeout", 600.0), peers=not args.no_peers)
    return finish(document, args.json, format_loops(document),
                  tidu_failures(document["rows"], "{program}"))  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """The child: ``tidu|jax|torch PROGRAM``; prints one ``@@bench`` line."""
    who, program = (argv if argv is not None else sys.argv[1:])[:2]
    children: dict[str, Callable[[str], dict[str, Any]]] = {
        "tidu": _tidu_child, "jax": _jax_child, "torch": _torch_child,
    }  # fmt: skip
    child = children[who]
    print(MARKER + json.dumps(child(program)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

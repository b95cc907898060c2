"""``make demo`` and ``tidu-compile demo --example NAME``: one example's gradients, checked.

Runs the default executor (compiled) on a built-in example (default: the MLP workload)
twice, compares its gradients with the numpy ``ReferenceExecutor`` and with central
finite differences, and prints compile time and cache statistics of both iterations.
Examples written as autograd programs (``logistic_regression``, ``mlp_classifier``,
``black_box_svi``, ``cnn_classifier``) are then trained for a few steps of gradient
descent, and the loss must go down.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np
from tidu_compile.tools.examples import EXAMPLES, Example

import tidu_compile as tc


def _finite_difference(loss, arrays, index, eps=1e-6):  # type: ignore[no-untyped-def]
    """Central difference of ``loss`` along one random direction of input ``index``."""
    rng = np.random.default_rng(1)
    direction = rng.normal(size=arrays[index].shape)
    plus = [a.copy() for a in arrays]
    minus = [a.copy() for a in arrays]
    plus[index] += eps * direction
    minus[index] -= eps * direction
    with tc.no_grad():
        f_plus = loss(*(tc.tensor(a) for a in plus)).item()
        f_minus = loss(*(tc.tensor(a) for a in minus)).item()
    return (f_plus - f_minus) / (2 * eps), direction


def check_gradients(example: Example) -> list[np.ndarray]:
    """Two iterations on the default executor, checked against the reference executor
    and central differences; returns the inputs.

    With background compilation (the default) the first iteration runs on the
    reference path while workers compile; the demo then waits for them, and the second
    iteration must run natively (no node on the reference path, no fallback)."""
    arrays = example.make_inputs(np.random.default_rng(0), np.float64)
    executor = tc.get_default_executor()
    print(f"example: {example.name}: {example.description}")
    print(f"executor: {type(executor).__name__}")
    reference = tc.ReferenceExecutor()
    stats = getattr(executor, "stats", None)
    for iteration in (1, 2):
        before = _reference_runs(stats)
        fallbacks = int(getattr(stats, "fallbacks", 0))
        inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
        loss = example.function(*inputs)
        start = time.perf_counter()
        grads = tc.grad(loss, inputs, executor=executor)
        elapsed = time.perf_counter() - start
        expected = tc.grad(loss, inputs, executor=reference)
        error = max(
            float(np.max(np.abs(np.asarray(g) - np.asarray(e))))
            for g, e in zip(grads, expected, strict=True)
        )
        waited = _reference_runs(stats) - before
        path = f" ({waited} node runs on the reference path while compiling)" if waited else ""
        print(f"iteration {iteration}: loss {loss.item():.6f}, backward {elapsed * 1e3:.2f} ms, "
              f"max |compiled - reference| = {error:.2e}{path}")
        if stats is not None:
            print(f"  stats: {stats}")
        if iteration == 1 and hasattr(executor, "wait_for_background"):
            start = time.perf_counter()
            executor.wait_for_background()
            print(f"  waited {time.perf_counter() - start:.2f} s for the background compiles")
    if waited or int(getattr(stats, "fallbacks", 0)) != fallbacks:
        raise SystemExit("the second iteration did not run natively")
    for index, name in enumerate(example.input_names):
        fd, direction = _finite_difference(example.function, arrays, index)
        analytic = float(np.sum(grads[index] * direction))
        print(f"d loss/d {name} along a random direction: {analytic:.8f} "
              f"(finite differences {fd:.8f})")
        if not np.isclose(analytic, fd, rtol=1e-5, atol=1e-6):
            raise SystemExit(f"gradient of {name} disagrees with finite differences")
    return arrays


def _reference_runs(stats: object) -> int:
    """Node runs on the reference path while their code compiled (0 without stats)."""
    return int(getattr(stats, "background_runs", 0))


def train(example: Example, arrays: list[np.ndarray]) -> None:
    """``example.steps`` steps of gradient descent; the loss must decrease."""
    losses = []
    for _ in range(example.steps):
        params = [tc.tensor(a, requires_grad=True) for a in arrays]
        loss = example.function(*params)
        grads = tc.grad(loss, params)
        arrays = [a - example.step_size * g for a, g in zip(arrays, grads, strict=True)]
        losses.append(loss.item())
    print(f"gradient descent, {example.steps} steps of {example.step_size}: "
          f"loss {losses[0]:.6f} -> {losses[-1]:.6f}")
    if not losses[-1] < losses[0]:
        raise SystemExit("gradient descent did not decrease the loss")


def run(name: str) -> None:
    if name not in EXAMPLES:
        raise SystemExit(f"unknown example {name!r} (choose from {', '.join(EXAMPLES)})")
    example = EXAMPLES[name]
    arrays = check_gradients(example)
    if example.steps:
        train(example, arrays)
    print("demo OK")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--example", default="mlp", choices=tuple(EXAMPLES),
                        help="the built-in example to check (default: mlp)")  # fmt: skip


def cli_command(args: argparse.Namespace) -> None:
    run(args.example)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="tidu-compile demo", description=__doc__.splitlines()[0])
    add_arguments(parser)
    run(parser.parse_args(argv).example)


if __name__ == "__main__":
    main(sys.argv[1:])

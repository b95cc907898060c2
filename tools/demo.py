"""``make demo``: gradients of a small MLP loss, checked, with timings and cache hits.

Runs the default executor (compiled) on the built-in MLP example twice, compares its
gradients with the numpy ``ReferenceExecutor`` and with central finite differences, and
prints compile time and cache statistics of both iterations.
"""

from __future__ import annotations

import time

import numpy as np
from tidu_compile.tools.examples import EXAMPLES

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


def main() -> None:
    example = EXAMPLES["mlp"]
    arrays = example.make_inputs(np.random.default_rng(0), np.float64)
    executor = tc.get_default_executor()
    print(f"example: {example.name}: {example.description}")
    print(f"executor: {type(executor).__name__}")
    reference = tc.ReferenceExecutor()
    for iteration in (1, 2):
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
        print(f"iteration {iteration}: loss {loss.item():.6f}, backward {elapsed * 1e3:.2f} ms, "
              f"max |compiled - reference| = {error:.2e}")
        stats = getattr(executor, "stats", None)
        if stats is not None:
            print(f"  stats: {stats}")
    for index, name in enumerate(example.input_names):
        fd, direction = _finite_difference(example.function, arrays, index)
        analytic = float(np.sum(grads[index] * direction))
        print(f"d loss/d {name} along a random direction: {analytic:.8f} "
              f"(finite differences {fd:.8f})")
        if not np.isclose(analytic, fd, rtol=1e-5, atol=1e-6):
            raise SystemExit(f"gradient of {name} disagrees with finite differences")
    print("demo OK")


if __name__ == "__main__":
    main()

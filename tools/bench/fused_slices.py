"""The fused-slice measure: the backward of ``sum(tanh(x[1:] * y[:-1]))`` against the same
expression on pre-sliced (contiguous) arrays, both ``@tc.function`` composites on one
``CompiledExecutor``, timed interleaved in one process (the goal: within 1.2x).

    python -m tidu_compile.tools.bench.fused_slices [n ...]     (default 1e3 1e5 1e6 1e7)

Prints, per n, the median backward time of each and their ratio (the sliced one's
kernel reads ``x`` at ``i + 1`` and writes the padded cotangents in place).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["main", "measure_ratio"]


def _timed(call: Callable[[], Any], repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        call()
    return (time.perf_counter() - start) / repeats


def measure_ratio(
    n: int, rounds: int = 15, seed: int = 0, repeats: int | None = None
) -> tuple[float, float]:
    """Median seconds per backward: (sliced, pre-sliced), interleaved round by round of
    ``repeats`` calls each (default: about 2e7 elements' worth)."""
    import tidu_compile as tc
    from tidu_compile.executors.compiled import CompiledExecutor

    executor = CompiledExecutor(cache_dir=False)

    @tc.function
    def sliced(x: Any, y: Any) -> Any:
        return tc.sum(tc.tanh(x[1:] * y[:-1]))

    @tc.function
    def plain(xs: Any, ys: Any) -> Any:
        return tc.sum(tc.tanh(xs * ys))

    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(n + 1), rng.standard_normal(n + 1)
    x, y = tc.tensor(a, requires_grad=True), tc.tensor(b, requires_grad=True)
    xs = tc.tensor(a[1:].copy(), requires_grad=True)
    ys = tc.tensor(b[:-1].copy(), requires_grad=True)
    loss_sliced, loss_plain = sliced(x, y), plain(xs, ys)

    def backward_sliced() -> Any:
        return tc.grad(loss_sliced, [x, y], executor=executor)

    def backward_plain() -> Any:
        return tc.grad(loss_plain, [xs, ys], executor=executor)

    gx, gy = backward_sliced()
    px, py = backward_plain()
    assert np.allclose(gx[1:], px) and np.allclose(gy[:-1], py)  # the same gradients
    repeats = repeats or max(3, min(10_000, int(2e7 // n)))
    times: list[tuple[float, float]] = []
    for _ in range(rounds):
        times.append((_timed(backward_sliced, repeats), _timed(backward_plain, repeats)))
    first, second = zip(*times, strict=True)
    return float(np.median(first)), float(np.median(second))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    sizes = [int(float(a)) for a in args] or [10**3, 10**5, 10**6, 10**7]
    for n in sizes:
        sliced, plain = measure_ratio(n)
        print(f"n={n:>9}: x[1:]*y[:-1] {sliced * 1e6:10.1f} us   pre-sliced "
              f"{plain * 1e6:10.1f} us   ratio {sliced / plain:.3f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

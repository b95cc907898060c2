"""Throughput of the expanded math functions vs numpy and vs libm/libmvec (run by hand).

    .venv/bin/python tests/mathpoly/bench_throughput.py [n]

One thread, outputs preallocated, median of 30 calls after a warm-up; Gelem/s.
"poly" is ``expand-math-polynomials``; "libmvec" the previous lowering (llvm
intrinsics + glibc's vector variants where the host has them, else scalar libm).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
from mathpoly_support import DTYPES, OPS, compile_unary


def _median_seconds(fn: Callable[[], object], repeat: int = 30) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _inputs(op: str, dtype: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if op == "log":
        x = rng.uniform(1e-3, 1e3, n)
    elif op == "exp":
        x = rng.uniform(-80, 80, n)
    elif op == "tanh":
        x = rng.uniform(-5, 5, n)
    else:
        x = rng.uniform(-100, 100, n)
    return x.astype(DTYPES[dtype])


def main(n: int) -> None:
    print(f"n = {n}, Gelem/s (higher is better)")
    print(f"{'op':5} {'dtype':5} {'poly':>7} {'numpy':>7} {'libmvec':>8} {'poly/numpy':>11}")
    for dtype in ("f64", "f32"):
        for op in OPS:
            x = _inputs(op, dtype, n)
            out = np.empty_like(x)
            poly = compile_unary(op, dtype)
            libm = compile_unary(op, dtype, expand=False, vector_math=None)
            ufunc = getattr(np, op)
            t_poly = _median_seconds(lambda: poly(x, out))  # noqa: B023
            t_numpy = _median_seconds(lambda: ufunc(x, out=out))  # noqa: B023
            t_libm = _median_seconds(lambda: libm(x, out))  # noqa: B023
            rate = [n / t / 1e9 for t in (t_poly, t_numpy, t_libm)]
            print(f"{op:5} {dtype:5} {rate[0]:7.2f} {rate[1]:7.2f} {rate[2]:8.2f} "
                  f"{t_numpy / t_poly:10.2f}x", flush=True)


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000)

"""A Gaussian-process likelihood with a hand-written Cholesky, per-op, on a shared disk
cache (issue 25's ``wrong_grad_from_disk_cache.py``, made small): run by
``test_stale_kernels`` in fresh interpreters, one after another on ONE cache directory.
The first compiles every node; the later ones load them (and shape classes made for
other nodes) from disk. Every call's gradient must be the reference's.

    python disk_cache_gp.py CACHE_DIR N CALLS

prints one JSON line: ``{"wrong": ..., "calls": ..., "compiles": ..., "disk_hits": ...,
"generic_hits": ...}``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as onp

import tidu_compile as tc
import tidu_compile.numpy as np
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor


def cholesky(a: Any) -> Any:
    """Column by column, with slices, ``dot`` and ``stack``."""
    cols: list[Any] = []
    for j in range(a.shape[0]):
        s = a[j:, j]
        if j > 0:
            lp = np.stack(cols, axis=1)
            s = s - np.dot(lp[j:, :], lp[j, :])
        cols.append(np.concatenate([np.zeros(j), s / np.sqrt(s[0])]))
    return np.stack(cols, axis=1)


def solve_lower(lower: Any, b: Any) -> Any:
    z: list[Any] = []
    for i in range(lower.shape[0]):
        acc = b[i] if i == 0 else b[i] - np.dot(lower[i, :i], np.stack(z))
        z.append(acc / lower[i, i])
    return np.stack(z)


def solve_upper(upper: Any, b: Any) -> Any:
    n = upper.shape[0]
    z: list[Any] = [None] * n
    for i in reversed(range(n)):
        acc = b[i] if i == n - 1 else b[i] - np.dot(upper[i, i + 1 :], np.stack(z[i + 1 :]))
        z[i] = acc / upper[i, i]
    return np.stack(z)


def main(cache: str, n: int, calls: int) -> dict[str, int]:
    executor = CompiledExecutor(cache_dir=cache, background=False)
    tc.set_default_executor(executor)
    r = onp.random.RandomState(0)
    x = onp.sort(r.uniform(-3, 3, size=(n, 1)), axis=0)
    y = onp.sin(2 * x[:, 0]) + 0.1 * r.randn(n)

    def likelihood(theta: Any) -> Any:
        sq = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        k = np.exp(theta[1]) * np.exp(-0.5 * sq / np.exp(2 * theta[0]))
        k = k + (np.exp(theta[2]) + 1e-6) * np.eye(n)
        lower = cholesky(k)
        return np.dot(y, solve_upper(lower.T, solve_lower(lower, y)))

    theta = onp.array([0.0, 0.0, -2.0])
    with tc.use_executor(tc.ReferenceExecutor()):
        reference = func.grad(likelihood)(theta).numpy()
    wrong = 0
    for _ in range(calls):
        got = func.grad(likelihood)(theta).numpy()
        wrong += not onp.allclose(got, reference, rtol=1e-9)
    stats = executor.stats
    return {"wrong": wrong, "calls": calls, "compiles": stats.compiles,
            "disk_hits": stats.disk_hits, "generic_hits": stats.generic_hits}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))

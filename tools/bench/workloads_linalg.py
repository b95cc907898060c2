"""The linear-algebra workload of the benchmark: W7, a Gaussian-process marginal
likelihood (issue 21), for n = 256, 512 and 1024 points in 2-d, f64:

    K = exp(-|x_i - x_j|² / (2 ℓ²)) + σ² I,  L = cholesky(K),  α = cho_solve(L, y)
    nll = ½ yᵀ α + Σ log diag(L) + n/2 log 2π

the gradients of the points ``X``, ``log ℓ`` and ``log σ²``. The hand-written gradient:
``dK = ½ (K⁻¹ - α αᵀ)``, ``d log σ² = σ² tr(dK)``, ``d log ℓ = Σ dK ∘ K_f ∘ D / ℓ²``
(``K_f`` the kernel without noise, ``D`` the squared distances), ``dX = -(rowsum(W) X -
W X)`` with ``W = 2 dK ∘ K_f / ℓ²``. ``torch_loss`` and ``jax_loss`` are the peers'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .row import Workload, recorded, seeded

__all__ = ["GROUPS", "jax_loss", "make_w7", "torch_loss", "workloads"]

GROUPS = ("W7",)

_HALF_LOG_TWO_PI = 0.5 * float(np.log(2 * np.pi))


def make_w7(n: int, composite: bool = False) -> Workload:
    """W7: the GP negative log marginal likelihood of ``n`` points."""

    def make_inputs(seed: int) -> list[np.ndarray]:
        rng = seeded(seed, 7)
        x = rng.uniform(-3.0, 3.0, (n, 2))
        y = np.sin(x[:, 0]) * np.cos(x[:, 1]) + 0.1 * rng.standard_normal(n)
        return [x, y, np.array(0.0), np.array(np.log(0.1))]

    def loss(x: Any, y: Any, log_scale: Any, log_noise: Any) -> Any:
        import tidu_compile.numpy as tnp
        import tidu_compile.scipy.linalg as tsl

        squared = tnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        kernel = tnp.exp(-0.5 * squared / tnp.exp(2 * log_scale))
        kernel = kernel + tnp.exp(log_noise) * np.eye(n)
        factor = tnp.linalg.cholesky(kernel)
        alpha = tsl.cho_solve((factor, True), y)
        return (0.5 * tnp.sum(y * alpha) + tnp.sum(tnp.log(tnp.diagonal(factor)))
                + n * _HALF_LOG_TWO_PI)  # fmt: skip

    def tidu_loss(*args: Any) -> Any:
        return recorded(loss, composite)(*args)

    def numpy_forward(x: np.ndarray, y: np.ndarray, log_scale: np.ndarray,
                      log_noise: np.ndarray) -> Any:  # fmt: skip
        squared = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
        scale2 = np.exp(2 * log_scale)
        free = np.exp(-0.5 * squared / scale2)
        kernel = free + np.exp(log_noise) * np.eye(n)
        inverse = np.linalg.inv(kernel)
        return x, squared, scale2, free, inverse, inverse @ y, np.exp(log_noise)

    def numpy_backward(saved: Any) -> list[np.ndarray]:
        x, squared, scale2, free, inverse, alpha, noise = saved
        d_kernel = 0.5 * (inverse - np.outer(alpha, alpha))
        weights = 2 * d_kernel * free / scale2
        d_x = -(weights.sum(axis=1)[:, None] * x - weights @ x)
        d_scale = np.sum(d_kernel * free * squared / scale2)
        return [d_x, np.asarray(d_scale), np.asarray(noise * np.trace(d_kernel))]

    recording = "composite" if composite else "per-op"
    return Workload(
        key=f"W7 n={n}{' composite' if composite else ''}",
        group="W7",
        description=f"GP marginal likelihood (cholesky, cho_solve), {n} points, f64, "
        f"{recording}",
        dtype="float64",
        input_names=("X", "y", "log_scale", "log_noise"),
        grad_inputs=(0, 2, 3),
        size=n,
        make_inputs=make_inputs,
        tidu_loss=tidu_loss,
        numpy_forward=numpy_forward,
        numpy_backward=numpy_backward,
        recording=recording,
        peer_key=f"W7 n={n}",
    )


def workloads(quick: bool = False) -> list[Workload]:
    """The W7 rows (``quick``: n = 256 only)."""
    sizes = (256,) if quick else (256, 512, 1024)
    return [*(make_w7(n) for n in sizes), *(make_w7(n, composite=True) for n in sizes)]


# ------------------------------------------------------------------ peers


def torch_loss(workload: Workload, args: Sequence[Any]) -> Any:
    import torch

    x, y, log_scale, log_noise = args
    n = workload.size
    squared = torch.sum((x[:, None, :] - x[None, :, :]) ** 2, dim=-1)
    kernel = torch.exp(-0.5 * squared / torch.exp(2 * log_scale))
    kernel = kernel + torch.exp(log_noise) * torch.eye(n, dtype=x.dtype)
    factor = torch.linalg.cholesky(kernel)
    alpha = torch.cholesky_solve(y[:, None], factor)[:, 0]
    return (0.5 * torch.sum(y * alpha) + torch.sum(torch.log(torch.diagonal(factor)))
            + n * _HALF_LOG_TWO_PI)  # fmt: skip


def jax_loss(workload: Workload, args: Sequence[Any]) -> Any:
    import jax.numpy as jnp
    import jax.scipy.linalg

    x, y, log_scale, log_noise = args
    n = workload.size
    squared = jnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    kernel = jnp.exp(-0.5 * squared / jnp.exp(2 * log_scale))
    kernel = kernel + jnp.exp(log_noise) * jnp.eye(n)
    factor = jnp.linalg.cholesky(kernel)
    alpha = jax.scipy.linalg.cho_solve((factor, True), y)
    return (0.5 * jnp.sum(y * alpha) + jnp.sum(jnp.log(jnp.diagonal(factor)))
            + n * _HALF_LOG_TWO_PI)  # fmt: skip

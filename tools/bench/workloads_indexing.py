"""The indexing and contraction workloads of the benchmark (``workloads`` holds the suite):

* W5 ``sum(log_softmax(X @ W)[arange(n), labels])``, n = 4096 rows of 1024 features,
  100 classes, f64; the gradient of ``W``. ``log_softmax`` subtracts the row maximum by
  hand (``tc.max`` when the frontend has it, else the maximum as a constant: the result
  does not depend on the shift, so neither does the gradient);
* W6 a chain ``einsum('bij,bjk->bik')`` of three batches of 64 matrices 128x128, f64;
  the gradients of all three.

``torch_loss`` and ``jax_loss`` give the peers' versions of the same losses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .row import Workload, recorded, seeded

__all__ = ["GROUPS", "jax_loss", "make_w5", "make_w6", "torch_loss", "workloads"]

GROUPS = ("W5", "W6")


# ------------------------------------------------------------------ W5


def _row_max(z: Any) -> Any:
    import tidu_compile as tc

    maximum = getattr(tc, "max", None)
    if maximum is not None:
        return maximum(z, axis=1, keepdims=True)
    return tc.tensor(z.numpy().max(axis=1, keepdims=True))  # a constant shift


def make_w5(rows: int = 4096, features: int = 1024, classes: int = 100,
            composite: bool = False) -> Workload:  # fmt: skip
    """W5: the summed log-likelihood of integer labels under a linear softmax model."""

    def make_inputs(seed: int) -> list[np.ndarray]:
        rng = seeded(seed, 5)
        x = rng.standard_normal((rows, features))
        w = rng.standard_normal((features, classes)) * features**-0.5
        return [x, w, rng.integers(0, classes, rows)]

    def loss(x: Any, w: Any, labels: Any) -> Any:
        import tidu_compile as tc

        z = x @ w
        shifted = z - _row_max(z)
        log_p = shifted - tc.log(tc.sum(tc.exp(shifted), axis=1, keepdims=True))
        return tc.sum(log_p[np.arange(rows), labels])

    def tidu_loss(x: Any, w: Any, labels: Any) -> Any:
        return recorded(loss, composite)(x, w, labels)

    def numpy_forward(x: np.ndarray, w: np.ndarray, labels: np.ndarray) -> Any:
        z = x @ w
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return x, e / e.sum(axis=1, keepdims=True), labels

    def numpy_backward(saved: Any) -> list[np.ndarray]:
        x, p, labels = saved
        dz = -p  # d/dz sum(log_softmax(z)[r, labels]) = onehot - softmax
        dz[np.arange(rows), labels] += 1.0
        return [x.T @ dz]

    recording = "composite" if composite else "per-op"
    size_text = "" if (rows, features, classes) == (4096, 1024, 100) else (
        f" {rows}x{features}x{classes}")
    return Workload(
        key=f"W5{size_text}{' composite' if composite else ''}",
        group="W5",
        description=f"sum(log_softmax(X@W)[arange(n), labels]), X {rows}x{features}, "
        f"{classes} classes, f64, {recording}",
        dtype="float64",
        input_names=("X", "W", "labels"),
        grad_inputs=(1,),
        size=rows,
        make_inputs=make_inputs,
        tidu_loss=tidu_loss,
        numpy_forward=numpy_forward,
        numpy_backward=numpy_backward,
        recording=recording,
        peer_key=f"W5{size_text}",
    )


# ------------------------------------------------------------------ W6

W6_SPEC = "bij,bjk->bik"


def make_w6(batch: int = 64, size: int = 128, composite: bool = False) -> Workload:
    """W6: ``sum(einsum(W6_SPEC, einsum(W6_SPEC, A, B), C))``; gradients of A, B, C."""

    def make_inputs(seed: int) -> list[np.ndarray]:
        rng = seeded(seed, 6)
        return [rng.standard_normal((batch, size, size)) * size**-0.5 for _ in range(3)]

    def loss(a: Any, b: Any, c: Any) -> Any:
        import tidu_compile as tc

        return tc.sum(tc.einsum(W6_SPEC, tc.einsum(W6_SPEC, a, b), c))

    def tidu_loss(a: Any, b: Any, c: Any) -> Any:
        return recorded(loss, composite)(a, b, c)

    def numpy_forward(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Any:
        return a, b, c, a @ b

    def numpy_backward(saved: Any) -> list[np.ndarray]:
        a, b, c, ab = saved
        ones = np.ones((batch, size, size))
        d_ab = ones @ c.transpose(0, 2, 1)
        return [d_ab @ b.transpose(0, 2, 1), a.transpose(0, 2, 1) @ d_ab,
                ab.transpose(0, 2, 1) @ ones]  # fmt: skip

    recording = "composite" if composite else "per-op"
    size_text = "" if (batch, size) == (64, 128) else f" {batch}x{size}x{size}"
    return Workload(
        key=f"W6{size_text}{' composite' if composite else ''}",
        group="W6",
        description=f"einsum('{W6_SPEC}') chain of 3, batch {batch} of {size}x{size}, f64, "
        f"{recording}",
        dtype="float64",
        input_names=("A", "B", "C"),
        grad_inputs=(0, 1, 2),
        size=batch,
        make_inputs=make_inputs,
        tidu_loss=tidu_loss,
        numpy_forward=numpy_forward,
        numpy_backward=numpy_backward,
        recording=recording,
        peer_key=f"W6{size_text}",
    )


def workloads(quick: bool = False) -> list[Workload]:
    """The W5 and W6 rows (``quick``: smaller problems)."""
    if quick:
        return [make_w5(512, 256, 50), make_w5(512, 256, 50, composite=True),
                make_w6(16, 64), make_w6(16, 64, composite=True)]  # fmt: skip
    return [make_w5(), make_w5(composite=True), make_w6(), make_w6(composite=True)]


# ------------------------------------------------------------------ peers


def torch_loss(workload: Workload, args: Sequence[Any]) -> Any:
    import torch

    if workload.group == "W5":
        x, w, labels = args
        log_p = torch.log_softmax(x @ w, dim=1)
        return torch.sum(log_p[torch.arange(workload.size), labels])
    a, b, c = args
    return torch.sum(torch.einsum(W6_SPEC, torch.einsum(W6_SPEC, a, b), c))


def jax_loss(workload: Workload, args: Sequence[Any]) -> Any:
    import jax
    import jax.numpy as jnp

    if workload.group == "W5":
        x, w, labels = args
        log_p = jax.nn.log_softmax(x @ w, axis=1)
        return jnp.sum(log_p[jnp.arange(workload.size), labels])
    a, b, c = args
    return jnp.sum(jnp.einsum(W6_SPEC, jnp.einsum(W6_SPEC, a, b), c))

"""One benchmark row (``Workload``) and what the recipes of every row use.

The recipes are in ``workloads`` (W1-W4 and the suite) and ``workloads_indexing``
(W5, W6): each makes a ``Workload`` from seeded inputs (``seeded``), a loss recorded per
op or as one ``@tc.function`` node (``recorded``), and the hand-written numpy gradient
every other gradient is checked against (``relative_errors``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["COMPOSITE_UNAVAILABLE", "Workload", "recorded", "relative_errors", "seeded"]

#: The row text when ``tidu_compile.function`` does not exist.
COMPOSITE_UNAVAILABLE = "n/a (composite recording not available)"


@dataclass(frozen=True)
class Workload:
    """One benchmark row.

    ``key`` names the row (``"W1 n=1e6"``); ``peer_key`` names the problem the numpy,
    torch and jax columns measure (rows that differ only in how tidu records share it).
    ``recording`` is ``"per-op"`` (the ordinary frontend) or ``"composite"`` (the whole
    function recorded as one tape node by ``tidu_compile.function``).
    """

    key: str
    group: str
    description: str
    dtype: str
    input_names: tuple[str, ...]
    grad_inputs: tuple[int, ...]
    size: int
    make_inputs: Callable[[int], list[np.ndarray]]
    tidu_loss: Callable[..., Any]
    numpy_forward: Callable[..., Any]
    numpy_backward: Callable[[Any], list[np.ndarray]]
    recording: str = "per-op"
    peer_key: str = ""
    #: The full step by hand, ``(loss, *gradients)`` from the inputs, each intermediate
    #: computed once (W2, W3: the forward keeping what the backward reads, then the
    #: backward); None where the bench has none.
    numpy_step: Callable[..., Any] | None = None

    @property
    def problem(self) -> str:
        """The key the numpy and peer measurements are filed under."""
        return self.peer_key or self.key

    @property
    def grad_names(self) -> tuple[str, ...]:
        """Names of the differentiated inputs, in gradient order."""
        return tuple(self.input_names[i] for i in self.grad_inputs)

    @property
    def rtol(self) -> float:
        """Gradient-check tolerance, relative to the reference's largest magnitude."""
        return 1e-3 if np.dtype(self.dtype) == np.float32 else 1e-6

    def numpy_gradients(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The hand-written gradients at ``arrays`` (forward then backward)."""
        return self.numpy_backward(self.numpy_forward(*arrays))


def relative_errors(got: Sequence[Any], want: Sequence[np.ndarray]) -> list[float]:
    """Per gradient: ``max |got - want| / max |want|`` (``inf`` for a missing or misshapen one).

    A reference that is all zeros is compared absolutely.
    """
    errors: list[float] = []
    for g, w in zip(got, want, strict=True):
        if g is None or np.shape(g) != np.shape(w):
            errors.append(float("inf"))
            continue
        reference = np.asarray(w, dtype=np.float64)
        scale = float(np.max(np.abs(reference))) if reference.size else 0.0
        diff = np.abs(np.asarray(g, dtype=np.float64) - reference)
        worst = float(np.max(diff)) if diff.size else 0.0
        errors.append(worst / scale if scale > 0 else worst)
    return errors


def seeded(seed: int, salt: int) -> np.random.Generator:
    """The generator of a row's inputs: the same ``seed`` and ``salt`` give the same
    arrays in every process."""
    return np.random.default_rng([seed, salt])


def recorded(loss: Callable[..., Any], composite: bool) -> Callable[..., Any]:
    """``loss`` itself (per-op recording) or wrapped by ``tidu_compile.function``: once
    per ``loss`` (``_composite``), so later calls replay its trace as a real loop does."""
    if not composite:
        return loss
    import tidu_compile as tc

    if getattr(tc, "function", None) is None:
        raise NotImplementedError(COMPOSITE_UNAVAILABLE)
    return _composite(loss)


@functools.cache
def _composite(loss: Callable[..., Any]) -> Callable[..., Any]:
    import tidu_compile as tc

    return tc.function(loss)  # type: ignore[no-any-return]

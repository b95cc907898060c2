"""PyTorch's names of functions numpy spells otherwise: ``randn``, ``rand``,
``manual_seed``, ``cat`` and ``from_numpy``.

``randn(*size)`` and ``rand(*size)`` draw from one module generator (numpy's PCG64,
seeded by ``manual_seed``, as ``torch.manual_seed`` seeds torch's); their default dtype is
float64, numpy's, not torch's float32 (``dtype="float32"`` gives torch's). They take
``requires_grad=True``, as the constructors do (``creation``). ``cat(tensors, dim=0)``
is ``concatenate``; ``from_numpy(a)`` is ``asarray``: a copy (torch's shares ``a``'s
memory; a tensor's data never changes, so a later write to ``a`` is not seen).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.frontend.creation import asarray
from tidu_compile.frontend.joining import concatenate
from tidu_compile.frontend.tensor import Tensor

__all__ = ["cat", "from_numpy", "manual_seed", "rand", "randn"]

_generator = np.random.default_rng()
_lock = forksafe.Lock()


def manual_seed(seed: int) -> None:
    """Seed the generator of ``randn`` and ``rand`` (``torch.manual_seed``)."""
    global _generator
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"manual_seed: expected a non-negative integer, got {seed!r}")
    with _lock:
        _generator = np.random.default_rng(int(seed))


def _size(size: tuple[Any, ...], name: str) -> tuple[int, ...]:
    """``randn(2, 3)`` and ``randn((2, 3))`` alike."""
    shape = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0
               for n in shape):  # fmt: skip
        raise TypeError(f"{name}: the size must be non-negative integers, got {size!r}")
    return tuple(int(n) for n in shape)


def _drawn(data: np.ndarray, dtype: Any, requires_grad: bool, name: str) -> Tensor:
    kind = np.dtype(dtype)
    if kind.kind != "f":
        raise TypeError(f"{name}: dtype must be a float dtype, got {kind}")
    tensor = Tensor(data.astype(kind, copy=False))
    return tensor.requires_grad_() if requires_grad else tensor


def randn(*size: Any, dtype: Any = "float64", requires_grad: bool = False) -> Tensor:
    """Standard normal samples of ``size`` (``torch.randn``; float64 by default)."""
    shape = _size(size, "randn")
    with _lock:
        data = _generator.standard_normal(shape)
    return _drawn(data, dtype, requires_grad, "randn")


def rand(*size: Any, dtype: Any = "float64", requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) of ``size`` (``torch.rand``; float64 by default)."""
    shape = _size(size, "rand")
    with _lock:
        data = _generator.random(shape)
    return _drawn(data, dtype, requires_grad, "rand")


def cat(tensors: Sequence[Any], dim: int = 0) -> Tensor:
    """``concatenate(tensors, axis=dim)`` (``torch.cat``)."""
    return concatenate(tensors, axis=dim)


def from_numpy(a: np.ndarray) -> Tensor:
    """``a`` as a tensor (``torch.from_numpy``; ``asarray``): numpy arrays only."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(a).__name__}")
    return asarray(a)

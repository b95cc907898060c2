"""Random inputs, the real inner product, central finite differences and tolerances.

Complex convention (DESIGN.md): for a real loss ``L`` of complex ``z`` the gradient is
``2 dL/dconj(z) = dL/dRe(z) + 1j dL/dIm(z)``, which is what ``central_difference_grad``
returns for complex inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

FD_STEP = 1e-6

_LOW = ("float32", "complex64")
_WIDE = {"float32": "float64", "complex64": "complex128"}


def is_low_precision(*dtypes: object) -> bool:
    """True if any of ``dtypes`` is single precision."""
    return any(np.dtype(d).name in _LOW for d in dtypes)


def widen_dtype(dtype: object) -> str:
    """float32 -> float64, complex64 -> complex128; others unchanged."""
    name = np.dtype(dtype).name
    return _WIDE.get(name, name)


def adjoint_tolerance(*dtypes: object) -> float:
    return 1e-4 if is_low_precision(*dtypes) else 1e-10


def grad_tolerance(*dtypes: object) -> float:
    return 2e-3 if is_low_precision(*dtypes) else 1e-6


def random_array(
    rng: np.random.Generator, shape: Sequence[int], dtype: object, kind: str = "normal"
) -> np.ndarray:
    """A random array of ``dtype``.

    ``kind``: ``normal`` (or ``real``); ``positive`` (real part in [0.5, 2], imaginary
    part in [-0.5, 0.5]: away from zero and from the branch cut of log/sqrt);
    ``nonzero`` (modulus in [0.5, 2], random sign or phase); ``open_unit`` (real part in
    [-0.8, 0.8], imaginary part in [-0.1, 0.1]); ``above_one`` (real part in [1.25, 3],
    imaginary part in [-0.1, 0.1]); ``bool``. The kinds other than ``bool`` are the op
    table's ``DOMAINS``.
    """
    shape = tuple(shape)
    name = np.dtype(dtype).name
    if kind == "bool" or name == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":  # integers: small ones of both signs (signed)
        return _random_integers(rng, shape, np.dtype(dtype), kind)
    complex_ = name.startswith("complex")
    if kind in ("normal", "real"):
        data = rng.standard_normal(shape)
        if complex_:
            data = data + 1j * rng.standard_normal(shape)
    elif kind == "positive":
        data = rng.uniform(0.5, 2.0, shape)
        if complex_:
            data = data + 1j * rng.uniform(-0.5, 0.5, shape)
    elif kind == "nonzero":
        modulus = rng.uniform(0.5, 2.0, shape)
        if complex_:
            data = modulus * np.exp(1j * rng.uniform(-np.pi, np.pi, shape))
        else:
            data = modulus * rng.choice([-1.0, 1.0], shape)
    elif kind in ("open_unit", "above_one"):
        low, high = (-0.8, 0.8) if kind == "open_unit" else (1.25, 3.0)
        data = rng.uniform(low, high, shape)
        if complex_:
            data = data + 1j * rng.uniform(-0.1, 0.1, shape)
    else:
        raise ValueError(f"kind: unknown {kind!r}")
    return np.asarray(data).astype(name)


def _random_integers(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, kind: str
) -> np.ndarray:
    """Integers in -20..20 (0..40 unsigned); ``positive`` and ``nonzero`` exclude 0."""
    low = 0 if dtype.kind == "u" else -20
    data = rng.integers(low, low + 41, shape)
    if kind in ("positive", "nonzero", "above_one"):
        data = np.where(data == 0, 1, np.abs(data) if kind != "nonzero" else data)
    return data.astype(dtype)


def real_inner(a: np.ndarray, b: np.ndarray) -> float:
    """``Re(sum(conj(a) * b))`` in double precision: the real inner product."""
    a = np.asarray(a, dtype=np.complex128)
    b = np.asarray(b, dtype=np.complex128)
    if a.shape != b.shape:
        raise ValueError(f"real_inner: shapes differ: {a.shape} and {b.shape}")
    return float(np.sum(np.conj(a) * b).real)


def central_difference_grad(
    loss: Callable[[list[np.ndarray]], float],
    inputs: Sequence[np.ndarray],
    index: int,
    step: float = FD_STEP,
) -> np.ndarray:
    """Central-difference gradient of the real ``loss(inputs)`` in ``inputs[index]``.

    Complex inputs are perturbed in their real and imaginary parts; the result is
    ``dL/dRe + 1j dL/dIm`` (the ``2 dL/dconj(z)`` convention).
    """
    base = [np.array(x, copy=True) for x in inputs]
    x = base[index]
    complex_ = np.iscomplexobj(x)
    out = np.zeros(x.shape, dtype=np.complex128 if complex_ else np.float64)
    directions = (1.0, 1j) if complex_ else (1.0,)
    for position in np.ndindex(x.shape):
        for direction in directions:
            plus = [np.array(v, copy=True) for v in base]
            minus = [np.array(v, copy=True) for v in base]
            plus[index][position] += step * direction
            minus[index][position] -= step * direction
            slope = (loss(plus) - loss(minus)) / (2 * step)
            out[position] += slope * direction
    return out


def assert_grad_close(actual: np.ndarray, expected: np.ndarray, tol: float, what: str = "") -> None:
    """Elementwise closeness, relative to the largest magnitude of ``expected``."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol * scale, err_msg=what)

"""Accuracy of ``expand-math-polynomials``: compiled kernels against exact references.

Each (function, dtype) kernel ``y[i] = f(x[i])`` is expanded, lowered, compiled and
called on 100k points per input range (wide, unit, tiny magnitudes, near the
overflow/underflow thresholds, subnormals, near multiples of pi/2, random bit
patterns). Errors are measured in ulps of the correctly rounded result against a
wider reference (long double for f64, f64 for f32) and must stay below ``BOUNDS``
(the bounds documented in ``passes/expand_math_polynomials.py``). Integer ulp
distances (bit views) are checked against the correctly rounded result and, loosely,
against numpy. Edge values must come out bit for bit (signed zeros, NaN-ness).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import numpy as np
import pytest
from mathpoly_support import DTYPES, OPS, compile_unary, reference, ulp_distance, ulp_error

N = 100_000

BOUNDS = {"exp": 1.0, "log": 1.0, "tanh": 1.0, "sin": 1.0, "cos": 1.0}
"""Max error in ulps (same for f32 and f64), the pass's documented bound."""

NUMPY_DISTANCE = {"f64": 3, "f32": 8}
"""Loose bound on the integer ulp distance to numpy's own result (numpy's float32
functions are several ulps off)."""

TRIG_LIMIT = {"f64": 1.5 * 2.0**51, "f32": 1.5 * 2.0**22}

_KERNELS: dict[tuple[str, str], Callable[..., np.ndarray]] = {}


def kernel(op: str, dtype: str) -> Callable[..., np.ndarray]:
    if (op, dtype) not in _KERNELS:
        _KERNELS[op, dtype] = compile_unary(op, dtype)
    return _KERNELS[op, dtype]


def _log_uniform(rng: np.random.Generator, lo: float, hi: float, signed: bool = True
                 ) -> np.ndarray:
    x = 10.0 ** rng.uniform(lo, hi, N)
    return x * rng.choice([-1.0, 1.0], N) if signed else x


def _bits(rng: np.random.Generator, dtype: str) -> np.ndarray:
    utype = np.uint64 if dtype == "f64" else np.uint32
    return rng.integers(0, np.iinfo(utype).max, N, dtype=utype, endpoint=True)


def input_ranges(op: str, dtype: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(f"{op}-{dtype}".encode()))
    f64 = dtype == "f64"
    subnormal_exp = -323 if f64 else -45
    ranges: dict[str, np.ndarray] = {}
    if op == "exp":
        hi, lo = (709.79, -745.14) if f64 else (88.73, -103.98)
        ranges["wide"] = rng.uniform(lo - 5, hi + 5, N)
        ranges["unit"] = rng.uniform(-1, 1, N)
        ranges["tiny"] = _log_uniform(rng, subnormal_exp, -3)
        ranges["near overflow"] = rng.uniform(hi - 1, hi, N)
        ranges["subnormal results"] = rng.uniform(lo, lo + (37 if f64 else 17), N)
    elif op == "log":
        ranges["wide"] = _log_uniform(rng, subnormal_exp + 1, 308 if f64 else 38, False)
        ranges["near one"] = 1 + rng.uniform(-0.3, 0.42, N)
        ranges["very near one"] = 1 + rng.uniform(-1e-6, 1e-6, N)
        mantissa = (1 << 52) - 1 if f64 else (1 << 23) - 1
        ranges["subnormal"] = (_bits(rng, dtype) & mantissa).view(DTYPES[dtype])
    elif op == "tanh":
        ranges["wide"] = rng.uniform(-25, 25, N)
        ranges["unit"] = rng.uniform(-1, 1, N)
        ranges["tiny"] = _log_uniform(rng, subnormal_exp, -3)
        ranges["saturating"] = rng.uniform(5, 21, N) * rng.choice([-1, 1], N)
    else:
        big = 1e10 if f64 else 1e6
        ranges["period"] = rng.uniform(-np.pi, np.pi, N)
        ranges["medium"] = rng.uniform(-1e4, 1e4, N)
        ranges["large"] = _log_uniform(rng, 4, np.log10(big))
        ranges["up to the limit"] = _log_uniform(rng, np.log10(big),
                                                 np.log10(TRIG_LIMIT[dtype]))
        # The doubles (floats) nearest to k pi/2: |r| as small as it gets.
        k = rng.integers(-(10**6), 10**6, N).astype(np.float64)
        ranges["near multiples of pi/2"] = k * (np.pi / 2)
        ranges["tiny"] = _log_uniform(rng, subnormal_exp, -3)
    ranges["random bits"] = _bits(rng, dtype).view(DTYPES[dtype])
    return {name: np.asarray(x).astype(DTYPES[dtype]) for name, x in ranges.items()}


CASES = [(op, dtype) for dtype in DTYPES for op in OPS]


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_max_ulp_error(op: str, dtype: str) -> None:
    f = kernel(op, dtype)
    for name, x in input_ranges(op, dtype).items():
        y = f(x)
        exact = reference(op, x)
        if op in ("sin", "cos"):
            out_of_range = ~(np.abs(x) <= TRIG_LIMIT[dtype])
            assert np.isnan(y[out_of_range]).all(), f"{name}: no NaN beyond the limit"
            keep = ~out_of_range
            x, y, exact = x[keep], y[keep], exact[keep]
        err = ulp_error(y, exact)
        worst = int(np.argmax(err))
        assert err.max() < BOUNDS[op], (
            f"{op} {dtype} {name}: {err.max():.3f} ulp at x={x[worst]!r}: "
            f"{y[worst]!r} vs {exact[worst]!r}")
        with np.errstate(all="ignore"):
            rounded = exact.astype(y.dtype)
            theirs = getattr(np, op)(x)
        finite = np.isfinite(rounded) & np.isfinite(theirs)
        assert ulp_distance(y[finite], rounded[finite]).max() <= 1, name
        assert ulp_distance(y[finite], theirs[finite]).max() <= NUMPY_DISTANCE[dtype], name


def _special(dtype: str) -> list[float]:
    info = np.finfo(DTYPES[dtype])
    tiny, least, top = float(info.smallest_subnormal), float(info.smallest_normal), float(info.max)
    return [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, least, -least, top, -top, 1.0, -1.0]


EDGES: dict[tuple[str, str], list[float]] = {
    ("exp", "f64"): [709.782712893384, 709.7827128933841, -745.1332191019411,
                     -745.1332191019412, -708.3964185322641, 710.0, -746.0, 1e-300],
    ("exp", "f32"): [88.72283172607422, 88.72283935546875, -103.97207641601562,
                     -103.97209167480469, -87.33654022216797, 89.0, -104.0],
    ("log", "f64"): [2.0, 0.5, 1 + 2.0**-52, 1 - 2.0**-53],
    ("log", "f32"): [2.0, 0.5, 1 + 2.0**-23, 1 - 2.0**-24],
    ("tanh", "f64"): [20.0, -20.0, 19.0, 1e300, 2.0**-30],
    ("tanh", "f32"): [10.0, -10.0, 9.0, 1e30, 2.0**-15],
    ("sin", "f64"): [np.pi, np.pi / 2, 1.5 * 2.0**51, -1.5 * 2.0**51, 1e22],
    ("sin", "f32"): [np.pi, np.pi / 2, 1.5 * 2.0**22, -1.5 * 2.0**22, 1e22],
}
EDGES["cos", "f64"] = EDGES["sin", "f64"]
EDGES["cos", "f32"] = EDGES["sin", "f32"]


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_edge_values_exact(op: str, dtype: str) -> None:
    np_type = DTYPES[dtype]
    x = np.array(_special(dtype) + EDGES[op, dtype]).astype(np_type)
    if op in ("sin", "cos"):  # the first float past the limit
        x = np.append(x, np.nextafter(np_type(TRIG_LIMIT[dtype]), np_type(np.inf)))
    y = kernel(op, dtype)(x)
    with np.errstate(over="ignore"):
        expected = reference(op, x).astype(np_type)
    if op in ("sin", "cos"):  # documented: NaN beyond the limit (no slow path)
        expected[~(np.abs(x) <= TRIG_LIMIT[dtype])] = np.nan
    for xi, yi, ei in zip(x, y, expected, strict=True):
        same = np.isnan(ei) if np.isnan(yi) else yi.tobytes() == ei.tobytes()
        assert same, f"{op}({xi!r}) = {yi!r}, expected {ei!r}"


@pytest.mark.parametrize(("op", "x", "want"), [
    ("exp", 0.0, 1.0), ("exp", -0.0, 1.0), ("exp", -np.inf, 0.0), ("exp", np.inf, np.inf),
    ("exp", 709.782712893384, 1.7976931348622732e308), ("exp", 709.7827128933841, np.inf),
    ("exp", -745.1332191019411, 5e-324), ("exp", np.nan, np.nan),
    ("log", 0.0, -np.inf), ("log", -0.0, -np.inf), ("log", -1.0, np.nan),
    ("log", np.inf, np.inf), ("log", 5e-324, -744.4400719213812), ("log", 1.0, 0.0),
    ("tanh", np.inf, 1.0), ("tanh", -np.inf, -1.0), ("tanh", -0.0, -0.0),
    ("tanh", 5e-324, 5e-324), ("sin", -0.0, -0.0), ("sin", np.inf, np.nan),
    ("sin", np.nan, np.nan), ("cos", -0.0, 1.0), ("cos", -np.inf, np.nan),
])
def test_documented_edges_f64(op: str, x: float, want: float) -> None:
    y = kernel(op, "f64")(np.array([x]))[0]
    if np.isnan(want):
        assert np.isnan(y)
    else:
        assert np.float64(y).tobytes() == np.float64(want).tobytes(), f"{op}({x}) = {y!r}"

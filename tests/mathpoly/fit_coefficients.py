"""Fit the polynomial coefficients of ``passes/math_polynomials.py`` (run by hand).

    .venv/bin/python tests/mathpoly/fit_coefficients.py

Method, per table: Lawson's algorithm (iteratively reweighted least squares, which
converges to the minimax solution) on 400 Chebyshev-distributed points, everything in
mpmath at 256 bits; the error is weighted so that it is the error it causes in the
final result, relative to that result. Then the coefficients are rounded to the target
format one at a time, lowest degree first, refitting the remaining ones after each
rounding (so the rounding error of one coefficient is absorbed by the next ones). The
script prints the tables as Python source and the maximum weighted error of the
rounded coefficients on a 4000-point grid, in units of the format's epsilon.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mpmath as mp
import numpy as np

mp.mp.prec = 256

Fn = Callable[[mp.mpf], mp.mpf]


@dataclass(frozen=True)
class Table:
    name: str
    target: Fn  # function of the polynomial variable to approximate
    weight: Fn  # error weight: result error = weight * polynomial error
    lo: float
    hi: float
    degree: dict[str, int]  # per format


def _nodes(lo: float, hi: float, count: int) -> list[mp.mpf]:
    a, b = mp.mpf(lo), mp.mpf(hi)
    return [
        (a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * i + 1) / (2 * count))
        for i in range(count)
    ]


def _solve_weighted(xs: list[mp.mpf], ys: list[mp.mpf], ws: list[mp.mpf],
                    free: int, fixed: list[mp.mpf]) -> list[mp.mpf]:
    """Least squares for the ``free`` coefficients after the ``fixed`` ones."""
    k = len(fixed)
    rows, rhs = [], []
    for x, y, w in zip(xs, ys, ws, strict=True):
        known = sum((c * x**i for i, c in enumerate(fixed)), mp.mpf(0))
        rows.append([w * x ** (k + j) for j in range(free)])
        rhs.append(w * (y - known))
    a = mp.matrix(rows)
    b = mp.matrix(rhs)
    at = a.T
    sol = mp.lu_solve(at * a, at * b)
    return [sol[j] for j in range(free)]


def lawson(table: Table, degree: int, fixed: list[mp.mpf], iterations: int = 60,
           count: int = 400) -> list[mp.mpf]:
    xs = _nodes(table.lo, table.hi, count)
    ys = [table.target(x) for x in xs]
    base = [table.weight(x) for x in xs]
    lam = [mp.mpf(1) / count] * count
    free = degree + 1 - len(fixed)
    coeffs: list[mp.mpf] = []
    for _ in range(iterations):
        ws = [b * mp.sqrt(lm) for b, lm in zip(base, lam, strict=True)]
        coeffs = _solve_weighted(xs, ys, ws, free, fixed)
        full = fixed + coeffs
        errs = [abs(b * (mp.polyval(full[::-1], x) - y))
                for x, y, b in zip(xs, ys, base, strict=True)]
        lam = [lm * e for lm, e in zip(lam, errs, strict=True)]
        total = sum(lam)
        lam = [lm / total for lm in lam]
    return coeffs


def round_to(value: mp.mpf, fmt: str) -> float:
    as_double = float(value)  # 256-bit -> nearest double
    return float(np.float32(as_double)) if fmt == "f32" else as_double


def fit(table: Table, fmt: str) -> tuple[list[float], float]:
    degree = table.degree[fmt]
    fixed: list[mp.mpf] = []
    rounded: list[float] = []
    while len(rounded) < degree + 1:
        coeffs = lawson(table, degree, fixed)
        value = round_to(coeffs[0], fmt)
        rounded.append(value)
        fixed.append(mp.mpf(value))
    grid = [mp.mpf(table.lo) + (mp.mpf(table.hi) - table.lo) * i / 4000 for i in range(4001)]
    eps = mp.mpf(2) ** (-23 if fmt == "f32" else -52)
    worst = max(abs(table.weight(x) * (mp.polyval([mp.mpf(c) for c in rounded[::-1]], x)
                                       - table.target(x))) for x in grid if x != 0)
    return rounded, float(worst / eps)


def _exp_q(r: mp.mpf) -> mp.mpf:  # exp(r) = 1 + r + r^2 Q(r)
    return (mp.exp(r) - 1 - r) / r**2 if r != 0 else mp.mpf(0.5)


def _log_l(z: mp.mpf) -> mp.mpf:  # 2 atanh(s) = 2s + s z L(z), z = s^2
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) / s - 2) / z if z != 0 else mp.mpf(2) / 3


def _sin_s(z: mp.mpf) -> mp.mpf:  # sin(r) = r + r z S(z)
    r = mp.sqrt(z)
    return (mp.sin(r) - r) / (r * z) if z != 0 else mp.mpf(-1) / 6


def _cos_c(z: mp.mpf) -> mp.mpf:  # cos(r) = 1 - z/2 + z^2 C(z)
    r = mp.sqrt(z)
    return (mp.cos(r) - 1 + z / 2) / z**2 if z != 0 else mp.mpf(1) / 24


LN2_HALF = float(mp.log(2) / 2) * 1.0001
PIO4 = float(mp.pi / 4) * 1.0001
S_MAX = float((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) * 1.0001  # |f/(2+f)|, f in [-0.29, 0.41]

TABLES = [
    Table("EXP", _exp_q, lambda r: r**2 / mp.exp(r), -LN2_HALF, LN2_HALF,
          {"f64": 9, "f32": 4}),
    Table("LOG", _log_l, lambda z: z / 2, 0.0, S_MAX**2, {"f64": 6, "f32": 2}),
    Table("SIN", _sin_s, lambda z: z * mp.sqrt(z) / mp.sin(mp.sqrt(z)) if z else z,
          0.0, PIO4**2, {"f64": 5, "f32": 2}),
    Table("COS", _cos_c, lambda z: z**2 / mp.cos(mp.sqrt(z)), 0.0, PIO4**2,
          {"f64": 5, "f32": 2}),
]


def splits() -> None:
    """Constants split into a sum of format-precision pieces (each piece = RN(rest))."""
    for name, value, parts in (("LN2", mp.log(2), 2), ("PIO2", mp.pi / 2, 3),
                               ("TWO_OVER_PI", 2 / mp.pi, 2), ("LOG2E", 1 / mp.log(2), 1)):
        for fmt in ("f64", "f32"):
            rest, pieces = value, []
            for _ in range(parts):
                piece = round_to(rest, fmt)
                pieces.append(piece.hex())
                rest -= mp.mpf(piece)
            print(f"{name}_{fmt.upper()} = _hex({', '.join(map(repr, pieces))})")


def main() -> None:
    splits()
    for table in TABLES:
        for fmt in ("f64", "f32"):
            coeffs, worst = fit(table, fmt)
            body = ", ".join(repr(float(c).hex()) for c in coeffs)
            print(f"# max weighted error {worst:.3g} eps ({table.lo:.6g}..{table.hi:.6g})")
            print(f"{table.name}_{fmt.upper()} = _hex({body})")


if __name__ == "__main__":
    main()

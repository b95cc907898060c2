"""The op-table rows of the linear-algebra primitives (``ops.linalg``,
``ops.decompositions``, ``ops.complex_decompositions``, ``ops.matrix_exponential``):
well-conditioned random inputs of each op's kind, square and batched, in double
precision and (for the solves and Cholesky) single.

Generators: ``spd`` (``X X^H + n I``: Cholesky, eigh with a spread spectrum), ``general``
(``X + n I``: solves, slogdet; well conditioned), ``triangular`` (a dominant diagonal of
random sign), ``normal`` (SVD and QR: full rank almost surely, distinct values); for a
complex dtype ``X`` has a random imaginary part too (the solves, Cholesky, the complex
slogdet, eigh, SVD, QR and the matrix exponential take them).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tidu_compile import ops

Generate = Callable[[np.random.Generator], list[np.ndarray]]


def _matrix(rng: np.random.Generator, shape: tuple[int, ...], kind: str,
            dtype: str) -> np.ndarray:  # fmt: skip
    n = shape[-1]
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    if kind == "spd":
        return x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)
    if kind == "general":
        return x + n * np.eye(n)
    if kind == "triangular":
        signs = rng.choice([-1.0, 1.0], shape[:-1])
        return 0.5 * x + np.eye(n) * (n * signs)[..., None]
    return x


def inputs(kinds: tuple[str, ...], shapes: tuple[tuple[int, ...], ...], dtype: str) -> Generate:
    """A generator of one matrix (or right-hand side) per ``kinds``/``shapes`` entry."""

    def generate(rng: np.random.Generator) -> list[np.ndarray]:
        return [_matrix(rng, s, k, dtype).astype(dtype)
                for k, s in zip(kinds, shapes, strict=True)]  # fmt: skip

    return generate


#: (name, op, operand kinds, operand shapes, dtypes)
ROWS = [
    ("triangle_part0", ops.TrianglePart(0), ("normal",), ((3, 3),), ("float64", "complex128")),
    ("triangle_part_upper1", ops.TrianglePart(1, True), ("normal",), ((2, 3, 4),), ("float64",)),
    ("triangle_part-1", ops.TrianglePart(-1), ("normal",), ((4, 3),), ("float32",)),
    ("cholesky", ops.Cholesky((3, 3)), ("spd",), ((3, 3),), ("float64", "float32", "complex128")),
    ("cholesky_batched", ops.Cholesky((2, 4, 4)), ("spd",), ((2, 4, 4),), ("float64",)),
    ("slogdet", ops.Slogdet((3, 3)), ("general",), ((3, 3),), ("float64",)),
    ("slogdet_batched", ops.Slogdet((2, 3, 3)), ("general",), ((2, 3, 3),), ("float64",)),
    ("complex_slogdet", ops.ComplexSlogdet((3, 3)), ("general",), ((3, 3),), ("complex128",)),
    ("complex_slogdet_batched", ops.ComplexSlogdet((2, 3, 3)), ("general",), ((2, 3, 3),),
     ("complex64",)),
    ("eigh", ops.Eigh((3, 3)), ("spd",), ((3, 3),), ("float64",)),
    ("eigh_batched", ops.Eigh((2, 4, 4)), ("normal",), ((2, 4, 4),), ("float64",)),
    ("complex_eigh", ops.ComplexEigh((3, 3)), ("spd",), ((3, 3),), ("complex128",)),
    ("complex_eigh_batched", ops.ComplexEigh((2, 4, 4)), ("normal",), ((2, 4, 4),),
     ("complex128", "complex64")),
    ("svd_square", ops.Svd((3, 3)), ("normal",), ((3, 3),), ("float64",)),
    ("svd_tall", ops.Svd((2, 4, 3)), ("normal",), ((2, 4, 3),), ("float64",)),
    ("svd_wide", ops.Svd((3, 5)), ("normal",), ((3, 5),), ("float64",)),
    ("complex_svd_square", ops.ComplexSvd((3, 3)), ("normal",), ((3, 3),), ("complex128",)),
    ("complex_svd_tall", ops.ComplexSvd((2, 4, 3)), ("normal",), ((2, 4, 3),), ("complex128",)),
    ("complex_svd_wide", ops.ComplexSvd((3, 5)), ("normal",), ((3, 5),), ("complex128",)),
    ("qr_square", ops.Qr((3, 3)), ("normal",), ((3, 3),), ("float64", "complex128")),
    ("qr_tall", ops.Qr((2, 4, 3)), ("normal",), ((2, 4, 3),), ("float64", "complex64")),
    ("qr_tall_4x3", ops.Qr((4, 3)), ("normal",), ((4, 3),), ("complex128",)),
    ("expm", ops.Expm((3, 3)), ("normal",), ((3, 3),), ("float64", "float32", "complex128")),
    ("expm_batched", ops.Expm((2, 3, 3)), ("normal",), ((2, 3, 3),), ("float64", "complex64")),
    ("expm_frechet", ops.ExpmFrechet((3, 3)), ("normal", "normal"), ((3, 3), (3, 3)),
     ("float64", "complex128")),
    ("expm_frechet_batched", ops.ExpmFrechet((2, 2, 2)), ("normal", "normal"),
     ((2, 2, 2), (2, 2, 2)), ("float64", "complex64")),
]
for _transpose in (False, True):
    _suffix = "_t" if _transpose else ""
    ROWS += [
        (f"solve{_suffix}", ops.Solve((3, 3), (3, 2), _transpose), ("general", "normal"),
         ((3, 3), (3, 2)), ("float64", "float32", "complex128")),
        (f"solve_batched{_suffix}", ops.Solve((2, 3, 3), (2, 3, 3), _transpose),
         ("general", "normal"), ((2, 3, 3), (2, 3, 3)), ("float64",)),
    ]  # fmt: skip
    for _upper in (False, True):
        for _unit in (False, True):
            _flags = f"{'_upper' if _upper else ''}{_suffix}{'_unit' if _unit else ''}"
            _name = f"triangular_solve{_flags}"
            _op = ops.TriangularSolve((3, 3), (3, 2), _upper, _transpose, _unit)
            _dtypes = ("float64", "complex128") if _unit == _upper else ("float64",)
            ROWS.append((_name, _op, ("triangular", "normal"), ((3, 3), (3, 2)), _dtypes))
ROWS.append(("triangular_solve_batched", ops.TriangularSolve((2, 3, 3), (2, 3, 4)),
             ("triangular", "normal"), ((2, 3, 3), (2, 3, 4)), ("float64", "float32")))

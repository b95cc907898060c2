"""scipy's ``linalg`` functions, differentiable: triangular solves, Cholesky solves and
the matrix exponential.

=================================  ==================================================
function                           as
=================================  ==================================================
solve_triangular(a, b, trans,      ``triangular_solve`` (reads only ``a``'s triangle);
lower, unit_diagonal)              ``trans='C'``: ``conj(op(a)^-T conj(b))``
cholesky(a, lower)                 scipy's: ``U`` (``a = U^H U``, from the upper triangle)
                                   or ``L`` (``lower``), numpy's ``cholesky``
cho_factor(a, lower)               ``(c, lower)``, ``c = cholesky(a, lower)``; the other
                                   triangle is zero, where scipy leaves ``a``'s values
cho_solve((c, lower), b)           two triangular solves, ``A⁻¹ b`` for ``A = c c^H``
                                   (``c^H c`` when upper)
expm(a)                            ``expm`` (scipy's Padé); the derivative is
                                   ``expm_frechet``
=================================  ==================================================

Batched over leading axes (scipy's own solve_triangular is not); ``b`` a vector or a
batch of matrices; real or complex.
"""

from __future__ import annotations

from typing import Any

from tidu_compile import ops
from tidu_compile.frontend import factorizations
from tidu_compile.frontend.elementwise import conj
from tidu_compile.frontend.factorizations import adjoint, matrices, vector_rhs
from tidu_compile.frontend.tensor import Tensor, apply1

__all__ = ["cho_factor", "cho_solve", "cholesky", "expm", "solve_triangular"]

#: scipy's ``trans`` -> (transpose, conjugate): ``op(a)`` is ``a``, ``aᵀ`` or ``a^H``.
_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}  # fmt: skip


def _triangular(a: Tensor, b: Any, lower: bool, trans: tuple[bool, bool], unit_diagonal: bool,
                name: str) -> Tensor:  # fmt: skip
    """``op(a)^-1 b``; ``a^-H b = conj(a^-T conj(b))`` (``conj``: nothing on reals)."""
    transpose, conjugate = trans
    a, rhs, vector = vector_rhs(a, b, name)
    op = ops.TriangularSolve(a.shape, rhs.shape, not lower, transpose, unit_diagonal)
    x = conj(apply1(op, a, conj(rhs))) if conjugate else apply1(op, a, rhs)
    return x.reshape(x.shape[:-1]) if vector else x


def solve_triangular(
    a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False,
    overwrite_b: bool = False, check_finite: bool = True,
) -> Tensor:  # fmt: skip
    """``x`` with ``op(a) x = b`` for the lower (``lower``) or upper triangle of ``a``;
    ``op`` is the transpose for ``trans`` 1/'T', the conjugate transpose for 2/'C'."""
    if trans not in _TRANS:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got "
                         f"{trans!r}")  # fmt: skip
    x = matrices(a, "solve_triangular")
    return _triangular(x, b, lower, _TRANS[trans], unit_diagonal, "solve_triangular")


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Tensor, bool]:  # fmt: skip
    """``(c, lower)``: the Cholesky factor of ``a`` (lower ``L`` or upper ``L^H``) for
    ``cho_solve``. Unlike scipy, ``c``'s other triangle is zero (it holds ``a``'s
    values there)."""
    return cholesky(a, lower), lower


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Tensor:  # fmt: skip
    """scipy's ``cholesky``: the upper factor ``U`` of ``a = U^H U`` (``lower``: ``L``
    of ``a = L L^H``), from the triangle it names."""
    return factorizations.cholesky(a, upper=not lower)


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Tensor:  # fmt: skip
    """``A⁻¹ b`` from ``cho_factor``'s ``(c, lower)``: ``L^-H (L⁻¹ b)`` with ``L = c``
    (lower) or ``c^H`` (upper)."""
    c, lower = c_and_lower
    factor = matrices(c, "cho_solve")
    if not lower:  # A = U^H U: U⁻¹ (U^-H b)
        factor = adjoint(factor)
    half = _triangular(factor, b, True, (False, False), False, "cho_solve")
    return _triangular(factor, half, True, (True, True), False, "cho_solve")


def expm(A: Any) -> Tensor:  # noqa: N803 - scipy's name
    """The matrix exponential (scaling and squaring with Padé approximants), of real or
    complex matrices."""
    x = matrices(A, "expm")
    return apply1(ops.Expm(x.shape), x)

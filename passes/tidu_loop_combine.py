"""The combiners of ``tidu-lower-to-loops``: how a reduced kernel result starts and how
it takes each element (``KernelOp.result_combiner``).

==========  ==================  ===================================================
combiner    identity            step (f32/f64; integers; i1; complex as (re, im))
==========  ==================  ===================================================
add         0; (0, 0)           ``arith.addf`` with ``fastmath<reassoc>``, per part;
                                ``arith.addi`` (wrapping, exact in any order)
max         -inf; INT_MIN;      ``arith.maximumf`` (NaN-propagating); ``maxsi``;
            false               ``arith.ori``
min         +inf; INT_MAX; true ``arith.minimumf`` (NaN-propagating); ``minsi``;
                                ``arith.andi``
mul         1; (1, 0)           ``arith.mulf``; ``muli``; the complex product
==========  ==================  ===================================================

The reassociation flag lets LLVM keep vector partial sums; max and min are exact in any
order. A chunk of a threaded kernel starts its private partial results at the identity
too, and the runtime combines the chunks' results with the same operation
(``compiler.parallel``).

    %1 = memref.load %out0[%i0] : memref<4xf64>
    %2 = arith.maximumf %1, %x : f64
    memref.store %2, %out0[%i0] : memref<4xf64>
"""

from __future__ import annotations

from tidu_compile.dialects.tidu_kernel import KernelOp
from xdsl.dialects import arith
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import IntegerType, i1
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue

from .errors import LoweringError
from .scalar_emit import Emit
from .tidu_complex_lowering import Scalar, complex_mul

__all__ = ["REASSOC", "combine", "identity"]

REASSOC = FastMathFlagsAttr([FastMathFlag.REASSOC])
"""Fastmath flag of the accumulating adds: lets LLVM keep vector partial sums."""

_PASS = "tidu-lower-to-loops"


def identity(combiner: str, part_type: Attribute, parts: int) -> tuple[float | int, ...]:
    """The starting value of a result combined by ``combiner``, one number per part
    (``parts`` is 2 for a complex result, whose parts have ``part_type``)."""
    if isinstance(part_type, IntegerType) and part_type != i1 and parts == 1:
        bits = part_type.bitwidth
        start = {"add": 0, "mul": 1, "max": -(1 << (bits - 1)), "min": (1 << (bits - 1)) - 1}
        if combiner in start:
            return (start[combiner],)
    if combiner == "add":
        return (0.0,) * parts
    if combiner == "mul":
        return (1.0, 0.0)[:parts]
    if combiner in ("max", "min") and parts == 1:
        if part_type == i1:
            return (0.0,) if combiner == "max" else (1.0,)
        return (-float("inf"),) if combiner == "max" else (float("inf"),)
    raise LoweringError(_PASS, KernelOp.name, f"no {combiner} combiner for "
                        f"{'complex ' if parts == 2 else ''}{part_type} results")  # fmt: skip


def combine(emit: Emit, combiner: str, old: Scalar, new: Scalar) -> Scalar:
    """``old (combiner) new`` on a lowered element (one part, or two for complex)."""
    if isinstance(old[0].type, IntegerType) and old[0].type != i1 and combiner in _INTEGER:
        return (emit(_INTEGER[combiner](old[0], new[0])).results[0],)
    if combiner == "add":
        return tuple(emit(arith.AddfOp(a, b, REASSOC)).results[0]
                     for a, b in zip(old, new, strict=True))  # fmt: skip
    if combiner == "mul":
        if len(old) == 2:
            return complex_mul(emit, old, new)
        return (emit(arith.MulfOp(old[0], new[0])).results[0],)
    (a,), (b,) = old, new
    return (_extremum(emit, combiner, a, b),)


#: The combiners' ops on integers (signed, as numpy's).
_INTEGER: dict[str, type[arith.SignlessIntegerBinaryOperation]] = {
    "add": arith.AddiOp, "mul": arith.MuliOp, "max": arith.MaxSIOp, "min": arith.MinSIOp,
}  # fmt: skip


def _extremum(emit: Emit, combiner: str, a: SSAValue, b: SSAValue) -> SSAValue:
    op: Operation
    if a.type == i1:
        op = arith.OrIOp(a, b) if combiner == "max" else arith.AndIOp(a, b)
    elif combiner == "max":
        op = arith.MaximumfOp(a, b)
    elif combiner == "min":
        op = arith.MinimumfOp(a, b)
    else:
        raise LoweringError(_PASS, KernelOp.name, f"unknown combiner {combiner!r}")
    return emit(op).results[0]

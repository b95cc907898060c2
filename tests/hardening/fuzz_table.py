"""Op-table steps of the gradient fuzzer (``fuzz_programs``): every parameterless unary and
binary elementwise primitive of ``OP_TABLE``, so an op added to the table is fuzzed
(compiled vs reference vs central differences) with no edit here.

A ``table`` step applies the op's frontend function (its first numpy name, else its
mnemonic) to pool values mapped smoothly into the op's ``domain`` (``tanh`` keeps them
bounded, so ``exp2`` or ``cosh`` cannot overflow). A complex value meets a real-only op
through its real part. ``stop_gradient`` is left out (central differences see through
it by design). Ops with a zero derivative (``floor``, ``sign``, ``round``...) are
added to their input, so a gradient still flows past them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.frontend import FUNCTIONS
from tidu_compile.ops import OP_TABLE

__all__ = ["SMOOTH_OPS", "TABLE_OPS", "table_step"]


def _function_name(primitive: type[ops.TensorOp]) -> str:
    names = [n for n in primitive.numpy_names if n in FUNCTIONS]
    return names[0] if names else primitive.mnemonic


#: mnemonic -> primitive, for the parameterless unary and binary elementwise primitives.
TABLE_OPS: dict[str, type[ops.TensorOp]] = {
    p.mnemonic: p
    for p in OP_TABLE.values()
    if issubclass(p, ops.Elementwise) and p.input_count in (1, 2)
    and not dataclasses.fields(p)  # type: ignore[arg-type]
    and _function_name(p) in FUNCTIONS
    and p is not ops.StopGradient  # its derivative is 0 by definition, not by calculus
}  # fmt: skip

#: Zero-derivative ops (and those without a derivative: ``floor_divide``): fuzzed as
#: ``x + op(x)``.
_FLAT = ("floor", "ceil", "round", "trunc", "sign")

#: The table ops with a derivative (not ``_FLAT``, not marked not differentiable): where a
#: program can meet a piecewise-constant op exactly at a step (``x // x`` in a loop's
#: first iteration), a 1-ulp difference of the compiled math moves it to the next step.
SMOOTH_OPS: tuple[str, ...] = tuple(sorted(
    name for name, p in TABLE_OPS.items()
    if name not in _FLAT and getattr(p, "differentiable", True)))  # fmt: skip


def _into_domain(x: tc.Tensor, domain: str) -> tc.Tensor:
    """``x`` mapped smoothly into ``domain`` (bounded, away from its edges)."""
    if x.dtype.kind == "c":
        return x * 0.3 if domain == "real" else x * 0.1 + (0.0 if domain == "open_unit" else 2.0)
    bounded = tc.tanh(x * 0.5)
    if domain == "real":
        return bounded * 2.0
    if domain == "open_unit":
        return bounded * 0.9
    if domain == "above_one":
        return bounded * bounded + 1.5
    return bounded * bounded + 0.5  # positive, nonzero


def table_step(name: str, a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
    """The table op ``name`` on pool values ``a`` (and ``b`` for a binary op)."""
    primitive = TABLE_OPS[name]
    function = FUNCTIONS[_function_name(primitive)]
    allowed = primitive.allowed_dtypes  # type: ignore[attr-defined]
    operands = [a, b][: primitive.input_count]
    operands = [tc.real(v) if v.dtype.name not in allowed else v for v in operands]
    mapped = [_into_domain(v, primitive.domain) for v in operands]
    if primitive.input_count == 2 and mapped[0].shape != mapped[1].shape:
        try:
            np.broadcast_shapes(mapped[0].shape, mapped[1].shape)
        except ValueError:
            mapped[1] = tc.mean(mapped[1])  # shapes that do not broadcast: a scalar
    result = function(*mapped)
    flat = name in _FLAT or not getattr(primitive, "differentiable", True)
    return mapped[0] + result if flat else result

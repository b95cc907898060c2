"""A small scalar primitive set for testing the tidu core without numpy.

Operands are Python ``float`` or ``complex``. Every primitive is a frozen dataclass
subclassing ``tidu_compile.ad.Primitive``; its JVP and transpose rules are written with
the same primitives, so linear graphs can be transposed and linearized again.

Also here: ``RuleLog``, a ctx object that records every rule call it is handed. Running
the primitives (evaluation, a ``BackwardExecutor``, a small tape) is ``scalar_runtime``.

Rules log to ``ctx`` when it is a ``RuleLog``: that is how tests check that ``ctx``
reaches every rule call.
"""

from __future__ import annotations

import cmath
import math
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidu_compile.ad import (
    ADRuleError,
    ADRuleKind,
    Primitive,
    PrimitiveBuilder,
)
from tidu_compile.graph import (
    External,
    Linearized,
    Primary,
    PrimitiveValue,
    Role,
)

Scalar = float | complex
Ref = PrimitiveValue | int

LIN1 = Linearized((True,))
LIN_FIRST = Linearized((True, False))
LIN_SECOND = Linearized((False, True))
LIN_BOTH = Linearized((True, True))


# --------------------------------------------------------------------------- ctx


@dataclass
class RuleLog:
    """A ctx object: every rule that receives it appends ``(kind, op, args)``."""

    calls: list[tuple[ADRuleKind, Primitive, tuple[int | None, ...]]] = field(default_factory=list)

    def count(self, kind: ADRuleKind, op_type: type | None = None) -> int:
        return sum(
            1
            for k, op, _ in self.calls
            if k is kind and (op_type is None or isinstance(op, op_type))
        )

    def ops(self, kind: ADRuleKind) -> list[Primitive]:
        return [op for k, op, _ in self.calls if k is kind]


def log_rule(ctx: Any, kind: ADRuleKind, op: Primitive, args: Sequence[int | None]) -> None:
    if isinstance(ctx, RuleLog):
        ctx.calls.append((kind, op, tuple(args)))


# --------------------------------------------------------------------------- helpers


def _unary(real: Callable[[float], float], cplx: Callable[[complex], complex]) -> Callable:
    def apply(a: Scalar) -> Scalar:
        return cplx(a) if isinstance(a, complex) else real(a)

    return apply


_exp = _unary(math.exp, cmath.exp)
_sin = _unary(math.sin, cmath.sin)
_cos = _unary(math.cos, cmath.cos)


def _conj(a: Scalar) -> Scalar:
    return a.conjugate()


def _mask(op: Primitive, role: Role) -> tuple[bool, ...]:
    if not isinstance(role, Linearized):
        raise ADRuleError.invalid_input(op, ADRuleKind.TRANSPOSE, "op is not in a linear role")
    return role.active_mask


def add_all(builder: PrimitiveBuilder, terms: Sequence[int]) -> int | None:
    """Sum of linear terms (None when there are none)."""
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        (total,) = builder.add_primitive(Add(), [total, term], LIN_BOTH)
    return total


def scale_by_residual(builder: PrimitiveBuilder, linear: int, residual: Ref) -> int:
    """``linear * residual``, linear in the first operand."""
    (out,) = builder.add_primitive(Mul(), [linear, residual], LIN_FIRST)
    return out


# --------------------------------------------------------------------------- prims


class ScalarPrim(Primitive):
    """Base of the scalar primitive set: evaluation plus ``Add`` for accumulation."""

    @abstractmethod
    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]: ...

    @classmethod
    def add(cls) -> Primitive:
        return Add()


@dataclass(frozen=True)
class Add(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] + args[1],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return [add_all(builder, [t for t in tangent_inputs if t is not None])]

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        (ct,) = cotangent_outputs
        return [ct if active else None for active in _mask(self, role)]


@dataclass(frozen=True)
class SumN(ScalarPrim):
    """n-ary sum; its transpose broadcasts the one scalar cotangent to every input."""

    n: int

    @property
    def input_count(self) -> int:
        return self.n

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (sum(args),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        present = [t for t in tangent_inputs if t is not None]
        if len(present) == 1:
            return [present[0]]
        role = Linearized((True,) * len(present))
        (out,) = builder.add_primitive(SumN(len(present)), present, role)
        return [out]

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        (ct,) = cotangent_outputs
        return [ct if active else None for active in _mask(self, role)]


@dataclass(frozen=True)
class Mul(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] * args[1],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        x, y = External(primal_inputs[0]), External(primal_inputs[1])
        dx, dy = tangent_inputs
        terms = []
        if dx is not None:
            terms += builder.add_primitive(Mul(), [dx, y], LIN_FIRST)
        if dy is not None:
            terms += builder.add_primitive(Mul(), [x, dy], LIN_SECOND)
        return [add_all(builder, terms)]

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        mask = _mask(self, role)
        if all(mask):
            raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE, "x*y is not linear in both")
        (ct,) = cotangent_outputs
        result: list[int | None] = [None, None]
        for i, active in enumerate(mask):
            if active:
                (other,) = builder.add_primitive(Conj(), [inputs[1 - i]], Primary())
                if i == 0:
                    result[0] = scale_by_residual(builder, ct, other)
                else:
                    (result[1],) = builder.add_primitive(Mul(), [other, ct], LIN_SECOND)
        return result


@dataclass(frozen=True)
class Neg(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (-args[0],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return builder.add_primitive(Neg(), [tangent_inputs[0]], LIN1)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        return builder.add_primitive(Neg(), [cotangent_outputs[0]], LIN1)


@dataclass(frozen=True)
class Scale(ScalarPrim):
    """``c * x`` for a constant ``c`` (a parameter of the op)."""

    c: Scalar

    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (self.c * args[0],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return builder.add_primitive(self, [tangent_inputs[0]], LIN1)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        return builder.add_primitive(Scale(_conj(self.c)), [cotangent_outputs[0]], LIN1)


@dataclass(frozen=True)
class Conj(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_conj(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return builder.add_primitive(Conj(), [tangent_inputs[0]], LIN1)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        # y = conj(z): df/dz = 0, df/dconj(z) = 1, so ct_z = conj(ct_y).
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        return builder.add_primitive(Conj(), [cotangent_outputs[0]], LIN1)


@dataclass(frozen=True)
class Exp(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_exp(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        # d exp(x) = dx * exp(x): the residual is the primal output.
        return [scale_by_residual(builder, tangent_inputs[0], External(primal_outputs[0]))]


@dataclass(frozen=True)
class Sin(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_sin(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        (c,) = builder.add_primitive(Cos(), [External(primal_inputs[0])], Primary())
        return [scale_by_residual(builder, tangent_inputs[0], c)]


@dataclass(frozen=True)
class Cos(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_cos(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        (s,) = builder.add_primitive(Sin(), [External(primal_inputs[0])], Primary())
        (minus_s,) = builder.add_primitive(Neg(), [s], Primary())
        return [scale_by_residual(builder, tangent_inputs[0], minus_s)]


@dataclass(frozen=True)
class SinCos(ScalarPrim):
    """One input, two outputs: ``(sin x, cos x)``."""

    @property
    def input_count(self) -> int:
        return 1

    @property
    def output_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_sin(args[0]), _cos(args[0]))

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        s, c = (External(k) for k in primal_outputs)
        (dx,) = tangent_inputs
        (minus_s,) = builder.add_primitive(Neg(), [s], Primary())
        return [scale_by_residual(builder, dx, c), scale_by_residual(builder, dx, minus_s)]


@dataclass(frozen=True)
class Polar(ScalarPrim):
    """Two inputs, two outputs: ``(r cos t, r sin t)``."""

    @property
    def input_count(self) -> int:
        return 2

    @property
    def output_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        r, t = args
        return (r * _cos(t), r * _sin(t))

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        t = External(primal_inputs[1])
        px, py = (External(k) for k in primal_outputs)
        dr, dt = tangent_inputs
        dx_terms: list[int] = []
        dy_terms: list[int] = []
        if dr is not None:
            (c,) = builder.add_primitive(Cos(), [t], Primary())
            (s,) = builder.add_primitive(Sin(), [t], Primary())
            dx_terms.append(scale_by_residual(builder, dr, c))
            dy_terms.append(scale_by_residual(builder, dr, s))
        if dt is not None:
            (minus_py,) = builder.add_primitive(Neg(), [py], Primary())
            dx_terms.append(scale_by_residual(builder, dt, minus_py))
            dy_terms.append(scale_by_residual(builder, dt, px))
        return [add_all(builder, dx_terms), add_all(builder, dy_terms)]


ALL_PRIMS: tuple[type[ScalarPrim], ...] = (
    Add,
    SumN,
    Mul,
    Neg,
    Scale,
    Conj,
    Exp,
    Sin,
    Cos,
    SinCos,
    Polar,
)

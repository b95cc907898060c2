"""Elementwise primitives: one block per op (type rule, numpy, JVP, transpose).

All inputs of an elementwise op share one shape and dtype (the frontend inserts
``BroadcastInDim`` for numpy broadcasting and promotes dtypes with numpy's rules).
Integer and bool values compute exactly, as numpy's loops do (wrapping on overflow;
``+`` and ``*`` on bool are ``or`` and ``and``); they carry no tangent. Complex
cotangents follow tidu's formula ``ct_z = ct_y * conj(df/dz)``, so transposes multiply
by ``Conj`` of the residual (``Conj`` is the identity on real dtypes and is dropped by
the compiler there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind, PrimitiveBuilder
from tidu_compile.graph import PrimitiveValue
from tidu_compile.ops.base import (
    ALL_DTYPES,
    COMPLEX_DTYPES,
    DIFFERENTIABLE_DTYPES,
    INTEGER_DTYPES,
    ORDERED_DTYPES,
    TensorOp,
    TensorType,
    active,
    add_tangents,
    apply,
    linear,
    primitive,
)
from tidu_compile.ops.batching import batch_elementwise
from tidu_compile.ops.complex_ops import Conj


class Elementwise(TensorOp):
    """Inputs of one type; one output of that type. ``allowed_dtypes`` is checked."""
    batch_rule = batch_elementwise

    allowed_dtypes: ClassVar[tuple[str, ...]] = DIFFERENTIABLE_DTYPES
    #: The dtype bool operands compute in for an op with integer but no bool loops
    #: (numpy's int8 for ``floor_divide``, ``mod``, ``power``); None: bool operands are
    #: a ``TypeError``, as numpy's ``subtract`` and ``negative`` (``frontend.promotion``).
    bool_as: ClassVar[str | None] = None
    numpy_fn: ClassVar[Callable[..., Any]]

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        t = self.check_same_types(inputs)
        self.check_dtype(t, self.allowed_dtypes)
        return (t,)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(type(self).numpy_fn(*arrays), dtype=arrays[0].dtype),)


class Unary(Elementwise):
    """``y = f(x)`` with ``dy = dx * f'(x)``; subclasses give ``derivative``."""

    input_count = 1

    def derivative(self, b: PrimitiveBuilder, x: PrimitiveValue, y: PrimitiveValue) -> int:
        raise ADRuleError.unsupported(self, ADRuleKind.JVP)

    def jvp_rule(self, b, primal_inputs, primal_outputs, tangent_inputs, ctx):
        d = self.derivative(b, primal_inputs[0], primal_outputs[0])
        return [linear(b, Mul(), [tangent_inputs[0], d], (True, False))]


# ------------------------------------------------------------------ binary


@primitive
class Add(Elementwise):
    """``x + y``; linear in both."""

    numpy_names = ("add",)
    commutative = True
    input_count = 2
    allowed_dtypes = ALL_DTYPES
    numpy_fn = np.add

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [add_tangents(b, ts[0], ts[1])]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [cts[0] if active(role, 0) else None, cts[0] if active(role, 1) else None]


@primitive
class Sub(Elementwise):
    """``x - y``; linear in both."""

    numpy_names = ("subtract",)
    input_count = 2
    allowed_dtypes = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES
    numpy_fn = np.subtract

    def jvp_rule(self, b, xs, ys, ts, ctx):
        dx, dy = ts
        if dy is None:
            return [dx]
        if dx is None:
            return [linear(b, Neg(), [dy], (True,))]
        return [linear(b, Sub(), [dx, dy], (True, True))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        ct = cts[0]
        return [
            ct if active(role, 0) else None,
            linear(b, Neg(), [ct], (True,)) if active(role, 1) else None,
        ]


@primitive
class Mul(Elementwise):
    """``x * y``; bilinear: ``d(xy) = dx*y + x*dy``, ``ct_x = ct*conj(y)``."""

    numpy_names = ("multiply",)
    commutative = True
    input_count = 2
    allowed_dtypes = ALL_DTYPES
    numpy_fn = np.multiply

    def jvp_rule(self, b, xs, ys, ts, ctx):
        dx, dy = ts
        left = linear(b, Mul(), [dx, xs[1]], (True, False)) if dx is not None else None
        right = linear(b, Mul(), [xs[0], dy], (False, True)) if dy is not None else None
        return [add_tangents(b, left, right)]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        ct = cts[0]
        out: list[int | None] = [None, None]
        for i in (0, 1):
            if active(role, i):
                other = apply(b, Conj(), [inputs[1 - i]])
                out[i] = linear(b, Mul(), [ct, other], (True, False))
        return out


@primitive
class Div(Elementwise):
    """``x / y``; ``dz = dx/y - dy*(z/y)``; linear in ``x`` only."""

    numpy_names = ("divide", "true_divide")
    domain = "nonzero"
    input_count = 2
    numpy_fn = np.divide

    def jvp_rule(self, b, xs, ys, ts, ctx):
        dx, dy = ts
        left = linear(b, Div(), [dx, xs[1]], (True, False)) if dx is not None else None
        right = None
        if dy is not None:
            minus_z_over_y = apply(b, Neg(), [apply(b, Div(), [ys[0], xs[1]])])
            right = linear(b, Mul(), [dy, minus_z_over_y], (True, False))
        return [add_tangents(b, left, right)]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        if active(role, 1) or not active(role, 0):
            raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE, "div is linear in x only")
        return [linear(b, Div(), [cts[0], apply(b, Conj(), [inputs[1]])], (True, False)), None]


@primitive
class Maximum(Elementwise):
    """``max(x, y)`` (ordered dtypes, NaN-propagating); the tangent follows the larger
    input, ties share it equally (``balanced_tangent``)."""

    numpy_names = ("maximum",)
    commutative = True
    input_count = 2
    allowed_dtypes = ORDERED_DTYPES
    numpy_fn = np.maximum

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [balanced_tangent(b, xs, ys[0], ts)]


@primitive
class Compare(TensorOp):
    """``x <direction> y`` -> bool; no derivative."""
    batch_rule = batch_elementwise

    direction: str
    input_count = 2
    differentiable = False
    FUNCTIONS: ClassVar[dict[str, Callable[..., Any]]] = {
        "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal,
    }  # fmt: skip

    def __post_init__(self) -> None:
        if self.direction not in self.FUNCTIONS:
            raise ValueError(f"Compare: direction must be one of {sorted(self.FUNCTIONS)}")

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        t = self.check_same_types(inputs)
        if t.dtype in COMPLEX_DTYPES and self.direction not in ("eq", "ne"):
            raise TypeError(f"{self!r}: complex values are not ordered")
        return (TensorType(t.shape, "bool"),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(self.FUNCTIONS[self.direction](*arrays)),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [None]


@primitive
class Select(TensorOp):
    """``where(mask, a, b)``; the mask is not differentiated."""
    batch_rule = batch_elementwise

    input_count = 3

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        mask, a, b = inputs
        if mask.dtype != "bool":
            raise TypeError(f"{self!r}: mask has dtype {mask.dtype}, expected bool")
        if mask.shape != a.shape:
            raise ValueError(f"{self!r}: mask has shape {mask.shape}, values have {a.shape}")
        t = Add().check_same_types([a, b])
        self.check_dtype(t, ALL_DTYPES, "values")
        return (t,)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.where(*arrays),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [select_tangents(b, xs[0], ts[1], ts[2], xs[1])]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        mask, ct = inputs[0], cts[0]
        out: list[int | None] = [None, None, None]
        for i in (1, 2):
            if active(role, i):
                zeros = apply(b, FullLike(0.0), [ct])
                pair = [ct, zeros] if i == 1 else [zeros, ct]
                mask_bits = (False, True, False) if i == 1 else (False, False, True)
                out[i] = linear(b, Select(), [mask, *pair], mask_bits)
        return out


def balanced_tangent(
    b: PrimitiveBuilder,
    xs: Sequence[PrimitiveValue],
    z: PrimitiveValue,
    ts: Sequence[int | None],
) -> int | None:
    """The tangent of a selection ``z = x or y`` (max, min, fmax, fmin), JAX's rule:
    ``dz = dx * w(x, y) + dy * w(y, x)`` with ``w(a, c) = [a == z] / ([c == z] + 1)``.
    The input equal to ``z`` carries the tangent; on a tie each carries half of it
    (``maximum(x, x)`` has derivative 1 in total); a NaN ``z`` carries none."""
    x, y = xs
    hits = [apply(b, Compare("eq"), [v, z]) for v in (x, y)]
    half, one, zero = (apply(b, FullLike(v), [z]) for v in (0.5, 1.0, 0.0))
    total: int | None = None
    for i, t in enumerate(ts):
        if t is not None:
            share = apply(b, Select(), [hits[1 - i], half, one])
            weight = apply(b, Select(), [hits[i], share, zero])
            total = add_tangents(b, total, linear(b, Mul(), [t, weight], (True, False)))
    return total


def select_tangents(
    b: PrimitiveBuilder,
    mask: PrimitiveValue | int,
    da: int | None,
    db: int | None,
    like: PrimitiveValue,
) -> int | None:
    """``where(mask, da, db)`` with an absent tangent replaced by zeros shaped like ``like``."""
    if da is None and db is None:
        return None
    zeros = apply(b, FullLike(0.0), [like])
    return linear(
        b,
        Select(),
        [mask, da if da is not None else zeros, db if db is not None else zeros],
        (False, da is not None, db is not None),
    )


# ------------------------------------------------------------------ unary


@primitive
class Neg(Elementwise):
    """``-x``; linear."""

    numpy_names = ("negative",)
    input_count = 1
    allowed_dtypes = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES
    numpy_fn = np.negative

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, Neg(), [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, Neg(), [cts[0]], (True,))]


@primitive
class Exp(Unary):
    """``exp(x)``; ``dy = dx * y``."""

    numpy_names = ("exp",)
    numpy_fn = np.exp

    def derivative(self, b, x, y):
        return y


@primitive
class Log(Unary):
    """``log(x)``; ``dy = dx / x``."""

    numpy_names = ("log",)
    domain = "positive"
    numpy_fn = np.log

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, Div(), [ts[0], xs[0]], (True, False))]


@primitive
class Sin(Unary):
    """``sin(x)``; ``dy = dx * cos(x)``."""

    numpy_names = ("sin",)
    numpy_fn = np.sin

    def derivative(self, b, x, y):
        return apply(b, Cos(), [x])


@primitive
class Cos(Unary):
    """``cos(x)``; ``dy = dx * -sin(x)``."""

    numpy_names = ("cos",)
    numpy_fn = np.cos

    def derivative(self, b, x, y):
        return apply(b, Neg(), [apply(b, Sin(), [x])])


@primitive
class Tanh(Unary):
    """``tanh(x)``; ``dy = dx * (1 - y*y)``."""

    numpy_names = ("tanh",)
    numpy_fn = np.tanh

    def derivative(self, b, x, y):
        return apply(b, Shift(1.0), [apply(b, Neg(), [apply(b, Mul(), [y, y])])])


@primitive
class Sqrt(Unary):
    """``sqrt(x)``; ``dy = dx / (2 y)``."""

    numpy_names = ("sqrt",)
    domain = "positive"
    numpy_fn = np.sqrt

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, Div(), [ts[0], apply(b, Scale(2.0), [ys[0]])], (True, False))]


@primitive
class SinCos(TensorOp):
    """``(sin(x), cos(x))``: the multi-output primitive."""
    batch_rule = batch_elementwise

    mnemonic = "sincos"
    input_count = 1
    output_count = 2

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        (t,) = Exp().infer_types(*inputs)
        return (t, t)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.sin(arrays[0]), np.cos(arrays[0]))

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.sin(arrays[0]), np.cos(arrays[0]))

    def jvp_rule(self, b, xs, ys, ts, ctx):
        sin, cos = ys
        return [
            linear(b, Mul(), [ts[0], cos], (True, False)),
            linear(b, Mul(), [ts[0], apply(b, Neg(), [sin])], (True, False)),
        ]


# ------------------------------------------------------------- parameterized


@primitive
class Pow(Unary):
    """``x ** exponent`` for a constant exponent; ``dy = dx * exponent * x**(exponent-1)``
    (0 for exponent 0, also at x = 0). On integers the exponent is a non-negative
    integer and the power exact (numpy's, wrapping on overflow)."""

    exponent: float
    allowed_dtypes = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES
    bool_as = "int8"

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        (t,) = super().infer_types(*inputs)
        if t.dtype in INTEGER_DTYPES and not (
            float(self.exponent).is_integer() and self.exponent >= 0
        ):
            raise ValueError(
                f"{self!r}: integers to negative or fractional powers are not allowed "
                f"(the input has dtype {t.dtype}; numpy's rule)"
            )
        return (t,)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        exponent = int(self.exponent) if x.dtype.kind in "iu" else self.exponent
        return (np.asarray(np.power(x, exponent), dtype=x.dtype),)

    def derivative(self, b, x, y):
        if self.exponent == 0.0:  # x ** 0 == 1: derivative 0, also at x = 0
            return apply(b, FullLike(0.0), [x])
        return apply(b, Scale(self.exponent), [apply(b, Pow(self.exponent - 1.0), [x])])


@primitive
class Scale(Elementwise):
    """``factor * x``; linear. A complex factor needs a complex ``x``."""

    factor: complex | float
    input_count = 1

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        (t,) = super().infer_types(*inputs)
        if isinstance(self.factor, complex) and t.dtype not in COMPLEX_DTYPES:
            raise TypeError(f"{self!r}: a complex factor needs a complex input, got {t.dtype}")
        return (t,)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(arrays[0] * self.factor, dtype=arrays[0].dtype),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        factor = self.factor.conjugate() if isinstance(self.factor, complex) else self.factor
        return [linear(b, Scale(factor), [cts[0]], (True,))]


@primitive
class Shift(Elementwise):
    """``x + offset`` (affine, not linear); ``dy = dx``."""

    offset: float
    input_count = 1

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.asarray(arrays[0] + self.offset, dtype=arrays[0].dtype),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [ts[0]]


@primitive
class FullLike(TensorOp):
    """A tensor of ``value`` with the shape and dtype of ``x``; no derivative."""
    batch_rule = batch_elementwise

    value: complex | float
    input_count = 1
    differentiable = False

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        return (inputs[0],)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.full(arrays[0].shape, self.value, dtype=arrays[0].dtype),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [None]

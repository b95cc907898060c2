"""Shared machinery of the standard tensor primitives, and THE op table.

Every op is a class decorated with ``@primitive`` (a frozen dataclass, registered in
``OP_TABLE`` under its ``mnemonic``) subclassing ``TensorOp``, and defines, in one
block of its family's module (``unary_math.py``, ``scan.py``, ...): ``input_count`` (and
``output_count`` if not 1), ``infer_types`` (output types from input types, raising a
clear error on mismatch), ``evaluate`` (numpy), ``jvp_rule``, ``transpose_rule`` and
``batch_rule`` (``vmap``: usually its family's, or a generic one of ``ops.batching``).
Rules build with primitives through the helpers below, so linear and transposed graphs
are graphs of this same op set.

What derives from ``OP_TABLE`` (so adding an elementwise op is its block plus one
lowering row in ``passes/tidu_math_lowering.py``, merged into ``SCALAR_LOWERINGS``; a
structural op, its block and its frontend function):

* the ``tidu`` dialect's op list: a generated ``tidu.<mnemonic>`` op for every
  elementwise op without a hand-written one, and for every structural op, from its
  fields (``ops.ir_fields``), with the import and export rows (``dialects/tidu.py``);
* the frontend functions named in ``numpy_names`` (``tidu_compile.frontend``), and so
  the exports of ``tidu_compile`` and ``tidu_compile.numpy``;
* which ops run as numpy library calls between kernels (``library_call``);
* the op test tables (``tests/ops/op_cases.py``: inputs drawn from ``domain``, the rows
  of a structural op from its family's; checked against ``oracle``);
* the README's list of supported functions (checked by a test).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar, dataclass_transform

import numpy as np

from tidu_compile.ad import Primitive, PrimitiveBuilder
from tidu_compile.graph import (
    Derived,
    External,
    Input,
    Linearized,
    Primary,
    PrimitiveValue,
    Role,
    ValueKey,
)
from tidu_compile.ops.ir_fields import printed_as, shape_of_operand, shape_of_result

__all__ = [
    "DOMAINS",
    "dtype_name",
    "OP_TABLE",
    "primitive",
    "FLOAT_DTYPES",
    "COMPLEX_DTYPES",
    "DIFFERENTIABLE_DTYPES",
    "SIGNED_DTYPES",
    "UNSIGNED_DTYPES",
    "INTEGER_DTYPES",
    "ORDERED_DTYPES",
    "ALL_DTYPES",
    "exact_dtype",
    "TensorType",
    "TensorOp",
    "Ref",
    "type_of",
    "apply",
    "linear",
    "add_tangents",
    "real_dtype_of",
    "complex_dtype_of",
]

FLOAT_DTYPES = ("float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")
DIFFERENTIABLE_DTYPES = FLOAT_DTYPES + COMPLEX_DTYPES
SIGNED_DTYPES = ("int8", "int16", "int32", "int64")
UNSIGNED_DTYPES = ("uint8", "uint16", "uint32", "uint64")
#: Integer values compute exactly, with numpy's wrapping on overflow; they carry no
#: tangent (integer and bool results are not differentiable).
INTEGER_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
#: What has an order: reals, integers and bool (``maximum``, ``max``, ``sort`` keys...).
ORDERED_DTYPES = FLOAT_DTYPES + INTEGER_DTYPES + ("bool",)
#: Every dtype of the op set (``+`` and ``*`` take them all, as numpy's loops: on bool
#: ``+`` is ``or`` and ``*`` is ``and``).
ALL_DTYPES = DIFFERENTIABLE_DTYPES + INTEGER_DTYPES + ("bool",)


def exact_dtype(dtype: str) -> bool:
    """Whether ``dtype`` is an integer or bool dtype (exact values, no tangent)."""
    return dtype in INTEGER_DTYPES or dtype == "bool"

#: What the rule helpers accept as an operand: a builder id, a value ref, or a primal
#: value key as ``jvp_rule`` receives it (wrapped as ``External(key)`` here).
Ref = PrimitiveValue | int | ValueKey


@dataclass(frozen=True, slots=True)
class TensorType:
    """Static type of a tensor value: shape and numpy dtype name."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"{'x'.join(map(str, self.shape)) or '()'}:{self.dtype}"


#: numpy dtype -> its name (``dtype.name`` is computed by Python code at every read).
_DTYPE_NAMES: dict[Any, str] = {}


def dtype_name(dtype: Any) -> str:
    """``np.dtype(dtype).name``, memoized (the call path of a small program reads it for
    every argument)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = np.dtype(dtype).name
    return name


def type_of(array: Any) -> TensorType:
    """The ``TensorType`` of a numpy array (or anything with shape and dtype)."""
    shape = array.shape if type(array) is np.ndarray else tuple(int(d) for d in array.shape)
    return TensorType(shape, dtype_name(array.dtype))


def real_dtype_of(dtype: str) -> str:
    return {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)


def complex_dtype_of(dtype: str) -> str:
    return {"float32": "complex64", "float64": "complex128"}.get(dtype, dtype)


#: Where an op is smooth, as the op tests draw their inputs: ``real`` (anywhere),
#: ``positive``, ``nonzero``, ``open_unit`` (|x| < 1), ``above_one`` (x > 1).
DOMAINS = ("real", "positive", "nonzero", "open_unit", "above_one")


class TensorOp(Primitive):
    """Base of the standard primitives (frozen dataclasses on numpy arrays)."""

    input_count: ClassVar[int]  # type: ignore[misc]
    output_count: ClassVar[int] = 1  # type: ignore[misc]
    #: False for ops with no derivative (compare); their JVP gives no tangent.
    differentiable: ClassVar[bool] = True
    #: The op's name in the table and in the dialect (``tidu.<mnemonic>``); ``@primitive``
    #: sets it from the class name (``ReduceSum`` -> ``reduce_sum``) unless the class does.
    mnemonic: ClassVar[str]
    #: The frontend functions that apply this op (elementwise ops only; the first is the
    #: main name): ``("abs", "absolute")``. Empty for ops the frontend wraps by hand.
    numpy_names: ClassVar[tuple[str, ...]] = ()
    #: Where the op is smooth (one of ``DOMAINS``): the op tests draw inputs from it.
    domain: ClassVar[str] = "real"
    #: ``op(x, y) == op(y, x)`` (a trait of its dialect op).
    commutative: ClassVar[bool] = False
    #: Runs as a numpy library call between kernels, by design (a scan, a sort, a BLAS
    #: contraction, a layout copy): fusion leaves it outside kernels, and a plan step
    #: running it is no fallback (``compiler.plan_builder.LIBRARY_BY_DESIGN``). A
    #: transpose and a ``kernel_mask`` op join kernels where fusion takes them.
    library_call: ClassVar[bool] = False
    #: Computes each element from its operand's and the element's position alone
    #: (``triangle_part``): it fuses into kernels as an elementwise op that reads the
    #: iteration point (``passes/tidu_fusion_access.MASK_OPS``); its dialect op then
    #: computes on the kernel body's scalars.
    kernel_mask: ClassVar[bool] = False

    @classmethod
    def add(cls) -> TensorOp:
        """``Add()``, the op that sums cotangents (found in the table by its name)."""
        return OP_TABLE["add"]()

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        raise NotImplementedError(f"{type(self).__name__}.infer_types")

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError(f"{type(self).__name__}.evaluate")

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The op's values computed another way than ``evaluate``, in plain numpy: what
        the op tests check ``evaluate`` against (``tests/ops/test_op_autodiff.py``). An
        elementwise op without one is checked against its ``numpy_fn``."""
        raise NotImplementedError(f"{type(self).__name__} has no oracle")

    def batch_rule(
        self, b: Any, inputs: list[int], dims: list[int | None]
    ) -> tuple[list[int], list[int | None]]:
        """The op on batched values (``vmap``): ``inputs`` are ids of the batched graph
        ``b`` (an ``ops.batching.Batcher``), ``dims`` the batch axis of each (``None``:
        the same for every example; some input is batched). Adds the batched op(s) to
        ``b`` and returns the result ids with the batch axis of each. Families define it
        once; ``ops.batching`` has the generic rules."""
        raise NotImplementedError(
            f"{type(self).__name__} has no batching rule: define batch_rule in its block "
            "(or name a generic one of tidu_compile.ops.batching), README 'Adding an op'"
        )

    # ---------------------------------------------------------------- checks

    def check_values(self, *values: Any) -> None:
        """Type-check concrete inputs (numpy arrays) with ``infer_types``: what
        ``evaluation.evaluate_primitive`` runs before ``evaluate``."""
        for index, value in enumerate(values):
            if not hasattr(value, "shape") or not hasattr(value, "dtype"):
                raise TypeError(
                    f"{self!r}: input {index} is a {type(value).__name__}, expected a numpy array"
                )
        self.infer_types(*(type_of(v) for v in values))

    def check_arity(self, inputs: Sequence[TensorType]) -> None:
        if len(inputs) != self.input_count:
            raise ValueError(f"{self!r} takes {self.input_count} inputs, got {len(inputs)}")

    def check_same_types(self, inputs: Sequence[TensorType]) -> TensorType:
        """All inputs share one type; return it."""
        self.check_arity(inputs)
        first = inputs[0]
        for i, t in enumerate(inputs[1:], start=1):
            if t.shape != first.shape:
                raise ValueError(
                    f"{self!r}: input {i} has shape {t.shape}, input 0 has {first.shape} "
                    "(broadcast explicitly)"
                )
            if t.dtype != first.dtype:
                raise TypeError(
                    f"{self!r}: input {i} has dtype {t.dtype}, input 0 has {first.dtype}"
                )
        return first

    def check_dtype(self, t: TensorType, allowed: Sequence[str], argument: str = "input") -> None:
        if t.dtype not in allowed:
            raise TypeError(
                f"{self!r}: {argument} has dtype {t.dtype}; expected one of {', '.join(allowed)}"
            )


# ------------------------------------------------------------------- the op table

#: Every standard primitive by mnemonic, in definition order (``@primitive`` fills it).
OP_TABLE: dict[str, type[TensorOp]] = {}

_Op = TypeVar("_Op", bound=type[TensorOp])


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_PACK_FLOAT = struct.Struct("<d").pack
_PACK_COMPLEX = struct.Struct("<dd").pack


def _parameter_key(value: Any) -> Any:
    """An op parameter as its exact identity: a float or complex number by its type and
    bits, so that ``0.0`` and ``-0.0`` differ and two NaNs of one payload are the same;
    tuples item by item; anything else as it is."""
    if type(value) is float:
        return (float, _PACK_FLOAT(value))
    if isinstance(value, (float, complex, np.inexact)):
        number = complex(value)
        return (type(value), _PACK_COMPLEX(number.real, number.imag))
    if type(value) is tuple:
        return tuple(_parameter_key(item) for item in value)
    return value


def _exact_comparison(cls: type[TensorOp]) -> None:
    """Give ``cls`` an ``__eq__`` and ``__hash__`` that compare its number-valued
    parameters (annotated ``float``, ``complex`` or ``Any``) by ``_parameter_key``: the
    kernels bake parameters in, so ``Scale(0.0)`` must not serve ``Scale(-0.0)``. A class
    without such parameters keeps the dataclass's (faster, and already exact)."""
    parameters = fields(cls)  # type: ignore[arg-type]
    names = tuple(f.name for f in parameters)
    exact = frozenset(
        f.name for f in parameters if any(w in str(f.type) for w in ("float", "complex", "Any"))
    )
    if not exact:
        return

    def __eq__(self: TensorOp, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        for name in names:
            a, b = getattr(self, name), getattr(other, name)
            if a is not b and (
                _parameter_key(a) != _parameter_key(b) if name in exact else a != b
            ):
                return False
        return True

    def __hash__(self: TensorOp) -> int:
        return hash(tuple(
            _parameter_key(getattr(self, n)) if n in exact else getattr(self, n) for n in names
        ))  # fmt: skip

    def __repr__(self: TensorOp) -> str:
        shown = (f"{f.name}={_exact_repr(getattr(self, f.name)) if f.name in exact else repr(getattr(self, f.name))}"  # noqa: E501
                 for f in parameters if f.repr)  # fmt: skip
        return f"{type(self).__qualname__}({', '.join(shown)})"

    cls.__eq__ = __eq__  # type: ignore[method-assign,assignment]
    cls.__hash__ = __hash__  # type: ignore[method-assign,assignment]
    cls.__repr__ = __repr__  # type: ignore[method-assign,assignment]


def _exact_repr(value: Any) -> str:
    """``repr(value)``, but a NaN shows its bits (``nan:7ff8000000000001``): the text
    of a program keys its compiled code (``compiler.native.program_digest``), so two
    parameters that compare unequal must print differently."""
    if isinstance(value, float) and value != value:
        return f"nan:{_PACK_FLOAT(value)[::-1].hex()}"
    if isinstance(value, complex) and value != value:
        return f"complex({_exact_repr(value.real)}, {_exact_repr(value.imag)})"
    if type(value) is tuple:
        items = ", ".join(_exact_repr(item) for item in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)


@dataclass_transform(
    frozen_default=True,
    field_specifiers=(field, printed_as, shape_of_operand, shape_of_result),
)
def primitive(cls: _Op) -> _Op:
    """Make ``cls`` a frozen dataclass and enter it in ``OP_TABLE``; its parameters
    compare exactly (``Scale(0.0) != Scale(-0.0)``, numbers by type and bits), so two ops
    are equal only when they compute the same bits::

        @primitive
        class Log1p(Unary):
            \"\"\"``log(1 + x)``; ``dy = dx / (1 + x)``.\"\"\"

            numpy_fn = np.log1p
            numpy_names = ("log1p",)
            domain = "open_unit"

            def jvp_rule(self, b, xs, ys, ts, ctx):
                return [linear(b, Div(), [ts[0], apply(b, Shift(1.0), [xs[0]])], (True, False))]
    """
    cls = dataclass(frozen=True)(cls)  # type: ignore[assignment]
    _exact_comparison(cls)
    if "mnemonic" not in cls.__dict__:
        cls.mnemonic = _snake_case(cls.__name__)
    if cls.domain not in DOMAINS:
        raise ValueError(f"{cls.__name__}.domain: {cls.domain!r} is not one of {DOMAINS}")
    if cls.mnemonic in OP_TABLE:
        raise ValueError(
            f"@primitive {cls.__name__}: mnemonic {cls.mnemonic!r} is taken by "
            f"{OP_TABLE[cls.mnemonic].__name__}"
        )
    OP_TABLE[cls.mnemonic] = cls
    return cls


# ------------------------------------------------------------------- rule helpers


def refs(inputs: Sequence[Ref]) -> list[PrimitiveValue | int]:
    """``inputs`` as builder operands: a value key ``k`` becomes ``External(k)``."""
    return [External(v) if isinstance(v, Input | Derived) else v for v in inputs]


def apply(builder: PrimitiveBuilder, op: TensorOp, inputs: Sequence[Ref]) -> int:
    """Add a residual (primal) op with one output; returns its id."""
    return builder.add_primitive(op, refs(inputs), Primary())[0]


def linear(
    builder: PrimitiveBuilder, op: TensorOp, inputs: Sequence[Ref], mask: Sequence[bool]
) -> int:
    """Add an op that is linear in the inputs where ``mask`` is True; returns its id."""
    return builder.add_primitive(op, refs(inputs), Linearized(tuple(mask)))[0]


def add_tangents(builder: PrimitiveBuilder, a: int | None, b: int | None) -> int | None:
    """``a + b`` of two tangents, either of which may be absent."""
    if a is None:
        return b
    if b is None:
        return a
    return linear(builder, TensorOp.add(), [a, b], (True, True))


def active(role: Role, index: int) -> bool:
    return isinstance(role, Linearized) and role.active_mask[index]

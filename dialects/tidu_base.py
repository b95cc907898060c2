"""Shared pieces of the `tidu` dialect: value types, literals and the op family bases.

Values of tidu ops are ranked tensors with a static shape (`tensor<4x8xf64>`, the 0-d
`tensor<f64>`) or, inside the body of a `tidu.kernel`, scalars. Element types are
f32, f64, complex<f32>, complex<f64>, i1 (bool: compare results, select masks), and the
signless integers i8, i16, i32 and i64 (numpy's signed integers: exact arithmetic, and
the index tensors of gathers and scatters, i32 or i64). numpy's unsigned integers have
no element type: programs of them are not compiled.

The elementwise family shares one custom syntax:

    %r = tidu.<op> [prefix] %a, %b [suffix] attr-dict : T
    %r = tidu.<op> [prefix] %a, %b [suffix] attr-dict : A, B -> R

The short form names one type `T`, the type of the op's key operand (operand 0,
except for `tidu.select` whose key is its first value operand); every other operand
and result type follows from it through the op's `signature`. The printer uses the
short form whenever the op's types are exactly that signature, and the explicit form
otherwise, so both the valid and the invalid IR round-trip.
"""

from __future__ import annotations

import functools
import math
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Self, cast

from xdsl.dialects.builtin import (
    ComplexType,
    DenseArrayBase,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerType,
    NoneAttr,
    TensorType,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait
from xdsl.utils.exceptions import VerifyException

from tidu_compile.ops.base import COMPLEX_DTYPES, INTEGER_DTYPES

# ---------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------


class ElementKind(Enum):
    """The element types an op accepts; the value is the text used in messages."""

    REAL = "f32 or f64"
    ORDERED = "f32, f64, i1, i8, i16, i32 or i64"
    NUMERIC = "f32, f64, complex<f32> or complex<f64>"
    ANY = "f32, f64, complex<f32>, complex<f64> or i1"
    INDEX = "i32 or i64"
    ARITHMETIC = "f32, f64, complex<f32>, complex<f64>, i8, i16, i32 or i64"
    ALL = "f32, f64, complex<f32>, complex<f64>, i1, i8, i16, i32 or i64"

    def accepts(self, element: Attribute) -> bool:
        if element in INTEGER_ELEMENTS:
            if self is ElementKind.INDEX:
                return element in (i32, i64)
            return self in (ElementKind.ORDERED, ElementKind.ARITHMETIC, ElementKind.ALL)
        if self is ElementKind.INDEX:
            return False
        if is_real_element(element):
            return True
        if is_complex_element(element):
            return self not in (ElementKind.REAL, ElementKind.ORDERED)
        return self in (ElementKind.ORDERED, ElementKind.ANY, ElementKind.ALL) and element == i1


INTEGER_ELEMENTS: tuple[Attribute, ...] = (i8, i16, i32, i64)
"""The integer element types (signless, computed as signed: numpy's int8..int64)."""


def is_integer_element(element: Attribute) -> bool:
    """Whether `element` is one of `INTEGER_ELEMENTS` (i1, bool, is not)."""
    return element in INTEGER_ELEMENTS


def is_real_element(element: Attribute) -> bool:
    return isinstance(element, Float32Type | Float64Type)


def is_complex_element(element: Attribute) -> bool:
    return isinstance(element, ComplexType) and is_real_element(element.element_type)


def element_type(value_type: Attribute) -> Attribute:
    """The element type of a tensor type; a scalar type is its own element type."""
    if isinstance(value_type, TensorType):
        return cast(Attribute, value_type.element_type)
    return value_type


def shape_of(value_type: Attribute) -> tuple[int, ...] | None:
    """The shape of a tensor type, or `None` for a scalar type."""
    if isinstance(value_type, TensorType):
        return value_type.get_shape()
    return None


def with_element_type(value_type: Attribute, element: Attribute) -> Attribute:
    """`value_type` with its element type replaced (a scalar becomes `element`)."""
    if isinstance(value_type, TensorType):
        return TensorType(element, value_type.get_shape())
    return element


def real_part_type(element: Attribute) -> Attribute:
    """complex<fN> -> fN; any other element type is returned unchanged."""
    if isinstance(element, ComplexType):
        return cast(Attribute, element.element_type)
    return element


def complex_type_of(element: Attribute) -> Attribute:
    """fN -> complex<fN>; any other element type is returned unchanged."""
    if isinstance(element, Float32Type | Float64Type):
        return ComplexType(element)
    return element


DTYPE_ELEMENT_TYPES: dict[str, Attribute] = {
    "float32": Float32Type(),
    "float64": Float64Type(),
    "complex64": ComplexType(Float32Type()),
    "complex128": ComplexType(Float64Type()),
    "bool": i1,
    "int8": i8,
    "int16": i16,
    "int32": i32,
    "int64": i64,
}
"""numpy dtype name -> tidu element type."""


def element_kind(dtypes: Sequence[str]) -> ElementKind:
    """The element kind of an op whose primitive allows the numpy ``dtypes``: real only,
    ordered (reals, integers, bool), numeric (reals and complex), arithmetic (numeric
    and integers) or all of them (and bool)."""
    integers = any(d in INTEGER_DTYPES for d in dtypes)
    complex_ = any(d in COMPLEX_DTYPES for d in dtypes)
    if integers and complex_:
        return ElementKind.ALL if "bool" in dtypes else ElementKind.ARITHMETIC
    if integers:
        return ElementKind.ORDERED
    return ElementKind.NUMERIC if complex_ else ElementKind.REAL


def tensor_type(shape: Sequence[int], dtype: str) -> TensorType:
    """The tidu tensor type of a numpy shape and dtype name, e.g. ((4, 8), "float64")."""
    if dtype not in DTYPE_ELEMENT_TYPES:
        raise ValueError(
            f"dtype {dtype!r} has no tidu element type; expected one of "
            f"{', '.join(DTYPE_ELEMENT_TYPES)}."
        )
    return _tensor_type(tuple(shape), dtype)


@functools.lru_cache(maxsize=4096)
def _tensor_type(shape: tuple[int, ...], dtype: str) -> TensorType:
    """One type object per shape and dtype (cached: attributes are immutable, and
    building and verifying one was ~40% of importing a program)."""
    return TensorType(DTYPE_ELEMENT_TYPES[dtype], shape)


@functools.lru_cache(maxsize=4096)
def value_type_error(type_: Attribute, allow_scalar: bool) -> str | None:
    """Why `type_` is not a tidu value type, as the end of a sentence, or `None`
    (cached: attributes are immutable, and a program checks the same few types on
    every op)."""
    kind = ElementKind.ALL
    kinds = "a ranked tensor with a static shape" + (" or a scalar" if allow_scalar else "")
    expected = f"{kinds} of {kind.value}"
    if isinstance(type_, TensorType):
        if type_.encoding != NoneAttr():
            return f"is {type_}, but tidu tensors carry no encoding"
        if any(size < 0 for size in type_.get_shape()):
            return f"is {type_}, which has a dynamic dimension, but it must be {expected}"
        if kind.accepts(cast(Attribute, type_.element_type)):
            return None
    elif allow_scalar and kind.accepts(type_):
        return None
    return f"is {type_}, but it must be {expected}"


def is_value_type(type_: Attribute, allow_scalar: bool = True) -> bool:
    return value_type_error(type_, allow_scalar) is None


def verify_value_type(op: IRDLOperation, what: str, type_: Attribute, allow_scalar: bool) -> None:
    """Raise a `VerifyException` unless `type_` is a tidu value type."""
    error = value_type_error(type_, allow_scalar)
    if error is not None:
        raise VerifyException(f"{op.name} {what} {error}.")


def verify_tensor(op: IRDLOperation, what: str, type_: Attribute, kind: ElementKind) -> TensorType:
    """Check that `type_` is a static tensor whose element type `kind` accepts."""
    verify_value_type(op, what, type_, allow_scalar=False)
    tensor = cast(TensorType, type_)
    element = cast(Attribute, tensor.element_type)
    if not kind.accepts(element):
        raise VerifyException(
            f"{op.name} {what} has element type {element}, but it must be {kind.value}."
        )
    return tensor


def verify_same_element_type(
    op: IRDLOperation, what: str, type_: TensorType, other_what: str, other: TensorType
) -> None:
    if type_.element_type != other.element_type:
        raise VerifyException(
            f"{op.name} {what} has element type {type_.element_type}, but {other_what} has "
            f"{other.element_type}; they must be equal."
        )


# ---------------------------------------------------------------------------------
# Canonicalization
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TiduCanonicalization(HasCanonicalizationPatternsTrait):
    """Trait giving a tidu op the patterns `tidu_canonicalize.PATTERNS` lists for its class.

    The patterns are written with the op classes, so the op modules cannot import them:
    the dialect module (`tidu`, above both) attaches them once (`attach`).
    """

    _patterns: ClassVar[dict[type[Operation], tuple[RewritePattern, ...]] | None] = None

    @classmethod
    def attach(cls, patterns: dict[type[Operation], tuple[RewritePattern, ...]]) -> None:
        """Give every op class in ``patterns`` its patterns (``tidu`` does, on import)."""
        cls._patterns = patterns

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        if self._patterns is None:
            raise RuntimeError(
                f"{op.name}: the tidu canonicalization patterns are attached by "
                "tidu_compile.dialects.tidu; import it before canonicalizing"
            )
        return self._patterns.get(op, ())

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return ()


# ---------------------------------------------------------------------------------
# Integer arrays (DenseArrayBase of i64)
# ---------------------------------------------------------------------------------


def i64_array(values: Sequence[int]) -> DenseArrayBase[IntegerType]:
    return DenseArrayBase.from_list(i64, tuple(values))


def array_values(array: DenseArrayBase[IntegerType]) -> tuple[int, ...]:
    return array.get_values()


# ---------------------------------------------------------------------------------
# f64 literals: `2.500000e+00`, `-1.0`, `inf`, `-inf`, `nan`
# ---------------------------------------------------------------------------------


def print_f64_literal(printer: Printer, value: float) -> None:
    if math.isnan(value):
        printer.print_string("nan")
    elif math.isinf(value):
        printer.print_string("inf" if value > 0 else "-inf")
    else:
        printer.print_float(value, f64)


def parse_f64_literal(parser: Parser) -> float:
    negative = parser.parse_optional_punctuation("-") is not None
    if parser.parse_optional_keyword("inf") is not None:
        value = math.inf
    elif parser.parse_optional_keyword("nan") is not None:
        value = math.nan
    else:
        value = float(parser.parse_number(context_msg=" (a float literal, inf or nan)"))
    return -value if negative else value


def scalar_properties(value: complex | float) -> dict[str, Attribute]:
    """The `re` and `im` properties (FloatAttr of f64) that store a scalar literal."""
    number = complex(value)
    return {"re": FloatAttr(number.real, f64), "im": FloatAttr(number.imag, f64)}


def print_scalar_literal(printer: Printer, re: float, im: float) -> None:
    """Print `re` alone when `im` is +0.0, else the pair `(re, im)`."""
    if im == 0.0 and math.copysign(1.0, im) > 0:
        print_f64_literal(printer, re)
        return
    with printer.in_parens():
        print_f64_literal(printer, re)
        printer.print_string(", ")
        print_f64_literal(printer, im)


def parse_scalar_literal(parser: Parser) -> dict[str, Attribute]:
    if parser.parse_optional_punctuation("(") is None:
        return scalar_properties(parse_f64_literal(parser))
    re = parse_f64_literal(parser)
    parser.parse_punctuation(",")
    im = parse_f64_literal(parser)
    parser.parse_punctuation(")")
    return {"re": FloatAttr(re, f64), "im": FloatAttr(im, f64)}


def verify_literal_fits(
    op: IRDLOperation, what: str, element: Attribute, re: float, im: float
) -> None:
    """A literal must be real for a real element type, 0 or 1 for i1, and a real integer
    for an integer element type."""
    if is_integer_element(element) and (im != 0.0 or not re.is_integer()):
        raise VerifyException(
            f"{op.name} has the {what} ({re}, {im}), but its element type {element} holds "
            "integers."
        )
    if is_real_element(element) and im != 0.0:
        raise VerifyException(
            f"{op.name} has the complex {what} ({re}, {im}), but its element type {element} "
            "is real."
        )
    if element == i1 and (im != 0.0 or re not in (0.0, 1.0)):
        raise VerifyException(
            f"{op.name} has the {what} ({re}, {im}), but an i1 value must be 0 or 1."
        )


# ---------------------------------------------------------------------------------
# The elementwise family
# ---------------------------------------------------------------------------------

Signature = tuple[list[Attribute], list[Attribute]]


class ElementwiseOperation(IRDLOperation, ABC):
    """Base of every elementwise tidu op.

    Operands and results are either all static tensors of one shape or all scalars.
    A subclass declares its operands and results with irdl, sets `name`, and may set
    `ELEMENT_KIND` (what its key operand's element type may be), override `signature`
    (its types derived from the key operand's type) and the property hooks.
    """

    KEY_OPERAND: ClassVar[int] = 0
    """The operand whose type names the op in the short custom form."""

    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.NUMERIC
    """The element types accepted for the key operand."""

    @classmethod
    def signature(cls, key: Attribute) -> Signature | None:
        """Operand and result types when the key operand has type `key`.

        The default is "every operand and result has the key's type". `None` means the
        result types do not follow from the key (the short form is then unavailable).
        It must not raise for any attribute: the parser and printer call it on types
        that do not verify, and the verifier reports those.
        """
        op_def = cls.get_irdl_definition()
        return [key] * len(op_def.operands), [key] * len(op_def.results)

    # -- verification ----------------------------------------------------------

    def verify_(self) -> None:
        types = [v.type for v in self.operands] + [r.type for r in self.results]
        if all(value_type_error(t, True) is None for t in types) and all(
            shape_of(t) == shape_of(types[0]) for t in types
        ):
            self._verify_key_and_properties()
            return
        typed = [(f"operand {i}", v.type) for i, v in enumerate(self.operands)]
        typed += [(f"result {i}", r.type) for i, r in enumerate(self.results)]
        for what, type_ in typed:
            verify_value_type(self, what, type_, allow_scalar=True)
        first_what, first_type = typed[0]
        for what, type_ in typed[1:]:
            if shape_of(type_) != shape_of(first_type):
                raise VerifyException(
                    f"{self.name} needs all operands and results to have the same shape (or "
                    f"all to be scalars), but {first_what} is {first_type} and {what} is "
                    f"{type_}."
                )
        self._verify_key_and_properties()

    def _verify_key_and_properties(self) -> None:
        key = self.operands[self.KEY_OPERAND].type
        if not self.ELEMENT_KIND.accepts(element_type(key)):
            raise VerifyException(
                f"{self.name} needs operand {self.KEY_OPERAND} to have element type "
                f"{self.ELEMENT_KIND.value}, but it has {element_type(key)}."
            )
        self.verify_element_types_(key)
        self.verify_properties_()

    def verify_element_types_(self, key: Attribute) -> None:
        """Check every element type against the signature derived from `key`."""
        signature = self.signature(key)
        if signature is None:
            raise VerifyException(f"{self.name} must override verify_element_types_.")
        expected_operands, expected_results = signature
        types = [v.type for v in self.operands] + [r.type for r in self.results]
        if types == [*expected_operands, *expected_results]:
            return
        actual = [(f"operand {i}", v.type) for i, v in enumerate(self.operands)]
        actual += [(f"result {i}", r.type) for i, r in enumerate(self.results)]
        for (what, type_), expected in zip(
            actual, expected_operands + expected_results, strict=True
        ):
            if type_ != expected:
                raise VerifyException(
                    f"{self.name} {what} has element type {element_type(type_)}, but "
                    f"{element_type(expected)} is expected when operand {self.KEY_OPERAND} "
                    f"is {key}."
                )

    def verify_properties_(self) -> None:
        """Hook: check the op's properties once the types are known to be valid."""

    def init_elementwise_(
        self,
        operands: Sequence[SSAValue | Operation],
        properties: dict[str, Attribute | None] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ) -> None:
        """Build the op; result types default to the signature of the key operand."""
        values = [SSAValue.get(operand) for operand in operands]
        if result_types is None:
            signature = self.signature(values[self.KEY_OPERAND].type)
            if signature is None:
                raise ValueError(f"{self.name} needs explicit result types.")
            result_types = signature[1]
        op_def = self.get_irdl_definition()
        if len(values) != len(op_def.operands) or len(result_types) != len(op_def.results):
            raise ValueError(
                f"{self.name} takes {len(op_def.operands)} operands and gives "
                f"{len(op_def.results)} results, got {len(values)} and {len(result_types)}"
            )
        # what IRDLOperation.__init__ does for fixed operands and results, a third of
        # the time (a program imports one op per elementwise primitive)
        kept = {k: v for k, v in (properties or {}).items() if v is not None}
        Operation.__init__(self, operands=values, result_types=result_types, properties=kept)

    # -- custom syntax ---------------------------------------------------------

    def print_prefix_(self, printer: Printer) -> None:
        """Hook: print properties that come before the operands."""

    def print_suffix_(self, printer: Printer) -> None:
        """Hook: print properties that come after the operands."""

    @classmethod
    def parse_prefix_(cls, parser: Parser) -> dict[str, Attribute]:
        return {}

    @classmethod
    def parse_suffix_(cls, parser: Parser) -> dict[str, Attribute]:
        return {}

    def print(self, printer: Printer) -> None:
        self.print_prefix_(printer)
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        self.print_suffix_(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        key = self.operands[self.KEY_OPERAND].type
        signature = self.signature(key)
        operand_types = list(self.operand_types)
        result_types = list(self.result_types)
        if signature is not None and signature == (operand_types, result_types):
            printer.print_attribute(key)
            return
        printer.print_list(operand_types, printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_list(result_types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        properties = cls.parse_prefix_(parser)
        position = parser.pos
        operands: list[UnresolvedOperand] = []
        for index in range(len(cls.get_irdl_definition().operands)):
            if index:
                parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        properties |= cls.parse_suffix_(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_types, result_types = parse_elementwise_signature(parser, cls)
        values = parser.resolve_operands(operands, operand_types, position)
        return cls.create(
            operands=values,
            result_types=result_types,
            properties=properties,
            attributes=attributes,
        )


def parse_elementwise_signature(parser: Parser, cls: type[ElementwiseOperation]) -> Signature:
    """Parse `T` (the key operand's type) or `A, B -> R, S` (explicit types)."""
    position = parser.pos
    types: list[Attribute] = list(
        parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    )
    if parser.parse_optional_punctuation("->") is not None:
        results: list[Attribute] = list(
            parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        )
        return types, results
    if len(types) != 1:
        parser.raise_error(
            f"{cls.name} expects one type (its operand {cls.KEY_OPERAND}'s) or the explicit "
            "form `operand types -> result types`.",
            position,
        )
    signature = cls.signature(types[0])
    if signature is None:
        parser.raise_error(
            f"{cls.name} cannot derive its types from {types[0]}; write them explicitly as "
            "`operand types -> result types`.",
            position,
        )
    return signature

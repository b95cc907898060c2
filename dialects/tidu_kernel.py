"""The structural ops of the fused-kernel pipeline: `tidu.kernel` and `tidu.yield`.

A kernel is a fused loop nest over its `domain` (the iteration sizes). Its body computes on element
scalars with the elementwise tidu ops:

    %r:2 = tidu.kernel ins(%x, %y : tensor<8xf64>, tensor<8xf64>) domain [8]
             maps [[0], [0]] -> [[0], []] {
    ^bb0(%a: f64, %b: f64):
      %m = tidu.mul %a, %b : f64
      tidu.yield %m, %m : f64, f64
    } : tensor<8xf64>, tensor<f64>

(The op prints on one line up to the region; it is wrapped here for width.)

`operand_maps[i][k]` is the iteration dimension that indexes dimension k of operand
i, or -1 for a size-1 dimension read at index 0 (broadcast). `result_maps[j][k]` is
the iteration dimension that indexes dimension k of result j; the iteration
dimensions missing from a result's map are summed over (a reduction).

A map entry may also be an affine or indirect index (`tidu_access.Index`): `0+1`
(`i0 + 1`), `0*-1+7` (`7 - i0`), `_+3` (the constant 3), `in2` (the integer that
operand 2 holds at this point; a result indexed so accumulates: a scatter-add).
Slices and gathers are operand maps, pads are result maps:

    %dx = tidu.kernel ins(%x, %y, %g : tensor<9xf64>, tensor<9xf64>, tensor<8xf64>)
            domain [8] maps [[0+1], [0], [0]] -> [[0+1] fill 0.000000e+00] {...}

A map followed by `fill v` is partial: an operand read outside its bounds gives `v`
(a concatenation reads each piece so, with `v = -0.0`, the identity of `+`), and the
elements of a result that no iteration writes hold `v`. Without a fill every read and
write must stay inside its tensor, which the verifier checks.

A reduced result sums by default; a result map followed by `max`, `min` or `mul`
combines its elements so instead (`tidu_reduce.COMBINERS`: from -inf, +inf or 1; max
and min propagate NaN, and on i1 are `or` and `and`):

    %m, %s = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps [[0, 1]]
               -> [[0] max, [0]] {...} : tensor<4xf64>, tensor<4xf64>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_access import Index, as_index, combine, is_plain, parse_index
from .tidu_base import (
    ElementKind,
    array_values,
    element_type,
    i64_array,
    parse_scalar_literal,
    print_scalar_literal,
    scalar_properties,
    verify_tensor,
)
from .tidu_kernel_verify import verify_operand_access, verify_result_access
from .tidu_reduce import COMBINERS

Map = Sequence[int | Index]
"""A map as the builder takes it: plain ints (dimensions, -1) or ``Index`` entries."""


def _listed(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A fused loop nest; see the module docstring for the maps and an example.

    Custom form:
        tidu.kernel ins(operands : types) domain [sizes] maps [operand maps] ->
            [result maps] (attributes {...})? { body } : result types
    """

    name = "tidu.kernel"

    inputs = var_operand_def()
    outputs = var_result_def()
    domain = prop_def(DenseArrayBase.constr(i64))
    operand_maps = prop_def(ArrayAttr.constr(DenseArrayBase.constr(i64)))
    result_maps = prop_def(ArrayAttr.constr(DenseArrayBase.constr(i64)))
    # Offsets, strides and `in<k>` operands of the map entries (three integers per entry),
    # present only when some entry is more than a dimension; fills (re, im), or none.
    operand_access = opt_prop_def(ArrayAttr.constr(DenseArrayBase.constr(i64)))
    result_access = opt_prop_def(ArrayAttr.constr(DenseArrayBase.constr(i64)))
    operand_fills = opt_prop_def(ArrayAttr.constr(ArrayAttr.constr(FloatAttr.constr(f64))))
    result_fills = opt_prop_def(ArrayAttr.constr(ArrayAttr.constr(FloatAttr.constr(f64))))
    # How each result combines over its reduced dimensions, present only when some
    # result does not sum (`add`).
    result_combiners = opt_prop_def(ArrayAttr.constr(StringAttr))
    body = region_def()

    traits = traits_def(Pure(), IsolatedFromAbove())

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        domain: Sequence[int],
        operand_maps: Sequence[Map],
        result_maps: Sequence[Map],
        body: Region | None = None,
        operand_fills: Sequence[complex | None] = (),
        result_fills: Sequence[complex | None] = (),
        result_combiners: Sequence[str] = (),
    ) -> None:
        """Without `body`, the body is one empty block with the element arguments.
        Fills default to none, combiners to `add`."""
        if body is None:
            arg_types = [element_type(SSAValue.get(value).type) for value in inputs]
            body = Region(Block(arg_types=arg_types))
        properties: dict[str, Attribute] = {"domain": i64_array(domain)}
        properties |= map_properties("operand", operand_maps, operand_fills)
        properties |= map_properties("result", result_maps, result_fills, result_combiners)
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties=properties,
            regions=[body],
        )

    # -- accessors -------------------------------------------------------------

    def operand_map(self, index: int) -> tuple[int, ...]:
        """The iteration dimension of each dimension of operand `index` (-1: none)."""
        return array_values(self.operand_maps.data[index])

    def result_map(self, index: int) -> tuple[int, ...]:
        """The iteration dimension of each dimension of result `index` (-1: none)."""
        return array_values(self.result_maps.data[index])

    def operand_indices(self, index: int) -> tuple[Index, ...]:
        """The full map of operand `index`: one `Index` per dimension."""
        return _indices(self.operand_map(index), self.operand_access, index)

    def result_indices(self, index: int) -> tuple[Index, ...]:
        """The full map of result `index`: one `Index` per dimension."""
        return _indices(self.result_map(index), self.result_access, index)

    def operand_fill(self, index: int) -> complex | None:
        """What operand `index` reads outside its bounds, or None (never outside)."""
        return _fill(self.operand_fills, index)

    def result_fill(self, index: int) -> complex | None:
        """What the elements of result `index` no iteration writes hold, or None."""
        return _fill(self.result_fills, index)

    def result_combiner(self, index: int) -> str:
        """How result `index` combines over its reduced dimensions (`add`: a sum)."""
        if self.result_combiners is None:
            return "add"
        return self.result_combiners.data[index].data

    def reduced_dims(self, index: int) -> tuple[int, ...]:
        """The iteration dimensions summed over for result `index`."""
        kept = set(self.result_map(index))
        return tuple(d for d in range(len(array_values(self.domain))) if d not in kept)

    def accumulates(self, index: int) -> bool:
        """Result `index` is combined from its identity (`+=`, or the combiner's):
        reduced, or written through `in<k>`."""
        return bool(self.reduced_dims(index)) or any(
            not i.is_affine for i in self.result_indices(index)
        )

    # -- verification ----------------------------------------------------------

    def verify_(self) -> None:
        domain = array_values(self.domain)
        if any(size < 0 for size in domain):
            raise VerifyException(
                f"{self.name} has the domain {_listed(domain)}, but sizes must not "
                "be negative."
            )
        for what, maps, values in (
            ("operand", self.operand_maps, self.inputs),
            ("result", self.result_maps, self.outputs),
            ("result", self.result_combiners, self.outputs),
        ):
            if maps is not None and len(maps) != len(values):
                raise VerifyException(
                    f"{self.name} has {len(maps)} {what}_maps for {len(values)} {what}s; it "
                    f"needs one map per {what}."
                )
        if not self.outputs:
            raise VerifyException(f"{self.name} must have at least one result.")
        for index, value in enumerate(self.inputs):
            tensor = verify_tensor(self, f"operand {index}", value.type, ElementKind.ALL)
            self._verify_map("operand", index, tensor, domain)
        for index, value in enumerate(self.outputs):
            tensor = verify_tensor(self, f"result {index}", value.type, ElementKind.ALL)
            self._verify_map("result", index, tensor, domain)
            self._verify_reduction(index, tensor)
        self._verify_body()

    def _verify_map(
        self, what: str, index: int, tensor: TensorType, domain: tuple[int, ...]
    ) -> None:
        """The map of operand or result ``index``: one entry per dimension of ``tensor``,
        each checked by ``tidu_kernel_verify`` (reads and writes inside the tensor unless
        the map has a fill; results written whole unless summed into or filled)."""
        mapping = self.operand_map(index) if what == "operand" else self.result_map(index)
        shape = tensor.get_shape()
        if len(mapping) != len(shape):
            raise VerifyException(
                f"{self.name} {what} {index} ({tensor}) has the map {_listed(mapping)}, but "
                f"it needs one entry per {what} dimension ({len(shape)})."
            )
        if what == "operand":
            verify_operand_access(self, index, tensor, self.operand_indices(index), domain,
                                  self.operand_fill(index) is not None)  # fmt: skip
        else:
            verify_result_access(self, index, tensor, self.result_indices(index), domain,
                                 self.result_fill(index) is not None)  # fmt: skip

    def _verify_reduction(self, index: int, tensor: TensorType) -> None:
        """A result summed into (over some iteration dimensions, or at the indices an
        operand holds) has a numeric element type; one combined by max or min an ordered
        one (f32, f64, i1), and only over iteration dimensions."""
        reduced = self.reduced_dims(index)
        element = tensor.element_type
        assert isinstance(element, Attribute)
        combiner = self.result_combiner(index)
        if combiner not in COMBINERS:
            raise VerifyException(
                f"{self.name} result {index} has the combiner {combiner!r}; expected one of "
                f"{', '.join(COMBINERS)}."
            )
        if combiner != "add":
            kind = ElementKind.ORDERED if combiner in ("max", "min") else ElementKind.ARITHMETIC
            if not reduced or not all(i.is_affine for i in self.result_indices(index)):
                raise VerifyException(
                    f"{self.name} result {index} is combined by {combiner}, so it must be "
                    "reduced over some iteration dimension (and not written through an "
                    "operand's indices)."
                )
            if not kind.accepts(element):
                raise VerifyException(
                    f"{self.name} result {index} is combined by {combiner}, but its element "
                    f"type {element} is not {kind.value}."
                )
            return
        if self.accumulates(index) and not ElementKind.ARITHMETIC.accepts(element):
            what = f"sums over iteration dimensions {_listed(reduced)}" if reduced else (
                "accumulates (it is written through an operand's indices)")
            raise VerifyException(
                f"{self.name} result {index} {what}, but its element type {element} cannot be "
                "summed."
            )

    def _verify_body(self) -> None:
        blocks = list(self.body.blocks)
        if len(blocks) != 1:
            raise VerifyException(
                f"{self.name} must have a body of exactly one block, but it has {len(blocks)}."
            )
        block = blocks[0]
        expected_args = [element_type(v.type) for v in self.inputs]
        if list(block.arg_types) != expected_args:
            raise VerifyException(
                f"{self.name} body arguments must be the element types of the operands "
                f"({', '.join(map(str, expected_args)) or 'none'}), but they are "
                f"({', '.join(map(str, block.arg_types)) or 'none'})."
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException(f"{self.name} body must end with tidu.yield.")
        expected_yield = [element_type(v.type) for v in self.outputs]
        yielded = list(terminator.values.types)
        if yielded != expected_yield:
            raise VerifyException(
                f"{self.name} body must yield the element types of the results "
                f"({', '.join(map(str, expected_yield))}), but it yields "
                f"({', '.join(map(str, yielded)) or 'nothing'})."
            )

    # -- custom syntax ---------------------------------------------------------

    def print(self, printer: Printer) -> None:
        printer.print_string(" ins(")
        if self.inputs:
            printer.print_list(self.inputs, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list(self.inputs.types, printer.print_attribute)
        printer.print_string(") domain ")
        _print_ints(printer, array_values(self.domain))
        printer.print_string(" maps ")
        _print_maps(printer, [self.operand_indices(i) for i in range(len(self.inputs))],
                    [self.operand_fill(i) for i in range(len(self.inputs))])  # fmt: skip
        printer.print_string(" -> ")
        _print_maps(printer, [self.result_indices(j) for j in range(len(self.outputs))],
                    [self.result_fill(j) for j in range(len(self.outputs))],
                    [self.result_combiner(j) for j in range(len(self.outputs))])  # fmt: skip
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body)
        if self.outputs:
            printer.print_string(" : ")
            printer.print_list(self.outputs.types, printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        parser.parse_keyword("ins")
        parser.parse_punctuation("(")
        position = parser.pos
        unresolved: list[UnresolvedOperand] = []
        types: list[Attribute] = []
        if parser.parse_optional_punctuation(")") is None:
            unresolved = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
        inputs = parser.resolve_operands(unresolved, types, position)
        parser.parse_keyword("domain")
        domain = _parse_ints(parser)
        parser.parse_keyword("maps")
        operand_maps, operand_fills, operand_combiners = _parse_maps(parser)
        if any(c != "add" for c in operand_combiners):
            parser.raise_error("tidu.kernel operand maps take no combiner (max, min, mul)")
        parser.parse_punctuation("->")
        result_maps, result_fills, result_combiners = _parse_maps(parser)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation(":") is not None:
            result_types = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_type
            )
        op = cls.create(
            operands=inputs,
            result_types=result_types,
            properties={"domain": i64_array(domain)}
            | map_properties("operand", operand_maps, operand_fills)
            | map_properties("result", result_maps, result_fills, result_combiners),
            regions=[body],
        )
        if attributes is not None:
            op.attributes |= attributes.data
        return op


def map_properties(
    side: str, maps: Sequence[Map], fills: Sequence[complex | None],
    combiners: Sequence[str] = (),
) -> dict[str, Attribute]:
    """The properties storing the maps, fills and combiners of one side (`operand` or
    `result`; combiners are of results only)."""
    indices = [[as_index(entry) for entry in m] for m in maps]
    properties: dict[str, Attribute] = {
        f"{side}_maps": ArrayAttr([i64_array([i.dim for i in m]) for m in indices])
    }
    if any(not is_plain(i) for m in indices for i in m):
        properties[f"{side}_access"] = ArrayAttr(
            [i64_array([v for i in m for v in i.extra]) for m in indices]
        )
    if any(f is not None for f in fills):
        entries = []
        for fill in list(fills) + [None] * (len(indices) - len(fills)):
            parts = scalar_properties(fill) if fill is not None else {}
            entries.append(ArrayAttr([parts["re"], parts["im"]] if parts else []))
        properties[f"{side}_fills"] = ArrayAttr(entries)
    if any(c != "add" for c in combiners):
        padded = list(combiners) + ["add"] * (len(indices) - len(combiners))
        properties[f"{side}_combiners"] = ArrayAttr([StringAttr(c) for c in padded])
    return properties


def _indices(
    dims: tuple[int, ...], access: ArrayAttr[DenseArrayBase[IntegerType]] | None, index: int
) -> tuple[Index, ...]:
    return combine(dims, None if access is None else array_values(access.data[index]))


def _fill(fills: ArrayAttr[ArrayAttr[FloatAttr]] | None, index: int) -> complex | None:
    if fills is None or not fills.data[index].data:
        return None
    re, im = fills.data[index].data
    return complex(re.value.data, im.value.data)


def _print_ints(printer: Printer, values: Sequence[int]) -> None:
    with printer.in_square_brackets():
        printer.print_list(values, lambda v: printer.print_string(str(v)))


def _print_maps(
    printer: Printer, maps: Sequence[Sequence[Index]], fills: Sequence[complex | None],
    combiners: Sequence[str] = (),
) -> None:
    def print_map(position: int) -> None:
        with printer.in_square_brackets():
            printer.print_list(maps[position], lambda i: printer.print_string(str(i)))
        fill = fills[position]
        if fill is not None:
            printer.print_string(" fill ")
            print_scalar_literal(printer, fill.real, fill.imag)
        if combiners and combiners[position] != "add":
            printer.print_string(f" {combiners[position]}")

    with printer.in_square_brackets():
        printer.print_list(range(len(maps)), print_map)


def _parse_ints(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
    )


def _parse_maps(parser: Parser) -> tuple[list[list[Index]], list[complex | None], list[str]]:
    fills: list[complex | None] = []
    combiners: list[str] = []

    def parse_map() -> list[Index]:
        indices = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parse_index(parser)
        )
        fill = None
        if parser.parse_optional_keyword("fill") is not None:
            literal = parse_scalar_literal(parser)
            fill = complex(literal["re"].value.data, literal["im"].value.data)  # type: ignore[attr-defined]
        fills.append(fill)
        combiner = next((c for c in COMBINERS[1:]
                         if parser.parse_optional_keyword(c) is not None), "add")  # fmt: skip
        combiners.append(combiner)
        return indices

    maps = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_map)
    return maps, fills, combiners


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of a `tidu.kernel` body: one element scalar per kernel result.

    tidu.yield %m, %s : f64, f64
    """

    name = "tidu.yield"

    values = var_operand_def()

    traits = traits_def(Pure(), IsTerminator())

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue | Operation) -> None:
        super().__init__(operands=[values])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and not isinstance(parent, KernelOp):
            raise VerifyException(
                f"{self.name} terminates the body of a tidu.kernel, but its parent is "
                f"{parent.name}."
            )


__all__ = ["Index", "KernelOp", "Map", "YieldOp", "map_properties"]

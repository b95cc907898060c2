"""Index maps of `tidu.kernel` operands and results, one `Index` per tensor dimension.

At an iteration point `(i0, i1, ...)` of a kernel's domain, dimension k of an operand or
result is indexed by its `Index`:

=============  ===================  ==================================================
text           `Index`              index
=============  ===================  ==================================================
`1`            `Index(1)`           `i1` (the plain map of the kernel's first form)
`0+2`          `Index(0, 2)`        `i0 + 2`
`0*-1+7`       `Index(0, 7, -1)`    `7 - i0`
`-1`           `Index()`            `0` (a broadcast size-1 dimension)
`_+3`          `Index(-1, 3)`       `3`
`in2`          `Index(via=2)`       the integer of kernel operand 2 at this point
=============  ===================  ==================================================

An `in<k>` index reads kernel operand k (an i32 or i64 tensor with its own map, which
must not itself read through `in<k>`), adds the dimension's size when it is negative (as
numpy does) and clamps it into the dimension, so a kernel never reads or writes outside
a buffer whatever the index data. A result with an `in<k>` index accumulates (`+=`, from
zero): that is a scatter-add. Gathers and slices are operand maps; pads are result
maps; a map may also carry a `fill` value (see `tidu_kernel`).

The kernel stores the iteration dimensions in `operand_maps` / `result_maps` (-1 where
none), and the rest, only when some entry needs it, as three integers per dimension
(offset, stride, via) in `operand_access` / `result_access`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.parser import Parser

__all__ = ["Index", "as_index", "parse_index", "is_plain"]


@dataclass(frozen=True)
class Index:
    """The index of one tensor dimension at an iteration point (see the module table)."""

    dim: int = -1
    offset: int = 0
    stride: int = 1
    via: int = -1

    def __post_init__(self) -> None:
        if self.via >= 0 and (self.dim, self.offset, self.stride) != (-1, 0, 1):
            raise ValueError(f"an in{self.via} index takes no dimension, offset or stride")
        if self.stride == 0:
            raise ValueError("an index stride cannot be 0")

    @property
    def is_affine(self) -> bool:
        """``offset + stride * i_dim`` (or the constant ``offset``): not read from an operand."""
        return self.via < 0

    @property
    def extra(self) -> tuple[int, int, int]:
        """What ``*_access`` stores for this index beyond the dimension."""
        return (self.offset, self.stride, self.via)

    def image(self, extent: int) -> tuple[int, int]:
        """The smallest and largest index of an affine index over ``extent`` iterations
        (of its dimension; a constant index ignores it)."""
        if self.dim < 0:
            return self.offset, self.offset
        last = self.offset + self.stride * (extent - 1)
        return min(self.offset, last), max(self.offset, last)

    def __str__(self) -> str:
        if self.via >= 0:
            return f"in{self.via}"
        if self.dim < 0:
            return "-1" if self.offset == 0 else f"_{self.offset:+d}"
        text = str(self.dim)
        if self.stride != 1:
            text += f"*{self.stride}"
        if self.offset:
            text += f"{self.offset:+d}"
        return text


PLAIN_EXTRA = (0, 1, -1)


def is_plain(index: Index) -> bool:
    """A dimension or -1, which ``operand_maps`` / ``result_maps`` hold alone."""
    return index.extra == PLAIN_EXTRA


def as_index(entry: int | Index) -> Index:
    """An int map entry (a dimension, or -1) as an ``Index``."""
    return entry if isinstance(entry, Index) else Index(int(entry))


def combine(dims: Sequence[int], extra: Sequence[int] | None) -> tuple[Index, ...]:
    """The indices stored as ``dims`` plus optional flat (offset, stride, via) triples."""
    if not extra:
        return tuple(Index(d) for d in dims)
    return tuple(
        Index(d, extra[3 * k], extra[3 * k + 1], extra[3 * k + 2]) for k, d in enumerate(dims)
    )


def parse_index(parser: Parser) -> Index:
    """One index in the text form of the module table."""
    position = parser.pos
    name = parser.parse_optional_identifier()
    if name == "_":
        return Index(-1, _parse_offset(parser))
    if name is not None:
        if not re.fullmatch(r"in[0-9]+", name):
            parser.raise_error(f"expected an index (`0`, `0+2`, `_+3`, `in1`), got `{name}`",
                               position)
        return Index(via=int(name[2:]))
    dim = parser.parse_integer(allow_boolean=False)
    stride = 1
    if parser.parse_optional_punctuation("*") is not None:
        stride = parser.parse_integer(allow_boolean=False)
    return Index(dim, _parse_offset(parser), stride)


def _parse_offset(parser: Parser) -> int:
    """An optional `+N` or `-N` (0 when absent)."""
    if parser.parse_optional_punctuation("+") is not None:
        return parser.parse_integer(allow_boolean=False, allow_negative=False)
    position = parser.pos
    negative = parser.parse_optional_integer(allow_boolean=False)
    if negative is None:
        return 0
    if negative >= 0:
        parser.raise_error("expected `+` or `-` before an index offset", position)
    return negative

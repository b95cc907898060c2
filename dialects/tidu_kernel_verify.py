"""The verifier of `tidu.kernel` maps (`tidu_access.Index` entries) and fills.

What a native kernel may do follows from these checks alone: every read and write of
an operand or result without a fill stays inside its tensor for every point of the
domain; an `in<k>` operand holds integers and is read through a map of its own; a
result that is not summed into and has no fill is written whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

from .tidu_access import Index, is_plain
from .tidu_base import ElementKind, element_type

__all__ = ["verify_operand_access", "verify_result_access"]


def _listed(values: Sequence[object]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _check_dim(op: IRDLOperation, what: str, dim: int, entry: Index, domain: Sequence[int]) -> None:
    if not 0 <= entry.dim < len(domain):
        raise VerifyException(
            f"{op.name} {what} maps dimension {dim} to iteration dimension {entry.dim}, which "
            f"is out of range for the domain {_listed(domain)}."
        )


def _check_via(op: IRDLOperation, what: str, dim: int, via: int) -> None:
    """`in<via>` must name another operand: an integer tensor read through a plain map."""
    inputs = op.operands
    if not 0 <= via < len(inputs):
        raise VerifyException(
            f"{op.name} {what} indexes dimension {dim} by operand {via}, which does not exist."
        )
    if not ElementKind.INDEX.accepts(element_type(inputs[via].type)):
        raise VerifyException(
            f"{op.name} {what} indexes dimension {dim} by operand {via}, which holds "
            f"{element_type(inputs[via].type)}, not i32 or i64."
        )
    indices = op.operand_indices(via)  # type: ignore[attr-defined]
    if any(not i.is_affine for i in indices) or op.operand_fill(via) is not None:  # type: ignore[attr-defined]
        raise VerifyException(
            f"{op.name} {what} indexes dimension {dim} by operand {via}, whose own map must "
            "be affine and have no fill."
        )


def _check_inside(
    op: IRDLOperation, what: str, tensor: TensorType, dim: int, entry: Index, domain: Sequence[int]
) -> None:
    size = tensor.get_shape()[dim]
    if entry.dim >= 0 and domain[entry.dim] == 0:
        return  # no iteration reads or writes it
    low, high = entry.image(domain[entry.dim] if entry.dim >= 0 else 1)
    if low < 0 or high >= size:
        through = f" through iteration dimension {entry.dim}" if entry.dim >= 0 else ""
        raise VerifyException(
            f"{op.name} {what} ({tensor}) reaches dimension {dim} (size {size}) at indices "
            f"{low}..{high}{through} ({entry}), outside 0..{size - 1}; only a map with a fill "
            "may read outside."
        )


def verify_operand_access(
    op: IRDLOperation,
    index: int,
    tensor: TensorType,
    indices: Sequence[Index],
    domain: Sequence[int],
    has_fill: bool,
) -> None:
    """The map of operand `index` (one entry per dimension, checked by the caller)."""
    what = f"operand {index}"
    for dim, entry in enumerate(indices):
        if not entry.is_affine:
            if has_fill:
                raise VerifyException(f"{op.name} {what} reads through operand {entry.via}, so "
                                      "it cannot have a fill.")  # fmt: skip
            if entry.via == index:
                raise VerifyException(f"{op.name} {what} indexes itself.")
            _check_via(op, what, dim, entry.via)
            continue
        if entry.dim >= 0:
            _check_dim(op, what, dim, entry, domain)
        if not has_fill:
            _check_inside(op, what, tensor, dim, entry, domain)


def verify_result_access(
    op: IRDLOperation,
    index: int,
    tensor: TensorType,
    indices: Sequence[Index],
    domain: Sequence[int],
    has_fill: bool,
) -> None:
    """The map of result `index`: writes inside the result, each iteration dimension at
    most once; a result written only in part needs a fill; a summed one a plain map."""
    what = f"result {index}"
    shape = tensor.get_shape()
    accumulates = any(not i.is_affine for i in indices)
    dims = [i.dim for i in indices if i.is_affine]
    for dim, entry in enumerate(indices):
        if not entry.is_affine:
            _check_via(op, what, dim, entry.via)
            continue
        _check_dim(op, what, dim, entry, domain)
        _check_inside(op, what, tensor, dim, entry, domain)
    twice = next((d for d in dims if dims.count(d) > 1), None)
    if twice is not None:
        raise VerifyException(
            f"{op.name} {what} has the map {_listed(indices)}, which uses iteration "
            f"dimension {twice} twice."
        )
    accumulates = accumulates or len(dims) < len(domain)
    for dim, entry in enumerate(indices):
        if not entry.is_affine:
            continue
        size, extent = shape[dim], domain[entry.dim]
        if is_plain(entry) and size != extent and (accumulates or not has_fill):
            raise VerifyException(
                f"{op.name} {what} ({tensor}) maps dimension {dim} of size {size} to iteration "
                f"dimension {entry.dim} of size {extent}; the sizes must be equal."
            )
        if accumulates and not is_plain(entry):
            raise VerifyException(
                f"{op.name} {what} is summed into, so its map entries must be plain "
                f"dimensions, but dimension {dim} has {entry}."
            )
        if not has_fill and not accumulates and (abs(entry.stride) != 1 or size != extent):
            raise VerifyException(
                f"{op.name} {what} ({tensor}) writes dimension {dim} only in part ({entry}); "
                "such a result needs a fill."
            )
    if accumulates and has_fill:
        raise VerifyException(f"{op.name} {what} is summed into from zero; it cannot have a fill.")

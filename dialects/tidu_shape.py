"""The shape ops of the `tidu` dialect: broadcast, reshape, transpose, dot (the
reductions, which share `ShapeOperation`, are in `tidu_reduce`).

They take and return ranked tensors with static shapes only (never scalars), keep
the element type, and print their types as `operand types -> result type`:

    %y = tidu.transpose %x, permutation = [1, 0] : tensor<4x8xf64> -> tensor<8x4xf64>

Broadcast, reshape and transpose are structural ops (`tidu_structural`): their names,
properties and syntax come from their primitives' fields; the classes here add their
builders, verifiers and canonicalization. `dot_general`, with its paired dimension
lists, is written out in full.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tidu_compile import ops

from .tidu_base import (
    ElementKind,
    TiduCanonicalization,
    array_values,
    i64_array,
    verify_same_element_type,
    verify_tensor,
)
from .tidu_structural import StructuralOperation, structural


def _tensor_type(value: SSAValue | Operation) -> TensorType:
    type_ = SSAValue.get(value).type
    if not isinstance(type_, TensorType):
        raise ValueError(f"expected a value of tensor type, got {type_}")
    return type_


def _element(type_: TensorType) -> Attribute:
    element = type_.element_type
    assert isinstance(element, Attribute)
    return element


def listed(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def verify_result_shape(
    op: IRDLOperation, result: TensorType, expected: Sequence[int], because: str
) -> None:
    """Raise unless ``result`` has the shape ``expected``; ``because`` says why
    (``reduces tensor<4x8xf64> over axes [0]``)."""
    if tuple(result.get_shape()) != tuple(expected):
        raise VerifyException(
            f"{op.name} {because}, so its result shape must be {listed(expected)}, "
            f"but the result is {result}."
        )


def verify_axes_in_range(
    op: IRDLOperation, prop: str, axes: Sequence[int], rank: int, of: str
) -> None:
    for index, axis in enumerate(axes):
        if not 0 <= axis < rank:
            raise VerifyException(
                f"{op.name} has {prop}[{index}] = {axis}, which is out of range for the "
                f"{of} of rank {rank}."
            )


class ShapeOperation(StructuralOperation):
    """Base of the one-operand shape ops: a ranked tensor to a ranked tensor of the same
    element type; a concrete op adds its properties, syntax and shape rule."""

    operand = operand_def()
    result = result_def()

    ELEMENT_KIND: ClassVar[ElementKind] = ElementKind.ALL

    def init_shape_(
        self,
        operand: SSAValue | Operation,
        shape: Sequence[int],
        properties: Mapping[str, Attribute] | None = None,
    ) -> None:
        """Initialize with the result ``tensor<shape x operand's element type>``."""
        result_type = TensorType(_element(_tensor_type(operand)), shape)
        IRDLOperation.__init__(
            self, operands=[operand], result_types=[result_type], properties=properties or {}
        )

    def verify_types_(self) -> tuple[TensorType, TensorType]:
        """The operand and result tensor types, once verified to share an element type."""
        source = verify_tensor(self, "operand", self.operand.type, self.ELEMENT_KIND)
        target = verify_tensor(self, "result", self.result.type, self.ELEMENT_KIND)
        verify_same_element_type(self, "result", target, "the operand", source)
        return source, target


@structural(ops.BroadcastInDim)
class BroadcastInDimOp(ShapeOperation):
    """Broadcast to a larger shape, JAX's `broadcast_in_dim`.

    Operand dimension i becomes result dimension `broadcast_dimensions[i]` (strictly
    increasing); its size is 1 (broadcast) or that result dimension's size.

        %y = tidu.broadcast_in_dim %x, dims = [1] : tensor<8xf64> -> tensor<4x8xf64>
    """

    traits = traits_def(Pure(), TiduCanonicalization())

    if TYPE_CHECKING:  # the property, made from the primitive's field
        broadcast_dimensions: DenseArrayBase[IntegerType]

    def __init__(
        self,
        operand: SSAValue | Operation,
        broadcast_dimensions: Sequence[int],
        shape: Sequence[int],
    ) -> None:
        self.init_shape_(
            operand, shape, {"broadcast_dimensions": i64_array(broadcast_dimensions)}
        )

    def verify_(self) -> None:
        source, target = self.verify_types_()
        dims = array_values(self.broadcast_dimensions)
        source_shape, target_shape = source.get_shape(), target.get_shape()
        if len(dims) != len(source_shape):
            raise VerifyException(
                f"{self.name} has broadcast_dimensions {listed(dims)} for an operand of rank "
                f"{len(source_shape)} ({source}); it needs one entry per operand dimension."
            )
        verify_axes_in_range(self, "broadcast_dimensions", dims, len(target_shape), "result")
        if any(a >= b for a, b in zip(dims, dims[1:], strict=False)):
            raise VerifyException(
                f"{self.name} has broadcast_dimensions {listed(dims)}, which must be strictly "
                "increasing."
            )
        for index, (size, dim) in enumerate(zip(source_shape, dims, strict=True)):
            if size not in (1, target_shape[dim]):
                raise VerifyException(
                    f"{self.name} cannot broadcast operand dimension {index} of size {size} "
                    f"to result dimension {dim} of size {target_shape[dim]}; the operand size "
                    f"must be 1 or {target_shape[dim]}."
                )


@structural(ops.Reshape)
class ReshapeOp(ShapeOperation):
    """Same elements in row-major order, another shape of the same element count.

    %y = tidu.reshape %x : tensor<4x8xf64> -> tensor<32xf64>
    """

    traits = traits_def(Pure(), TiduCanonicalization())

    def __init__(self, operand: SSAValue | Operation, shape: Sequence[int]) -> None:
        self.init_shape_(operand, shape)

    def verify_(self) -> None:
        source, target = self.verify_types_()
        if source.element_count() != target.element_count():
            raise VerifyException(
                f"{self.name} cannot reshape {source} ({source.element_count()} elements) to "
                f"{target} ({target.element_count()} elements); the counts must be equal."
            )


@structural(ops.Transpose)
class TransposeOp(ShapeOperation):
    """Permute dimensions: result dimension i is operand dimension `permutation[i]`.

    %y = tidu.transpose %x, permutation = [1, 0] : tensor<4x8xf64> -> tensor<8x4xf64>
    """

    traits = traits_def(Pure(), TiduCanonicalization())

    if TYPE_CHECKING:  # the property, made from the primitive's field
        permutation: DenseArrayBase[IntegerType]

    def __init__(self, operand: SSAValue | Operation, permutation: Sequence[int]) -> None:
        shape = [_tensor_type(operand).get_shape()[p] for p in permutation]
        self.init_shape_(operand, shape, {"permutation": i64_array(permutation)})

    def verify_(self) -> None:
        source, target = self.verify_types_()
        permutation = array_values(self.permutation)
        shape = source.get_shape()
        if sorted(permutation) != list(range(len(shape))):
            raise VerifyException(
                f"{self.name} has permutation {listed(permutation)}, which is not a "
                f"permutation of range({len(shape)}) for the operand {source}."
            )
        expected = tuple(shape[p] for p in permutation)
        verify_result_shape(self, target, expected, f"permutes {source} by {listed(permutation)}")


@irdl_op_definition
class DotGeneralOp(IRDLOperation):
    """Tensor contraction, JAX's `dot_general`.

    Result dimensions: the batch dimensions (in `lhs_batch` order), then the free
    lhs dimensions, then the free rhs dimensions, each in increasing order.

        %z = tidu.dot_general %a, %b, batch = [] x [], contracting = [1] x [0]
               : tensor<4x8xf64>, tensor<8x3xf64> -> tensor<4x3xf64>
    """

    name = "tidu.dot_general"

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    lhs_contracting = prop_def(DenseArrayBase.constr(i64))
    rhs_contracting = prop_def(DenseArrayBase.constr(i64))
    lhs_batch = prop_def(DenseArrayBase.constr(i64))
    rhs_batch = prop_def(DenseArrayBase.constr(i64))

    traits = traits_def(Pure(), TiduCanonicalization())

    assembly_format = (
        "$lhs `,` $rhs `,` `batch` `=` $lhs_batch `x` $rhs_batch `,` "
        "`contracting` `=` $lhs_contracting `x` $rhs_contracting attr-dict "
        "`:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        lhs_contracting: Sequence[int],
        rhs_contracting: Sequence[int],
        lhs_batch: Sequence[int] = (),
        rhs_batch: Sequence[int] = (),
    ) -> None:
        lhs_type, rhs_type = _tensor_type(lhs), _tensor_type(rhs)
        shape = self.result_shape(
            lhs_type.get_shape(),
            rhs_type.get_shape(),
            lhs_contracting,
            rhs_contracting,
            lhs_batch,
            rhs_batch,
        )
        super().__init__(
            operands=[lhs, rhs],
            result_types=[TensorType(_element(lhs_type), shape)],
            properties={
                "lhs_contracting": i64_array(lhs_contracting),
                "rhs_contracting": i64_array(rhs_contracting),
                "lhs_batch": i64_array(lhs_batch),
                "rhs_batch": i64_array(rhs_batch),
            },
        )

    @staticmethod
    def result_shape(
        lhs_shape: Sequence[int],
        rhs_shape: Sequence[int],
        lhs_contracting: Sequence[int],
        rhs_contracting: Sequence[int],
        lhs_batch: Sequence[int],
        rhs_batch: Sequence[int],
    ) -> tuple[int, ...]:
        """Batch dims, then lhs free dims, then rhs free dims (JAX's convention)."""
        lhs_used = set(lhs_contracting) | set(lhs_batch)
        rhs_used = set(rhs_contracting) | set(rhs_batch)
        return (
            tuple(lhs_shape[d] for d in lhs_batch)
            + tuple(s for d, s in enumerate(lhs_shape) if d not in lhs_used)
            + tuple(s for d, s in enumerate(rhs_shape) if d not in rhs_used)
        )

    def verify_(self) -> None:
        lhs = verify_tensor(self, "lhs", self.lhs.type, ElementKind.NUMERIC)
        rhs = verify_tensor(self, "rhs", self.rhs.type, ElementKind.NUMERIC)
        result = verify_tensor(self, "result", self.result.type, ElementKind.NUMERIC)
        verify_same_element_type(self, "rhs", rhs, "lhs", lhs)
        verify_same_element_type(self, "result", result, "lhs", lhs)
        lhs_shape, rhs_shape = lhs.get_shape(), rhs.get_shape()
        dims = {
            name: array_values(getattr(self, name))
            for name in ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch")
        }
        for kind in ("contracting", "batch"):
            left, right = dims[f"lhs_{kind}"], dims[f"rhs_{kind}"]
            if len(left) != len(right):
                raise VerifyException(
                    f"{self.name} has lhs_{kind} {listed(left)} and rhs_{kind} "
                    f"{listed(right)}, which must have the same length."
                )
        for side, shape in (("lhs", lhs_shape), ("rhs", rhs_shape)):
            used = dims[f"{side}_batch"] + dims[f"{side}_contracting"]
            for kind in ("batch", "contracting"):
                verify_axes_in_range(
                    self, f"{side}_{kind}", dims[f"{side}_{kind}"], len(shape), side
                )
            if len(set(used)) != len(used):
                raise VerifyException(
                    f"{self.name} uses a {side} dimension twice among {side}_batch "
                    f"{listed(dims[side + '_batch'])} and {side}_contracting "
                    f"{listed(dims[side + '_contracting'])}."
                )
        for kind in ("batch", "contracting"):
            pairs = zip(dims[f"lhs_{kind}"], dims[f"rhs_{kind}"], strict=True)
            for lhs_dim, rhs_dim in pairs:
                if lhs_shape[lhs_dim] != rhs_shape[rhs_dim]:
                    raise VerifyException(
                        f"{self.name} pairs {kind} dimension {lhs_dim} of lhs {lhs} (size "
                        f"{lhs_shape[lhs_dim]}) with dimension {rhs_dim} of rhs {rhs} (size "
                        f"{rhs_shape[rhs_dim]}); the sizes must be equal."
                    )
        expected = self.result_shape(
            lhs_shape,
            rhs_shape,
            dims["lhs_contracting"],
            dims["rhs_contracting"],
            dims["lhs_batch"],
            dims["rhs_batch"],
        )
        if result.get_shape() != expected:
            raise VerifyException(
                f"{self.name} must have the result shape {listed(expected)} (batch, lhs free, "
                f"rhs free dimensions), but the result is {result}."
            )


__all__ = [
    "BroadcastInDimOp",
    "DotGeneralOp",
    "ShapeOperation",
    "ReshapeOp",
    "TransposeOp",
]

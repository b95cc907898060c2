"""The reductions of the `tidu` dialect: reduce_sum, reduce_max, reduce_min, reduce_prod
(fused into kernels as results combined over the reduced dimensions), and argmax, argmin
(integer results, run as library calls between kernels).

    %s = tidu.reduce_sum %x, axes = [0] : tensor<4x8xf64> -> tensor<8xf64>
    %m = tidu.reduce_max %x, axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
    %i = tidu.argmax %x, axis = 1 : tensor<4x8xf64> -> tensor<4xi64>

The ops are made from their primitives (`tidu_table`, on the family classes here:
`ReduceOperation` for an `ops.Reduction`, `ArgExtremumOperation` for an
`ops.ArgExtremum`). A reduction's `COMBINER` is its primitive's `combiner`: how its
elements combine, which a `tidu.kernel` result map records (`KernelOp.result_combiner`):
`add`, `max`, `min` or `mul`, each with its identity (0, -inf, +inf, 1; on i1, max is
`or` from false and min `and` from true). Max and min follow numpy: a NaN anywhere in a
slice makes its result NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, IntegerType, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import operand_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tidu_compile.ops import TensorOp

from .tidu_base import ElementKind, array_values, element_kind, i64_array, verify_tensor
from .tidu_shape import ShapeOperation, listed, verify_axes_in_range, verify_result_shape
from .tidu_structural import StructuralOperation

COMBINERS = ("add", "max", "min", "mul")
"""How the elements of a reduction combine (the kernel result map's combiner)."""


class ReduceOperation(ShapeOperation):
    """Base of the reductions over `axes` (sorted, unique), which the result drops; an
    op's `COMBINER` and the element types it takes (`ELEMENT_KIND`) are its primitive's
    `combiner` and `allowed_dtypes`."""

    traits = traits_def(Pure())
    COMBINER: ClassVar[str] = "add"

    if TYPE_CHECKING:  # the property, made from the primitive's field
        axes: DenseArrayBase[IntegerType]

    @classmethod
    def family_constants(cls, primitive: type[TensorOp]) -> dict[str, Any]:
        combiner = getattr(primitive, "combiner", None)
        if combiner not in COMBINERS:
            raise TypeError(
                f"{primitive.__name__}.combiner is {combiner!r}: a reduction fused into "
                f"kernels combines by one of {', '.join(COMBINERS)}"
            )
        kind = element_kind(primitive.allowed_dtypes)  # type: ignore[attr-defined]
        return {"COMBINER": combiner, "ELEMENT_KIND": kind}

    def __init__(self, operand: SSAValue | Operation, axes: Sequence[int]) -> None:
        source = SSAValue.get(operand).type
        assert isinstance(source, TensorType)
        shape = [size for dim, size in enumerate(source.get_shape()) if dim not in set(axes)]
        self.init_shape_(operand, shape, {"axes": i64_array(axes)})

    def verify_(self) -> None:
        source, target = self.verify_types_()
        axes = array_values(self.axes)
        shape = source.get_shape()
        verify_axes_in_range(self, "axes", axes, len(shape), "operand")
        if any(a >= b for a, b in zip(axes, axes[1:], strict=False)):
            raise VerifyException(
                f"{self.name} has axes {listed(axes)}, which must be sorted and unique."
            )
        expected = tuple(size for dim, size in enumerate(shape) if dim not in axes)
        verify_result_shape(self, target, expected, f"reduces {source} over axes {listed(axes)}")


class ArgExtremumOperation(StructuralOperation):
    """The i64 index of the first extremum along `axis`, which the result drops."""

    operand = operand_def()
    result = result_def()

    traits = traits_def(Pure())

    if TYPE_CHECKING:  # the property, made from the primitive's field
        axis: IntegerAttr

    def verify_(self) -> None:
        source = verify_tensor(self, "operand", self.operand.type, ElementKind.ALL)
        element = source.element_type
        assert isinstance(element, Attribute)
        if not (ElementKind.ORDERED.accepts(element) or ElementKind.INDEX.accepts(element)):
            raise VerifyException(
                f"{self.name} operand has element type {element}, but it must be ordered "
                "(f32, f64, i1, i32 or i64)."
            )
        result = verify_tensor(self, "result", self.result.type, ElementKind.INDEX)
        shape, axis = source.get_shape(), self.axis.value.data
        verify_axes_in_range(self, "axis", [axis], len(shape), "operand")
        expected = tuple(s for d, s in enumerate(shape) if d != axis)
        if result.get_shape() != expected or result.element_type != i64:
            raise VerifyException(
                f"{self.name} of {source} along axis {axis} gives "
                f"tensor<{'x'.join(map(str, expected))}{'x' if expected else ''}i64>, "
                f"but the result is {result}."
            )


__all__ = ["COMBINERS", "ArgExtremumOperation", "ReduceOperation"]

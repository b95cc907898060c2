"""The family of the `tidu` ops along one axis: cum_sum, cum_prod, linear_scan, argsort.

Each works along one `axis` of operands of one shape, and runs as a library call
between kernels (see `ops.scan`). The ops are made from their primitives
(`tidu_table`, on `AlongAxisOperation`), so a new `ops.AlongAxis` primitive needs
nothing here:

    %y = tidu.cum_sum %x, axis = 0 reverse : tensor<8x3xf64> -> tensor<8x3xf64>
    %s = tidu.linear_scan %a, %b, axis = 1 : tensor<2x5xf32>, tensor<2x5xf32> -> tensor<2x5xf32>
    %p = tidu.argsort %x, axis = 0 : tensor<8x3xf64> -> tensor<8x3xi64>
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import IntegerAttr
from xdsl.irdl import result_def, traits_def, var_operand_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_base import ElementKind, verify_tensor
from .tidu_structural import StructuralOperation


class AlongAxisOperation(StructuralOperation):
    """Operands of one shape (as many as the primitive takes), one result of that
    shape, along `axis`; the result's element type is the operands' (any), or i64 for
    a primitive whose `result_dtype` is int64 (`argsort`)."""

    inputs = var_operand_def()
    result = result_def()

    traits = traits_def(Pure())

    if TYPE_CHECKING:  # the property, made from the primitive's field
        axis: IntegerAttr

    def verify_(self) -> None:
        count = self.PRIMITIVE.input_count
        if len(self.inputs) != count:
            raise VerifyException(f"{self.name} takes {count} operand(s), got {len(self.inputs)}.")
        first = verify_tensor(self, "operand 0", self.inputs[0].type, ElementKind.ALL)
        for i, value in enumerate(self.inputs):
            if value.type != first:
                raise VerifyException(f"{self.name} operand {i} must have the type {first}.")
        index = getattr(self.PRIMITIVE, "result_dtype", None) == "int64"
        kind = ElementKind.INDEX if index else ElementKind.ALL
        result = verify_tensor(self, "result", self.result.type, kind)
        if result.get_shape() != first.get_shape():
            raise VerifyException(f"{self.name} result must have the shape of its operands.")
        axis = self.axis.value.data
        if not 0 <= axis < len(first.get_shape()):
            raise VerifyException(f"{self.name} has axis {axis}, out of range for {first}.")


__all__ = ["AlongAxisOperation"]

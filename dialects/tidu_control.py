"""The control-flow ops of the `tidu` dialect: `tidu.scan`, `tidu.cond`, `tidu.while_loop`.

Each holds its primitive (`ops.Scan`, `ops.Cond`, `ops.WhileLoop`), whose traced
bodies are graphs, not IR: the op keeps it as a `#tidu.traced` attribute printed as the
primitive's text (its bodies by digest), and runs in the plan as a library step that
calls the body's own compiled program once per iteration:

    %c, %ys = tidu.scan %w, %h0, %xs,
        op = #tidu.traced<"Scan(body=Body(3f9c...:3->2), consts=1, carries=1, length=1000, ...)">
        : tensor<4x4xf64>, tensor<4xf64>, tensor<1000x4xf64> -> tensor<4xf64>, tensor<1000x4xf64>

(one line in the printed IR).

The text form prints for reading; it cannot be parsed back (a body is not in it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

from xdsl.ir import Attribute, Data, SSAValue
from xdsl.irdl import (
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tidu_compile import ops
from tidu_compile.ops import TensorOp

from .tidu_structural import StructuralOperation, op_type

__all__ = ["CondOp", "ControlFlowOperation", "ScanOp", "TracedPrimitiveAttr", "WhileLoopOp"]


@irdl_attr_definition
class TracedPrimitiveAttr(Data[Any]):
    """A primitive holding traced bodies, printed as its text."""

    name = "tidu.traced"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Any:
        parser.raise_error("#tidu.traced holds a traced body: it cannot be parsed from text")

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(repr(self.data))
        printer.print_string(">")


class ControlFlowOperation(StructuralOperation):
    """Base of the ops of `ops.ControlFlow` primitives (see the module docstring)."""

    FIELDS: ClassVar[tuple[Any, ...]] = ()

    inputs = var_operand_def()
    outputs = var_result_def()
    op = prop_def(TracedPrimitiveAttr)

    @classmethod
    def of_primitive(
        cls, primitive: TensorOp, operands: Sequence[SSAValue], result_types: Sequence[Attribute]
    ) -> Self:
        return cls.create(operands=list(operands), result_types=list(result_types),
                          properties={"op": TracedPrimitiveAttr(primitive)})  # fmt: skip

    def to_primitive(self) -> TensorOp:
        return self.op.data  # type: ignore[no-any-return]

    def verify_(self) -> None:
        primitive = self.op.data
        if not isinstance(primitive, self.PRIMITIVE):
            raise VerifyException(
                f"{self.name}: holds {primitive!r}, not a {self.PRIMITIVE.__name__}"
            )
        try:
            expected = primitive.infer_types(*(op_type(v.type) for v in self.inputs))
        except (ValueError, TypeError) as error:
            raise VerifyException(f"{self.name}: {error}") from error
        got = tuple(op_type(r.type) for r in self.outputs)
        if got != tuple(expected):
            raise VerifyException(f"{self.name}: results {got} are not the primitive's {expected}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(", op = ")
        printer.print_attribute(self.op)
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.inputs], printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_list([r.type for r in self.outputs], printer.print_attribute)
        if self.attributes:  # e.g. tidu.loop_driver: why tidu-lower-control left the loop
            printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        parser.raise_error(f"{cls.name} holds a traced body: it cannot be parsed from text")


@irdl_op_definition
class ScanOp(ControlFlowOperation):
    """A loop over rows with carries (`ops.Scan`):

        %c, %ys = tidu.scan %k, %c0, %xs, op = #tidu.traced<"Scan(...)"> : T0, T1, T2 -> R0, R1
    """

    name = "tidu.scan"
    PRIMITIVE: ClassVar[type[TensorOp]] = ops.Scan


@irdl_op_definition
class CondOp(ControlFlowOperation):
    """One of two traced branches (`ops.Cond`):

        %r = tidu.cond %pred, %x, op = #tidu.traced<"Cond(...)"> : tensor<i1>, T -> R
    """

    name = "tidu.cond"
    PRIMITIVE: ClassVar[type[TensorOp]] = ops.Cond


@irdl_op_definition
class WhileLoopOp(ControlFlowOperation):
    """A loop while a traced test holds (`ops.WhileLoop`):

        %c = tidu.while_loop %k, %c0, op = #tidu.traced<"WhileLoop(...)"> : T0, T1 -> R
    """

    name = "tidu.while_loop"
    PRIMITIVE: ClassVar[type[TensorOp]] = ops.WhileLoop

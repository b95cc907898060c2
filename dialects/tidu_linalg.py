"""The family of the `tidu` linear-algebra ops: solves and factorisations.

Each works on the matrices of the last two axes (batched over the leading ones), has
one result or several, and runs as a library call (LAPACK) between kernels (see
`ops.linalg`, `ops.decompositions`). The ops are made from their primitives
(`tidu_table`, on `LinalgOperation`), so a new `ops.LinalgOp` needs nothing here:

    %l = tidu.cholesky %a : tensor<4x4xf64> -> tensor<4x4xf64>
    %x = tidu.solve %a, %b transpose_a : tensor<4x4xf64>, tensor<4x2xf64> -> tensor<4x2xf64>
    %w, %v = tidu.eigh %a : tensor<4x4xf64> -> (tensor<4xf64>, tensor<4x4xf64>)
"""

from __future__ import annotations

from xdsl.irdl import traits_def, var_operand_def, var_result_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .tidu_base import ElementKind, verify_tensor
from .tidu_structural import StructuralOperation, op_type


class LinalgOperation(StructuralOperation):
    """The primitive's operands and results (as many as it has), verified by its own
    type rule (``infer_types``: square, float or for some complex, matching batch dims)."""

    inputs = var_operand_def()
    outputs = var_result_def()

    traits = traits_def(Pure())

    def verify_(self) -> None:
        primitive = self.PRIMITIVE
        if len(self.inputs) != primitive.input_count:
            raise VerifyException(f"{self.name} takes {primitive.input_count} operand(s), got "
                                  f"{len(self.inputs)}.")  # fmt: skip
        if len(self.outputs) != primitive.output_count:
            raise VerifyException(f"{self.name} has {primitive.output_count} result(s), got "
                                  f"{len(self.outputs)}.")  # fmt: skip
        for i, value in enumerate(self.inputs):
            verify_tensor(self, f"operand {i}", value.type, ElementKind.NUMERIC)
        try:
            expected = self.to_primitive().infer_types(*(op_type(v.type) for v in self.inputs))
        except (ValueError, TypeError) as error:
            raise VerifyException(f"{self.name}: {error}") from error
        got = tuple(op_type(r.type) for r in self.outputs)
        if got != tuple(expected):
            raise VerifyException(f"{self.name} gives {', '.join(map(str, expected))} by its "
                                  f"type rule, but the results are {', '.join(map(str, got))}.")


__all__ = ["LinalgOperation"]

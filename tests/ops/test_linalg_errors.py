"""The linear-algebra primitives' type rules: wrong rank, non-square, wrong dtype and
mismatched batches are errors naming the argument, before any LAPACK call."""

from __future__ import annotations

import numpy as np
import pytest
from tidu_compile.dialects import tidu

from tidu_compile import ops
from tidu_compile.ops import TensorType


def _t(*shape: int, dtype: str = "float64") -> TensorType:
    return TensorType(shape, dtype)


@pytest.mark.parametrize(
    ("op", "types", "error", "words"),
    [
        (ops.Cholesky((3,)), [_t(3)], ValueError, "at least 2 dimensions"),
        (ops.Cholesky((2, 3)), [_t(2, 3)], ValueError, "square"),
        (ops.Cholesky((3, 3)), [_t(3, 3, dtype="int64")], TypeError, "float32, float64"),
        (ops.Slogdet((3, 3)), [_t(3, 3, dtype="complex128")], TypeError, "dtype complex128"),
        (ops.Eigh((2, 3)), [_t(2, 3)], ValueError, "square"),
        (ops.Slogdet((4,)), [_t(4)], ValueError, "at least 2"),
        (ops.Solve((3, 3), (3, 2)), [_t(3, 3), _t(4, 2)], ValueError, "b has shape"),
        (ops.Solve((2, 3, 3), (2, 3, 1)), [_t(2, 3, 3), _t(3, 3, 1)], ValueError, "b has shape"),
        (ops.Solve((3, 3), (3, 2)), [_t(3, 3), _t(3, 2, dtype="float32")], TypeError,
         "b has dtype"),
        (ops.TriangularSolve((3, 3), (3,)), [_t(3, 3), _t(3)], ValueError, "b has shape"),
        (ops.ExpmFrechet((3, 3)), [_t(3, 3), _t(2, 2)], ValueError, "must match"),
        (ops.TrianglePart(0), [_t(3)], ValueError, "at least 2"),
    ],
)
def test_bad_operands_are_errors_naming_them(op, types, error, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=words):
        op.infer_types(*types)


def test_a_matrix_that_is_not_positive_definite_is_a_lin_alg_error() -> None:
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        ops.Cholesky((2, 2)).evaluate(-np.eye(2))


def test_linalg_ops_print_several_results() -> None:
    """``tidu.eigh`` has two results, printed as ``-> (w, V)`` and verified by the type rule."""
    assert issubclass(tidu.op_class(ops.Eigh), tidu.LinalgOperation)
    assert ops.Svd.output_count == 3 and ops.Svd((4, 3)).infer_types(_t(4, 3)) == (
        _t(4, 3), _t(3), _t(3, 3))  # fmt: skip

"""Misuse of the standard ops: bad dtypes, mismatched shapes, bad parameters."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from op_cases import DIFFERENTIABLE_CASES, Case

from tidu_compile import Name, PrimitiveGraph, RecordedGraph, ReferenceExecutor, ops
from tidu_compile.ops import TensorType


def _one_case_per_op() -> list[Case]:
    """One float64 case per op class (per instance for parameterized elementwise ops)."""
    seen: dict[object, Case] = {}
    for case in DIFFERENTIABLE_CASES:
        if all(a.dtype in ("float64", "bool") for a in case.args):
            key = case.op if isinstance(case.op, (ops.Pow, ops.Scale)) else type(case.op)
            seen.setdefault(key, case)
    return list(seen.values())


#: Ops that take every dtype: selects, the layout and indexing ops (integer and bool
#: data move too).
_EVERY_DTYPE = (ops.Select, ops.BroadcastInDim, ops.Reshape, ops.Transpose, ops.Slice,
                ops.Pad, ops.Concatenate, ops.Gather)  # fmt: skip


def _bad_dtype_params():
    out = []
    for case in _one_case_per_op():
        allowed = getattr(case.op, "allowed_dtypes", ())
        for bad in ("int64", "int32", "uint8", "bool"):
            if bad in allowed or isinstance(case.op, _EVERY_DTYPE):
                continue  # integer arithmetic, any()/all() of bool: on purpose
            out.append(pytest.param(case, bad, id=f"{case.id}-{bad}"))
    return out


@pytest.mark.parametrize("case, bad", _bad_dtype_params())
def test_a_dtype_the_op_has_no_loop_for_is_a_type_error(case: Case, bad: str) -> None:
    types = [
        TensorType(a.shape, bad if a.differentiable else a.dtype) for a in case.args
    ]
    with pytest.raises(TypeError, match=bad):
        case.op.infer_types(*types)


def test_one_case_per_op_covers_the_differentiable_ops() -> None:
    names = {type(c.op).__name__ for c in _one_case_per_op()}
    assert {"Add", "Div", "Maximum", "Select", "Exp", "Pow", "SinCos", "Conj", "ToComplex",
            "Convert", "ReduceSum", "DotGeneral", "Reshape", "Scale", "Shift"} <= names  # fmt: skip


@pytest.mark.parametrize(
    "op, types",
    [
        (ops.Real(), [TensorType((2,), "float64")]),
        (ops.Imag(), [TensorType((2,), "float32")]),
        (ops.ToComplex(False), [TensorType((2,), "complex128")]),
        (ops.Maximum(), [TensorType((2,), "complex128")] * 2),
        (ops.Compare("lt"), [TensorType((2,), "complex64")] * 2),
        (ops.Scale(1j), [TensorType((2,), "float64")]),
        (ops.Convert("float64", "float32"), [TensorType((2,), "float64")]),
        (ops.Add(), [TensorType((2,), "float64"), TensorType((2,), "float32")]),
        (ops.Select(), [TensorType((2,), "float64")] * 3),
        (ops.DotGeneral((0,), (0,), (), (), (2,), (2,)),
         [TensorType((2,), "float64"), TensorType((2,), "complex128")]),
    ],
    ids=lambda v: repr(v) if not isinstance(v, list) else "",
)
def test_wrong_dtype_is_a_type_error(op, types) -> None:
    with pytest.raises(TypeError):
        op.infer_types(*types)


# --------------------------------------------------------------------------- shapes


def _t(*shape: int, dtype: str = "float64") -> TensorType:
    return TensorType(tuple(shape), dtype)


@pytest.mark.parametrize(
    "op, types, shapes",
    [
        (ops.Add(), [_t(2, 3), _t(3, 2)], ["(2, 3)", "(3, 2)"]),
        (ops.Mul(), [_t(2, 3), _t(3)], ["(2, 3)", "(3,)"]),
        (ops.Maximum(), [_t(4), _t(1)], ["(4,)", "(1,)"]),
        (ops.Select(), [_t(2, 3, dtype="bool"), _t(3, 2), _t(3, 2)], ["(2, 3)", "(3, 2)"]),
        (ops.Select(), [_t(2, 3, dtype="bool"), _t(2, 3), _t(3, 2)], ["(2, 3)", "(3, 2)"]),
        (ops.Compare("eq"), [_t(2), _t(3)], ["(2,)", "(3,)"]),
        (ops.ReduceSum((0,), (2, 3)), [_t(3, 2)], ["(3, 2)", "(2, 3)"]),
        (ops.Reshape((6,), (2, 3)), [_t(3, 2)], ["(3, 2)", "(2, 3)"]),
        (ops.BroadcastInDim((2, 3), (1,), (3,)), [_t(2)], ["(2,)", "(3,)"]),
        (ops.DotGeneral((1,), (0,), (), (), (2, 3), (3, 4)), [_t(2, 4), _t(3, 4)],
         ["(2, 4)", "(2, 3)"]),
        (ops.DotGeneral((1,), (0,), (), (), (2, 3), (3, 4)), [_t(2, 3), _t(4, 4)],
         ["(4, 4)", "(3, 4)"]),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, ops.TensorOp) else "",
)
def test_shape_mismatch_is_a_value_error_naming_the_shapes(op, types, shapes) -> None:
    with pytest.raises(ValueError) as info:
        op.infer_types(*types)
    for shape in shapes:
        assert shape in str(info.value), f"{shape} not named in {info.value}"


def test_transpose_rank_mismatch_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="rank"):
        ops.Transpose((1, 0)).infer_types(_t(2, 3, 4))


@pytest.mark.parametrize(
    "op, count",
    [(ops.Add(), 1), (ops.Add(), 3), (ops.Exp(), 2), (ops.Select(), 2), (ops.SinCos(), 0)],
)
def test_wrong_arity_is_a_value_error(op, count: int) -> None:
    with pytest.raises(ValueError, match="inputs"):
        op.infer_types(*([_t(2)] * count))


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    "make, error",
    [
        (lambda: ops.Compare("less"), ValueError),
        (lambda: ops.BroadcastInDim((2, 3), (0, 1), (3,)), ValueError),  # count
        (lambda: ops.BroadcastInDim((3, 3), (1, 0), (3, 3)), ValueError),  # not increasing
        (lambda: ops.BroadcastInDim((2, 3), (2,), (3,)), ValueError),  # out of range
        (lambda: ops.BroadcastInDim((2, 3), (0,), (3,)), ValueError),  # 3 -> 2
        (lambda: ops.ReduceSum((1, 0), (2, 3)), ValueError),
        (lambda: ops.ReduceSum((0, 0), (2, 3)), ValueError),
        (lambda: ops.ReduceSum((2,), (2, 3)), ValueError),
        (lambda: ops.ReduceSum((-1,), (2, 3)), ValueError),
        (lambda: ops.Reshape((4,), (2, 3)), ValueError),
        (lambda: ops.Transpose((0, 0)), ValueError),
        (lambda: ops.Transpose((1, 2)), ValueError),
        (lambda: ops.DotGeneral((1,), (), (), (), (2, 3), (3, 4)), ValueError),  # lengths
        (lambda: ops.DotGeneral((1,), (1,), (), (), (2, 3), (3, 4)), ValueError),  # sizes
        (lambda: ops.DotGeneral((0,), (0,), (0,), (0,), (2, 3), (2, 4)), ValueError),  # repeat
        (lambda: ops.Convert("float64", "complex128"), TypeError),
        (lambda: ops.Convert("bool", "float64"), TypeError),  # bool is x != 0
        (lambda: ops.Convert("int64", "complex128"), TypeError),
        (lambda: ops.Convert("complex64", "float64"), TypeError),
        (lambda: ops.Constant(1.0, (2,), "int32"), TypeError),
        (lambda: ops.Constant(1j, (2,), "float64"), TypeError),
    ],
)
def test_bad_parameters_raise_at_construction(make, error) -> None:
    with pytest.raises(error):
        make()


@pytest.mark.parametrize(
    "dims",
    [((2,), (0,), (), ()), ((), (), (3,), (0,)), ((1,), (-5,), (), ()), ((1,), (-2,), (), ())],
)
def test_dot_general_out_of_range_dim_is_a_value_error(dims) -> None:
    with pytest.raises(ValueError, match="rank"):
        ops.DotGeneral(*dims, (2, 3), (3, 4))


def test_ops_are_frozen_hashable_and_compare_by_parameters() -> None:
    assert ops.Pow(2.0) == ops.Pow(2.0)
    assert hash(ops.Pow(2.0)) == hash(ops.Pow(2.0))
    assert ops.Pow(2.0) != ops.Pow(3.0)
    assert ops.Exp() == ops.Exp() and ops.Exp() != ops.Log()
    assert len({ops.ReduceSum((0,), (2, 3)), ops.ReduceSum((0,), (2, 3))}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        ops.Pow(2.0).exponent = 3.0  # type: ignore[misc]


# --------------------------------------------------------------------------- constant


def test_constant_evaluates_and_has_no_tangent() -> None:
    op = ops.Constant(1.5, (2, 3), "float32")
    assert op.infer_types() == (TensorType((2, 3), "float32"),)
    (value,) = op.evaluate()
    assert value.dtype == np.float32 and value.shape == (2, 3)
    np.testing.assert_array_equal(value, np.full((2, 3), 1.5))
    (value,) = ops.Constant(1 - 2j, (2,), "complex128").evaluate()
    np.testing.assert_array_equal(value, [1 - 2j, 1 - 2j])

    graph = RecordedGraph.from_primitive(op, [])
    linear = graph.linearize([0])
    assert linear.tangent_inputs == () and linear.tangent_outputs == (None,)
    data = ReferenceExecutor().execute_forward(PrimitiveGraph(linear.graph), {})
    assert data == {}
    graph2 = RecordedGraph.from_primitive(ops.Exp(), [Name("x")])
    assert len(graph2.linearize([0]).tangent_inputs) == 1

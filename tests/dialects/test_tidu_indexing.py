"""tidu.slice, tidu.pad and tidu.concatenate: canonical forms, builders, verifier messages."""

from __future__ import annotations

import pytest
from tidu_compile.dialects import tidu
from xdsl.dialects.builtin import TensorType, f64, i64
from xdsl.ir import Block

CANONICAL = [
    "%r = tidu.slice %v, start = [1], step = [2] : tensor<8xf64> -> tensor<4xf64>",
    "%r = tidu.slice %x, start = [3, 7], step = [-1, -3] : tensor<4x8xf64> -> tensor<4x3xf64>",
    "%r = tidu.slice %x, start = [0, 0], step = [1, 1] : tensor<4x8xf64> -> tensor<0x8xf64>",
    "%r = tidu.slice %z, start = [1], step = [1] "
    ": tensor<4xcomplex<f64>> -> tensor<2xcomplex<f64>>",
    "%r = tidu.pad %u, start = [1, 0], step = [1, 1], value = 0.000000e+00 "
    ": tensor<1x8xf64> -> tensor<2x8xf64>",
    "%r = tidu.pad %v, start = [15], step = [-2], value = -1.500000e+00 "
    ": tensor<8xf64> -> tensor<16xf64>",
    "%r = tidu.pad %z, start = [2], step = [1], value = (1.000000e+00, 2.000000e+00) "
    ": tensor<4xcomplex<f64>> -> tensor<6xcomplex<f64>>",
    "%r = tidu.concatenate %x, %y, axis = 0 : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<8x8xf64>",
    "%r = tidu.concatenate %v, axis = 0 : tensor<8xf64> -> tensor<8xf64>",
    "%r = tidu.concatenate %x, %u, %x, axis = 0 "
    ": tensor<4x8xf64>, tensor<1x8xf64>, tensor<4x8xf64> -> tensor<9x8xf64>",
]


@pytest.mark.parametrize("line", CANONICAL)
def test_round_trips(ir, line: str) -> None:
    text = ir.wrap("  " + line)
    assert line in ir.round_trip(text, generic=False).replace("\n", " ")
    ir.round_trip(text, generic=True)


def test_builders_infer_result_types() -> None:
    block = Block(arg_types=[TensorType(f64, [4, 8]), TensorType(f64, [2, 8])])
    x, y = block.args
    sliced = tidu.SliceOp(x, [3, 0], [-1, 2], [4, 4])
    padded = tidu.PadOp(y, [1, 0], [1, 1], [4, 8], 2.0)
    joined = tidu.ConcatenateOp([x, y], 0)
    for op in (sliced, padded, joined):
        block.add_op(op)
        op.verify()
    assert sliced.result.type == TensorType(f64, [4, 4])
    assert padded.result.type == TensorType(f64, [4, 8]) and padded.value == 2.0
    assert joined.result.type == TensorType(f64, [6, 8]) and joined.offsets() == (0, 4)


FAILURES = [
    (
        "%r = tidu.slice %v, start = [1], step = [2] : tensor<8xf64> -> tensor<5xf64>",
        "tidu.slice maps dimension 0 to indices 1..9 (step 2), which leave 0..7.",
    ),
    (
        "%r = tidu.slice %v, start = [1], step = [0] : tensor<8xf64> -> tensor<1xf64>",
        "tidu.slice has step 0 in dimension 0.",
    ),
    (
        "%r = tidu.slice %v, start = [1, 2], step = [1] : tensor<8xf64> -> tensor<1xf64>",
        "tidu.slice has start [1, 2] and step [1] for shapes [1] and [8]; it needs one entry "
        "per dimension.",
    ),
    (
        "%r = tidu.slice %v, start = [0], step = [1] : tensor<8xf64> -> tensor<2xf32>",
        "tidu.slice result has element type f32, but the operand has f64",
    ),
    (
        "%r = tidu.pad %v, start = [-1], step = [1], value = 0.0 : tensor<8xf64> -> tensor<9xf64>",
        "tidu.pad maps dimension 0 to indices -1..6 (step 1), which leave 0..8.",
    ),
    (
        "%r = tidu.pad %v, start = [0], step = [1], value = (0.0, 1.0) "
        ": tensor<8xf64> -> tensor<9xf64>",
        "tidu.pad has the complex value (0.0, 1.0), but its element type f64 is real.",
    ),
    (
        "%r = tidu.concatenate %x, %v, axis = 0 : tensor<4x8xf64>, tensor<8xf64> "
        "-> tensor<5x8xf64>",
        "tidu.concatenate operand 1 (tensor<8xf64>) must match the result tensor<5x8xf64> in "
        "every dimension but 0.",
    ),
    (
        "%r = tidu.concatenate %x, %y, axis = 1 : tensor<4x8xf64>, tensor<4x8xf64> "
        "-> tensor<4x17xf64>",
        "tidu.concatenate joins 16 elements along axis 1, but the result tensor<4x17xf64> has 17.",
    ),
    (
        "%r = tidu.concatenate %x, axis = 2 : tensor<4x8xf64> -> tensor<4x8xf64>",
        "tidu.concatenate has axis 2, which is out of range for the result tensor<4x8xf64>.",
    ),
]


@pytest.mark.parametrize(("line", "message"), FAILURES)
def test_verifier_messages(ir, line: str, message: str) -> None:
    assert message in ir.verify_error(ir.wrap("  " + line))


SCANS = [
    "%r = tidu.cum_sum %x, axis = 1 : tensor<4x8xf64> -> tensor<4x8xf64>",
    "%r = tidu.cum_sum %z, axis = 0 reverse : tensor<4xcomplex<f64>> -> tensor<4xcomplex<f64>>",
    "%r = tidu.cum_prod %v, axis = 0 : tensor<8xf64> -> tensor<8xf64>",
    "%r = tidu.linear_scan %x, %y, axis = 0 reverse "
    ": tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf64>",
    "%r = tidu.argsort %v, axis = 0 : tensor<8xf64> -> tensor<8xi64>",
    "%r = tidu.gather %x[%n], axis = 0 : tensor<4x8xf64>, tensor<4xi64> -> tensor<4x8xf64>",
    "%r = tidu.gather %q[%n, %i], axis = 0 : tensor<8x8xf64>, tensor<4xi64>, tensor<4xi32> "
    "-> tensor<4xf64>",
    "%r = tidu.scatter_add %x[%n], axis = 0 : tensor<4x8xf64>, tensor<4xi64> -> tensor<9x8xf64>",
]


@pytest.mark.parametrize("line", SCANS)
def test_scans_and_gathers_round_trip(ir, line: str) -> None:
    text = ir.wrap("  " + line)
    assert line in ir.round_trip(text, generic=False).replace("\n", " ")


def test_gather_and_scatter_builders() -> None:
    block = Block(arg_types=[TensorType(f64, [5, 3]), TensorType(i64, [4])])
    x, index = block.args
    gathered = tidu.GatherOp(x, [index], 0)
    block.add_op(gathered)
    scattered = tidu.ScatterAddOp(gathered, [index], 0, [5, 3])
    block.add_op(scattered)
    for op in (gathered, scattered):
        op.verify()
    assert gathered.result.type == TensorType(f64, [4, 3])


INDEXED_FAILURES = [
    (
        "%r = tidu.gather %x[%v], axis = 0 : tensor<4x8xf64>, tensor<8xf64> -> tensor<8x8xf64>",
        "tidu.gather index operand 0 has element type f64, but it must be i32 or i64.",
    ),
    (
        "%r = tidu.gather %x[%n], axis = 0 : tensor<4x8xf64>, tensor<4xi64> -> tensor<4x7xf64>",
        "tidu.gather needs the indexed tensor to have the shape [4, 8], but it is "
        "tensor<4x7xf64>.",
    ),
    (
        "%r = tidu.gather %x[%n, %n, %n], axis = 0 : tensor<4x8xf64>, tensor<4xi64>, "
        "tensor<4xi64>, tensor<4xi64> -> tensor<4xf64>",
        "tidu.gather indexes 3 dimensions from axis 0 of tensor<4x8xf64>, which has 2.",
    ),
    (
        "%r = tidu.argsort %v, axis = 0 : tensor<8xf64> -> tensor<8xf64>",
        "tidu.argsort result has element type f64, but it must be i32 or i64.",
    ),
    (
        "%r = tidu.cum_sum %v, axis = 1 : tensor<8xf64> -> tensor<8xf64>",
        "tidu.cum_sum has axis 1, out of range for tensor<8xf64>.",
    ),
]


@pytest.mark.parametrize(("line", "message"), INDEXED_FAILURES)
def test_indexed_verifier_messages(ir, line: str, message: str) -> None:
    assert message in ir.verify_error(ir.wrap("  " + line))

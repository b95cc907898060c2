"""The tidu ops outside kernels: custom syntax, round-trips, builders, verifier messages."""

from __future__ import annotations

import pytest
from tidu_compile.dialects import tidu
from tidu_compile.dialects.tidu import OP_OF_PRIMITIVE, Tidu
from xdsl.dialects.builtin import ComplexType, IntegerType, TensorType, f32, f64, i1, i64
from xdsl.ir import Block
from xdsl.irdl import IRDLOperation

from tidu_compile.ops import OP_TABLE

# Each line is the canonical custom form: it must print back exactly like this.
CANONICAL = [
    # elementwise binary
    "%r = tidu.add %x, %y : tensor<4x8xf64>",
    "%r = tidu.sub %z, %z : tensor<4xcomplex<f64>>",
    "%r = tidu.mul %f, %f : tensor<4x8xf32>",
    "%r = tidu.div %e, %e : tensor<f64>",
    "%r = tidu.maximum %x, %y : tensor<4x8xf64>",
    # scalars, as in kernel bodies
    "%r = tidu.add %a, %a : f64",
    "%r = tidu.mul %c, %c : complex<f64>",
    "%r = tidu.exp %b : f32",
    "%r = tidu.select %p, %a, %a : f64",
    "%r = tidu.compare ge, %a, %a : f64",
    # comparison and selection
    "%r = tidu.compare lt, %x, %y : tensor<4x8xf64>",
    "%r = tidu.compare ne, %z, %z : tensor<4xcomplex<f64>>",
    "%r = tidu.select %m, %x, %y : tensor<4x8xf64>",
    "%r = tidu.select %m, %m, %m : tensor<4x8xi1>",
    # elementwise unary
    "%r = tidu.neg %x : tensor<4x8xf64>",
    "%r = tidu.exp %z : tensor<4xcomplex<f64>>",
    "%r = tidu.log %x : tensor<4x8xf64>",
    "%r = tidu.sin %x : tensor<4x8xf64>",
    "%r = tidu.cos %w : tensor<4xcomplex<f32>>",
    "%r = tidu.tanh %x : tensor<4x8xf64>",
    "%r = tidu.sqrt %x : tensor<4x8xf64>",
    "%r = tidu.conj %z : tensor<4xcomplex<f64>>",
    "%r = tidu.conj %x : tensor<4x8xf64>",
    "%r = tidu.real %z : tensor<4xcomplex<f64>>",
    "%r = tidu.imag %w : tensor<4xcomplex<f32>>",
    "%r = tidu.real %x : tensor<4x8xf64>",
    "%r = tidu.imag %x : tensor<4x8xf64>",
    "%r, %r_1 = tidu.sincos %x : tensor<4x8xf64>",
    # elementwise with parameters
    "%r = tidu.pow %x, 2.500000e+00 : tensor<4x8xf64>",
    "%r = tidu.pow %z, -1.000000e+00 : tensor<4xcomplex<f64>>",
    "%r = tidu.scale %x, -2.000000e+00 : tensor<4x8xf64>",
    "%r = tidu.scale %z, (0.000000e+00, 1.000000e+00) : tensor<4xcomplex<f64>>",
    "%r = tidu.scale %z, (1.000000e+00, -0.000000e+00) : tensor<4xcomplex<f64>>",
    "%r = tidu.shift %x, 1.250000e-01 : tensor<4x8xf64>",
    "%r = tidu.full_like %x, 0.000000e+00 : tensor<4x8xf64>",
    "%r = tidu.full_like %x, -inf : tensor<4x8xf64>",
    "%r = tidu.full_like %a, nan : f64",
    "%r = tidu.full_like %m, 1.000000e+00 : tensor<4x8xi1>",
    "%r = tidu.full_like %z, (1.000000e+00, 2.000000e+00) : tensor<4xcomplex<f64>>",
    "%r = tidu.to_complex %s : tensor<4xf32>",
    "%r = tidu.to_complex %x imaginary : tensor<4x8xf64>",
    "%r = tidu.convert %s : tensor<4xf32> -> tensor<4xf64>",
    "%r = tidu.convert %x : tensor<4x8xf64> -> tensor<4x8xf32>",
    "%r = tidu.convert %s : tensor<4xf32> -> tensor<4xcomplex<f64>>",
    "%r = tidu.convert %w : tensor<4xcomplex<f32>> -> tensor<4xcomplex<f64>>",
    "%r = tidu.convert %mz : tensor<4xi1> -> tensor<4xf64>",
    # constants
    "%r = tidu.constant 1.500000e+00 : tensor<2x3xf64>",
    "%r = tidu.constant (1.000000e+00, -2.000000e+00) : tensor<3xcomplex<f32>>",
    "%r = tidu.constant 0.000000e+00 : f64",
    "%r = tidu.constant inf : tensor<f32>",
    "%r = tidu.constant 1.000000e+00 : tensor<2xi1>",
    # shape
    "%r = tidu.broadcast_in_dim %v, dims = [1] : tensor<8xf64> -> tensor<4x8xf64>",
    "%r = tidu.broadcast_in_dim %e, dims = [] : tensor<f64> -> tensor<2x3xf64>",
    "%r = tidu.broadcast_in_dim %m, dims = [0, 2] : tensor<4x8xi1> -> tensor<4x3x8xi1>",
    "%r = tidu.reduce_sum %x, axes = [0] : tensor<4x8xf64> -> tensor<8xf64>",
    "%r = tidu.reduce_sum %x, axes = [0, 1] : tensor<4x8xf64> -> tensor<f64>",
    "%r = tidu.reduce_sum %z, axes = [] : tensor<4xcomplex<f64>> -> tensor<4xcomplex<f64>>",
    "%r = tidu.reduce_max %x, axes = [1] : tensor<4x8xf64> -> tensor<4xf64>",
    "%r = tidu.reduce_max %m, axes = [0, 1] : tensor<4x8xi1> -> tensor<i1>",
    "%r = tidu.reduce_min %f, axes = [0] : tensor<4x8xf32> -> tensor<8xf32>",
    "%r = tidu.reduce_min %m, axes = [1] : tensor<4x8xi1> -> tensor<4xi1>",
    "%r = tidu.reduce_prod %z, axes = [0] : tensor<4xcomplex<f64>> -> tensor<complex<f64>>",
    "%r = tidu.argmax %x, axis = 1 : tensor<4x8xf64> -> tensor<4xi64>",
    "%r = tidu.argmin %v, axis = 0 : tensor<8xf64> -> tensor<i64>",
    "%r = tidu.argmax %i, axis = 0 : tensor<4xi32> -> tensor<i64>",
    "%r = tidu.reshape %x : tensor<4x8xf64> -> tensor<2x16xf64>",
    "%r = tidu.reshape %e : tensor<f64> -> tensor<1x1xf64>",
    "%r = tidu.transpose %x, permutation = [1, 0] : tensor<4x8xf64> -> tensor<8x4xf64>",
    "%r = tidu.transpose %k, permutation = [2, 0, 1] : tensor<2x3x4xf64> -> tensor<4x2x3xf64>",
    "%r = tidu.dot_general %x, %v, batch = [] x [], contracting = [1] x [0]"
    " : tensor<4x8xf64>, tensor<8xf64> -> tensor<4xf64>",
    "%r = tidu.dot_general %k, %l, batch = [0] x [0], contracting = [2] x [1]"
    " : tensor<2x3x4xf64>, tensor<2x4x5xf64> -> tensor<2x3x5xf64>",
    "%r = tidu.dot_general %v, %v, batch = [] x [], contracting = [] x []"
    " : tensor<8xf64>, tensor<8xf64> -> tensor<8x8xf64>",
    # a discardable attribute survives
    '%r = tidu.add %x, %y {note = "hi"} : tensor<4x8xf64>',
    '%r = tidu.transpose %x, permutation = [1, 0] {note = "hi"}'
    " : tensor<4x8xf64> -> tensor<8x4xf64>",
]


@pytest.mark.parametrize("line", CANONICAL)
def test_custom_form_prints_canonically_and_round_trips(ir, line: str) -> None:
    text = ir.wrap("  " + line)
    printed = ir.round_trip(text, generic=False)
    assert line in printed


@pytest.mark.parametrize("line", CANONICAL)
def test_generic_form_round_trips_to_the_same_op(ir, line: str) -> None:
    text = ir.wrap("  " + line)
    generic = ir.round_trip(text, generic=True)
    assert ir.print(ir.parse(generic)) == ir.print(ir.parse(text))


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("tidu.pow %x, 2.5 : tensor<4x8xf64>", "tidu.pow %x, 2.500000e+00 : tensor<4x8xf64>"),
        ("tidu.shift %x, -3 : tensor<4x8xf64>", "tidu.shift %x, -3.000000e+00 : tensor<4x8xf64>"),
        ("tidu.scale %z, (2.0, 0.0) : tensor<4xcomplex<f64>>", "tidu.scale %z, 2.000000e+00"),
        (
            "tidu.add %x, %y : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf64>",
            "tidu.add %x, %y : tensor<4x8xf64>\n",
        ),
        (
            'tidu.compare "lt", %x, %y : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xi1>',
            "tidu.compare lt, %x, %y : tensor<4x8xf64>\n",
        ),
        (
            "tidu.real %z : tensor<4xcomplex<f64>> -> tensor<4xf64>",
            "tidu.real %z : tensor<4xcomplex<f64>>\n",
        ),
    ],
)
def test_other_spellings_parse_to_the_canonical_form(ir, written: str, canonical: str) -> None:
    printed = ir.print(ir.parse(ir.wrap(f"  %r = {written}")))
    assert canonical in printed


@pytest.mark.parametrize(
    "line",
    [
        "%r = tidu.add %x, %f : tensor<4x8xf64>, tensor<4x8xf32> -> tensor<4x8xf64>",
        "%r = tidu.exp %d : tensor<?xf64> -> tensor<4xf64>",
        "%r = tidu.compare lt, %x, %y : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf64>",
        "%r = tidu.to_complex %x : tensor<4x8xf64> -> tensor<4x8xcomplex<f32>>",
        '%r = tidu.compare "not a direction", %a, %a : f64',
    ],
)
def test_invalid_ops_keep_their_explicit_types_through_a_round_trip(ir, line: str) -> None:
    printed = ir.round_trip(ir.wrap("  " + line), generic=False, verify=False)
    assert line in printed


def test_short_form_needs_types_it_can_derive_from(ir) -> None:
    from xdsl.utils.exceptions import ParseError

    with pytest.raises(ParseError, match="tidu.convert cannot derive its types"):
        ir.parse(ir.wrap("  %r = tidu.convert %s : tensor<4xf32>"))
    with pytest.raises(ParseError, match="expects one type"):
        ir.parse(ir.wrap("  %r = tidu.add %x, %y : tensor<4x8xf64>, tensor<4x8xf64>"))


# ---------------------------------------------------------------------------------
# Builders
# ---------------------------------------------------------------------------------


def _block(*types):
    return Block(arg_types=list(types))


def test_builders_infer_result_types() -> None:
    x_t = TensorType(f64, [4, 8])
    z_t = TensorType(ComplexType(f64), [4])
    block = _block(x_t, z_t, TensorType(f64, [8]), TensorType(i1, [4, 8]))
    x, z, v, m = block.args
    ops: list[IRDLOperation] = [
        tidu.AddOp(x, x),
        tidu.CompareOp("lt", x, x),
        tidu.SelectOp(m, x, x),
        tidu.RealOp(z),
        tidu.SinCosOp(x),
        tidu.PowOp(x, 3.0),
        tidu.ScaleOp(z, 2j),
        tidu.ShiftOp(x, 1.0),
        tidu.FullLikeOp(x, 0.0),
        tidu.ToComplexOp(x, imaginary=True),
        tidu.ConvertOp(x, TensorType(f32, [4, 8])),
        tidu.ConstantOp(1.0 - 2.0j, TensorType(ComplexType(f32), [3])),
        tidu.BroadcastInDimOp(v, [1], [4, 8]),
        tidu.ReduceSumOp(x, [1]),
        tidu.ReshapeOp(x, [32]),
        tidu.TransposeOp(x, [1, 0]),
        tidu.DotGeneralOp(x, v, [1], [0]),
    ]
    for op in ops:
        block.add_op(op)
        op.verify()
    results = [op.results[0].type for op in ops]
    assert results[1] == TensorType(i1, [4, 8])
    assert results[3] == TensorType(f64, [4])
    assert len(ops[4].results) == 2
    assert results[9] == TensorType(ComplexType(f64), [4, 8])
    assert results[13] == TensorType(f64, [4])
    assert results[15] == TensorType(f64, [8, 4])
    assert results[16] == TensorType(f64, [4])
    scale = ops[6]
    assert isinstance(scale, tidu.ScaleOp) and scale.value == 2j
    pow_op = ops[5]
    assert isinstance(pow_op, tidu.PowOp) and pow_op.exponent.value.data == 3.0
    to_complex = ops[9]
    assert isinstance(to_complex, tidu.ToComplexOp) and to_complex.is_imaginary


def test_tensor_type_from_numpy_dtype() -> None:
    assert tidu.tensor_type((4, 8), "float64") == TensorType(f64, [4, 8])
    assert tidu.tensor_type((), "complex64") == TensorType(ComplexType(f32), [])
    assert tidu.tensor_type([3], "bool") == TensorType(i1, [3])
    assert tidu.tensor_type([3], "int64") == TensorType(i64, [3])
    assert tidu.tensor_type([3], "int16") == TensorType(IntegerType(16), [3])
    with pytest.raises(ValueError, match="dtype 'uint8' has no tidu element type"):
        tidu.tensor_type((2,), "uint8")


def test_primitive_table_and_dialect() -> None:
    """One dialect op per primitive, named after its mnemonic, plus the kernel ops."""
    assert set(OP_OF_PRIMITIVE) == set(OP_TABLE.values())
    for mnemonic, primitive in OP_TABLE.items():
        assert OP_OF_PRIMITIVE[primitive].name == f"tidu.{mnemonic}"
    ops = list(Tidu.operations)
    assert set(ops) == {*OP_OF_PRIMITIVE.values(), tidu.KernelOp, tidu.YieldOp}
    assert len(set(OP_OF_PRIMITIVE.values())) == len(OP_OF_PRIMITIVE)
    for op in ops:
        assert op.name.startswith("tidu.")
        assert op.__doc__ is not None and op.name in op.__doc__, op.name


# ---------------------------------------------------------------------------------
# Verifier messages
# ---------------------------------------------------------------------------------

FAILURES = [
    # value types
    (
        "%r = tidu.exp %d : tensor<?xf64> -> tensor<?xf64>",
        "tidu.exp operand 0 is tensor<?xf64>, which has a dynamic dimension",
    ),
    (
        "%r = tidu.neg %m : tensor<4x8xi1> -> tensor<4x8xi1>",
        "tidu.neg needs operand 0 to have element type f32, f64, complex<f32>, complex<f64>, "
        "i8, i16, i32 or i64, but it has i1.",
    ),
    # shapes
    (
        "%r = tidu.add %x, %v : tensor<4x8xf64>, tensor<8xf64> -> tensor<4x8xf64>",
        "tidu.add needs all operands and results to have the same shape (or all to be "
        "scalars), but operand 0 is tensor<4x8xf64> and operand 1 is tensor<8xf64>.",
    ),
    (
        "%r = tidu.mul %e, %a : tensor<f64>, f64 -> tensor<f64>",
        "tidu.mul needs all operands and results to have the same shape",
    ),
    # element types
    (
        "%r = tidu.add %x, %f : tensor<4x8xf64>, tensor<4x8xf32> -> tensor<4x8xf64>",
        "tidu.add operand 1 has element type f32, but f64 is expected when operand 0 is "
        "tensor<4x8xf64>.",
    ),
    (
        "%r = tidu.sub %x, %y : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf32>",
        "tidu.sub result 0 has element type f32, but f64 is expected",
    ),
    (
        "%r = tidu.exp %i : tensor<4xi32>",
        "tidu.exp needs operand 0 to have element type f32, f64, complex<f32> or complex<f64>, "
        "but it has i32.",
    ),
    (
        "%r = tidu.maximum %z, %z : tensor<4xcomplex<f64>>",
        "tidu.maximum needs operand 0 to have element type f32, f64, i1, i8, i16, i32 or i64, "
        "but it has complex<f64>.",
    ),
    # compare
    (
        '%r = tidu.compare "lt ", %x, %y : tensor<4x8xf64>',
        "tidu.compare has the direction 'lt ', but it must be one of lt, le, gt, ge, eq, ne.",
    ),
    (
        "%r = tidu.compare le, %z, %z : tensor<4xcomplex<f64>>",
        "tidu.compare compares complex values (complex<f64>) with 'le', but complex values can "
        "only be compared with eq and ne.",
    ),
    (
        "%r = tidu.compare lt, %x, %y : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf64>",
        "tidu.compare result 0 has element type f64, but i1 is expected",
    ),
    # select
    (
        "%r = tidu.select %x, %x, %y : tensor<4x8xf64>, tensor<4x8xf64>, tensor<4x8xf64>"
        " -> tensor<4x8xf64>",
        "tidu.select operand 0 has element type f64, but i1 is expected when operand 1 is "
        "tensor<4x8xf64>.",
    ),
    (
        "%r = tidu.select %mz, %x, %y : tensor<4xi1>, tensor<4x8xf64>, tensor<4x8xf64>"
        " -> tensor<4x8xf64>",
        "tidu.select needs all operands and results to have the same shape",
    ),
    # complex parts, sincos, to_complex
    (
        "%r = tidu.real %z : tensor<4xcomplex<f64>> -> tensor<4xcomplex<f64>>",
        "tidu.real result 0 has element type complex<f64>, but f64 is expected",
    ),
    (
        "%r, %r2 = tidu.sincos %x : tensor<4x8xf64> -> tensor<4x8xf64>, tensor<4x8xf32>",
        "tidu.sincos result 1 has element type f32, but f64 is expected",
    ),
    (
        "%r = tidu.to_complex %z : tensor<4xcomplex<f64>> -> tensor<4xcomplex<f64>>",
        "tidu.to_complex needs operand 0 to have element type f32 or f64, but it has complex<f64>.",
    ),
    (
        "%r = tidu.to_complex %x : tensor<4x8xf64> -> tensor<4x8xcomplex<f32>>",
        "tidu.to_complex result 0 has element type complex<f32>, but complex<f64> is expected",
    ),
    # literals
    (
        "%r = tidu.scale %x, (1.0, 2.0) : tensor<4x8xf64>",
        "tidu.scale has the complex factor (1.0, 2.0), but its element type f64 is real.",
    ),
    (
        "%r = tidu.full_like %m, 2.0 : tensor<4x8xi1>",
        "tidu.full_like has the value (2.0, 0.0), but an i1 value must be 0 or 1.",
    ),
    (
        "%r = tidu.constant (0.0, 1.0) : tensor<2xf32>",
        "tidu.constant has the complex value (0.0, 1.0), but its element type f32 is real.",
    ),
    (
        "%r = tidu.constant 1.0 : tensor<?xf64>",
        "tidu.constant result is tensor<?xf64>, which has a dynamic dimension",
    ),
    (
        "%r = tidu.constant 1.5 : i32",
        "tidu.constant has the value (1.5, 0.0), but its element type i32 holds integers.",
    ),
    # convert
    (
        "%r = tidu.convert %z : tensor<4xcomplex<f64>> -> tensor<4xf64>",
        "tidu.convert converts complex<f64> to the real type f64, which drops the imaginary "
        "part; use tidu.real for that.",
    ),
    (
        "%r = tidu.convert %s : tensor<4xf32> -> tensor<4xi1>",
        "tidu.convert converts f32 to i1, but only compares produce i1 values.",
    ),
    (
        "%r = tidu.convert %s : tensor<4xf32> -> tensor<8xf64>",
        "tidu.convert needs all operands and results to have the same shape",
    ),
    # broadcast_in_dim
    (
        "%r = tidu.broadcast_in_dim %v, dims = [0, 1] : tensor<8xf64> -> tensor<4x8xf64>",
        "tidu.broadcast_in_dim has broadcast_dimensions [0, 1] for an operand of rank 1 "
        "(tensor<8xf64>); it needs one entry per operand dimension.",
    ),
    (
        "%r = tidu.broadcast_in_dim %x, dims = [1, 0] : tensor<4x8xf64> -> tensor<8x4xf64>",
        "tidu.broadcast_in_dim has broadcast_dimensions [1, 0], which must be strictly increasing.",
    ),
    (
        "%r = tidu.broadcast_in_dim %v, dims = [2] : tensor<8xf64> -> tensor<4x8xf64>",
        "tidu.broadcast_in_dim has broadcast_dimensions[0] = 2, which is out of range for the "
        "result of rank 2.",
    ),
    (
        "%r = tidu.broadcast_in_dim %v, dims = [0] : tensor<8xf64> -> tensor<4x8xf64>",
        "tidu.broadcast_in_dim cannot broadcast operand dimension 0 of size 8 to result "
        "dimension 0 of size 4; the operand size must be 1 or 4.",
    ),
    (
        "%r = tidu.broadcast_in_dim %v, dims = [1] : tensor<8xf64> -> tensor<4x8xf32>",
        "tidu.broadcast_in_dim result has element type f32, but the operand has f64; they "
        "must be equal.",
    ),
    (
        "%r = tidu.broadcast_in_dim %a, dims = [] : f64 -> tensor<4xf64>",
        "tidu.broadcast_in_dim operand is f64, but it must be a ranked tensor with a static "
        "shape of",
    ),
    # reduce_sum
    (
        "%r = tidu.reduce_sum %x, axes = [1, 0] : tensor<4x8xf64> -> tensor<f64>",
        "tidu.reduce_sum has axes [1, 0], which must be sorted and unique.",
    ),
    (
        "%r = tidu.reduce_sum %x, axes = [2] : tensor<4x8xf64> -> tensor<4x8xf64>",
        "tidu.reduce_sum has axes[0] = 2, which is out of range for the operand of rank 2.",
    ),
    (
        "%r = tidu.reduce_sum %x, axes = [0] : tensor<4x8xf64> -> tensor<4xf64>",
        "tidu.reduce_sum reduces tensor<4x8xf64> over axes [0], so its result shape must be [8], "
        "but the result is tensor<4xf64>.",
    ),
    (
        "%r = tidu.reduce_sum %m, axes = [0] : tensor<4x8xi1> -> tensor<8xi1>",
        "tidu.reduce_sum operand has element type i1, but it must be f32, f64, complex<f32>, "
        "complex<f64>, i8, i16, i32 or i64.",
    ),
    # reduce_max, reduce_min, reduce_prod, argmax, argmin
    (
        "%r = tidu.reduce_max %z, axes = [0] : tensor<4xcomplex<f64>> -> tensor<complex<f64>>",
        "tidu.reduce_max operand has element type complex<f64>, but it must be f32, f64, i1, "
        "i8, i16, i32 or i64.",
    ),
    (
        "%r = tidu.reduce_min %x, axes = [0] : tensor<4x8xf64> -> tensor<4xf64>",
        "tidu.reduce_min reduces tensor<4x8xf64> over axes [0], so its result shape must be [8]",
    ),
    (
        "%r = tidu.reduce_prod %m, axes = [0] : tensor<4x8xi1> -> tensor<8xi1>",
        "tidu.reduce_prod operand has element type i1, but it must be f32, f64, complex<f32>, "
        "complex<f64>, i8, i16, i32 or i64.",
    ),
    (
        "%r = tidu.argmax %x, axis = 1 : tensor<4x8xf64> -> tensor<8xi64>",
        "tidu.argmax of tensor<4x8xf64> along axis 1 gives tensor<4xi64>, but the result is "
        "tensor<8xi64>.",
    ),
    (
        "%r = tidu.argmin %x, axis = 2 : tensor<4x8xf64> -> tensor<4xi64>",
        "tidu.argmin has axis[0] = 2, which is out of range for the operand of rank 2.",
    ),
    (
        "%r = tidu.argmax %z, axis = 0 : tensor<4xcomplex<f64>> -> tensor<i64>",
        "tidu.argmax operand has element type complex<f64>, but it must be ordered",
    ),
    # reshape
    (
        "%r = tidu.reshape %x : tensor<4x8xf64> -> tensor<30xf64>",
        "tidu.reshape cannot reshape tensor<4x8xf64> (32 elements) to tensor<30xf64> (30 "
        "elements); the counts must be equal.",
    ),
    # transpose
    (
        "%r = tidu.transpose %x, permutation = [0, 0] : tensor<4x8xf64> -> tensor<4x4xf64>",
        "tidu.transpose has permutation [0, 0], which is not a permutation of range(2) for the "
        "operand tensor<4x8xf64>.",
    ),
    (
        "%r = tidu.transpose %x, permutation = [1, 0] : tensor<4x8xf64> -> tensor<4x8xf64>",
        "tidu.transpose permutes tensor<4x8xf64> by [1, 0], so its result shape must be [8, 4], "
        "but the result is tensor<4x8xf64>.",
    ),
    # dot_general
    (
        "%r = tidu.dot_general %x, %x, batch = [] x [], contracting = [1] x [1]"
        " : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf64>",
        "tidu.dot_general must have the result shape [4, 4] (batch, lhs free, rhs free "
        "dimensions), but the result is tensor<4x8xf64>.",
    ),
    (
        "%r = tidu.dot_general %x, %x, batch = [] x [], contracting = [1] x [0]"
        " : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf64>",
        "tidu.dot_general pairs contracting dimension 1 of lhs tensor<4x8xf64> (size 8) with "
        "dimension 0 of rhs tensor<4x8xf64> (size 4); the sizes must be equal.",
    ),
    (
        "%r = tidu.dot_general %x, %x, batch = [0] x [], contracting = [] x []"
        " : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x8xf64>",
        "tidu.dot_general has lhs_batch [0] and rhs_batch [], which must have the same length.",
    ),
    (
        "%r = tidu.dot_general %x, %x, batch = [0] x [0], contracting = [0] x [1]"
        " : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4xf64>",
        "tidu.dot_general uses a lhs dimension twice among lhs_batch [0] and lhs_contracting [0].",
    ),
    (
        "%r = tidu.dot_general %x, %x, batch = [] x [], contracting = [2] x [1]"
        " : tensor<4x8xf64>, tensor<4x8xf64> -> tensor<4x4xf64>",
        "tidu.dot_general has lhs_contracting[0] = 2, which is out of range for the lhs of rank 2.",
    ),
    (
        "%r = tidu.dot_general %x, %f, batch = [] x [], contracting = [1] x [1]"
        " : tensor<4x8xf64>, tensor<4x8xf32> -> tensor<4x4xf64>",
        "tidu.dot_general rhs has element type f32, but lhs has f64; they must be equal.",
    ),
]


@pytest.mark.parametrize(("line", "message"), FAILURES)
def test_verifier_messages(ir, line: str, message: str) -> None:
    error = ir.verify_error(ir.wrap("  " + line))
    assert message in error

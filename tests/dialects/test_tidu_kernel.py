"""tidu.kernel and tidu.yield: examples, round-trips, the builder and verifier messages."""

from __future__ import annotations

import pytest
from tidu_compile.dialects import tidu
from xdsl.builder import Builder
from xdsl.dialects.builtin import ComplexType, TensorType, f64, i1
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import ParseError, VerifyException

BRIEF_EXAMPLE = """\
  %r:2 = tidu.kernel ins(%v, %v : tensor<8xf64>, tensor<8xf64>) domain [8] maps [[0], [0]] -> [[0], []] {
  ^bb0(%a0: f64, %b0: f64):
    %t = tidu.mul %a0, %b0 : f64
    tidu.yield %t, %t : f64, f64
  } : tensor<8xf64>, tensor<f64>"""  # noqa: E501

EXAMPLES = {
    "brief": BRIEF_EXAMPLE,
    "broadcast_and_column_sum": """\
  %r:2 = tidu.kernel ins(%x, %u, %e : tensor<4x8xf64>, tensor<1x8xf64>, tensor<f64>) domain [4, 8] maps [[0, 1], [-1, 1], []] -> [[1], [1, 0]] {
  ^bb0(%a0: f64, %a1: f64, %a2: f64):
    %t = tidu.mul %a0, %a1 : f64
    %o = tidu.add %t, %a2 : f64
    %t2 = tidu.exp %o : f64
    tidu.yield %o, %t2 : f64, f64
  } : tensor<8xf64>, tensor<8x4xf64>""",  # noqa: E501
    "complex_with_masks": """\
  %r:2 = tidu.kernel ins(%z, %mz : tensor<4xcomplex<f64>>, tensor<4xi1>) domain [4] maps [[0], [0]] -> [[0], [0]] attributes {origin = "test"} {
  ^bb0(%a0: complex<f64>, %a1: i1):
    %j = tidu.constant (0.000000e+00, 1.000000e+00) : complex<f64>
    %t = tidu.mul %a0, %j : complex<f64>
    %t1 = tidu.compare eq, %t, %a0 : complex<f64>
    %t2 = tidu.select %a1, %t, %a0 : complex<f64>
    %t3 = tidu.real %t2 : complex<f64>
    tidu.yield %t3, %t1 : f64, i1
  } : tensor<4xf64>, tensor<4xi1>""",  # noqa: E501
    "slices_pads_and_fills": """\
  %r:2 = tidu.kernel ins(%v, %v, %x : tensor<8xf64>, tensor<8xf64>, tensor<4x8xf64>) domain [7] maps [[0+1], [0*-1+7] fill -0.000000e+00, [_+2, 0]] -> [[0+1] fill 0.000000e+00, [0]] {
  ^bb0(%a0: f64, %a1: f64, %a2: f64):
    %t = tidu.mul %a0, %a1 : f64
    %o = tidu.add %t, %a2 : f64
    tidu.yield %t, %o : f64, f64
  } : tensor<8xf64>, tensor<7xf64>""",  # noqa: E501
    "gather_and_scatter": """\
  %r:2 = tidu.kernel ins(%x, %n, %q : tensor<4x8xf64>, tensor<4xi64>, tensor<8x8xf64>) domain [4, 8] maps [[in1, 1], [0], [1, 1]] -> [[in1, 1], [1]] {
  ^bb0(%a0: f64, %a1: i64, %a2: f64):
    %t = tidu.mul %a0, %a2 : f64
    tidu.yield %t, %t : f64, f64
  } : tensor<4x8xf64>, tensor<8xf64>""",  # noqa: E501
    "combiners": """\
  %r:4 = tidu.kernel ins(%x, %m : tensor<4x8xf64>, tensor<4x8xi1>) domain [4, 8] maps [[0, 1], [0, 1]] -> [[0] max, [1] min, [0], [] mul] {
  ^bb0(%a0: f64, %a1: i1):
    tidu.yield %a0, %a1, %a0, %a0 : f64, i1, f64, f64
  } : tensor<4xf64>, tensor<8xi1>, tensor<4xf64>, tensor<f64>""",  # noqa: E501
    "no_inputs": """\
  %r = tidu.kernel ins() domain [2, 3] maps [] -> [[0, 1]] {
    %t = tidu.constant 3.000000e+00 : f64
    tidu.yield %t : f64
  } : tensor<2x3xf64>""",
}


@pytest.mark.parametrize("name", EXAMPLES)
def test_kernel_examples_verify_and_round_trip(ir, name: str) -> None:
    text = ir.wrap(EXAMPLES[name])
    custom = ir.round_trip(text, generic=False)
    generic = ir.round_trip(text, generic=True)
    assert ir.print(ir.parse(generic)) == custom
    assert " tidu.kernel ins(" in custom


def test_kernel_accessors(ir) -> None:
    module = ir.parse(ir.wrap(EXAMPLES["broadcast_and_column_sum"]))
    kernel = next(op for op in module.walk() if isinstance(op, tidu.KernelOp))
    assert kernel.domain.get_values() == (4, 8)
    assert kernel.operand_map(1) == (-1, 1)
    assert kernel.result_map(1) == (1, 0)
    assert kernel.reduced_dims(0) == (0,)
    assert kernel.reduced_dims(1) == ()
    assert kernel.result_combiner(0) == "add" and kernel.result_combiners is None
    combined = ir.parse(ir.wrap(EXAMPLES["combiners"]))
    kernel = next(op for op in combined.walk() if isinstance(op, tidu.KernelOp))
    assert [kernel.result_combiner(j) for j in range(4)] == ["max", "min", "add", "mul"]
    assert all(kernel.accumulates(j) for j in range(4))


def test_kernel_builder() -> None:
    from xdsl.ir import Block

    outer = Block(arg_types=[TensorType(f64, [4, 8]), TensorType(ComplexType(f64), [8])])
    x, z = outer.args
    kernel = tidu.KernelOp(
        [x, z],
        [TensorType(ComplexType(f64), [8]), TensorType(i1, [4, 8])],
        domain=[4, 8],
        operand_maps=[[0, 1], [1]],
        result_maps=[[1], [0, 1]],
    )
    outer.add_op(kernel)
    body = kernel.body.block
    assert list(body.arg_types) == [f64, ComplexType(f64)]
    a, b = body.args
    builder = Builder(InsertPoint.at_end(body))
    as_complex = builder.insert(tidu.ToComplexOp(a)).results[0]
    product = builder.insert(tidu.MulOp(as_complex, b)).results[0]
    positive = builder.insert(tidu.CompareOp("gt", a, a)).results[0]
    builder.insert(tidu.YieldOp(product, positive))
    kernel.verify()
    assert kernel.reduced_dims(0) == (0,)


KERNEL_FAILURES = [
    (
        """  %r = tidu.kernel ins(%v, %v : tensor<8xf64>, tensor<8xf64>) domain [8]
      maps [[0]] -> [[0]] {
  ^bb0(%a0: f64, %a1: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel has 1 operand_maps for 2 operands; it needs one map per operand.",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0], [0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel has 2 result_maps for 1 results; it needs one map per result.",
    ),
    (
        """  tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [] {
  ^bb0(%a0: f64):
    tidu.yield
  }""",
        "tidu.kernel must have at least one result.",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [-8] maps [[0]] -> [[0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel has the domain [-8], but sizes must not be negative.",
    ),
    (
        """  %r = tidu.kernel ins(%a : f64) domain [] maps [[]] -> [[]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<f64>""",
        "tidu.kernel operand 0 is f64, but it must be a ranked tensor with a static shape of",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0, 1]] -> [[0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel operand 0 (tensor<8xf64>) has the map [0, 1], but it needs one entry per "
        "operand dimension (1).",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[_+8]] -> [[0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel operand 0 (tensor<8xf64>) reaches dimension 0 (size 8) at indices 8..8 "
        "(_+8), outside 0..7; only a map with a fill may read outside.",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[1]] -> [[0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel operand 0 maps dimension 0 to iteration dimension 1, which is out of range "
        "for the domain [8].",
    ),
    (
        """  %r = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps [[1, 0]] -> [[0, 1]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<4x8xf64>""",
        "tidu.kernel operand 0 (tensor<4x8xf64>) reaches dimension 0 (size 4) at indices 0..7 "
        "through iteration dimension 1 (1), outside 0..3",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [5] maps [[0*2+1]] -> [[0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<5xf64>""",
        "reaches dimension 0 (size 8) at indices 1..9 through iteration dimension 0 (0*2+1)",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0+1]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<9xf64>""",
        "tidu.kernel result 0 (tensor<9xf64>) writes dimension 0 only in part (0+1); such a "
        "result needs a fill.",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0+2] fill 0.0] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<9xf64>""",
        "tidu.kernel result 0 (tensor<9xf64>) reaches dimension 0 (size 9) at indices 2..9",
    ),
    (
        """  %r = tidu.kernel ins(%v, %v : tensor<8xf64>, tensor<8xf64>) domain [8]
      maps [[in1], [0]] -> [[0]] {
  ^bb0(%a0: f64, %a1: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel operand 0 indexes dimension 0 by operand 1, which holds f64, not i32 or "
        "i64.",
    ),
    (
        """  %r = tidu.kernel ins(%v, %n : tensor<8xf64>, tensor<4xi64>) domain [4]
      maps [[0], [0]] -> [[in1] fill 0.0] {
  ^bb0(%a0: f64, %a1: i64):
    tidu.yield %a0 : f64
  } : tensor<5xf64>""",
        "tidu.kernel result 0 is summed into from zero; it cannot have a fill.",
    ),
    (
        """  %r = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps [[0, 1]] -> [[0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel result 0 (tensor<8xf64>) maps dimension 0 of size 8 to iteration "
        "dimension 0 of size 4; the sizes must be equal.",
    ),
    (
        """  %r = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps [[0, 1]] -> [[-1]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<1xf64>""",
        "tidu.kernel result 0 maps dimension 0 to iteration dimension -1, which is out of range "
        "for the domain [4, 8].",
    ),
    (
        """  %r = tidu.kernel ins(%q : tensor<8x8xf64>) domain [8, 8] maps [[0, 1]] -> [[0, 0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8x8xf64>""",
        "tidu.kernel result 0 has the map [0, 0], which uses iteration dimension 0 twice.",
    ),
    (
        """  %r = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps [[0, 1]] -> [[1]] {
  ^bb0(%a0: f64):
    %t = tidu.compare lt, %a0, %a0 : f64
    tidu.yield %t : i1
  } : tensor<8xi1>""",
        "tidu.kernel result 0 sums over iteration dimensions [0], but its element type i1 "
        "cannot be summed.",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0] max] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel result 0 is combined by max, so it must be reduced over some iteration "
        "dimension (and not written through an operand's indices).",
    ),
    (
        """  %r = tidu.kernel ins(%z : tensor<4xcomplex<f64>>) domain [4] maps [[0]] -> [[] min] {
  ^bb0(%a0: complex<f64>):
    tidu.yield %a0 : complex<f64>
  } : tensor<complex<f64>>""",
        "tidu.kernel result 0 is combined by min, but its element type complex<f64> is not f32, "
        "f64, i1, i8, i16, i32 or i64.",
    ),
    (
        """  %r = tidu.kernel ins(%m : tensor<4x8xi1>) domain [4, 8] maps [[0, 1]] -> [[0] mul] {
  ^bb0(%a0: i1):
    tidu.yield %a0 : i1
  } : tensor<4xi1>""",
        "tidu.kernel result 0 is combined by mul, but its element type i1 is not f32, f64, "
        "complex<f32>, complex<f64>, i8, i16, i32 or i64.",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0]] {
  ^bb0(%a0: f32):
    tidu.yield %a0 : f32
  } : tensor<8xf64>""",
        "tidu.kernel body arguments must be the element types of the operands (f64), but they "
        "are (f32).",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0]] {
  ^bb0(%a0: f64):
    %t = tidu.compare lt, %a0, %a0 : f64
    tidu.yield %t : i1
  } : tensor<8xf64>""",
        "tidu.kernel body must yield the element types of the results (f64), but it yields (i1).",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  ^bb1:
    tidu.yield %a0 : f64
  } : tensor<8xf64>""",
        "tidu.kernel must have a body of exactly one block, but it has 2.",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0]] {
  ^bb0(%a0: f64):
    %t = tidu.add %a0, %a : f64
    tidu.yield %t : f64
  } : tensor<8xf64>""",
        "Operation using value defined out of its IsolatedFromAbove parent",
    ),
    (
        """  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0]] -> [[0]] {
  ^bb0(%a0: f64):
    %t = tidu.neg %a0 : f64
  } : tensor<8xf64>""",
        "terminates block in single-block region but is not a terminator",
    ),
]


@pytest.mark.parametrize(("body", "message"), KERNEL_FAILURES)
def test_kernel_verifier_messages(ir, body: str, message: str) -> None:
    assert message in ir.verify_error(ir.wrap(body))


def test_yield_outside_a_kernel(ir) -> None:
    message = ir.verify_error("builtin.module {\n  tidu.yield\n}")
    assert (
        message
        == "tidu.yield terminates the body of a tidu.kernel, but its parent is builtin.module."
    )


def test_invalid_kernel_round_trips_unverified(ir) -> None:
    body, _ = KERNEL_FAILURES[6]
    text = ir.wrap(body)
    assert ir.round_trip(text, generic=False, verify=False)
    assert ir.round_trip(text, generic=True, verify=False)


def test_kernel_builder_with_combiners(ir) -> None:
    """Combiners are stored only when some result does not sum; an unknown one fails."""
    from xdsl.ir import Block

    outer = Block(arg_types=[TensorType(f64, [4, 8])])
    for combiners, printed in ((["add", "add"], "-> [[0], [1]]"),
                               (["max", "add"], "-> [[0] max, [1]]")):  # fmt: skip
        kernel = tidu.KernelOp(outer.args, [TensorType(f64, [4]), TensorType(f64, [8])],
                               [4, 8], [[0, 1]], [[0], [1]],
                               result_combiners=combiners)  # fmt: skip
        kernel.body.block.add_op(tidu.YieldOp(*kernel.body.block.args * 2))
        kernel.verify()
        assert (kernel.result_combiners is None) == (combiners == ["add", "add"])
        assert printed in ir.print(kernel)
    kernel = tidu.KernelOp(outer.args, [TensorType(f64, [4])], [4, 8], [[0, 1]], [[0]],
                           result_combiners=["sum"])  # fmt: skip
    kernel.body.block.add_op(tidu.YieldOp(kernel.body.block.args[0]))
    with pytest.raises(VerifyException, match="has the combiner 'sum'; expected one of add"):
        kernel.verify()


def test_operand_maps_take_no_combiner(ir) -> None:
    text = ir.wrap("""  %r = tidu.kernel ins(%v : tensor<8xf64>) domain [8] maps [[0] max] -> [[]] {
  ^bb0(%a0: f64):
    tidu.yield %a0 : f64
  } : tensor<f64>""")
    with pytest.raises(ParseError, match="operand maps take no combiner"):
        ir.parse(text)

"""Each pass refuses what it cannot lower with an error naming the op and the pass."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tidu_compile.passes import get_all_passes
from tidu_compile.passes.errors import IllegalIRError, LoweringError
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.compiler.stages import lower_to_llvm_dialect

CASES = [
    (
        "convert-arith-to-llvm",
        "func.func @f(%a: index) -> index {\n"
        "  %0 = arith.addi %a, %a : index\n  func.return %0 : index\n}",
        "convert-arith-to-llvm: cannot lower 'arith.addi': index-typed value: "
        "run convert-index-to-i64 first",
    ),
    (
        "convert-arith-to-llvm",
        "func.func @f(%a: i32) -> i32 {\n"
        "  %0 = arith.floordivsi %a, %a : i32\n  func.return %0 : i32\n}",
        "convert-arith-to-llvm: cannot lower 'arith.floordivsi': no floordivsi rule",
    ),
    (
        "convert-arith-to-llvm",
        "func.func @f(%a: i64) -> f64 {\n"
        "  %0 = arith.uitofp %a : i64 to f64\n  func.return %0 : f64\n}",
        "cannot lower 'arith.uitofp': uitofp from 64 bits or more has no llvm rule",
    ),
    (
        "convert-math-to-llvm",
        "func.func @f(%a: i32) -> i32 {\n"
        "  %0 = math.ipowi %a, %a : i32\n  func.return %0 : i32\n}",
        "convert-math-to-llvm: cannot lower 'math.ipowi': no conversion rule matched",
    ),
    (
        "convert-math-to-llvm",
        "func.func @f(%a: vector<4xf64>) -> vector<4xf64> {\n"
        "  %0 = math.expm1 %a : vector<4xf64>\n  func.return %0 : vector<4xf64>\n}",
        "cannot lower 'math.expm1': libm has no scalar vector<4xf64> variant",
    ),
    (
        "convert-cf-to-llvm",
        "func.func @f(%a: i32) {\n  cf.switch %a : i32, [default: ^bb1]\n"
        "^bb1:\n  func.return\n}",
        "convert-cf-to-llvm: cannot lower 'cf.switch': no conversion rule matched",
    ),
    (
        "convert-func-to-llvm",
        "func.func @f(%a: memref<4xf64>) {\n  func.return\n}",
        "convert-func-to-llvm: cannot lower 'func.func @f': argument #0 has non-LLVM "
        "type memref<4xf64>",
    ),
    (
        "convert-func-to-llvm",
        "func.func @f(%a: f64) -> (f64, f64) {\n  func.return %a, %a : f64, f64\n}",
        "cannot lower 'func.return': more than one result is not supported",
    ),
    (
        "convert-ptradd-to-gep",
        "func.func @f(%p: !ptr_xdsl.ptr, %o: i128) {\n"
        "  %q = ptr_xdsl.ptradd %p, %o : (!ptr_xdsl.ptr, i128) -> !ptr_xdsl.ptr\n"
        "  func.return\n}",
        "convert-ptradd-to-gep: cannot lower 'ptr_xdsl.ptradd': offset of type i128",
    ),
    (
        "convert-ptr-to-llvm-fast",
        "func.func @f(%p: !ptr_xdsl.ptr, %o: index) {\n"
        "  %q = ptr_xdsl.ptradd %p, %o : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr\n"
        "  func.return\n}",
        "convert-ptr-to-llvm-fast: cannot lower 'ptr_xdsl.ptradd': "
        "run convert-ptradd-to-gep first",
    ),
    (
        "convert-index-to-i64",
        "func.func @f(%m: memref<4xf64>, %i: index) -> f64 {\n"
        "  %v = memref.load %m[%i] : memref<4xf64>\n  func.return %v : f64\n}",
        "convert-index-to-i64: cannot lower 'memref.load': needs index operands",
    ),
]


@pytest.mark.parametrize(("pass_name", "source", "message"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_pass_error_names_op_and_pass(
    ctx: Context, parse: Callable[[str], ModuleOp], pass_name: str, source: str, message: str
) -> None:
    module = parse(source)
    ir_pass = get_all_passes()[pass_name]()()
    with pytest.raises(LoweringError) as info:
        ir_pass.apply(ctx, module)
    assert message in str(info.value)
    assert info.value.pass_name == pass_name


BACKEND_PASSES = {
    "convert-arith-to-llvm", "convert-cf-to-llvm", "convert-func-to-llvm",
    "convert-index-to-i64", "convert-math-to-llvm", "convert-ptr-to-llvm-fast",
    "convert-ptradd-to-gep",
}


def test_every_backend_pass_is_registered_and_has_a_failure_case() -> None:
    assert set(get_all_passes()) >= BACKEND_PASSES
    assert {c[0] for c in CASES} == BACKEND_PASSES


def test_legality_walk_lists_leftovers(parse: Callable[[str], ModuleOp]) -> None:
    module = parse(
        'func.func @f(%a: f64) -> f64 {\n  %0 = "test.op"(%a) : (f64) -> f64\n'
        '  %1 = "test.op"(%0) : (f64) -> f64\n  func.return %1 : f64\n}'
    )
    with pytest.raises(IllegalIRError, match=r"left over: test\.op x2$"):
        lower_to_llvm_dialect(module)


def test_legality_walk_counts_index_values(parse: Callable[[str], ModuleOp]) -> None:
    from tidu_compile.backend.llvm_legality import check_llvm_legal

    module = parse('"test.op"() ({\n^bb0(%i: index):\n  "test.op"() : () -> ()\n}) : () -> ()')
    with pytest.raises(IllegalIRError, match=r"index-typed value x1, test\.op x2"):
        check_llvm_legal(module)

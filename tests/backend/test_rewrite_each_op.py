"""``rewrite_each_op``, the one-walk driver of the one-op-for-one-op conversions, gives
the module xDSL's ``PatternRewriteWalker(apply_recursively=False)`` gives: the whole
``llvm`` stage and each converted pass's filecheck input, both ways, printed alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tidu_compile.passes import (
    convert_arith_to_llvm,
    convert_cf_to_llvm,
    convert_math_to_llvm,
    convert_ptradd_to_gep,
)
from tidu_compile.passes.errors import LoweringError
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import PatternRewriteWalker, RewritePattern

from tidu_compile.compiler.stages import lower_to_llvm_dialect, run_passes

HERE = Path(__file__).parent
CONVERTED = (convert_arith_to_llvm, convert_cf_to_llvm, convert_math_to_llvm,
             convert_ptradd_to_gep)  # fmt: skip


def _walker(module: ModuleOp, pattern: RewritePattern) -> None:
    PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(module)


@pytest.fixture
def with_walker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """Calling it makes the converted passes run on xDSL's walker again."""

    def use_walker() -> None:
        for module in CONVERTED:
            monkeypatch.setattr(module, "rewrite_each_op", _walker)

    yield use_walker


@pytest.mark.parametrize("kernel", ["w1", "colsum", "f32k", "misc", "edge"])
def test_llvm_stage_equals_the_walkers(
    parse: Callable[[str], ModuleOp], with_walker: Callable[[], None], kernel: str
) -> None:
    source = (HERE / "kernels" / f"{kernel}.mlir").read_text()
    ours = str(lower_to_llvm_dialect(parse(source)))
    with_walker()
    assert str(lower_to_llvm_dialect(parse(source))) == ours


@pytest.mark.parametrize("name", ["convert-arith-to-llvm", "convert-math-to-llvm",
                                  "convert-cf-to-llvm", "convert-ptradd-to-gep"])  # fmt: skip
def test_filecheck_input_equals_the_walkers(
    parse: Callable[[str], ModuleOp], with_walker: Callable[[], None], name: str
) -> None:
    source = (HERE / "filecheck" / f"{name}.mlir").read_text()
    ours = str(run_passes(parse(source), name))
    with_walker()
    assert str(run_passes(parse(source), name)) == ours


def test_a_pattern_error_is_reported_on_its_op(parse: Callable[[str], ModuleOp]) -> None:
    module = parse("func.func @f(%a: i32) -> i32 {\n"
                   "  %0 = arith.floordivsi %a, %a : i32\n  func.return %0 : i32\n}")  # fmt: skip
    with pytest.raises(LoweringError, match="arith.floordivsi.*no floordivsi rule"):
        run_passes(module, "convert-arith-to-llvm")

"""``lower_to_llvm_dialect``: the ``llvm`` stage's passes in order, callbacks, options, and
equivalence with the stock passes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.compiler.stages import lower_to_llvm_dialect, run_passes, stage

LLVM_SPEC = stage("llvm").spec

KERNELS = Path(__file__).parent / "kernels"
W1, COLSUM, F32, MISC = (
    (KERNELS / f"{name}.mlir").read_text() for name in ("w1", "colsum", "f32k", "misc")
)


def test_after_pass_sees_every_pass_in_order(parse: Callable[[str], ModuleOp]) -> None:
    seen: list[str] = []
    lower_to_llvm_dialect(parse(W1), after_pass=lambda p, _module: seen.append(p.name))
    assert seen == [spec.split("{")[0] for spec in stage("llvm").passes]


@pytest.mark.parametrize("source", [W1, COLSUM, F32, MISC], ids=["w1", "colsum", "f32", "misc"])
def test_fast_ptr_pass_matches_stock_convert_ptr_to_llvm(
    parse: Callable[[str], ModuleOp], source: str
) -> None:
    fast = str(lower_to_llvm_dialect(parse(source)))
    stock = LLVM_SPEC.replace("convert-ptr-to-llvm-fast", "convert-ptr-to-llvm")
    assert stock != LLVM_SPEC
    assert str(run_passes(parse(source), stock)) == fast


def test_verify_each_off_gives_the_same_module(parse: Callable[[str], ModuleOp]) -> None:
    assert str(lower_to_llvm_dialect(parse(COLSUM), verify_each=False)) == str(
        lower_to_llvm_dialect(parse(COLSUM))
    )


def test_options_reach_the_passes(parse: Callable[[str], ModuleOp]) -> None:
    spec = LLVM_SPEC.replace("convert-arith-to-llvm", "convert-arith-to-llvm{contract=false}")
    spec = spec.replace("convert-func-to-llvm", "convert-func-to-llvm{noalias=false}")
    text = str(lower_to_llvm_dialect(parse(W1), passes=spec))
    assert "contract" not in text and "llvm.noalias" not in text
    text = str(lower_to_llvm_dialect(parse(W1)))
    assert "#llvm.fastmath<contract>" in text and "{llvm.noalias}" in text

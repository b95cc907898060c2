"""``lower_to_llvm_dialect``: order, callbacks, and equivalence with the stock passes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.convert_ptr_to_llvm import ConvertPtrToLLVMPass

from tidu_compile.backend.lower_to_llvm import (
    LOWERING_PIPELINE,
    build_passes,
    lower_to_llvm_dialect,
)

KERNELS = Path(__file__).parent / "kernels"
W1, COLSUM, F32, MISC = (
    (KERNELS / f"{name}.mlir").read_text() for name in ("w1", "colsum", "f32k", "misc")
)


def test_after_pass_sees_every_pass_in_order(parse: Callable[[str], ModuleOp]) -> None:
    seen: list[str] = []
    lower_to_llvm_dialect(parse(W1), after_pass=lambda name, _m, secs: seen.append(name))
    assert seen == [spec.split("{")[0] for spec in LOWERING_PIPELINE]


@pytest.mark.parametrize("source", [W1, COLSUM, F32, MISC], ids=["w1", "colsum", "f32", "misc"])
def test_fast_ptr_pass_matches_stock_convert_ptr_to_llvm(
    parse: Callable[[str], ModuleOp], source: str
) -> None:
    fast = str(lower_to_llvm_dialect(parse(source)))
    module = parse(source)
    for ir_pass in build_passes():
        if ir_pass.name == "convert-ptr-to-llvm-fast":
            ir_pass = ConvertPtrToLLVMPass()
        ir_pass.apply(Context(), module)
        module.verify()
    assert str(module) == fast


def test_verify_each_off_gives_the_same_module(parse: Callable[[str], ModuleOp]) -> None:
    assert str(lower_to_llvm_dialect(parse(COLSUM), verify_each=False)) == str(
        lower_to_llvm_dialect(parse(COLSUM))
    )


def test_options_reach_the_passes(parse: Callable[[str], ModuleOp]) -> None:
    text = str(lower_to_llvm_dialect(parse(W1), contract=False, noalias=False))
    assert "contract" not in text and "llvm.noalias" not in text
    text = str(lower_to_llvm_dialect(parse(W1)))
    assert "#llvm.fastmath<contract>" in text and "{llvm.noalias}" in text

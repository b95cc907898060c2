"""``compiler.lowered_math``: a math function lowered before is reused by the ``llvm``
stage, and the module is the one lowering everything gives; a function that differs is
lowered anew."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.compiler import lowered_math
from tidu_compile.compiler.stages import lower_to_llvm_dialect, run_passes

KERNELS = Path(__file__).parent / "kernels"
OUTLINE = "expand-math-polynomials{only_in_loops=true outline=true}"


def _lowered(source: str, parse: Callable[[str], ModuleOp], reuse: bool) -> str:
    module = run_passes(parse(source), OUTLINE)
    hear_all = None if reuse else (lambda _pass, _module: None)  # after_pass: no reuse
    return str(lower_to_llvm_dialect(module, after_pass=hear_all))


@pytest.mark.parametrize("kernel", ["w1", "f32k"])
def test_reused_math_gives_the_module_of_lowering_all(
    parse: Callable[[str], ModuleOp], kernel: str
) -> None:
    source = (KERNELS / f"{kernel}.mlir").read_text()
    everything = _lowered(source, parse, reuse=False)
    assert "llvm.func internal @tidu_math_" in everything
    first, second = (_lowered(source, parse, reuse=True) for _ in range(2))
    assert first == second == everything
    assert any(name.startswith("tidu_math_") for _, name in lowered_math._LOWERED)


def test_a_different_body_is_lowered_anew(parse: Callable[[str], ModuleOp]) -> None:
    source = (KERNELS / "w1.mlir").read_text()
    _lowered(source, parse, reuse=True)  # remembers w1's math functions
    module = run_passes(parse(source), OUTLINE)
    text = str(module)
    changed = text.replace("7.100000e+02", "7.000000e+02")  # exp's clamp: in its body only
    assert changed != text
    reference = str(lower_to_llvm_dialect(parse(changed), after_pass=lambda _p, _m: None))
    assert str(lower_to_llvm_dialect(parse(changed))) == reference

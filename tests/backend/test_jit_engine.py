"""The compile stages and the engine's checks before MCJIT sees an object."""

from __future__ import annotations

import ctypes
import itertools
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.backend.elf import read_elf_symbols
from tidu_compile.backend.engine import JitEngine
from tidu_compile.backend.jit import (
    CompiledObject,
    DuplicateSymbolError,
    UnresolvedSymbolError,
    load,
)
from tidu_compile.backend.target import host_target, vector_math_abi
from tidu_compile.compiler.stages import PIPELINE, RunOptions, lower_to_llvm_dialect, walk

TEXT_STAGES = [s.name for s in PIPELINE if s.kind == "text"]  # llvm-ir, opt-ir, asm

_counter = itertools.count()

KERNELS = Path(__file__).parent / "kernels"


def read_kernel(name: str) -> str:
    return (KERNELS / f"{name}.mlir").read_text()


CALLS_MISSING = read_kernel("calls_missing")

SCALE = read_kernel("scale")


def _compile(parse: Callable[[str], ModuleOp], source: str, name: str,
             vector_math: bool | None = False,
             seconds: dict[str, float] | None = None) -> tuple[str, CompiledObject]:
    symbol = f"{name}_{next(_counter)}"
    module = lower_to_llvm_dialect(parse(source.replace(f"@{name}(", f"@{symbol}(")))
    return symbol, walk(module, "llvm", "codegen", RunOptions(vector_math=vector_math), seconds)


def test_missing_external_symbol_raises(parse: Callable[[str], ModuleOp]) -> None:
    symbol, obj = _compile(parse, CALLS_MISSING, "calls_missing")
    assert "tidu_no_such_symbol" in obj.undefined
    with pytest.raises(UnresolvedSymbolError, match="'tidu_no_such_symbol'"):
        load(obj, [symbol])


def test_missing_symbol_does_not_crash_a_fresh_process() -> None:
    """The check runs before MCJIT: a child process survives and reports the error."""
    code = "\n".join([
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})",
        "from conftest import make_context",
        "from xdsl.parser import Parser",
        "from tidu_compile.compiler.stages import lower_to_llvm_dialect, walk",
        "from tidu_compile.backend.jit import load, UnresolvedSymbolError",
        f"m = lower_to_llvm_dialect(Parser(make_context(), {CALLS_MISSING!r}).parse_module())",
        "try:",
        "    load(walk(m, 'llvm', 'codegen'), ['calls_missing'])",
        "except UnresolvedSymbolError as e:",
        "    print('raised', e)",
    ])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "raised" in result.stdout and "tidu_no_such_symbol" in result.stdout


def test_duplicate_symbol_raises(parse: Callable[[str], ModuleOp]) -> None:
    symbol, obj = _compile(parse, SCALE, "scale")
    engine = JitEngine()
    engine.load(obj, [symbol])
    with pytest.raises(DuplicateSymbolError, match=repr(symbol)):
        engine.load(obj, [symbol])


def test_requesting_an_undefined_symbol_raises(parse: Callable[[str], ModuleOp]) -> None:
    _, obj = _compile(parse, SCALE, "scale")
    with pytest.raises(KeyError, match="not_there"):
        JitEngine().load(obj.object_code, ["not_there"])


def test_loaded_kernel_runs_and_is_findable(parse: Callable[[str], ModuleOp]) -> None:
    symbol, obj = _compile(parse, SCALE, "scale", vector_math=None)
    engine = JitEngine()
    address = engine.load(obj, [symbol])[symbol]
    assert engine.is_loaded(symbol) and engine.address_of(symbol) == address
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(address)
    x = np.linspace(-3, 3, 37)
    y = np.empty_like(x)
    kernel(x.ctypes.data, y.ctypes.data, x.size)
    np.testing.assert_allclose(y, 2 * np.exp(x), rtol=1e-12)


def test_compiled_object_metadata(parse: Callable[[str], ModuleOp]) -> None:
    seconds: dict[str, float] = {}
    symbol, obj = _compile(parse, SCALE, "scale", seconds=seconds)
    assert set(seconds) == {"llvm-ir", "opt-ir", "codegen"}
    assert all(t > 0 for t in seconds.values())
    assert obj.defined == (symbol, symbol + ".arrays")  # the kernel and its array-object twin
    assert "exp" in obj.undefined and not obj.vector_math
    host = host_target()
    assert obj.target_key == host.key
    assert obj.target_key.split("|")[:4] == [host.triple, host.cpu, host.features, host.tuning.key]
    assert read_elf_symbols(obj.object_code) == (obj.defined, obj.undefined)


def test_read_elf_symbols_rejects_other_formats() -> None:
    with pytest.raises(ValueError, match="not an ELF64"):
        read_elf_symbols(b"\xcf\xfa\xed\xfe" + bytes(60))


@pytest.mark.parametrize("stage", TEXT_STAGES)
def test_dump_stage(parse: Callable[[str], ModuleOp], stage: str) -> None:
    module = lower_to_llvm_dialect(parse(SCALE))
    text = str(walk(module, "llvm", stage))
    expected = {"llvm-ir": 'define void @"scale"(ptr noalias', "opt-ir": "define void @scale(",
                "asm": "scale:"}[stage]
    assert expected in text
    if vector_math_abi() is not None and stage == "llvm-ir":
        assert '"vector-function-abi-variant"' in text
    if vector_math_abi() is not None and stage == "opt-ir":
        assert "@_ZGV" in text and "x double>" in text  # a vector loop calling libmvec


def test_the_array_twin_calls_its_kernel_after_o3(parse: Callable[[str], ModuleOp]) -> None:
    """``@scale.arrays`` loads the data pointers and calls ``@scale``: LLVM does not
    inline the kernel's loop nest into it (two copies to optimize and emit)."""
    text = str(walk(lower_to_llvm_dialect(parse(SCALE)), "llvm", "opt-ir"))
    twin = text[text.index("@scale.arrays("):]
    twin = twin[:twin.index("\n}\n")]
    assert "call void @scale(" in twin and "phi " not in twin  # a call, no loop


def test_dump_stage_rejects_unknown_stage(parse: Callable[[str], ModuleOp]) -> None:
    with pytest.raises(ValueError, match="unknown stage"):
        walk(lower_to_llvm_dialect(parse(SCALE)), "llvm", "obj")


def test_private_helper_is_called_and_not_exported(parse: Callable[[str], ModuleOp]) -> None:
    symbol, obj = _compile(parse, read_kernel("calls_helper"), "calls_helper", vector_math=None)
    assert obj.defined == (symbol, symbol + ".arrays")  # @helper is internal: never a global
    address = load(obj, [symbol])[symbol]
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(address)
    x = np.linspace(-2, 2, 21)
    y = np.empty_like(x)
    kernel(x.ctypes.data, y.ctypes.data, x.size)
    np.testing.assert_allclose(y, np.exp(x) + 1, rtol=1e-12)


def test_compile_and_load_from_two_threads(parse: Callable[[str], ModuleOp]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    modules = [_compile_module(parse, SCALE, "scale") for _ in range(4)]

    def build(item: tuple[str, ModuleOp]) -> int:
        symbol, module = item
        return load(walk(module, "llvm", "codegen"), [symbol])[symbol]

    with ThreadPoolExecutor(max_workers=2) as pool:
        addresses = list(pool.map(build, modules))
    assert len(set(addresses)) == 4 and all(addresses)


def _compile_module(parse: Callable[[str], ModuleOp], source: str, name: str) -> (
    tuple[str, ModuleOp]
):
    symbol = f"{name}_{next(_counter)}"
    return symbol, lower_to_llvm_dialect(parse(source.replace(f"@{name}(", f"@{symbol}(")))

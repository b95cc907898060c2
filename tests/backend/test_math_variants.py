"""Vector variants of the outlined math functions (``backend/math_variants.py``).

The rewrite is checked on hand-written IR (the variant's text, the call sites' attribute,
``noinline``/``alwaysinline`` on each side of ``INLINED_MATH_CALLS``), then on real
kernels of every expanded function and float type: the optimised IR calls the variant on
the host's vector width, and the values equal numpy's and those of the inlined kernel.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable

import llvmlite.binding as llvm
import numpy as np
import pytest
from tidu_compile.passes.expand_math_polynomials import (
    MATH_FUNCTION_PREFIX,
    ExpandMathPolynomialsPass,
)
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.backend import math_variants
from tidu_compile.backend.jit import load
from tidu_compile.backend.math_variants import INLINED_MATH_CALLS, add_math_variants
from tidu_compile.backend.target import VectorMathABI, host_target
from tidu_compile.backend.trig_guard import GUARDED
from tidu_compile.backend.vecmath import add_vector_variants
from tidu_compile.compiler.stages import RunOptions, lower_to_llvm_dialect, walk

SCALAR = """\
define void @"kernel"(ptr %".1", i64 %".2")
{
entry:
CALLS  ret void
}

define internal double @"tidu_math_abs_f64"(double %".1")
{
.3:
  %".4" = bitcast double %".1" to i64
  %".5" = and i64 %".4", 9223372036854775807
  %".6" = bitcast i64 %".5" to double
  %".7" = fcmp ogt double %".6", 0x4034000000000000
  %".8" = select  i1 %".7", double 0x4034000000000000, double %".6"
  %".9" = call double @"llvm.fma.f64"(double %".8", double 0x3ff0000000000000, double %".6")
  %".10" = fmul contract double 0x3fe0000000000000, %".9"
  ret double %".10"
}

declare double @"llvm.fma.f64"(double %".1", double %".2", double %".3")
"""


def _module(calls: int) -> str:
    lines = "".join(
        f'  %"c{i}" = call ccc double @"tidu_math_abs_f64"(double 0x0)\n' for i in range(calls)
    )
    return SCALAR.replace("CALLS", lines)


def test_a_few_calls_are_inlined() -> None:
    out, made = add_math_variants(_module(INLINED_MATH_CALLS), MATH_FUNCTION_PREFIX, lambda b: 4)
    assert made == []
    assert 'define internal double @"tidu_math_abs_f64"(double %".1") alwaysinline' in out
    assert "vector-function-abi-variant" not in out


def test_many_calls_go_through_the_vector_variant() -> None:
    out, made = add_math_variants(
        _module(INLINED_MATH_CALLS + 1), MATH_FUNCTION_PREFIX, lambda bits: 256 // bits
    )
    assert made == ["tidu_math_abs_f64_v4"]
    expected = [
        'define internal double @"tidu_math_abs_f64"(double %".1") noinline',
        'define internal <4 x double> @"tidu_math_abs_f64_v4"(<4 x double> %".1")',
        '  %".4" = bitcast <4 x double> %".1" to <4 x i64>',
        '  %".5" = and <4 x i64> %".4", splat (i64 9223372036854775807)',
        '  %".7" = fcmp ogt <4 x double> %".6", splat (double 0x4034000000000000)',
        '  %".8" = select <4 x i1> %".7", <4 x double> splat (double 0x4034000000000000),'
        ' <4 x double> %".6"',
        '  %".9" = call <4 x double> @"llvm.fma.v4f64"(<4 x double> %".8",'
        ' <4 x double> splat (double 0x3ff0000000000000), <4 x double> %".6")',
        '  %".10" = fmul contract <4 x double> splat (double 0x3fe0000000000000), %".9"',
        '  ret <4 x double> %".10"',
        'declare <4 x double> @"llvm.fma.v4f64"(<4 x double>, <4 x double>, <4 x double>)',
        'attributes #960 = { "vector-function-abi-variant"='
        '"_ZGV_LLVM_N4v_tidu_math_abs_f64(tidu_math_abs_f64_v4)" }',
    ]
    lines = out.splitlines()
    for line in expected:
        assert line in lines, line
    calls = [line for line in lines if 'call ccc double @"tidu_math_abs_f64"' in line]
    assert len(calls) == INLINED_MATH_CALLS + 1 and all(c.endswith(" #960") for c in calls)
    llvm.parse_assembly(out).verify()


def test_a_function_with_branches_keeps_being_inlined() -> None:
    text = _module(INLINED_MATH_CALLS + 1).replace(
        '  ret double %".10"', '  br label %"end"\nend:\n  ret double %".10"'
    )
    out, made = add_math_variants(text, MATH_FUNCTION_PREFIX, lambda bits: 4)
    assert made == []
    assert 'define internal double @"tidu_math_abs_f64"(double %".1") alwaysinline' in out


def test_no_variants_without_simd() -> None:
    out, made = add_math_variants(_module(INLINED_MATH_CALLS + 1), MATH_FUNCTION_PREFIX,
                                  lambda bits: 1)  # fmt: skip
    assert made == [] and "alwaysinline" in out


# ---------------------------------------------------------------- real kernels

FUNCTIONS = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos}
CALLS = INLINED_MATH_CALLS + 1
_symbols = itertools.count()


def _kernel_source(name: str, fn: str, ftype: str, calls: int = CALLS) -> str:
    """``y[i] = sum_k fn(x[i] * (1 + k/16))`` for ``calls`` values of ``k``."""
    body = [f"    %v = memref.load %x[%i] : memref<?x{ftype}>",
            f"    %s0 = arith.constant 0.0 : {ftype}"]
    for k in range(calls):
        body += [
            f"    %c{k} = arith.constant {1 + k / 16} : {ftype}",
            f"    %a{k} = arith.mulf %v, %c{k} : {ftype}",
            f"    %m{k} = math.{fn} %a{k} : {ftype}",
            f"    %s{k + 1} = arith.addf %s{k}, %m{k} : {ftype}",
        ]
    body.append(f"    memref.store %s{calls}, %y[%i] : memref<?x{ftype}>")
    return "\n".join([
        f"func.func @{name}(%x: memref<?x{ftype}> {{llvm.noalias}}, "
        f"%y: memref<?x{ftype}> {{llvm.noalias}}, %n: index) {{",
        "  %lo = arith.constant 0 : index", "  %one = arith.constant 1 : index",
        "  scf.for %i = %lo to %n step %one {", *body, "  }", "  func.return", "}",
    ])  # fmt: skip


def _compiled(
    parse: Callable[[str], ModuleOp], ctx: Context, fn: str, ftype: str, calls: int = CALLS
) -> tuple[Callable[[np.ndarray], np.ndarray], str]:
    name = f"variant_{fn}_{ftype}_{next(_symbols)}"
    module = parse(_kernel_source(name, fn, ftype, calls))
    ExpandMathPolynomialsPass(only_in_loops=True, outline=True).apply(ctx, module)
    options = RunOptions(vector_math=False)
    opt = walk(lower_to_llvm_dialect(module), "llvm", "opt-ir", options)
    address = load(walk(opt, "opt-ir", "codegen", options), [name])[name]
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(address)

    def call(x: np.ndarray) -> np.ndarray:
        y = np.empty_like(x)
        kernel(x.ctypes.data, y.ctypes.data, x.size)
        return y

    return call, str(opt)


@pytest.mark.parametrize("ftype", ["f64", "f32"])
@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_every_expanded_function_runs_through_its_variant(
    parse: Callable[[str], ModuleOp], ctx: Context, monkeypatch: pytest.MonkeyPatch,
    fn: str, ftype: str,
) -> None:
    """The loop calls ``@tidu_math_<fn>_<type>_v<lanes>`` on the host's preferred width,
    and the values are numpy's and those of the same kernel with every call inlined."""
    dtype = np.float64 if ftype == "f64" else np.float32
    lanes = host_target().tuning.lanes(64 if ftype == "f64" else 32)
    x = np.random.default_rng(3).uniform(0.1, 3.0, 1003).astype(dtype)  # a scalar tail too
    called, opt = _compiled(parse, ctx, fn, ftype)
    if lanes > 1:
        ir_type = "double" if ftype == "f64" else "float"
        assert f"call <{lanes} x {ir_type}> @{MATH_FUNCTION_PREFIX}{fn}_{ftype}_v{lanes}(" in opt
    monkeypatch.setattr(math_variants, "INLINED_MATH_CALLS", CALLS)
    inlined, inlined_opt = _compiled(parse, ctx, fn, ftype)
    if fn not in GUARDED:  # sin and cos: always through their guard's variant
        assert f"{MATH_FUNCTION_PREFIX}{fn}_{ftype}_v" not in inlined_opt
    expected = sum(FUNCTIONS[fn](x.astype(np.float64) * (1 + k / 16)) for k in range(CALLS))
    rtol = 1e-13 if ftype == "f64" else 2e-5
    scale = CALLS * (1.0 if fn != "log" else 2.0)
    np.testing.assert_allclose(called(x), expected, rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(called(x), inlined(x), rtol=rtol, atol=rtol * scale)


def test_libmvec_calls_and_variants_share_one_used_list() -> None:
    """A module with both kinds of vector calls keeps one ``@llvm.compiler.used`` (two
    would be a redefinition LLVM refuses)."""
    text = _module(INLINED_MATH_CALLS + 1).replace(
        "  ret void",
        '  %"p" = call double @"llvm.pow.f64"(double 0x0, double 0x0)\n  ret void',
    ) + 'declare double @"llvm.pow.f64"(double %".1", double %".2")\n'
    out, _ = add_math_variants(text, MATH_FUNCTION_PREFIX, lambda bits: 256 // bits)
    out, declared = add_vector_variants(out, VectorMathABI("d", 4, 8))
    assert declared
    used = [line for line in out.splitlines() if line.startswith("@llvm.compiler.used")]
    assert len(used) == 1
    assert '"tidu_math_abs_f64_v4"' in used[0] and f'"{declared[0]}"' in used[0]
    llvm.parse_assembly(out).verify()


# ---------------------------------------------------------------- sin, cos past the range

SIN_MODULE = """\
define void @"kernel"(ptr %".1", i64 %".2")
{
entry:
  %"c" = call ccc double @"tidu_math_sin_f64"(double 0x0)
  ret void
}

define internal double @"tidu_math_sin_f64"(double %".1")
{
.3:
  %".4" = fmul double %".1", 0x3ff0000000000000
  ret double %".4"
}

declare double @"llvm.fabs.f64"(double %".1")
"""


def test_sin_is_called_through_its_guard_even_once() -> None:
    out, made = add_math_variants(SIN_MODULE, MATH_FUNCTION_PREFIX, lambda bits: 512 // bits)
    assert made == ["tidu_math_sin_f64_v8"]
    lines = out.splitlines()
    expected = [
        'define internal double @"tidu_math_sin_f64_poly"(double %".1") alwaysinline',
        'define internal double @"tidu_math_sin_f64"(double %x) noinline',
        "  %ok = fcmp ole double %a, 0x4328000000000000",  # 1.5 * 2^51
        '  %s = call double @"llvm.sin.f64"(double %x)',
        'define internal <8 x double> @"tidu_math_sin_f64_poly_v8"(<8 x double> %".1")',
        'define internal <8 x double> @"tidu_math_sin_f64_v8"(<8 x double> %x)',
        '  %all = call i1 @"llvm.vector.reduce.and.v8i1"(<8 x i1> %ok)',
        '  %s7 = call double @"tidu_math_sin_f64"(double %x7)',
        "  %r = phi <8 x double> [ %p, %entry ], [ %r7, %slow ]",
        'attributes #960 = { "vector-function-abi-variant"='
        '"_ZGV_LLVM_N8v_tidu_math_sin_f64(tidu_math_sin_f64_v8)" }',
    ]
    for line in expected:
        assert line in lines, line
    assert sum(line.startswith('declare double @"llvm.fabs.f64"') for line in lines) == 1
    llvm.parse_assembly(out).verify()


def test_without_simd_sin_still_has_its_guard() -> None:
    out, made = add_math_variants(SIN_MODULE, MATH_FUNCTION_PREFIX, lambda bits: 1)
    assert made == []
    assert 'define internal double @"tidu_math_sin_f64"(double %x) alwaysinline' in out
    llvm.parse_assembly(out).verify()


@pytest.mark.parametrize("calls", [1, CALLS])
@pytest.mark.parametrize("ftype", ["f64", "f32"])
@pytest.mark.parametrize("fn", sorted(GUARDED))
def test_sin_and_cos_of_large_arguments_are_libms(
    parse: Callable[[str], ModuleOp], ctx: Context, fn: str, ftype: str, calls: int
) -> None:
    """Past the polynomial's range (f64 1.5*2^51, f32 1.5*2^22) numpy's values, not NaN;
    NaN only for inf and NaN; lanes in range and out of range mixed in one vector."""
    dtype = np.float64 if ftype == "f64" else np.float32
    big = [1e16, -3e300, 2.0**60, 1e20] if ftype == "f64" else [1e7, -3e38, 2.0**40, 7e6]
    x = np.array([0.5, -2.0, 1e3, 0.0, -0.0, np.inf, -np.inf, np.nan, *big, 3.0, 1e-5] * 37,
                 dtype=dtype)  # fmt: skip
    kernel, _ = _compiled(parse, ctx, fn, ftype, calls)
    with np.errstate(invalid="ignore"):
        expected = sum(FUNCTIONS[fn]((x * dtype(1 + k / 16)).astype(np.float64))
                       for k in range(calls))  # fmt: skip
    got = kernel(x)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    rtol = 1e-13 if ftype == "f64" else 1e-5
    finite = ~np.isnan(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=rtol, atol=rtol * calls)

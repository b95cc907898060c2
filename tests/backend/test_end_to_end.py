"""Kernels in func/scf/memref/arith/math, lowered, compiled, loaded and called.

Each kernel runs with vector math off (scalar libm) and, where the host has it,
on (glibc libmvec), and is compared with numpy.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from tidu_compile.backend.jit import CompiledObject, load
from tidu_compile.backend.target import vector_math_abi
from tidu_compile.compiler.stages import RunOptions, lower_to_llvm_dialect, walk

_counter = itertools.count()

KERNELS = Path(__file__).parent / "kernels"


def read_kernel(name: str) -> str:
    return (KERNELS / f"{name}.mlir").read_text()


VECTOR_MODES = [False, pytest.param(True, marks=pytest.mark.skipif(
    vector_math_abi() is None, reason="no libmvec / AVX2 on this host"))]


def jit(
    parse: Callable[[str], ModuleOp], source: str, name: str, n_args: int, *,
    vector_math: bool = False,
) -> tuple[Callable[..., None], CompiledObject]:
    """Compile ``@name`` under a fresh symbol: a void(ptr..., i64) caller and the object."""
    symbol = f"{name}_{next(_counter)}"
    module = lower_to_llvm_dialect(parse(source.replace(f"@{name}(", f"@{symbol}(")))
    obj = walk(module, "llvm", "codegen", RunOptions(vector_math=vector_math))
    if not vector_math:
        assert not obj.vector_math
    address = load(obj, [symbol])[symbol]
    prototype = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (n_args - 1), ctypes.c_int64)
    kernel = prototype(address)

    def call(*arrays: np.ndarray) -> None:
        assert all(a.flags.c_contiguous for a in arrays)
        kernel(*(a.ctypes.data for a in arrays), arrays[0].size)

    return call, obj


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float,
                 scale: np.ndarray | None = None) -> None:
    """``|a - e| <= rtol * (|e| + scale)``: ``scale`` bounds the terms of a difference."""
    bound = rtol * (np.abs(expected) + (0 if scale is None else scale))
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(actual - expected) <= bound) & ~(np.isnan(actual) & np.isnan(expected))
    bad &= ~(actual == expected)  # equal infinities
    assert not bad.any(), f"{bad.sum()} mismatches, first at {np.argmax(bad)}: " \
        f"{actual[bad][:5]} vs {expected[bad][:5]}"


W1 = read_kernel("w1")


@pytest.mark.parametrize("vector_math", VECTOR_MODES)
def test_w1_backward_matches_numpy(parse: Callable[[str], ModuleOp], vector_math: bool) -> None:
    kernel, obj = jit(parse, W1, "w1", 5, vector_math=vector_math)
    assert obj.vector_math == vector_math  # the loop vectorizes through libmvec
    rng = np.random.default_rng(0)
    n = 1003  # not a multiple of the vector width: the scalar tail runs too
    # |x|, |y| < 0.5 keeps 1 - t*t away from 0, where one ulp of tanh is amplified.
    x, y = rng.uniform(-0.5, 0.5, n), rng.uniform(-0.5, 0.5, n)
    dx, dy = np.empty(n), np.empty(n)
    kernel(x, y, dx, dy)
    e = np.exp(-x)
    t = np.tanh(x * y + e)
    ds = y * (1 - t * t)
    assert_close(dx, ds * y - ds * e, 1e-12, scale=np.abs(ds * y) + np.abs(ds * e))
    assert_close(dy, ds * x + t, 1e-12, scale=np.abs(ds * x) + np.abs(t))


COLSUM = read_kernel("colsum")


@pytest.mark.parametrize("vector_math", VECTOR_MODES)
def test_broadcast_column_reduction(parse: Callable[[str], ModuleOp], vector_math: bool) -> None:
    kernel, _ = jit(parse, COLSUM, "colsum", 4, vector_math=vector_math)
    rng = np.random.default_rng(1)
    X, b, s = rng.standard_normal((64, 32)), rng.standard_normal(32), np.empty(32)
    kernel(X, b, s)
    t = np.tanh(X + b)
    assert_close(s, t.sum(axis=0), 1e-12, scale=np.abs(t).sum(axis=0))


F32 = read_kernel("f32k")


@pytest.mark.parametrize("vector_math", VECTOR_MODES)
def test_f32_kernel(parse: Callable[[str], ModuleOp], vector_math: bool) -> None:
    kernel, _ = jit(parse, F32, "f32k", 3, vector_math=vector_math)
    x = np.random.default_rng(2).uniform(-4, 4, 517).astype(np.float32)
    out = np.empty_like(x)
    kernel(x, out)
    v = x.astype(np.float64)
    terms = [np.exp(-v * v) * np.sin(v), np.cos(v) * np.tanh(v), np.log(np.abs(v) + 1)]
    expected = terms[0] + terms[1] - terms[2]
    assert_close(out.astype(np.float64), expected, 1e-5, scale=sum(np.abs(t) for t in terms))


EDGE = read_kernel("edge")

EDGE_VALUES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 709.78, 709.79, -745.0,
               -746.0, 1e10, -1e10, 1e300, 5e-324, 1e-300, 20.0, -20.0, 3.0, 1e5, 2.2e-16]


@pytest.mark.parametrize("vector_math", VECTOR_MODES)
def test_transcendentals_at_edge_values(
    parse: Callable[[str], ModuleOp], vector_math: bool
) -> None:
    kernel, _ = jit(parse, EDGE, "edge", 7, vector_math=vector_math)
    # 3 copies: every value passes through the vector body and the scalar tail.
    x = np.array(EDGE_VALUES * 3 + EDGE_VALUES[:5])
    outs = [np.empty_like(x) for _ in range(5)]
    with np.errstate(all="ignore"):
        kernel(x, *outs)
        references = [np.exp(x), np.log(x), np.sin(x), np.cos(x), np.tanh(x)]
    for name, got, want in zip(["exp", "log", "sin", "cos", "tanh"], outs, references,
                               strict=True):
        assert_close(got, want, 1e-12), name
        np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


MISC = read_kernel("misc")


def test_nan_propagating_minmax_casts_and_selects(parse: Callable[[str], ModuleOp]) -> None:
    kernel, _ = jit(parse, MISC, "misc", 7)
    a = np.array([1.0, -2.5, np.nan, 3.0, 0.0, -0.0, np.inf, 7.9, -7.9, 1e3] * 2)
    b = np.array([2.0, -3.5, 1.0, np.nan, -0.0, 0.0, -np.inf, 7.9, 8.0, -1e3] * 2)
    mx, mn, tr, ab = (np.empty_like(a) for _ in range(4))
    kernel(a, b, mx, mn, tr, ab)
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(mn, np.minimum(a, b))
    # IEEE 754-2019 maximum/minimum order -0 < +0 (numpy returns either zero).
    zeros = (a == 0) & (b == 0)
    assert not np.signbit(mx[zeros]).any() and np.signbit(mn[zeros]).all()
    finite = np.isfinite(a)
    np.testing.assert_array_equal(tr[finite], np.trunc(a[finite]))
    np.testing.assert_array_equal(tr[np.isnan(a)], 0.0)  # fptosi.sat: NaN -> 0
    np.testing.assert_array_equal(tr[a == np.inf], 2.0**31 - 1)  # saturates
    np.testing.assert_array_equal(ab, np.abs(a))

"""Helpers for the mathpoly tests and the throughput script.

``compile_unary(op, dtype)`` builds ``y[i] = math.<op>(x[i])`` over a dynamic 1-D
memref, runs ``expand-math-polynomials`` (unless ``expand=False``), lowers, compiles,
loads and returns a numpy-level callable. ``reference`` gives the exact value in a
wider type (long double for f64: glibc's 64-bit-mantissa ``expl`` and friends; f64
for f32), ``ulp_error`` the error in units in the last place of the result format.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable

import numpy as np
from tidu_compile.passes.expand_math_polynomials import ExpandMathPolynomialsPass
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tidu_compile.backend.jit import load
from tidu_compile.compiler.stages import RunOptions, lower_to_llvm_dialect, walk

OPS = ("exp", "log", "tanh", "sin", "cos")
DTYPES = {"f64": np.float64, "f32": np.float32}
_counter = itertools.count()


def make_context() -> Context:
    ctx = Context(allow_unregistered=False)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


_CTX = make_context()


def kernel_source(op: str, dtype: str, name: str) -> str:
    return f"""
func.func @{name}(%x: memref<?x{dtype}>, %y: memref<?x{dtype}>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {{
    %v = memref.load %x[%i] : memref<?x{dtype}>
    %r = math.{op} %v : {dtype}
    memref.store %r, %y[%i] : memref<?x{dtype}>
  }}
  func.return
}}
"""


def parse(text: str) -> ModuleOp:
    return Parser(_CTX, text).parse_module()


def expanded_kernel(op: str, dtype: str, name: str = "k") -> ModuleOp:
    module = parse(kernel_source(op, dtype, name))
    ExpandMathPolynomialsPass().apply(_CTX, module)
    module.verify()
    return module


def lowered_kernel(op: str, dtype: str, name: str = "k", expand: bool = True) -> ModuleOp:
    module = expanded_kernel(op, dtype, name) if expand else parse(
        kernel_source(op, dtype, name))
    return lower_to_llvm_dialect(module)


def optimized_ir(op: str, dtype: str) -> str:
    return str(walk(lowered_kernel(op, dtype), "llvm", "opt-ir", RunOptions(vector_math=False)))

def compile_unary(op: str, dtype: str, *, expand: bool = True,
                  vector_math: bool | None = False) -> Callable[..., np.ndarray]:
    """``f(x, out=None) -> y``: the compiled kernel on a contiguous 1-D array."""
    symbol = f"mathpoly_{op}_{dtype}_{next(_counter)}"
    obj = walk(lowered_kernel(op, dtype, symbol, expand), "llvm", "codegen",
               RunOptions(vector_math=vector_math))
    address = load(obj, [symbol])[symbol]
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    kernel = proto(address)
    np_type = DTYPES[dtype]

    def call(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np_type)
        y = np.empty_like(x) if out is None else out
        kernel(x.ctypes.data, y.ctypes.data, x.size)
        return y

    return call


_LONG = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos}


def reference(op: str, x: np.ndarray) -> np.ndarray:
    """The function in a wider type: long double for f64 input, f64 for f32 input."""
    wide = np.longdouble if x.dtype == np.float64 else np.float64
    with np.errstate(all="ignore"):
        return _LONG[op](x.astype(wide))


def ulp_error(actual: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|actual - exact| in ulps of the correctly rounded result (spacing of its binade).

    Equal values (infinities included) and NaN/NaN give 0; NaN against a number
    gives inf.
    """
    with np.errstate(all="ignore"):
        rounded = exact.astype(actual.dtype)
        spacing = np.spacing(np.abs(rounded)).astype(exact.dtype)
        err = np.abs(actual.astype(exact.dtype) - exact) / spacing
    both_nan = np.isnan(actual) & np.isnan(exact)
    same = (actual == rounded) | both_nan
    err = np.where(same, 0.0, err)
    return np.where(np.isnan(err), np.inf, err).astype(np.float64)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer ulp distance between two arrays of one float type (ordered bit views)."""
    itype = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = a.view(itype).astype(np.int64), b.view(itype).astype(np.int64)
    mask = np.int64(np.iinfo(itype).max)
    ia = np.where(ia < 0, -(ia & mask), ia)
    ib = np.where(ib < 0, -(ib & mask), ib)
    return np.abs(ia - ib)

"""tidu @node IR -> canonicalize, cse, dce -> tidu-fuse-elementwise -> tidu-lower-to-loops
-> extract_kernel_module -> lower_to_llvm_dialect -> JIT -> run on numpy buffers.

Each program runs through ``run_node`` (the @node form the lowering documents: kernels
called through ctypes, other tidu ops through numpy) and is compared with numpy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from tidu_compile.dialects.tidu import KernelOp
from tidu_compile.passes.tidu_lower_to_loops import KERNEL_ATTR, kernel_symbol
from tidu_pass_support import compile_kernels, parse_module, run_node, run_pipeline
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

DTYPES = {"f32": np.float32, "f64": np.float64}
RTOL = {"f32": 2e-5, "f64": 1e-12}


def compile_node(
    ctx: Context, text: str, fuse: str = "tidu-fuse-elementwise"
) -> tuple[ModuleOp, dict[str, Callable[..., None]], int]:
    """Lower ``text`` to loops; returns the module, its JIT kernels and the kernel count."""
    module = run_pipeline(ctx, parse_module(ctx, text), "canonicalize,cse,dce")
    run_pipeline(ctx, module, fuse)
    kernels = sum(isinstance(op, KernelOp) for op in module.walk())
    run_pipeline(ctx, module, "tidu-lower-to-loops")
    assert not any(isinstance(op, KernelOp) for op in module.walk())
    outlined = [op for op in module.ops if isinstance(op, func.FuncOp)
                and KERNEL_ATTR in op.attributes]
    assert [op.sym_name.data for op in outlined] == [
        kernel_symbol("node", i) for i in range(kernels)
    ]
    return module, compile_kernels(module), kernels


def close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float = 0.0) -> None:
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


W1 = """
func.func @node(%g: tensor<T>, %x: tensor<NxT>, %y: tensor<NxT>) -> (tensor<NxT>, tensor<NxT>) {
  %a = tidu.neg %x : tensor<NxT>
  %e = tidu.exp %a : tensor<NxT>
  %p = tidu.mul %x, %y : tensor<NxT>
  %s = tidu.add %p, %e : tensor<NxT>
  %t = tidu.tanh %s : tensor<NxT>
  %gq = tidu.broadcast_in_dim %g, dims = [] : tensor<T> -> tensor<NxT>
  %gt = tidu.mul %gq, %y : tensor<NxT>
  %gy1 = tidu.mul %gq, %t : tensor<NxT>
  %tt = tidu.mul %t, %t : tensor<NxT>
  %ntt = tidu.neg %tt : tensor<NxT>
  %om = tidu.shift %ntt, 1.000000e+00 : tensor<NxT>
  %one = tidu.full_like %om, 1.000000e+00 : tensor<NxT>
  %om1 = tidu.mul %om, %one : tensor<NxT>
  %gs = tidu.mul %gt, %om1 : tensor<NxT>
  %ga = tidu.mul %gs, %e : tensor<NxT>
  %gx1 = tidu.neg %ga : tensor<NxT>
  %gx2 = tidu.mul %gs, %y : tensor<NxT>
  %gy2 = tidu.mul %gs, %x : tensor<NxT>
  %gx = tidu.add %gx1, %gx2 : tensor<NxT>
  %gy = tidu.add %gy1, %gy2 : tensor<NxT>
  func.return %gx, %gy : tensor<NxT>, tensor<NxT>
}
"""


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_w1_backward(ctx: Context, dtype: str) -> None:
    n = 1027
    module, kernels, count = compile_node(ctx, W1.replace("N", str(n)).replace("T", dtype))
    assert count == 1
    rng = np.random.default_rng(0)
    np_type = DTYPES[dtype]
    g = np.asarray(0.75, dtype=np_type)
    x, y = (rng.normal(size=n).astype(np_type) for _ in range(2))
    gx, gy = run_node(module, kernels, [g, x, y])
    e = np.exp(-x)
    t = np.tanh(x * y + e)
    ds = g * y * (1 - t * t)
    close(gx, ds * y - ds * e, rtol=RTOL[dtype] * 10, atol=RTOL[dtype])
    close(gy, ds * x + g * t, rtol=RTOL[dtype] * 10, atol=RTOL[dtype])


BROADCAST_REDUCE = """
func.func @node(%x: tensor<37x129xT>, %v: tensor<129xT>)
    -> (tensor<37x129xT>, tensor<129xT>, tensor<T>) {
  %b = tidu.broadcast_in_dim %v, dims = [1] : tensor<129xT> -> tensor<37x129xT>
  %p = tidu.mul %x, %b : tensor<37x129xT>
  %q = tidu.sin %p : tensor<37x129xT>
  %c = tidu.reduce_sum %q, axes = [0] : tensor<37x129xT> -> tensor<129xT>
  %f = tidu.reduce_sum %p, axes = [0, 1] : tensor<37x129xT> -> tensor<T>
  func.return %q, %c, %f : tensor<37x129xT>, tensor<129xT>, tensor<T>
}
"""


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_row_broadcast_column_and_full_reduction(ctx: Context, dtype: str) -> None:
    module, kernels, count = compile_node(ctx, BROADCAST_REDUCE.replace("T", dtype))
    assert count == 1
    rng = np.random.default_rng(1)
    np_type = DTYPES[dtype]
    x = rng.normal(size=(37, 129)).astype(np_type)
    v = rng.normal(size=129).astype(np_type)
    q, c, f = run_node(module, kernels, [x, v])
    p = x * v
    # Sums are accumulated in order, numpy sums pairwise: bound by the sum of |terms|.
    close(q, np.sin(p), rtol=RTOL[dtype], atol=RTOL[dtype])
    close(c, np.sin(p).sum(axis=0), rtol=0, atol=RTOL[dtype] * 10 * np.abs(q).sum(0).max())
    close(f, np.asarray(p.sum(), dtype=np_type), rtol=0, atol=RTOL[dtype] * 10 * np.abs(p).sum())


DOT_CUT = """
func.func @node(%x: tensor<16x32xf64>, %w: tensor<32x8xf64>, %b: tensor<8xf64>)
    -> (tensor<16x8xf64>, tensor<f64>) {
  %h = tidu.tanh %x : tensor<16x32xf64>
  %h2 = tidu.scale %h, 2.000000e+00 : tensor<16x32xf64>
  %d = tidu.dot_general %h2, %w, batch = [] x [], contracting = [1] x [0]
    : tensor<16x32xf64>, tensor<32x8xf64> -> tensor<16x8xf64>
  %bb = tidu.broadcast_in_dim %b, dims = [1] : tensor<8xf64> -> tensor<16x8xf64>
  %o = tidu.add %d, %bb : tensor<16x8xf64>
  %r = tidu.exp %o : tensor<16x8xf64>
  %s = tidu.reduce_sum %h, axes = [0, 1] : tensor<16x32xf64> -> tensor<f64>
  func.return %r, %s : tensor<16x8xf64>, tensor<f64>
}
"""


def test_chain_cut_by_dot_general(ctx: Context) -> None:
    module, kernels, count = compile_node(ctx, DOT_CUT)
    assert count == 2
    rng = np.random.default_rng(2)
    x = rng.normal(size=(16, 32))
    w = rng.normal(size=(32, 8)) * 0.1
    b = rng.normal(size=8)
    r, s = run_node(module, kernels, [x, w, b])
    close(r, np.exp(2 * np.tanh(x) @ w + b), rtol=1e-12)
    close(s, np.asarray(np.tanh(x).sum()), rtol=1e-12)


MASKS = """
func.func @node(%x: tensor<3x5xf64>, %y: tensor<3x5xf64>, %m: tensor<3x5xi1>)
    -> (tensor<3x5xi1>, tensor<3x5xf64>, tensor<3x5xf32>) {
  %c = tidu.compare le, %x, %y : tensor<3x5xf64>
  %s = tidu.select %m, %x, %y : tensor<3x5xf64>
  %mx = tidu.maximum %s, %y : tensor<3x5xf64>
  %mf = tidu.convert %m : tensor<3x5xi1> -> tensor<3x5xf64>
  %r = tidu.add %mx, %mf : tensor<3x5xf64>
  %p = tidu.pow %r, 3.000000e+00 : tensor<3x5xf64>
  %q = tidu.pow %r, -2.000000e+00 : tensor<3x5xf64>
  %h = tidu.pow %mf, 5.000000e-01 : tensor<3x5xf64>
  %u = tidu.add %p, %q : tensor<3x5xf64>
  %v = tidu.add %u, %h : tensor<3x5xf64>
  %f = tidu.convert %v : tensor<3x5xf64> -> tensor<3x5xf32>
  func.return %c, %v, %f : tensor<3x5xi1>, tensor<3x5xf64>, tensor<3x5xf32>
}
"""


def test_masks_select_pow_convert(ctx: Context) -> None:
    module, kernels, count = compile_node(ctx, MASKS)
    assert count == 1
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(2, 3, 5))
    y[0, 0] = x[0, 0]
    m = rng.normal(size=(3, 5)) > 0
    c, v, f = run_node(module, kernels, [x, y, m])
    assert c.dtype == np.bool_
    np.testing.assert_array_equal(c, x <= y)
    r = np.maximum(np.where(m, x, y), y) + m
    expected = r**3 + r**-2.0 + np.sqrt(m.astype(np.float64))
    close(v, expected, rtol=1e-13)
    close(f, expected.astype(np.float32), rtol=1e-6)


SCALAR = """
func.func @node(%g: tensor<f64>, %x: tensor<f64>) -> tensor<f64> {
  %c = tidu.cos %x : tensor<f64>
  %l = tidu.log %g : tensor<f64>
  %r = tidu.div %l, %c : tensor<f64>
  func.return %r : tensor<f64>
}
"""


def test_zero_dimensional_kernel(ctx: Context) -> None:
    module, kernels, count = compile_node(ctx, SCALAR)
    assert count == 1
    (r,) = run_node(module, kernels, [np.asarray(2.5), np.asarray(0.3)])
    close(r, np.asarray(np.log(2.5) / np.cos(0.3)), rtol=1e-14)


COMPLEX = """
func.func @node(%z: tensor<4x3xcomplex<T>>, %w: tensor<3xcomplex<T>>, %x: tensor<4x3xT>)
    -> (tensor<4x3xcomplex<T>>, tensor<3xcomplex<T>>, tensor<4x3xT>, tensor<4x3xi1>) {
  %c = tidu.conj %z : tensor<4x3xcomplex<T>>
  %b = tidu.broadcast_in_dim %w, dims = [1] : tensor<3xcomplex<T>> -> tensor<4x3xcomplex<T>>
  %m = tidu.mul %c, %b : tensor<4x3xcomplex<T>>
  %d = tidu.div %m, %z : tensor<4x3xcomplex<T>>
  %e = tidu.exp %d : tensor<4x3xcomplex<T>>
  %s = tidu.scale %e, (0.000000e+00, 2.000000e+00) : tensor<4x3xcomplex<T>>
  %xc = tidu.to_complex %x imaginary : tensor<4x3xT>
  %t = tidu.add %s, %xc : tensor<4x3xcomplex<T>>
  %r = tidu.reduce_sum %t, axes = [0] : tensor<4x3xcomplex<T>> -> tensor<3xcomplex<T>>
  %re = tidu.real %t : tensor<4x3xcomplex<T>>
  %im = tidu.imag %t : tensor<4x3xcomplex<T>>
  %sum = tidu.sub %re, %im : tensor<4x3xT>
  %ne = tidu.compare ne, %t, %s : tensor<4x3xcomplex<T>>
  %sh = tidu.shift %t, 1.500000e+00 : tensor<4x3xcomplex<T>>
  %sel = tidu.select %ne, %sh, %z : tensor<4x3xcomplex<T>>
  func.return %sel, %r, %sum, %ne
    : tensor<4x3xcomplex<T>>, tensor<3xcomplex<T>>, tensor<4x3xT>, tensor<4x3xi1>
}
"""


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("complex_kernels", [True, False])
def test_complex_kernel(ctx: Context, dtype: str, complex_kernels: bool) -> None:
    fuse = f"tidu-fuse-elementwise{{complex_kernels={str(complex_kernels).lower()}}}"
    module, kernels, count = compile_node(ctx, COMPLEX.replace("T", dtype), fuse)
    assert count == 1  # everything, or (complex ops as library calls) the real tidu.sub
    rng = np.random.default_rng(4)
    real = DTYPES[dtype]
    cplx = np.complex64 if dtype == "f32" else np.complex128
    z = (rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))).astype(cplx)
    w = (rng.normal(size=3) + 1j * rng.normal(size=3)).astype(cplx)
    x = rng.normal(size=(4, 3)).astype(real)
    x[0, 0] = 0.0  # t == s there: compare ne is false
    sel, r, diff, ne = run_node(module, kernels, [z, w, x])
    s = np.exp(np.conj(z) * w / z) * 2j
    t = s + 1j * x
    tol = RTOL[dtype] * 10
    np.testing.assert_array_equal(ne, t != s)
    assert not ne[0, 0]
    close(sel, np.where(t != s, t + 1.5, z).astype(cplx), rtol=tol, atol=tol)
    close(r, t.sum(axis=0).astype(cplx), rtol=tol, atol=tol)
    close(diff, (t.real - t.imag).astype(real), rtol=tol, atol=tol)

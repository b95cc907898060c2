"""LAPACK from native code (``passes/tidu_lower_linalg.py``, ``backend/lapack_symbols.py``).

Under the ``CompiledExecutor`` the real ``cholesky``, ``triangular_solve``, ``solve``,
``slogdet``, ``eigh``, ``qr`` and ``svd`` (and the complex ``qr``) are kernels calling
scipy's routines, not library steps: a GP likelihood under ``@tc.function`` runs as
native kernels only (contractions and layout changes aside), every op and flag agrees
with the reference executor in value and gradient, and a matrix that is not positive definite or is
singular raises the library path's ``LinAlgError``. The object code names the routines
(``tidu_lapack_lp64_*``), never their addresses, so a disk cache is shared by processes.
"""

from __future__ import annotations

import ctypes
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy
from tidu_compile.passes import lapack_kernels, lapack_solves
from xdsl.parser import Parser

import tidu_compile as tc
import tidu_compile.numpy as tnp
import tidu_compile.scipy.linalg as tsl
from tidu_compile import ops
from tidu_compile.backend import lapack_symbols
from tidu_compile.compiler.plan import KernelStep, LibraryStep
from tidu_compile.compiler.stages import RunOptions, tidu_context, walk
from tidu_compile.executors.compiled import CompiledExecutor

NATIVE_OPS = (ops.Cholesky, ops.TriangularSolve, ops.Solve, ops.Slogdet, ops.Eigh, ops.Qr, ops.Svd)


def _plans(executor: CompiledExecutor) -> list[Any]:
    """The plans the executor ran: ``@tc.function`` graphs' and backward nodes'."""
    graphs = [p.plan for p in executor._graph_plans.values() if hasattr(p, "plan")]  # noqa: SLF001
    nodes = [compiled.plan.plan
             for entry in executor._entries_by_linear.values()  # noqa: SLF001
             for compiled in entry.plans.values()]  # fmt: skip
    return graphs + nodes


def _gp(x: Any, y: Any, log_scale: Any, log_noise: Any) -> Any:
    """W7's GP negative log likelihood, with ``slogdet`` and ``solve`` beside the factor."""
    n = x.shape[0]
    squared = tnp.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    kernel = tnp.exp(-0.5 * squared / tnp.exp(2 * log_scale)) + tnp.exp(log_noise) * np.eye(n)
    factor = tnp.linalg.cholesky(kernel)
    alpha = tsl.cho_solve((factor, True), y)
    _, logdet = tnp.linalg.slogdet(kernel)
    beta = tnp.linalg.solve(kernel, y)
    return 0.25 * tnp.sum(y * (alpha + beta)) + tnp.sum(tnp.log(tnp.diagonal(factor))) + 0 * logdet


def _run(executor: tc.BackwardExecutor, function: Any, args: list[np.ndarray],
         wrt: tuple[int, ...]) -> tuple[np.ndarray, list[np.ndarray]]:  # fmt: skip
    with tc.use_executor(executor):
        tensors = [tc.tensor(a, requires_grad=i in wrt) for i, a in enumerate(args)]
        value = function(*tensors)
        grads = tc.grad(value, [tensors[i] for i in wrt])
    return np.asarray(value.numpy()), [np.asarray(g) for g in grads]


Run = tuple[np.ndarray, list[np.ndarray]]


def _compiled_and_reference(
    function: Any, args: list[np.ndarray], wrt: tuple[int, ...], joint_forward: bool = True
) -> tuple[CompiledExecutor, Run, Run]:
    """A fresh ``CompiledExecutor``, the value and gradients of ``tc.function(function)``
    on it (traced, then replayed: the second call's), and the reference executor's."""
    compiled = CompiledExecutor(False, background=False, joint_forward=joint_forward)
    traced = tc.function(function)
    for _ in range(2):
        got = _run(compiled, traced, args, wrt)
    return compiled, got, _run(tc.ReferenceExecutor(), function, args, wrt)


def test_gp_likelihood_runs_the_factorisations_natively() -> None:
    rng = np.random.default_rng(0)
    args = [rng.uniform(-2, 2, (10, 2)), rng.standard_normal(10), np.array(0.2), np.array(-1.5)]
    compiled, (value, grads), (expected, expected_grads) = _compiled_and_reference(
        _gp, args, (0, 2, 3))  # fmt: skip
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    for got, want in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert compiled.stats.fallbacks == 0 and not compiled.stats.errors, compiled.stats.errors
    steps = [step for plan in _plans(compiled) for step in plan.steps]
    library = [type(s.op).__name__ for s in steps if isinstance(s, LibraryStep)
               and isinstance(s.op, NATIVE_OPS)]  # fmt: skip
    assert library == []
    errors = {s.status_error for s in steps if isinstance(s, KernelStep) and s.status_error}
    assert errors == {ops.Cholesky.status_error, ops.TriangularSolve.status_error,
                      ops.Solve.status_error}  # fmt: skip
    # between the LAPACK kernels: the triangles, transposes and outer products fused,
    # the factor's products with the cotangents trmm kernels
    between = {type(s.op).__name__ for s in steps if isinstance(s, LibraryStep)}
    assert between <= {"Reshape"}, between


def _factor_products(a: Any, x: Any, w: Any) -> Any:
    factor = tnp.linalg.cholesky(a)
    return tnp.sum(w * (factor.T @ x)) + tnp.sum(w * (factor @ x))


@pytest.mark.parametrize(("dtype", "rtol"), [("float64", 1e-12), ("float32", 1e-4)])
def test_products_with_a_cholesky_factor_run_as_trmm(dtype: str, rtol: float) -> None:
    rng = np.random.default_rng(3)
    m = rng.standard_normal((6, 6))
    args = [(m @ m.T + 6 * np.eye(6)).astype(dtype), rng.standard_normal((6, 4)).astype(dtype),
            rng.standard_normal((6, 4)).astype(dtype)]  # fmt: skip
    # the forward program alone: a joint one holds the backward's outer products too
    compiled, (value, grads), (expected, expected_grads) = _compiled_and_reference(
        _factor_products, args, (0, 1), joint_forward=False)  # fmt: skip
    np.testing.assert_allclose(value, expected, rtol=rtol)
    for got, want in zip(grads, expected_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    forward = [p.plan for p in compiled._graph_plans.values() if hasattr(p, "plan")]  # noqa: SLF001
    steps = [step for plan in forward for step in plan.steps]
    assert steps and not [s for s in steps if isinstance(s, LibraryStep)
                          and isinstance(s.op, ops.DotGeneral)]  # fmt: skip
    assert compiled.stats.fallbacks == 0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("n", "batch"), [(150, ()), (130, (2,))])
def test_a_large_triangular_solve_is_blocked_and_agrees_with_scipy(
    n: int, batch: tuple[int, ...], dtype: str
) -> None:
    """Past ``SOLVE_BLOCK`` a solve is trsm on diagonal blocks and gemm updates: every
    flag (lower/upper, transposed, unit diagonal), uneven halves, a batch."""
    assert n > 2 * lapack_solves.SOLVE_BLOCK
    rng = np.random.default_rng(5)
    lower = np.tril(rng.standard_normal((*batch, n, n))) + 4 * np.eye(n)
    rhs = rng.standard_normal((*batch, n, 5))
    flags = [(up, trans, unit)
             for up in (False, True) for trans in (0, 1) for unit in (False, True)]  # fmt: skip

    def solves(a: Any, b: Any) -> Any:
        return [tsl.solve_triangular(tnp.swapaxes(a, -1, -2) if up else a, b, lower=not up,
                                     trans=trans, unit_diagonal=unit)
                for up, trans, unit in flags]  # fmt: skip

    compiled = CompiledExecutor(False, background=False)
    traced = tc.function(solves)
    with tc.use_executor(compiled):
        for _ in range(2):  # traced, then replayed as one program (compiled: it records)
            got = traced(tc.tensor(lower.astype(dtype), requires_grad=True),
                         tc.tensor(rhs.astype(dtype)))  # fmt: skip
    assert compiled.stats.compiles > 0
    tolerance = 1e-10 if dtype == "float64" else 2e-3
    for (up, trans, unit), value in zip(flags, got, strict=True):
        matrix = np.swapaxes(lower, -1, -2) if up else lower
        for index in np.ndindex(*batch):
            want = scipy.linalg.solve_triangular(matrix[index], rhs[index], lower=not up,
                                                 trans=trans, unit_diagonal=unit)  # fmt: skip
            np.testing.assert_allclose(value.detach().numpy()[index], want, rtol=tolerance,
                                       atol=tolerance, err_msg=f"{up} {trans} {unit}")  # fmt: skip
    steps = [s for plan in _plans(compiled) for s in plan.steps]
    assert not [s for s in steps if isinstance(s, LibraryStep)
                and isinstance(s.op, ops.TriangularSolve)]  # fmt: skip


def _single(a: Any, spd: Any, lower: Any, b: Any, batch: Any) -> Any:
    """The s* routines: each native op once, and their derivatives."""
    terms = [
        tsl.solve_triangular(lower, b, lower=True),
        tnp.linalg.solve(a, b),
        tnp.linalg.cholesky(spd) @ b,
        tnp.sum(tnp.linalg.slogdet(batch)[1]) * b,
        tnp.linalg.eigh(spd)[1] @ b,
        *tnp.linalg.qr(b),
        *tnp.linalg.svd(b, full_matrices=False),
    ]
    return sum(tnp.sum(t * t) for t in terms)


def _solves(a: Any, spd: Any, lower: Any, b: Any, batch: Any) -> Any:
    """Each solve with each of its flags, and their derivatives (transposed solves)."""
    terms = [
        tsl.solve_triangular(lower, b, lower=True),
        tsl.solve_triangular(tnp.transpose(lower), b, lower=False, trans=1),
        tsl.solve_triangular(lower, b, lower=True, unit_diagonal=True),
        # one right-hand side (trsv), with each flag
        tsl.solve_triangular(lower, b[:, 0], lower=True),
        tsl.solve_triangular(lower, b[:, 1], lower=True, trans=1),
        tsl.solve_triangular(tnp.transpose(lower), b[:, 2], lower=False),
        tsl.solve_triangular(tnp.transpose(lower), b[:, 0], lower=False, trans=1),
        tsl.solve_triangular(lower, b[:, 1], lower=True, unit_diagonal=True),
        tnp.linalg.solve(a, b),
        tnp.linalg.inv(a) @ b,
        tnp.linalg.det(a) * b,
        tnp.linalg.cholesky(spd) @ b,
        tnp.sum(tnp.linalg.slogdet(batch)[1]) * b,
        tnp.sum(tnp.linalg.cholesky(batch @ tnp.swapaxes(batch, -1, -2))) * b,
    ]
    return sum(tnp.sum(t * t) for t in terms)


def _decompositions(a: Any, spd: Any, lower: Any, b: Any, batch: Any) -> Any:
    """eigh, qr and svd: square, tall, wide and batched, and their derivatives."""
    terms = [
        tnp.linalg.eigh(spd)[0],
        tnp.linalg.eigh(spd)[1] @ b,
        tnp.linalg.eigh(batch @ tnp.swapaxes(batch, -1, -2))[1],
        *tnp.linalg.qr(b),
        *tnp.linalg.qr(batch),
        *tnp.linalg.qr(lower),
        *tnp.linalg.svd(a),
        *tnp.linalg.svd(b, full_matrices=False),
        *tnp.linalg.svd(tnp.transpose(b), full_matrices=False),
    ]
    return sum(tnp.sum(t * t) for t in terms)


@pytest.mark.parametrize(("program", "dtype", "rtol"),
                         [(_solves, "float64", 1e-9), (_decompositions, "float64", 1e-9),
                          (_single, "float32", 2e-3)],
                         ids=["solves-float64", "decompositions-float64", "float32"])  # fmt: skip
def test_every_flag_agrees_with_the_reference(program: Any, dtype: str, rtol: float) -> None:
    rng = np.random.default_rng(1)
    n = 4
    x = rng.standard_normal((n, n))
    args = [
        x + n * np.eye(n),
        x @ x.T + n * np.eye(n),
        np.tril(x) + n * np.eye(n),
        rng.standard_normal((n, 3)),
        rng.standard_normal((2, n, n)) + n * np.eye(n),
    ]
    args = [a.astype(dtype) for a in args]
    compiled = CompiledExecutor(False, background=False)
    function = tc.function(program)
    for _ in range(2):
        value, grads = _run(compiled, function, args, (0, 1, 2, 3, 4))
    expected, expected_grads = _run(tc.ReferenceExecutor(), program, args, (0, 1, 2, 3, 4))
    np.testing.assert_allclose(value, expected, rtol=rtol)
    for got, want in zip(grads, expected_grads, strict=True):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    assert compiled.stats.fallbacks == 0
    library = [s for plan in _plans(compiled) for s in plan.steps
               if isinstance(s, LibraryStep) and isinstance(s.op, NATIVE_OPS)]  # fmt: skip
    assert library == []


def _complex_qr(tall: Any, batch: Any) -> Any:
    """The complex qr (``zgeqrf``/``zungqr``, ``c*`` in single precision): tall, square
    and batched, read in both parts, and its derivative."""
    terms = [*tnp.linalg.qr(tall), *tnp.linalg.qr(tall[:3]), *tnp.linalg.qr(batch)]
    return sum(tnp.sum(tnp.abs(t + 1) ** 2 + tnp.imag(t)) for t in terms)


@pytest.mark.parametrize(("dtype", "rtol"), [("complex128", 1e-10), ("complex64", 1e-4)])
def test_complex_qr_is_native_and_agrees_with_the_reference(dtype: str, rtol: float) -> None:
    rng = np.random.default_rng(2)
    args = [rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
            for shape in ((4, 3), (2, 3, 3))]  # fmt: skip
    args = [a.astype(dtype) for a in args]
    compiled, (value, grads), (expected, expected_grads) = _compiled_and_reference(
        _complex_qr, args, (0, 1))  # fmt: skip
    np.testing.assert_allclose(value, expected, rtol=rtol)
    for got, want in zip(grads, expected_grads, strict=True):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    assert compiled.stats.fallbacks == 0 and not compiled.stats.errors
    steps = [s for plan in _plans(compiled) for s in plan.steps]
    assert not [s for s in steps if isinstance(s, LibraryStep) and isinstance(s.op, ops.Qr)]


FAILURES = [
    ("cholesky", lambda a: tnp.linalg.cholesky(a), np.diag([1.0, -1.0, 2.0]),
     "cholesky: the matrix is not positive definite (LAPACK potrf info 2)"),
    ("solve", lambda a: tnp.linalg.solve(a, tnp.ones(3)), np.diag([1.0, 0.0, 2.0]),
     "Singular matrix"),
    ("solve_triangular", lambda a: tsl.solve_triangular(a, tnp.ones(3), lower=True),
     np.diag([1.0, 2.0, 0.0]), "singular matrix: resolution failed at diagonal 2"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "function", "bad", "message"), FAILURES,
                         ids=[f[0] for f in FAILURES])  # fmt: skip
def test_a_failed_factorisation_raises_the_library_error(
    name: str, function: Any, bad: np.ndarray, message: str
) -> None:
    compiled = CompiledExecutor(False, background=False)
    traced = tc.function(lambda a: tnp.sum(function(a)))
    with tc.use_executor(compiled):  # a call that records runs the compiled program
        traced(tc.tensor(np.eye(3) * 2.0, requires_grad=True))  # traced on a good matrix
        with pytest.raises(np.linalg.LinAlgError) as native:
            traced(tc.tensor(bad, requires_grad=True))
    assert compiled.stats.compiles > 0
    with pytest.raises(np.linalg.LinAlgError) as library, tc.use_executor(tc.ReferenceExecutor()):
        tnp.sum(function(tc.tensor(bad)))
    assert str(native.value) == message == str(library.value)
    assert compiled.stats.fallbacks == 0


def test_a_singular_slogdet_is_sign_zero_and_minus_infinity_as_numpy() -> None:
    compiled = CompiledExecutor(False, background=False)
    traced = tc.function(lambda a: tnp.linalg.slogdet(a))
    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]]])
    with tc.use_executor(compiled):
        traced(tc.tensor(np.ones((2, 2, 2)) + np.eye(2)))
        sign, logdet = traced(tc.tensor(singular))
    expected_sign, expected_logdet = np.linalg.slogdet(singular)
    np.testing.assert_array_equal(sign.numpy(), expected_sign)
    np.testing.assert_array_equal(logdet.numpy(), expected_logdet)


CHOLESKY_MODULE = """
func.func @f(%a: tensor<3x3xf64>) -> tensor<3x3xf64> {
  %l = tidu.cholesky %a : tensor<3x3xf64> -> tensor<3x3xf64>
  func.return %l : tensor<3x3xf64>
}
"""


def test_object_code_names_the_routine_and_never_its_address() -> None:
    module = Parser(tidu_context(), CHOLESKY_MODULE).parse_module()
    options = RunOptions(verify_each=False)
    loops = walk(module, "fused", "loops", options)
    kernels = walk(loops, "loops", "kernels", options)
    llvm = walk(kernels, "kernels", "llvm", options)
    assert "llvm.call @tidu_lapack_lp64_dpotrf(" in str(llvm)
    compiled = walk(kernels, "kernels", "codegen", options)
    assert "tidu_lapack_lp64_dpotrf" in compiled.undefined
    address = lapack_symbols.routine_address("dpotrf")
    assert struct.pack("<Q", address) not in compiled.object_code
    assert lapack_kernels.LAPACK_SYMBOL_PREFIX == lapack_symbols.LAPACK_SYMBOL_PREFIX


@pytest.mark.parametrize(("element", "prefix"), [("complex<f64>", "z"), ("complex<f32>", "c")])
def test_complex_qr_calls_the_complex_routines(element: str, prefix: str) -> None:
    text = f"""
    func.func @f(%a: tensor<4x3x{element}>) -> tensor<3x3x{element}> {{
      %q, %r = tidu.qr %a : tensor<4x3x{element}> -> (tensor<4x3x{element}>,
                                                      tensor<3x3x{element}>)
      func.return %r : tensor<3x3x{element}>
    }}
    """
    module = Parser(tidu_context(), text).parse_module()
    options = RunOptions(verify_each=False)
    loops = walk(module, "fused", "loops", options)
    llvm = str(walk(walk(loops, "loops", "kernels", options), "kernels", "llvm", options))
    for routine in ("geqrf", "ungqr"):
        assert f"llvm.call @tidu_lapack_lp64_{prefix}{routine}(" in llvm


def test_an_unknown_routine_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="no LAPACK/BLAS routine 'dnotaroutine'"):
        lapack_symbols.routine_address("dnotaroutine")


DISK_PROGRAM = """
import sys
import numpy as np
import tidu_compile as tc
import tidu_compile.numpy as tnp
from tidu_compile.executors.compiled import CompiledExecutor

executor = CompiledExecutor(sys.argv[1], background=False, forbid_compile=sys.argv[2] == "1")
spd = np.array([[4.0, 2.0], [2.0, 3.0]])
f = tc.function(lambda a: tnp.sum(tnp.linalg.cholesky(a)))
with tc.use_executor(executor):
    print(float(f(tc.tensor(spd)).numpy()), executor.stats.fallbacks)
"""


def test_a_disk_cached_lapack_kernel_runs_in_another_process(tmp_path: Path) -> None:
    """The object code holds no address of this process: a fresh interpreter loads it
    from disk (compiling forbidden) and binds scipy's routine where it is there."""
    script = tmp_path / "cholesky.py"
    script.write_text(textwrap.dedent(DISK_PROGRAM))
    runs = [subprocess.run([sys.executable, str(script), str(tmp_path / "cache"), forbid],
                           capture_output=True, text=True, timeout=300, check=False)
            for forbid in ("0", "1")]  # fmt: skip
    for run in runs:
        assert run.returncode == 0, run.stderr
    (first, _), (second, fallbacks) = (r.stdout.split() for r in runs)
    expected = float(np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]])).sum())
    assert float(first) == pytest.approx(expected) and float(second) == pytest.approx(expected)
    assert int(fallbacks) == 0  # and the second process compiled nothing: forbidden


def test_scipy_openblas_runs_one_thread_once_lapack_symbols_are_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The thread policy: one thread for scipy's OpenBLAS, set when the first LAPACK
    kernel's symbols are bound (``TIDU_COMPILE_LAPACK_THREADS`` unset)."""
    monkeypatch.delenv("TIDU_COMPILE_LAPACK_THREADS", raising=False)
    monkeypatch.setattr(lapack_symbols, "_threads_set", [])
    assert lapack_symbols.set_blas_threads(2)
    lapack_symbols.bind_lapack_symbols(["tidu_lapack_lp64_dpotrf"])
    libs = Path(scipy.__file__).resolve().parent.parent / "scipy.libs"
    (library,) = libs.glob("*openblas*.so*")
    threads = ctypes.CDLL(str(library)).scipy_openblas_get_num_threads
    threads.restype = ctypes.c_int
    assert threads() == 1

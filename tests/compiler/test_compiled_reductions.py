"""The reductions as native code: values, fusion, threads, and gradients on both executors.

* ``reduce_max``, ``reduce_min`` (also of bool: ``any``, ``all``) and ``reduce_prod``
  computed by kernels (``CompiledExecutor.run_graph``) equal numpy's, NaN, infinities
  and complex products included, also split over threads (partial maxima, minima,
  products, ors and ands combined after the chunks);
* the max of ``log_softmax`` is one kernel with its neighbours (the real pipeline);
* every reduction's gradient, per op and in ``@tc.function``, in forward mode and at
  second order, on the compiled executor agrees with the reference with no fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tidu_compile.dialects import tidu

import tidu_compile as tc
from tidu_compile import Name, func, ops
from tidu_compile.compiler import parallel
from tidu_compile.compiler.plan import KernelStep
from tidu_compile.compiler.program import graph_program
from tidu_compile.compiler.stages import walk
from tidu_compile.eager import RecordedGraph
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.graph import GraphBuilder, Primary
from tidu_compile.ops import type_of

REFERENCE = tc.ReferenceExecutor()


def one_op(op: ops.TensorOp) -> RecordedGraph:
    return RecordedGraph.from_primitive(op, [Name("x")])


def native(executor: CompiledExecutor, graph: RecordedGraph, *inputs: np.ndarray) -> list[Any]:
    """``graph`` run as native code, with no fallback and no compile error."""
    fallbacks = executor.stats.fallbacks
    values = executor.run_graph(graph, list(inputs))
    assert executor.stats.fallbacks == fallbacks and not executor.stats.errors
    return values


SPECIAL = np.array([[1.0, np.nan, 3.0, -2.0], [np.inf, -1.0, 0.5, 2.0],
                    [-np.inf, -np.inf, -np.inf, -np.inf], [0.0, -0.0, -3.0, 7.5]])  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_native_extrema_match_numpy(
    compiled: CompiledExecutor, dtype: str, axes: tuple[int, ...]
) -> None:
    x = SPECIAL.astype(dtype)
    for op, numpy_function in ((ops.ReduceMax, np.max), (ops.ReduceMin, np.min)):
        (got,) = native(compiled, one_op(op(axes, x.shape)), x)
        with np.errstate(invalid="ignore"):
            want = numpy_function(x, axis=axes)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{op.__name__} {axes}")


def test_native_any_all_and_products(compiled: CompiledExecutor) -> None:
    mask = np.random.default_rng(0).random((5, 6)) < 0.3
    mask[:, 0] = False
    for axes in ((0,), (1,), (0, 1)):
        (got,) = native(compiled, one_op(ops.ReduceMax(axes, mask.shape)), mask)
        np.testing.assert_array_equal(got, np.any(mask, axis=axes))
        (got,) = native(compiled, one_op(ops.ReduceMin(axes, mask.shape)), ~mask)
        np.testing.assert_array_equal(got, np.all(~mask, axis=axes))
    rng = np.random.default_rng(1)
    for dtype in ("float64", "float32", "complex128", "complex64"):
        x = rng.uniform(0.5, 1.5, (4, 5)).astype(dtype)
        if dtype.startswith("complex"):
            x = (x * np.exp(1j * rng.uniform(-3, 3, (4, 5)))).astype(dtype)
        for axes in ((0,), (1,), (0, 1)):
            (got,) = native(compiled, one_op(ops.ReduceProd(axes, x.shape)), x)
            tol = 1e-5 if dtype in ("float32", "complex64") else 1e-14
            np.testing.assert_allclose(got, np.prod(x, axis=axes), rtol=tol)


def _softmax_graph(shape: tuple[int, int]) -> RecordedGraph:
    """``log_softmax(2x)`` over axis 1 as the frontend writes it (shift by the max)."""
    b = GraphBuilder()
    (x,) = [b.add_input(Name("x"))]

    def add(op: ops.TensorOp, *inputs: int) -> int:
        return b.add_operation(op, list(inputs), Primary())[0]

    scaled = add(ops.Scale(2.0), x)
    peak = add(ops.ReduceMax((1,), shape), scaled)
    back = ops.BroadcastInDim(shape, (0,), (shape[0],))
    shifted = add(ops.Sub(), scaled, add(back, peak))
    total = add(ops.ReduceSum((1,), shape), add(ops.Exp(), shifted))
    b.set_outputs([add(ops.Sub(), shifted, add(back, add(ops.Log(), total)))])
    return RecordedGraph.from_graph(b.build())


def test_log_softmax_max_fuses_with_its_neighbours(compiled: CompiledExecutor) -> None:
    """The scale is computed in the kernel that takes the maximum (a result combined by
    max); the shifted exp and its sum read the maximum through a broadcast map."""
    shape = (64, 10)
    graph = _softmax_graph(shape)
    x = np.random.default_rng(2).standard_normal(shape) * 50
    program = graph_program(graph, [type_of(x)])
    fused = walk(program, "program", "fused")
    (function,) = fused.ops
    kernels = [op for op in function.body.block.ops if isinstance(op, tidu.KernelOp)]  # type: ignore[attr-defined]
    others = [op.name for op in function.body.block.ops  # type: ignore[attr-defined]
              if not isinstance(op, tidu.KernelOp)]  # fmt: skip
    assert others == ["func.return"], others
    first = kernels[0]
    assert [first.result_combiner(j) for j in range(len(first.outputs))].count("max") == 1
    assert any(isinstance(op, tidu.ScaleOp) for op in first.body.block.ops)
    (got,) = native(compiled, graph, x)
    shifted = 2 * x - np.max(2 * x, axis=1, keepdims=True)
    want = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("threads", [2, 3])
def test_reductions_over_dim_0_split_over_threads(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large reduction over dim 0 runs in chunks with private partial results: the
    maxima, minima, products, ors and ands of the chunks combine to numpy's answer."""
    monkeypatch.setenv("TIDU_COMPILE_THREADS", str(threads))
    monkeypatch.setattr(parallel, "PARALLEL_WORK", 1)  # split every chunked kernel
    executor = CompiledExecutor(False)
    rng = np.random.default_rng(threads)
    x = rng.standard_normal((4001, 37))
    x[1234, 5] = np.nan  # NaN in one chunk's rows only
    x[3999, 7] = 1e9  # the maximum in the last chunk
    near_one = 1 + x[:, :3] * 1e-3
    cases = [(ops.ReduceMax((0,), x.shape), x, np.max(x, 0)),
             (ops.ReduceMin((0, 1), x.shape), x[:, 6:], np.min(x[:, 6:])),
             (ops.ReduceProd((0,), (4001, 3)), near_one, np.prod(near_one, 0)),
             (ops.ReduceMax((0,), x.shape), x > 3.5, np.any(x > 3.5, 0)),
             (ops.ReduceMin((0,), x.shape), x > -3.5, np.all(x > -3.5, 0))]  # fmt: skip
    for op, data, want in cases:
        op = type(op)(op.axes, data.shape)
        (got,) = native(executor, one_op(op), data)
        if op.mnemonic == "reduce_prod":
            np.testing.assert_allclose(got, want, rtol=1e-12)
        else:
            np.testing.assert_array_equal(got, want, err_msg=op.mnemonic)
    steps = [s for entry in executor._graph_plans.values()  # noqa: SLF001 - inspecting plans
             for s in entry.plan.steps if isinstance(s, KernelStep)]  # fmt: skip
    combiners = {c for s in steps for c in s.partial_combiners}
    assert {"max", "min", "mul"} <= combiners


# --------------------------------------------------------------------- gradients


def _compare(compiled: CompiledExecutor, function: Callable[..., tc.Tensor], x: np.ndarray,
             composite: bool) -> None:  # fmt: skip
    t = tc.tensor(x, requires_grad=True)
    rng = np.random.default_rng(4)

    def loss(v: tc.Tensor) -> tc.Tensor:
        out = function(v)
        return tc.sum(tc.real(out * rng.standard_normal(out.shape).astype(out.dtype)))

    value = tc.function(loss)(t) if composite else loss(t)
    fallbacks = compiled.stats.fallbacks
    (got,) = tc.grad(value, [t], executor=compiled)
    (want,) = tc.grad(value, [t], executor=REFERENCE)
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors
    tol = 2e-5 if x.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.max(np.abs(want))))


FUNCTIONS: dict[str, Callable[..., tc.Tensor]] = {
    "max": lambda t: tc.max(t, 1),
    "min_keepdims": lambda t: tc.min(t, (0, 2), keepdims=True),
    "max_ties": lambda t: tc.max(tc.floor(t * 2) + t * 0, 2),
    "prod": lambda t: tc.prod(t, 0),
    "prod_zeros": lambda t: tc.prod(tc.where(tc.abs(t) < 0.4, 0.0, t), 2),
    "var": lambda t: tc.var(t, (1, 2), ddof=1),
    "std": lambda t: tc.std(t, 0),
    "logsumexp": lambda t: tc.logsumexp(t, 2),
    "softmax": tc.softmax,
    "log_softmax": lambda t: tc.log_softmax(t, 1),
    "norm": tc.norm,
    "norm_inf": lambda t: tc.norm(t, np.inf, axis=1),
    "norm_matrix_1": lambda t: tc.norm(t, 1, axis=(2, 1)),
    "average": lambda t: tc.average(t, 1, np.linspace(0.5, 2.0, t.shape[1])),
    "masked_by_any": lambda t: tc.where(tc.any(t > 1.0, 2, keepdims=True), t, t * 2),
    "argmax_gather": lambda t: tc.take_along_axis(t, tc.argmax(t, 1, keepdims=True), 1),
}


@pytest.mark.parametrize("composite", [False, True], ids=["per-op", "function"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradients_match_reference(
    compiled: CompiledExecutor, name: str, dtype: str, composite: bool
) -> None:
    x = np.random.default_rng(len(name)).standard_normal((3, 5, 4)).astype(dtype)
    _compare(compiled, FUNCTIONS[name], x, composite)


@pytest.mark.parametrize("name", ["prod", "var", "norm", "logsumexp"])
def test_complex_gradients_match_reference(compiled: CompiledExecutor, name: str) -> None:
    rng = np.random.default_rng(5)
    z = rng.standard_normal((3, 5, 4)) + 1j * rng.standard_normal((3, 5, 4))
    for composite in (False, True):
        _compare(compiled, FUNCTIONS[name], z, composite)


def test_forward_mode_and_second_order_run_natively(compiled: CompiledExecutor) -> None:
    """``func.jvp`` of ``log_softmax`` and a Hessian-vector product through ``max`` and
    ``prod`` (their residuals recomputed natively: reduce_max, reduce_prod kernels)."""
    rng = np.random.default_rng(6)
    x, v = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))

    def f(t: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.max(t * t, 1)) * tc.sum(tc.prod(t, 0)) + tc.sum(tc.logsumexp(t, 0))

    results = []
    for executor in (compiled, REFERENCE):
        fallbacks = compiled.stats.fallbacks
        with tc.use_executor(executor):
            _, jv = func.jvp(lambda t: tc.log_softmax(t, 1), (x,), (v,))
            _, hv = func.jvp(func.grad(f), (x,), (v,))
        results.append((jv.numpy(), hv.numpy()))
        assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def test_empty_reductions_compile_without_fallback(compiled: CompiledExecutor) -> None:
    """Zero-size operands fold away (``compiler.empty``): a max over an empty result, a
    product and an ``any`` over an empty axis (its identity: 1, False)."""

    @tc.function
    def f(t: tc.Tensor) -> tc.Tensor:
        none = t[:, :0]
        flag = tc.any(none > 0, 1, keepdims=True)
        return tc.sum(tc.where(flag, t, t * 3) * tc.prod(none, 1, keepdims=True)) + tc.sum(
            tc.max(t[:0], 1) * 2
        )

    t = tc.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    fallbacks = compiled.stats.fallbacks
    (got,) = tc.grad(f(t), [t], executor=compiled)
    assert compiled.stats.fallbacks == fallbacks and not compiled.stats.errors
    np.testing.assert_array_equal(got, np.full((2, 3), 3.0))

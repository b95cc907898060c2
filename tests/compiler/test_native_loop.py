"""Scans and while loops as one native loop (``compiler.native_loop``), and the
contractions of their bodies as calls of a strided product (``compiler.loop_contractions``).

Every case runs on a ``CompiledExecutor`` (its scan taken natively: one scan kernel,
``tidu-lower-control``, or a ``NativeScan``; checked)
and on the ``ReferenceExecutor``, and the two must agree: carries that swap, a carry
that is an ``xs`` row, integer and bool carries, several ``y``, reverse scans, and the
gradient (a reverse scan of the body's VJP, native too), while loops and fori loops with
tensor bounds (``NativeWhile``), random bodies (products in every orientation, so
transposes inside the loop, swapped carries, checkpoint). A body with a step that needs
Python between iterations runs one plan call per iteration, and agrees (one whose
driver fails to compile); a nested scan is one kernel of its body's plan. The drivers'
IR is checked filecheck-style.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor
from tidu_compile.compiler.loop_contractions import strided_product
from tidu_compile.compiler.native_loop import NativeScan, NativeWhile
from tidu_compile.ops.structural import DotGeneral

RNG = np.random.default_rng(3)

# --------------------------------------------------------- contractions in loops

#: (lhs shape, rhs shape, lhs contracting, rhs contracting, lhs batch, rhs batch)
CONTRACTIONS = [
    ((5,), (5, 3), (0,), (0,), (), ()),  # h @ W
    ((4, 5), (5,), (1,), (0,), (), ()),  # W @ h
    ((4, 5), (5, 3), (1,), (0,), (), ()),  # matmul
    ((4, 5), (3, 5), (1,), (1,), (), ()),  # A @ B.T
    ((5, 4), (3, 5), (0,), (1,), (), ()),  # A.T @ B.T
    ((4,), (3,), (), (), (), ()),  # outer
    ((2, 4, 5), (2, 5, 3), (2,), (1,), (0,), (0,)),  # batched matmul
    ((2, 3, 4), (3, 4, 6), (1, 2), (0, 1), (), ()),  # two contracted dimensions
    ((4, 0), (0, 3), (1,), (0,), (), ()),  # nothing to sum: zeros
]


@pytest.mark.parametrize("dims", CONTRACTIONS, ids=str)
def test_the_strided_product_is_the_contraction(dims: tuple) -> None:
    op = DotGeneral(*dims[2:], dims[0], dims[1])
    product = strided_product(op)
    assert product is not None
    lhs, rhs = RNG.standard_normal(op.lhs_shape).ravel(), RNG.standard_normal(op.rhs_shape).ravel()
    (lb, lm, lk), (rb, rn, rk) = product.lhs_strides, product.rhs_strides
    b, m, n, k = np.ix_(*(np.arange(e) for e in (product.batch, product.rows, product.columns,
                                                 product.depth)))  # fmt: skip
    routine = np.sum(lhs[b * lb + m * lm + k * lk] * rhs[b * rb + n * rn + k * rk], axis=3)
    (want,) = op.evaluate(lhs.reshape(op.lhs_shape), rhs.reshape(op.rhs_shape))
    np.testing.assert_allclose(routine.reshape(want.shape), want, rtol=1e-13, atol=1e-13)


def test_a_contraction_over_dimensions_apart_in_memory_has_no_routine() -> None:
    assert strided_product(DotGeneral((0, 2), (0, 1), (), (), (2, 3, 4), (2, 4))) is None


# ------------------------------------------------------------------- native scans


def _all_native(executor: CompiledExecutor) -> bool:
    """Whether every loop the executor ran went to a native runner (and one did): a
    driver, or a scan's own program (one scan kernel, ``tidu-lower-control``)."""
    from tidu_compile.executors.native_loops import _RUNNERS, _LoopKernelRunner

    runners = list(_RUNNERS.get(executor, {}).values())
    native = NativeScan | NativeWhile | _LoopKernelRunner
    return bool(runners) and all(isinstance(r, native) for r in runners)


def _both(run: Callable[[], list[Any]], natively: bool = True) -> CompiledExecutor:
    """``run`` on both executors: equal results, no fallback, and every loop on a native
    runner (or, ``natively=False``, not); the compiled executor."""
    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(compiled):
        got = run()
    with tc.use_executor(ReferenceExecutor()):
        want = run()
    assert compiled.stats.fallbacks == 0, compiled.stats.errors
    assert _all_native(compiled) == natively
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    return compiled


def _values(*tensors: Any) -> list[Any]:
    return [t.detach().numpy() if isinstance(t, tc.Tensor) else t for t in tensors]


W = RNG.standard_normal((6, 6)) * 0.4
XS = RNG.standard_normal((7, 6))


@pytest.mark.parametrize("reverse", [False, True])
def test_an_rnn_and_its_gradient_run_as_native_loops(reverse: bool) -> None:
    def run() -> list[Any]:
        w, xs = tc.tensor(W, requires_grad=True), tc.tensor(XS, requires_grad=True)

        def step(h: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, tuple[tc.Tensor, tc.Tensor]]:
            h = tc.tanh(h @ w + x)
            return h, (tc.sum(h), h * 2.0)

        h, (ys, hs) = tc.scan(step, tc.zeros(6), xs, reverse=reverse)
        grads = tc.grad(tc.sum(ys) + tc.sum(hs * hs) + tc.sum(h), [w, xs])
        return [*_values(h, ys, hs), *grads]

    _both(run)


def test_carries_that_swap_and_a_carry_that_is_an_xs_row() -> None:
    def run() -> list[Any]:
        def step(carry: tuple[tc.Tensor, ...], x: tc.Tensor) -> tuple[Any, tc.Tensor]:
            a, b, last = carry
            return (b, a + x, x), a * b

        final, ys = tc.scan(step, (tc.ones(6), tc.zeros(6), tc.zeros(6)), tc.tensor(XS))
        return _values(*final, ys)

    _both(run)


def test_integer_and_bool_carries() -> None:
    def run() -> list[Any]:
        def step(carry: tuple[tc.Tensor, tc.Tensor], x: tc.Tensor) -> tuple[Any, tc.Tensor]:
            count, seen = carry
            big = x > 0.5
            return (count + tc.astype(big, "int64"), tc.maximum(seen, big)), tc.astype(big, "int32")

        (count, seen), ys = tc.scan(step, (tc.zeros(6, dtype="int64"),
                                           tc.zeros(6, dtype="bool")), tc.tensor(XS))  # fmt: skip
        return _values(count, seen, ys)

    _both(run)


def test_fori_loop_with_static_bounds_and_a_zero_length_scan() -> None:
    def run() -> list[Any]:
        y = tc.fori_loop(0, 40, lambda i, y: y * 0.9 + tc.astype(i, "float64"), tc.tensor(1.0))
        empty, ys = tc.scan(lambda c, x: (c + x, c), tc.ones(6), tc.tensor(XS[:0]))
        return _values(y, empty, ys)

    _both(run)


@pytest.mark.parametrize("start", [3.0, 500.0])  # several iterations, and none
def test_while_loops_and_fori_loops_with_tensor_bounds(start: float) -> None:
    def run() -> list[Any]:
        w = tc.tensor(W[0])
        limit = tc.tensor(100.0)

        def test(carry: tuple[tc.Tensor, tc.Tensor]) -> tc.Tensor:
            return tc.sum(carry[0]) < limit

        def step(carry: tuple[tc.Tensor, tc.Tensor]) -> tuple[tc.Tensor, tc.Tensor]:
            v, n = carry
            return v * 1.5 + tc.abs(w), n + 1

        v, n = tc.while_loop(test, step, (tc.full(6, start), tc.tensor(0)))
        upper = tc.tensor(np.int64(7))
        total = tc.fori_loop(tc.tensor(np.int64(2)), upper, lambda i, y: y * 0.5 + i,
                             tc.tensor(1.0))  # fmt: skip
        return _values(v, n, total)

    _both(run)


def test_a_body_holding_a_loop_runs_natively_its_inner_loop_one_kernel() -> None:
    """The inner scan is one kernel of the body's plan (``tidu-lower-control``)."""

    def run() -> list[Any]:
        def step(c: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, None]:
            inner, _ = tc.scan(lambda h, _: (tc.sin(h) + x, None), c, length=3)
            return inner, None

        final, _ = tc.scan(step, tc.zeros(6), tc.tensor(XS))
        return _values(final)

    _both(run)


# ------------------------------------------------------------- the drivers' IR


@pytest.fixture
def driver_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loops take the driver, not their own program (``native_loops.LOOP_PROGRAMS``)."""
    from tidu_compile.executors import native_loops

    monkeypatch.setattr(native_loops, "LOOP_PROGRAMS", False)


def _drivers(run: Callable[[], Any]) -> list[str]:
    """The driver texts of the loops ``run`` runs on a fresh ``CompiledExecutor``."""
    from tidu_compile.executors.native_loops import _RUNNERS

    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(compiled):
        run()
    return [r.text for r in _RUNNERS[compiled].values()]


def _filecheck(text: str, checks: list[str]) -> None:
    """Each ``CHECK: s`` line's ``s`` is in a line of ``text``, in order; ``NEXT: s`` in
    the line right after the previous match (filecheck's CHECK and CHECK-NEXT)."""
    lines, at = text.splitlines(), -1
    for check in checks:
        kind, wanted = check.split(": ", 1)
        if kind == "NEXT":
            assert wanted in lines[at + 1], f"{check!r} is not the line after {lines[at]!r}"
            at += 1
            continue
        found = [i for i in range(at + 1, len(lines)) if wanted in lines[i]]
        assert found, f"{check!r} not found after line {at}:\n{text}"
        at = found[0]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.usefixtures("driver_only")
def test_a_scan_is_one_loop_over_its_body_kernels(reverse: bool) -> None:
    w, xs = tc.tensor(np.eye(3) * 0.5), tc.tensor(np.ones((4, 3)))
    (text,) = _drivers(lambda: tc.scan(lambda h, x: (tc.tanh(h @ w + x), tc.sum(h)),
                                       tc.zeros(3), xs, reverse=reverse))  # fmt: skip
    _filecheck(text, [
        "CHECK: define internal void @tidu_loop_dot_float64(",  # the product routine
        "CHECK: define void @NAME(ptr %buffers, ptr %kernels, ptr %xs, ptr %ys, i64 %length)",
        "CHECK: %k0 = load ptr, ptr %k0.at",  # the body's kernel, loaded once
        "CHECK: br i1 %empty, label %exit, label %loop",
        "CHECK: loop:",
        "NEXT: %t = phi i64 [ 0, %entry ], [ %t.next, %latch ]",
        "NEXT: %last = sub i64 %length, 1" if reverse else "NEXT: %row = add i64 %t, 0",
        *(["NEXT: %row = sub i64 %last, %t"] if reverse else []),
        "NEXT: %x0.offset = mul i64 %row, 24",  # row t of xs: 3 f64
        "NEXT: %x0 = getelementptr i8, ptr %x0.base, i64 %x0.offset",
        # h @ w: 1 batch, 1 row, 3 columns, depth 3; strides of h (0, 0, 1), w (0, 1, 3)
        "NEXT: call void @tidu_loop_dot_float64(ptr %b3, ptr %b1, ptr %b0, i64 1, i64 1, "
        "i64 3, i64 3, i64 0, i64 0, i64 1, i64 0, i64 1, i64 3)",
        "NEXT: call void %k0(ptr %b3, ptr %x0, ptr %b1, ",  # tanh(. + x), sum(h)
        "CHECK: %y0 = getelementptr i8, ptr %y0.base, i64 %y0.offset",
        "NEXT: call void @llvm.memcpy.p0.p0.i64(ptr %y0, ",  # ys[t] = sum(h)
        "CHECK: call void @llvm.memcpy.p0.p0.i64(ptr %b1, ",  # the carry for t + 1
        "NEXT: br label %latch",
        "CHECK: %t.next = add i64 %t, 1",
        "CHECK: br i1 %done, label %exit, label %loop",
    ])  # fmt: skip


@pytest.mark.usefixtures("driver_only")
def test_a_while_loop_tests_then_steps_and_swapped_carries_go_through_scratch() -> None:
    (text,) = _drivers(lambda: tc.while_loop(lambda c: tc.sum(c[0]) < 50.0,
                                             lambda c: (c[1], c[0] * 2.0 + 1.0),
                                             (tc.ones(2), tc.ones(2))))  # fmt: skip
    _filecheck(text, [
        "CHECK: define void @NAME(ptr %cbuffers, ptr %ckernels, ptr %buffers, ptr %kernels,",
        "CHECK: br label %test",
        "CHECK: test:",
        "NEXT: call void %ck0(ptr %b0, ",  # the test reads the step's carry buffers
        "CHECK: %holds.byte = load i8, ptr %cb",
        "NEXT: %holds = icmp ne i8 %holds.byte, 0",
        "NEXT: br i1 %holds, label %loop, label %exit",
        "CHECK: loop:",
        "NEXT: call void %k0(",
        "CHECK: %scratch.0 = getelementptr i8, ptr %scratch, i64 0",  # c[1] into scratch
        "NEXT: call void @llvm.memcpy.p0.p0.i64(ptr %scratch.0, ptr %b1, i64 16, i1 false)",
        "CHECK: call void @llvm.memcpy.p0.p0.i64(ptr %b0, ptr %scratch.0, i64 16, i1 false)",
        "CHECK: br label %test",
    ])  # fmt: skip


def _rnn_values() -> list[Any]:
    w = tc.tensor(W, requires_grad=True)
    h, ys = tc.scan(lambda h, x: (tc.tanh(h @ w + x), tc.sum(h)), tc.zeros(6), tc.tensor(XS))
    return [*_values(h, ys), *tc.grad(tc.sum(ys), [w])]


@pytest.mark.compile_errors_expected
@pytest.mark.usefixtures("driver_only")
def test_a_driver_that_fails_to_compile_leaves_the_loop_per_iteration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tidu_compile.compiler import native_loop

    def broken(text: str, name: str) -> int:
        raise RuntimeError("LLVM refused the driver")

    monkeypatch.setattr(native_loop, "_load", broken)
    monkeypatch.setattr(native_loop, "_DRIVERS", {})
    with pytest.warns(RuntimeWarning, match="LLVM refused the driver"):
        _both(_rnn_values, natively=False)


@pytest.mark.usefixtures("driver_only")
def test_a_body_with_a_multithreaded_kernel_stays_per_iteration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tidu_compile.compiler import native_loop

    monkeypatch.setattr(native_loop, "PARALLEL_WORK", 1)
    _both(_rnn_values, natively=False)


# --------------------------------------------------------------------- random bodies

_UNARY = [tc.tanh, tc.sin, tc.sigmoid, tc.softplus, lambda a: a * a, tc.cos]


def _random_rnn(seed: int) -> Callable[[], list[Any]]:
    """A scan of a random body: two carries (one swapped in half the seeds), products of
    the carries with weights in random orientations (``h @ w``, ``w @ h``, ``h @ w.T``),
    random smooth ops; forward or reverse, checkpointed or not."""
    rng = np.random.default_rng(seed)
    ops_ = [_UNARY[i] for i in rng.integers(0, len(_UNARY), 3)]
    orientation = int(rng.integers(0, 3))
    swap, reverse, checkpoint = (bool(b) for b in rng.integers(0, 2, 3))
    weights = rng.standard_normal((4, 4)) * 0.4
    xs = rng.standard_normal((5, 4))

    def run() -> list[Any]:
        w = tc.tensor(weights, requires_grad=True)
        rows = tc.tensor(xs, requires_grad=True)

        def step(carry: tuple[tc.Tensor, tc.Tensor], x: tc.Tensor) -> tuple[Any, tc.Tensor]:
            h, g = carry
            product = (h @ w, w @ h, h @ w.T)[orientation]
            h2 = ops_[0](product + x) * 0.5
            g2 = ops_[1](g * x) + tc.sum(ops_[2](h2)) * 0.1
            return ((g2, h2) if swap else (h2, g2)), tc.sum(h2 * g2)

        (h, g), ys = tc.scan(step, (tc.zeros(4), tc.ones(4)), rows, reverse=reverse,
                             checkpoint=checkpoint)  # fmt: skip
        grads = tc.grad(tc.sum(ys) + tc.sum(h * g), [w, rows])
        return [*_values(h, g, ys), *grads]

    return run


@pytest.mark.parametrize("seed", range(3))
def test_random_bodies_run_natively_as_on_the_reference(seed: int) -> None:
    _both(_random_rnn(seed))

"""Hot plans as one native call (``compiler.native_plan``): the fast path promotes a plan
of enough steps after ``PROMOTE_AFTER`` calls, and from then on its driver runs every
step (kernels, contractions, transposes, reshapes as aliases). Checked against the
``ReferenceExecutor`` call by call, on sequences of programs through one executor,
from several threads, with results the caller may write into; plans the driver cannot
run keep the fast path. The driver's IR is checked filecheck-style."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
import tidu_compile.numpy as tnp
from tidu_compile import CompiledExecutor, ReferenceExecutor, func
from tidu_compile.compiler import native_plan
from tidu_compile.compiler.native_loop import NotNative
from tidu_compile.compiler.plan import BoundPlan

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _promote_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """Promote after 2 calls (plans built from now on read it), so tests stay short."""
    monkeypatch.setattr(native_plan, "PROMOTE_AFTER", 2)


def _rnn(w: Any, u: Any, xs: Any) -> Any:
    """An unrolled RNN: products in both orientations, transposes, reshapes, tanh."""
    h = tnp.zeros(u.shape[0])
    total = 0.0
    for t in range(xs.shape[0]):
        h = tnp.tanh(xs[t] @ w + u @ h)
        total = total + tnp.sum(tnp.reshape(h, (-1, 1)).T ** 2)
    return total


def _inputs(width: int, steps: int) -> list[np.ndarray]:
    return [RNG.standard_normal((3, width)) * 0.5, RNG.standard_normal((width, width)) * 0.3,
            RNG.standard_normal((steps, 3))]  # fmt: skip


@pytest.fixture
def promoted(monkeypatch: pytest.MonkeyPatch) -> list[BoundPlan]:
    """The plans the fast calls built from now on promote to a driver."""
    made: list[BoundPlan] = []
    real = native_plan.promote

    def spy(bound: BoundPlan, native: list[Any]) -> None:
        real(bound, native)
        if native[0] is not None:
            made.append(bound)

    monkeypatch.setattr(native_plan, "promote", spy)
    return made


def _reference(f: Callable[..., Any], arrays: list[np.ndarray]) -> list[np.ndarray]:
    with tc.use_executor(ReferenceExecutor()):
        value, grads = func.value_and_grad(f, argnums=(0, 1, 2))(*arrays)
        return [value.numpy(), *(g.numpy() for g in grads)]


def _compiled(f: Callable[..., Any], arrays: list[np.ndarray]) -> list[np.ndarray]:
    value, grads = func.value_and_grad(tc.function(f), argnums=(0, 1, 2))(*arrays)
    return [value.numpy(), *(g.numpy() for g in grads)]


def _assert_close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_a_hot_plan_runs_as_one_driver_and_agrees_call_by_call(promoted: list[BoundPlan]) -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(executor):  # JAX's jax.jit(jax.value_and_grad(f)): one program
        step = tc.function(func.value_and_grad(_rnn, argnums=(0, 1, 2)))
        for call in range(6):
            arrays = _inputs(4, 5)
            hits = executor.stats.memory_hits
            value, grads = step(*arrays)
            _assert_close([value.numpy(), *(g.numpy() for g in grads)], _reference(_rnn, arrays))
            if call == 1:
                assert promoted == []  # not promoted yet
            if call > 0:  # one fused program per call, not the ops one by one
                assert executor.stats.memory_hits - hits <= 2
    assert promoted and all(len(p.plan.steps) >= native_plan.MIN_STEPS for p in promoted)
    assert executor.stats.fallbacks == 0


def test_programs_of_other_shapes_through_one_executor_get_their_own_drivers(
    promoted: list[BoundPlan],
) -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(executor):
        for width, steps in ((4, 5), (6, 5), (4, 5)):
            for _ in range(3):
                arrays = _inputs(width, steps)
                _assert_close(_compiled(_rnn, arrays), _reference(_rnn, arrays))
    assert len({p.plan.types for p in promoted}) >= 2  # a driver per shape


def test_results_are_the_callers_to_write_into(promoted: list[BoundPlan]) -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    arrays = _inputs(4, 5)
    with tc.use_executor(executor):
        step = tc.function(func.grad(_rnn, argnums=(0, 1)))
        for _ in range(4):
            first = [g.numpy().copy() for g in step(*arrays)]
        mutable = [np.array(g) for g in step(*arrays)]
        for g in mutable:
            g += 1.0
        again = [g.numpy() for g in step(*arrays)]
    assert promoted
    _assert_close(again, first)


def test_a_promoted_plan_agrees_from_several_threads(promoted: list[BoundPlan]) -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    inputs = [_inputs(4, 5) for _ in range(4)]
    expected = [_reference(_rnn, a) for a in inputs]
    failures: list[str] = []
    with tc.use_executor(executor):
        for _ in range(3):
            _compiled(_rnn, inputs[0])

    def work(k: int) -> None:
        with tc.use_executor(executor):
            for _ in range(8):
                got = _compiled(_rnn, inputs[k])
                pairs = zip(got, expected[k], strict=True)
                if not all(np.allclose(g, w, rtol=1e-12) for g, w in pairs):
                    failures.append(f"thread {k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert promoted and failures == []


def _bound_plans() -> list[BoundPlan]:
    import gc

    return [o for o in gc.get_objects() if isinstance(o, BoundPlan)]


def test_the_driver_ir_holds_the_arena_the_kernels_and_one_product_routine() -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(executor):
        _compiled(_rnn, _inputs(4, 3))
    texts = []
    for bound in _bound_plans():
        try:
            texts.append(native_plan.NativePlan(bound).text)
        except NotNative:
            continue
    assert texts
    text = max(texts, key=len)
    # CHECK: the routine of runtime extents, not inlined at each product
    assert "define internal void @tidu_loop_dot_float64(" in text and ") noinline {" in text
    # CHECK: the arena's data pointer, read from its ndarray, then fixed offsets into it
    assert "%arena.data = getelementptr i8, ptr %arena.object, i64 16" in text
    assert "= getelementptr i8, ptr %arena, i64 0" in text
    # CHECK: each argument or result read as an ndarray's data pointer; kernels called
    assert ".object = load ptr, ptr %b0.at" in text and "call void %k0(" in text
    assert text.rstrip().endswith("ret void\n}")


def test_plans_a_driver_cannot_run_keep_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    spd = RNG.standard_normal((4, 4))
    spd = spd @ spd.T + 4 * np.eye(4)

    def logdet(a: Any) -> Any:  # LAPACK kernels: a status checked between steps
        chol = tnp.linalg.cholesky(a)
        return tnp.sum(tnp.log(tnp.diagonal(chol))) + tnp.sum(tnp.tanh(chol) ** 2)

    with tc.use_executor(executor):
        grad = tc.function(func.grad(logdet))
        for _ in range(4):
            got = grad(spd).numpy()
    with tc.use_executor(ReferenceExecutor()):
        np.testing.assert_allclose(got, func.grad(logdet)(spd).numpy(), rtol=1e-10)
    refused = 0
    for bound in _bound_plans():
        if any(getattr(s, "status_error", "") for s in bound.plan.steps):
            with pytest.raises(NotNative, match="LAPACK status"):
                native_plan.NativePlan(bound)
            refused += 1
    assert refused
    monkeypatch.setattr(native_plan.buffers, "DEBUG_FILL", True)
    assert not any(native_plan.may_promote(b) for b in _bound_plans())


def test_plans_with_a_large_contraction_keep_blas(promoted: list[BoundPlan]) -> None:
    """The RNN at width 80 (``u @ h``: 6,400 multiply-adds) keeps BLAS: its plan is not
    promoted, and keeps the reference executor's results call after call; at width 4
    (small products: the driver's routine) it is promoted."""
    works = {}
    for width in (80, 4):
        arrays = _inputs(width, 3)
        promoted.clear()
        executor = CompiledExecutor(cache_dir=False, background=False)
        with tc.use_executor(executor):
            for _ in range(4):
                _assert_close(_compiled(_rnn, arrays), _reference(_rnn, arrays))
        assert (promoted == []) == (width == 80), width
        works[width] = max(native_plan._product_work(s.op) for b in _bound_plans()
                           for s in b.plan.steps
                           if isinstance(getattr(s, "op", None), tc.ops.DotGeneral))  # fmt: skip
    assert works[80] >= 80 * 80 > native_plan.MAX_PRODUCT_WORK

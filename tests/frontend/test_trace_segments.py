"""Long ``@tc.function`` traces in segments (``frontend.trace_segments``).

The segment size is made small (``small_segments``) so that short programs are cut
several times; every segmented result is compared with the same function per op on the
``ReferenceExecutor``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend import trace_segments
from tidu_compile.frontend.trace_segments import segment_cuts

REFERENCE = tc.ReferenceExecutor()


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(trace_segments, "SEGMENT_OPS", 14)
    monkeypatch.setattr(trace_segments, "SEGMENTED_AT", 28)
    monkeypatch.setattr(trace_segments, "UNSHARED_SEGMENTED_AT", 28)
    yield


def test_cuts_fall_whole_periods_apart() -> None:
    assert segment_cuts(list("ab" * 6 + "z"), 4) == [4, 8]
    # a prologue before the periodic stretch: its own segment when long enough
    assert segment_cuts(list("xyz" + "abc" * 10), 6) == [3, 9, 15, 21, 27]
    # period 3 and a target of 7: two periods per segment, the rest in the last
    assert segment_cuts(list("abc" * 10), 7) == [6, 12, 18, 24]


def test_cuts_without_a_period_are_every_target_operations() -> None:
    rng = np.random.default_rng(0)
    signatures = list(rng.integers(0, 1000, 50))
    assert segment_cuts(signatures, 10) == [10, 20, 30, 40]
    assert segment_cuts(signatures[:14], 10) == []  # the rest is shorter than half


def chain(h: tc.Tensor, w: tc.Tensor, steps: int) -> tc.Tensor:
    for _ in range(steps):
        h = tc.tanh(h * w + 0.1) - 0.5 * h
    return tc.sum(h)


def inputs(*shapes: tuple[int, ...], seed: int = 0) -> list[tc.Tensor]:
    rng = np.random.default_rng(seed)
    return [tc.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]


def _nodes(output: tc.Tensor) -> int:
    """The tape nodes behind ``output``."""
    seen, stack = set(), [output._trace]
    while stack:
        trace = stack.pop()
        if trace is None or id(trace) in seen:
            continue
        seen.add(id(trace))
        stack.extend(edge.trace for edge in trace.inputs)
    return len(seen)


def _check(fn, args: list[tc.Tensor], executor: tc.BackwardExecutor) -> tc.Tensor:  # type: ignore[no-untyped-def]
    traced = tc.function(fn)
    with tc.use_executor(executor):
        out = traced(*args)
        got = tc.grad(out, args)
    want_out = fn(*args)
    want = tc.grad(want_out, args, executor=REFERENCE)
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-13)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    return out


def test_a_periodic_chain_compiles_one_program_per_kind_of_segment(small_segments: None) -> None:
    executor = CompiledExecutor(False, background=False)
    out = _check(lambda h, w: chain(h, w, 40), inputs((16,), (16,)), executor)
    assert _nodes(out) > 10  # 40 steps of 7 operations, segments of 14
    # the equal middle segments share forward and backward programs: 2 kinds of
    # segment (the middle ones, the last with the sum), each a forward and a backward
    assert executor.stats.compiles <= 4
    assert executor.stats.fallbacks == 0


def _indexed(h: tc.Tensor, w: tc.Tensor, steps: int) -> tc.Tensor:
    """Each step reads its own row of ``w`` (a static index): no two steps are equal."""
    for k in range(steps):
        h = tc.tanh(h * w[k] + 0.1) - 0.5 * h
    return tc.sum(h)


@pytest.mark.parametrize(("steps", "unshared_at", "segmented"),
                         [(12, 200, False), (12, 60, True)])  # fmt: skip
def test_a_trace_of_distinct_segments_stays_one_program_below_a_bound(
    monkeypatch: pytest.MonkeyPatch, steps: int, unshared_at: int, segmented: bool
) -> None:
    """Past ``SEGMENTED_AT`` (28 here), a trace whose segments would all be different
    programs is one program (one tape node) below ``UNSHARED_SEGMENTED_AT``; a periodic
    one is cut (its equal segments share programs)."""
    monkeypatch.setattr(trace_segments, "SEGMENT_OPS", 14)
    monkeypatch.setattr(trace_segments, "SEGMENTED_AT", 28)
    monkeypatch.setattr(trace_segments, "UNSHARED_SEGMENTED_AT", unshared_at)
    executor = CompiledExecutor(False, background=False)
    out = _check(lambda h, w: _indexed(h, w, steps), inputs((8,), (steps, 8)), executor)
    assert (_nodes(out) > 2) is segmented  # one node: the trace, and its inputs' leaves
    periodic = _check(lambda h, w: chain(h, w, 12), inputs((8,), (8,)), executor)
    assert _nodes(periodic) > 3


@pytest.mark.parametrize("compiled", [False, True], ids=["reference", "compiled"])
def test_values_crossing_several_cuts_integers_and_contractions(
    small_segments: None, compiled: bool
) -> None:
    def program(x: tc.Tensor, w: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
        first = tc.exp(x * 0.3)  # read again at the very end, across every cut
        h = x
        for k in range(4):
            h = tc.tanh(h @ w) * (1.0 + 0.1 * k) + tc.sin(h)
        picked = tc.take(h, tc.argmax(h, axis=1), axis=1)  # an integer crossing a cut?
        return tc.sum(h * first) + tc.sum(picked), tc.mean(h)

    def loss(x: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
        a, b = program(x, w)
        return a + 2.0 * b

    executor = CompiledExecutor(False, background=False) if compiled else REFERENCE
    out = _check(loss, inputs((3, 4), (4, 4)), executor)
    assert _nodes(out) > 2
    if compiled:
        assert executor.stats.fallbacks == 0  # type: ignore[union-attr]


def test_background_compilation_serves_segments_as_they_are_ready(small_segments: None) -> None:
    executor = CompiledExecutor(False, background=True)  # the first call: reference code
    fn = tc.function(lambda h, w: chain(h, w, 6))
    args = inputs((8,), (8,), seed=1)
    want = tc.grad(chain(*args, 6), args, executor=REFERENCE)
    with tc.use_executor(executor):
        for call in range(2):
            got = tc.grad(fn(*args), args)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
            if call == 0:
                assert executor.wait_for_background(120)
    assert executor.stats.compiles >= 4 and executor.stats.fallbacks == 0


def test_an_in_place_change_after_the_forward_still_raises(small_segments: None) -> None:
    fn = tc.function(lambda h, w: chain(h, w, 12))
    h, w = inputs((8,), (8,))
    out = fn(h, w)
    with tc.no_grad():
        w += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tc.grad(out, [h, w], executor=REFERENCE)


def test_transforms_and_sequences_through_one_executor(small_segments: None) -> None:
    """Traces differing in a constant or a length, one executor: never a stale program."""
    executor = CompiledExecutor(False, background=False)
    for scale, steps in [(0.1, 12), (0.2, 12), (0.1, 13)]:
        def f(h: tc.Tensor, w: tc.Tensor, scale: float = scale, steps: int = steps) -> tc.Tensor:
            for _ in range(steps):
                h = tc.tanh(h * w + scale) - 0.5 * h
            return tc.sum(1.0 / (h + 3.0 * scale + 1e-3))

        args = inputs((8,), (8,), seed=2)
        with tc.use_executor(executor):
            got = func.grad(tc.function(f), argnums=(0, 1))(*args)
        want = tc.grad(f(*args), args, executor=REFERENCE)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-14)
    assert executor.stats.fallbacks == 0


def test_in_place_updates_inside_the_trace_cross_cuts(small_segments: None) -> None:
    def f(h: tc.Tensor, w: tc.Tensor, in_place: bool = True) -> tc.Tensor:
        a = h * 1.0
        for _ in range(6):
            if in_place:
                a += tc.tanh(a * w)
            else:
                a = a + tc.tanh(a * w)
            a = a * 0.5
        return tc.sum(a)

    args = inputs((8,), (8,), seed=3)
    traced = tc.function(f)
    got = tc.grad(traced(*args), args, executor=REFERENCE)
    assert _nodes(traced(*args)) > 1
    want = tc.grad(f(*args, in_place=False), args, executor=REFERENCE)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_segments_differing_in_constants_only_take_them_as_inputs(small_segments: None) -> None:
    """An unrolled solver whose step ``k`` reads its own constant: the segments are one
    program with the constants as inputs (not a program per segment), and a second
    trace with other constants reuses it (the last segment, with the sum, has no twin:
    its constants stay inlined, so it compiles again), each right."""
    executor = CompiledExecutor(False, background=False)

    def solver(offset: float) -> object:
        def f(h: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
            for k in range(40):
                h = tc.tanh(h * w + (offset + 1e-3 * k)) - 0.5 * h
            return tc.sum(h)
        return f

    first = _check(solver(0.1), inputs((16,), (16,)), executor)
    assert _nodes(first) > 10
    compiles = executor.stats.compiles
    assert compiles <= 6  # the middle segments' forward and backward, the ends'
    _check(solver(-0.0), inputs((16,), (16,), seed=3), executor)
    assert executor.stats.compiles == compiles + 2 and executor.stats.fallbacks == 0

"""The generated per-node fast call: straight-line code that runs a one-kernel plan
only on arguments of exactly the plan's layouts, and gives the general path's results."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.compiler.fast_path import build_fast_call
from tidu_compile.executors.compiled import CompiledExecutor


def _node(make: Any, *values: np.ndarray) -> tuple[CompiledExecutor, Any, Any]:
    """Compile the backward of ``make(*tensors)``; (executor, the node's plan entry, trace)."""
    tensors = [tc.tensor(v, requires_grad=True) for v in values]
    out = make(*tensors)
    executor = CompiledExecutor(False)
    tc.grad(tc.sum(out), tensors, executor=executor)
    trace = out._trace
    linear = executor.linearize_recorded_graph(trace.graph, (0,), None)
    entry = executor._entries_by_linear[id(linear)]  # noqa: SLF001 - inspecting plans
    return executor, entry.last, trace


def test_source_of_a_scalar_product() -> None:
    _, compiled, _ = _node(lambda x, a: x * a, np.array(0.3), np.array(0.7))
    fast = build_fast_call(compiled.plan, compiled.arg_sources, compiled.unread)
    lines = fast.source.splitlines()
    assert lines[0] == "def fast_call(seeds, saved):"
    assert lines[1] == "    a0 = seeds[0]"
    assert lines[2].startswith("    if type(a0) is not ndarray or (a0.shape, a0.strides, a0.dtype)")
    assert "    a1 = saved.get(K1)" in lines and "    a2 = saved.get(K2)" in lines
    assert "    b3 = Ab3(Sb3, Db3)" in lines and "    b4 = Ab4(Sb4, Db4)" in lines
    assert lines[-2] == "    RUN0(ptr(a0), ptr(a1), ptr(a2), ptr(b3), ptr(b4))"
    assert lines[-1] in ("    return [b3, b4]", "    return [b4, b3]")


def test_a_stepless_plan_returns_its_arguments() -> None:
    _, compiled, trace = _node(lambda x, y: x + y, np.ones(3), np.ones(3))
    fast = build_fast_call(compiled.plan, compiled.arg_sources, compiled.unread)
    assert "RUN" not in fast.source and fast.source.endswith("    return [a0, a0]\n")
    seed = np.full(3, 2.0)
    results = fast.function([seed], trace.saved_values)
    assert results is not None and [r is seed for r in results] == [True, True]
    assert fast.function([seed], {}) is None  # the unread inputs still fix the types
    for bad in (np.ones(3, np.float32), np.ones(4), [1.0, 1.0, 1.0], 1.0, None):
        changed = {**trace.saved_values, next(iter(trace.saved_values)): bad}
        assert fast.function([seed], changed) is None  # an unread input of another type


def test_library_calls_and_threaded_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    from tidu_compile.compiler import parallel

    _, compiled, trace = _node(lambda x, w: x @ w, np.ones((2, 3)), np.ones((3, 4)))
    fast = build_fast_call(compiled.plan, compiled.arg_sources, compiled.unread)
    # both contractions inline: numpy's matmul into the allocated output
    assert "    MM0(" in fast.source and "    MM1(" in fast.source and "LIB" not in fast.source
    results = fast.function([np.ones((2, 4))], trace.saved_values)
    assert results is not None
    np.testing.assert_array_equal(results[0], np.full((2, 3), 4.0))
    np.testing.assert_array_equal(results[1], np.full((3, 4), 2.0))
    monkeypatch.setattr(parallel, "PARALLEL_WORK", 1)
    _, compiled, trace = _node(tc.function(lambda x: tc.exp(x) * x), np.ones((4, 4)))
    fast = build_fast_call(compiled.plan, compiled.arg_sources, compiled.unread)
    assert "CHUNKS0([" in fast.source and "RUN0(" not in fast.source
    results = fast.function([np.ones((4, 4))], trace.saved_values)
    assert results is not None
    np.testing.assert_allclose(results[0], np.full((4, 4), 2.0 * np.e), rtol=1e-15)


def test_a_reshape_between_contractions_runs_inline_as_a_view() -> None:
    """``reshape(x @ w, ...) @ v``: its backward reshapes between two contractions;
    the fast call reshapes in place (no library call) and gives the general results."""
    w, v = np.arange(12.0).reshape(3, 4) / 7, np.arange(6.0).reshape(2, 3) / 5
    f = tc.function(lambda x, w, v: tc.reshape(x @ w, (4, 2)) @ v)
    _, compiled, trace = _node(f, np.ones((2, 3)), w, v)
    fast = build_fast_call(compiled.plan, compiled.arg_sources, compiled.unread)
    assert ".reshape(S" in fast.source and "LIB" not in fast.source
    seed = np.ones((4, 3))
    results = fast.function([seed], trace.saved_values)
    general = compiled.plan.run([seed if key is None else trace.saved_values[key]
                                 for _, key in compiled.arg_sources])  # fmt: skip
    assert results is not None
    for got, want in zip(results, general, strict=True):
        np.testing.assert_array_equal(got, want)


def _mismatches(good: np.ndarray) -> list[Any]:
    raw = np.zeros(good.nbytes + 8, np.uint8)
    unaligned = raw[1 : 1 + good.nbytes].view(good.dtype).reshape(good.shape)
    unaligned[...] = good
    return [
        good.astype(np.float32),  # dtype
        np.ones(good.size + 1),  # shape
        np.ones(2 * good.size)[::2],  # strides
        good.astype(good.dtype.newbyteorder(">")),  # byte order
        unaligned,  # alignment
        list(good),  # not an array
        None,  # missing
    ]


def test_any_layout_difference_returns_none() -> None:
    x, y = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 5)
    _, compiled, trace = _node(lambda x, y: tc.sin(x) * y, x, y)
    fast = compiled.fast
    saved = dict(trace.saved_values)
    seed = np.full(5, 0.5)
    want = compiled.plan.run([seed if k is None else saved[k] for _, k in compiled.arg_sources])
    got = fast([seed], saved)
    assert got is not None
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    for bad in _mismatches(seed):
        assert fast([bad], saved) is None
    for key in saved:
        for bad in _mismatches(saved[key]):
            changed = {**saved, key: bad}
            if bad is None:
                del changed[key]
            reads = {k for _, k in compiled.arg_sources} | {k for k, _, _ in compiled.unread}
            if key in reads:
                assert fast([seed], changed) is None, (key, bad)


def test_the_executor_leaves_the_fast_path_when_types_change() -> None:
    reference = tc.ReferenceExecutor()
    executor = CompiledExecutor(False)
    for dtype in (np.float64, np.float32, np.float64):
        x = tc.tensor(np.linspace(0.1, 1.0, 6).astype(dtype), requires_grad=True)
        loss = tc.sum(tc.sin(x) * x)
        (got,) = tc.grad(loss, [x], executor=executor)
        (want,) = tc.grad(loss, [x], executor=reference)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13)

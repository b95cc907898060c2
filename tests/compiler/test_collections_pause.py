"""``fewer_collections``: the young-generation threshold is raised while a program
compiles, nested blocks share it, and the caller's setting comes back."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.collections_pause import COMPILE_GC_THRESHOLD, fewer_collections
from tidu_compile.compiler import pipeline
from tidu_compile.executors.compiled import CompiledExecutor


def test_the_threshold_is_raised_inside_and_restored_after() -> None:
    before = gc.get_threshold()
    gc.set_threshold(123, before[1], before[2])
    try:
        with fewer_collections():
            assert gc.get_threshold()[0] == COMPILE_GC_THRESHOLD
            with fewer_collections():
                assert gc.get_threshold()[0] == COMPILE_GC_THRESHOLD
            assert gc.get_threshold()[0] == COMPILE_GC_THRESHOLD
        assert gc.get_threshold() == (123, before[1], before[2])
    finally:
        gc.set_threshold(*before)


def test_a_compile_runs_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    walk = pipeline.walk

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_threshold()[0])
        return walk(*args, **kwargs)

    monkeypatch.setattr(pipeline, "walk", spy)
    x = tc.tensor(np.linspace(0.1, 1.0, 16), requires_grad=True)
    with tc.use_executor(CompiledExecutor(False, background=False)):
        tc.grad(tc.sum(tc.exp(x) * x), [x])
    assert seen and all(t >= COMPILE_GC_THRESHOLD for t in seen)
    assert gc.get_threshold()[0] < COMPILE_GC_THRESHOLD


def test_a_first_fused_call_traces_and_builds_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first ``func.value_and_grad`` call of a ``@tc.function`` traces it and builds
    its fused program (graphs of many young objects) inside the block too."""
    from tidu_compile import composite_grad, func
    from tidu_compile.frontend import composite_function

    seen: dict[str, int] = {}
    build, trace = composite_grad.build_fused, composite_function._trace

    def spy_build(*args: Any) -> Any:
        seen["build"] = gc.get_threshold()[0]
        return build(*args)

    def spy_trace(*args: Any) -> Any:
        seen["trace"] = gc.get_threshold()[0]
        return trace(*args)

    monkeypatch.setattr(composite_grad, "build_fused", spy_build)
    monkeypatch.setattr(composite_function, "_trace", spy_trace)

    @tc.function
    def loss(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.tanh(x) * x)

    with tc.use_executor(CompiledExecutor(False, background=False)):
        func.value_and_grad(loss)(np.linspace(0.1, 1.0, 16))
    assert seen == {"build": COMPILE_GC_THRESHOLD, "trace": COMPILE_GC_THRESHOLD}
    assert gc.get_threshold()[0] < COMPILE_GC_THRESHOLD

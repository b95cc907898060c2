"""The forward of a traced ``@tc.function`` as one compiled program (``composite_forward``).

After the trace, a call runs the traced graph on the current executor: compiled on a
``CompiledExecutor``, numpy op by op on the ``ReferenceExecutor``. Both must save the
same values on the tape (outputs and retained values) for every workload and example;
the compiled forward is cached (a later call compiles nothing), never falls back, and
checks integer indices before any native code runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tidu_compile.tools.bench import workloads as bench
from tidu_compile.tools.bench.row import Workload
from tidu_compile.tools.bench.workloads_indexing import make_w5, make_w6
from tidu_compile.tools.examples import EXAMPLES

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


@pytest.fixture
def executor() -> Iterator[None]:  # this module picks its executors itself
    yield None


def _workload_case(workload: Workload) -> tuple[Callable[..., Any], Callable[[int], list]]:
    def make(seed: int) -> list[tc.Tensor]:
        arrays = workload.make_inputs(seed)
        return [tc.tensor(a, requires_grad=i in workload.grad_inputs)
                for i, a in enumerate(arrays)]  # fmt: skip

    return workload.tidu_loss, make


def _example_case(name: str, dtype: type) -> tuple[Callable[..., Any], Callable[[int], list]]:
    example = EXAMPLES[name]

    def make(seed: int) -> list[tc.Tensor]:
        arrays = example.make_inputs(np.random.default_rng(seed), dtype)
        return [tc.tensor(a, requires_grad=True) for a in arrays]

    return tc.function(example.function), make


#: The scan examples (four programs each, ~5 s cold): tests/frontend/test_loop_examples.py
#: checks them, and tests/frontend/test_control_flow.py scans inside a @tc.function.
LOOP_EXAMPLES = ("gru_language_model", "neural_ode")

CASES = {
    "W1 f64": lambda: _workload_case(bench.make_w1(1000, composite=True)),
    "W1 f32": lambda: _workload_case(bench.make_w1(1000, composite=True, dtype="float32")),
    "W2": lambda: _workload_case(bench.make_w2(40, composite=True)),
    "W3 f32": lambda: _workload_case(bench.make_w3("float32", 16, 12, 8, 3, composite=True)),
    "W3 f64": lambda: _workload_case(bench.make_w3("float64", 16, 12, 8, 3, composite=True)),
    "W4": lambda: _workload_case(bench.make_w4(20, 30, composite=True)),
    "W5": lambda: _workload_case(make_w5(32, 16, 5, composite=True)),
    "W6": lambda: _workload_case(make_w6(2, 4, composite=True)),
    **{f"example {name} {np.dtype(d).name}": (lambda name=name, d=d: _example_case(name, d))
       for name in sorted(EXAMPLES) if name not in LOOP_EXAMPLES for d in (np.float32, np.float64)},
}  # fmt: skip


def _saved(loss: tc.Tensor) -> dict[Any, np.ndarray]:
    """What the tape saved for the loss's node (inputs, outputs, retained), by key."""
    assert loss._trace is not None
    return {k: np.asarray(v) for k, v in loss._trace.saved_values.items()}


def _close(got: np.ndarray, want: np.ndarray, single: bool) -> None:
    """Equal up to rounding: relative to the largest magnitude, 1e-4 when the values
    come from single precision (f32 math functions differ from numpy's by ulps)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    single = single or got.dtype in (np.float32, np.complex64)
    scale = float(np.max(np.abs(want), initial=0.0)) or 1.0
    error = float(np.max(np.abs(got - want), initial=0.0)) / scale
    assert error <= (1e-4 if single else 1e-11), error


@pytest.mark.parametrize("joint", [False, True], ids=["forward", "joint"])
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_forward_saves_what_numpy_saves(case: str, joint: bool, tmp_path: Path) -> None:
    """The forward program saves what numpy saves, and so does the joint forward
    (``frontend.joint_forward``: the loss's gradient computed with it) once its node's
    values are filled in for the general path; the gradients are the reference's."""
    function, make = CASES[case]()
    compiled = CompiledExecutor(tmp_path, joint_forward=joint)

    def wrt(tensors: list[tc.Tensor]) -> list[tc.Tensor]:
        return [t for t in tensors if t.requires_grad]

    with tc.use_executor(compiled):
        first = make(0)
        loss = function(*first)  # traced, then one program compiled and run
        assert compiled.stats.compiles == 1
        if joint:  # the gradients came with the forward: the backward compiles nothing
            tc.grad(loss, wrt(first))
            assert compiled.stats.compiles == 1
        compiled.forbid_compile = True  # the cache serves the next calls
        inputs = make(1)
        loss = function(*inputs)
        grads = tc.grad(loss, wrt(inputs), retain_graph=True) if joint else None
        compiled.forbid_compile = False
        if joint:  # what the general path keeps, by the forward program (compiled now)
            assert loss._trace is not None and loss._trace.precomputed is not None
            loss._trace.precomputed.fill(loss._trace)
        got = _saved(loss)
    with tc.use_executor(tc.ReferenceExecutor()):
        want = _saved(function(*inputs))
    assert got.keys() == want.keys()
    single = "f32" in case or "float32" in case
    for key, w in want.items():
        _close(got[key], w, single)
    if grads is None:
        grads = tc.grad(loss, wrt(inputs), executor=compiled)
    reference = tc.grad(loss, wrt(inputs), executor=tc.ReferenceExecutor())
    for g, r in zip(grads, reference, strict=True):
        _close(g, r, single)
    assert compiled.stats.joint_runs == (2 if joint else 0)
    assert compiled.stats.fallbacks == 0 and not compiled.stats.errors, compiled.stats.errors


def test_complex_forward_is_compiled() -> None:
    @tc.function
    def f(z: tc.Tensor, w: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.real(z * tc.conj(w) + z * z) ** 2 + tc.imag(w - z))

    rng = np.random.default_rng(3)
    for dtype in (np.complex64, np.complex128):
        def make(seed: int, dtype: type = dtype) -> list[tc.Tensor]:
            rng = np.random.default_rng(seed)
            return [tc.tensor((rng.standard_normal(9) + 1j * rng.standard_normal(9)).astype(dtype),
                              requires_grad=True) for _ in range(2)]  # fmt: skip

        compiled = CompiledExecutor(False)
        with tc.use_executor(compiled):
            f(*make(0))
            inputs = make(1)
            got = f(*inputs)
        assert compiled.stats.compiles == 1 and compiled.stats.fallbacks == 0
        with tc.use_executor(tc.ReferenceExecutor()):
            want = f(*inputs)
        _close(got.numpy(), want.numpy(), False)
    del rng


def _picked(labels_shape: tuple[int, ...] = (6,)) -> Callable[..., tc.Tensor]:
    @tc.function
    def picked(x: tc.Tensor, labels: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.exp(x)[np.arange(6), tc.reshape(labels, (6,))])

    return picked


def test_bad_labels_raise_before_any_native_call() -> None:
    picked = _picked()
    x = tc.tensor(np.random.default_rng(0).standard_normal((6, 4)), requires_grad=True)
    compiled = CompiledExecutor(False)
    with tc.use_executor(compiled):
        picked(x, tc.tensor(np.array([[0, 1, 2], [3, 0, 1]])))  # traced (a reshape inside)
        good = picked(x, tc.tensor(np.array([[3, -4, 2], [-1, 0, 1]])))
        np.testing.assert_allclose(
            good.item(), np.exp(x.numpy())[np.arange(6), [3, -4, 2, -1, 0, 1]].sum(), rtol=1e-13
        )
        before = (compiled.stats.compiles, compiled.stats.memory_hits)
        for bad in (4, -5, 1 << 40):
            labels = tc.tensor(np.array([[0, 1, 2], [3, bad, 1]]))
            with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 1"):
                picked(x, labels)
        assert (compiled.stats.compiles, compiled.stats.memory_hits) == before  # no run


def test_an_index_computed_from_floats_replays_with_numpy() -> None:
    @tc.function
    def best(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(x[np.arange(5), tc.argmax(x * 2.0, axis=1)])

    compiled = CompiledExecutor(False)
    rng = np.random.default_rng(1)
    with tc.use_executor(compiled):
        best(tc.tensor(rng.standard_normal((5, 3)), requires_grad=True))
        x = tc.tensor(rng.standard_normal((5, 3)), requires_grad=True)
        loss = best(x)
    assert compiled.stats.compiles == 0  # the forward ran with numpy: nothing to check first
    assert loss.item() == pytest.approx(x.numpy().max(axis=1).sum(), rel=1e-14)


def test_the_tracing_call_gives_the_values_of_every_later_call() -> None:
    @tc.function
    def f(x: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.sqrt(tc.cos(x) ** 2 + 1.0) * tc.tanh(x))

    x = tc.tensor(np.random.default_rng(4).standard_normal(999).astype(np.float32),
                  requires_grad=True)  # fmt: skip
    with tc.use_executor(CompiledExecutor(False)):
        first, second = f(x), f(x)  # traced, then replayed: one program computes both
    assert first.numpy().tobytes() == second.numpy().tobytes()

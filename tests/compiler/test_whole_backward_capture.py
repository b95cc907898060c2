"""Whole-backward capture: a tape whose structure was seen before runs as one program.

The first backward of a structure runs node by node; from the second on, the tape's
node programs spliced into one (``compiler.tape_program``) run instead, compiled once
(``executors.capture``). Its results are the per-node path's (the same instructions,
the same order of additions) up to the rounding of operations fused across node
boundaries, which LLVM may contract and reorder as inside one node: within a few ulps
(``_same``), on the bench's workloads and the train workload, in sequences of tapes
that differ in one op or one batch size, and with retain_graph, ``inputs=``,
``retain_grad()``, in-place changes and ``.grad`` accumulation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from tidu_compile.tools.bench.row import Workload
from tidu_compile.tools.bench.workloads import make_w1, make_w2, make_w3, make_w4
from tidu_compile.tools.bench.workloads_indexing import make_w5, make_w6

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

WORKLOADS = [
    make_w1(300),
    make_w1(300, dtype="float32"),
    make_w2(12),
    make_w3("float64", batch=6, features=5, hidden=4, outputs=3),
    make_w3("float32", batch=6, features=5, hidden=4, outputs=3),
    make_w4(7, 5),
    make_w5(rows=12, features=6, classes=4),
    make_w6(batch=3, size=4),
]


#: One disk cache for the module: the per-node executors' node programs compile once.
CACHE: list = []


@pytest.fixture(autouse=True)
def _shared_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    if not CACHE:
        CACHE.append(tmp_path_factory.mktemp("capture-cache"))


def _executor(capture: bool = True) -> CompiledExecutor:
    return CompiledExecutor(CACHE[0], background=False, capture=capture)


def _gradients(workload: Workload, executor: tc.BackwardExecutor, seed: int) -> list:
    arrays = workload.make_inputs(seed)
    tensors = [tc.tensor(a, requires_grad=i in workload.grad_inputs)
               for i, a in enumerate(arrays)]  # fmt: skip
    wrt = [tensors[i] for i in workload.grad_inputs]
    return tc.grad(workload.tidu_loss(*tensors), wrt, executor=executor)


#: Ulps of difference allowed between the captured and the per-node results.
ULPS = 64


def _same(got: list, expected: list) -> bool:
    """Equal dtypes and values within ``ULPS`` ulps of the largest magnitude."""
    for g, e in zip(got, expected, strict=True):
        if g is None or e is None:
            if g is not e:
                return False
            continue
        scale = np.finfo(e.dtype).eps * ULPS * max(1.0, float(np.abs(e).max(initial=0)))
        if g.dtype != e.dtype or g.shape != e.shape or not np.allclose(g, e, 0, scale):
            return False
    return True


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.key)
def test_captured_workloads_match_the_per_node_path(workload: Workload) -> None:
    captured, per_node = _executor(), _executor(capture=False)
    for seed in range(3):  # seed 0: node by node; 1, 2: the captured program
        got = _gradients(workload, captured, seed)
        assert _same(got, _gradients(workload, per_node, seed)), seed
    assert captured.stats.captured == 1 and captured.stats.captured_runs == 2
    assert captured.stats.fallbacks == 0 and per_node.stats.captured == 0


def _mlp_step(executor: tc.BackwardExecutor, batch: int, seed: int, act: str = "tanh") -> list:
    """One step of the train workload (784-256-10 scaled down): ``loss.backward()``."""
    rng = np.random.default_rng(seed)
    params = [tc.tensor(rng.standard_normal(s).astype(np.float32) * 0.1, requires_grad=True)
              for s in ((12, 8), (8,), (8, 3), (3,))]  # fmt: skip
    x = tc.tensor(rng.standard_normal((batch, 12)).astype(np.float32))
    labels = rng.integers(0, 3, batch)
    w1, b1, w2, b2 = params
    hidden = getattr(tc, act)(x @ w1 + b1)
    logits = hidden @ w2 + b2
    shifted = logits - tc.tensor(logits.numpy().max(axis=1, keepdims=True))
    log_probs = shifted - tc.log(tc.sum(tc.exp(shifted), axis=1, keepdims=True))
    loss = -tc.mean(log_probs[np.arange(batch), labels])
    with tc.use_executor(executor):
        loss.backward()
    return [p.grad for p in params]


# Tapes that differ in one op (tanh/sin), in the batch size, and one repeated: each
# step's gradients against the reference executor and the per-node path.
SEQUENCE = [(8, "tanh"), (8, "tanh"), (8, "sin"), (8, "tanh"), (5, "tanh"), (8, "sin"),
            (5, "tanh"), (8, "sin"), (8, "tanh"), (5, "sin"), (5, "sin")]  # fmt: skip


def test_sequences_of_tapes_through_one_executor_match_the_reference() -> None:
    captured, per_node = _executor(), _executor(capture=False)
    reference = tc.ReferenceExecutor()
    for step, (batch, act) in enumerate(SEQUENCE):
        got = _mlp_step(captured, batch, step, act)
        assert _same(got, _mlp_step(per_node, batch, step, act)), step
        expected = _mlp_step(reference, batch, step, act)
        pairs = zip(got, expected, strict=True)
        assert all(np.allclose(g, e, rtol=1e-5, atol=1e-6) for g, e in pairs)
    # Four structures (the batch size is one of the gather's parameters), each run node by
    # node the first time it is met and by its one captured program from then on.
    assert captured.stats.captured == len(set(SEQUENCE)) and captured.stats.fallbacks == 0
    assert captured.stats.captured_runs == len(SEQUENCE) - len(set(SEQUENCE))


def _loss(w: tc.Tensor, b: tc.Tensor, x: np.ndarray) -> tuple[tc.Tensor, tc.Tensor]:
    hidden = tc.tanh(tc.tensor(x) @ w + b)
    return tc.sum(hidden * hidden), hidden


def _leaves(seed: int = 0) -> tuple[tc.Tensor, tc.Tensor, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = tc.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = tc.tensor(rng.standard_normal(3), requires_grad=True)
    return w, b, rng.standard_normal((5, 4))


def _warm(executor: CompiledExecutor) -> None:
    """Two backward passes of ``_loss``'s structure: the next one runs captured."""
    for seed in range(2):
        w, b, x = _leaves(seed)
        loss, hidden = _loss(w, b, x)
        hidden.retain_grad()
        with tc.use_executor(executor):
            loss.backward()
        loss, _ = _loss(w, b, x)
        with tc.use_executor(executor):
            loss.backward(inputs=[w])


def test_retain_graph_accumulation_retain_grad_and_inputs() -> None:
    results = {}
    for capture in (True, False):
        executor = _executor(capture)
        _warm(executor)
        w, b, x = _leaves(7)
        loss, hidden = _loss(w, b, x)
        hidden.retain_grad()
        with tc.use_executor(executor):
            loss.backward(retain_graph=True)
            loss.backward()  # accumulates into .grad; frees the saved values
            with pytest.raises(RuntimeError, match="second time"):
                loss.backward()
        w2, b2, x2 = _leaves(8)
        loss2, _ = _loss(w2, b2, x2)
        with tc.use_executor(executor):
            loss2.backward(inputs=[w2])
        assert b2.grad is None
        results[capture] = [w.grad, b.grad, hidden.grad, w2.grad]
        if capture:
            assert executor.stats.captured_runs >= 3
    assert _same(results[True], results[False])
    w, b, x = _leaves(7)
    np.testing.assert_allclose(results[True][0], 2 * tc.grad(_loss(w, b, x)[0], [w])[0])


def test_a_value_changed_in_place_still_raises_once_captured() -> None:
    executor = _executor()
    _warm(executor)
    w, b, x = _leaves(3)
    loss, _ = _loss(w, b, x)
    with tc.no_grad():
        w -= 0.1  # w's data was saved by the matmul node
    with tc.use_executor(executor), pytest.raises(RuntimeError, match="inplace"):
        loss.backward()


def test_create_graph_runs_node_by_node_and_differentiates_again() -> None:
    executor = _executor()
    _warm(executor)
    runs = executor.stats.captured_runs
    w, b, x = _leaves(4)
    loss, _ = _loss(w, b, x)
    (gw,) = tc.grad(loss, [w], executor=executor, create_graph=True)
    (ggw,) = tc.grad(tc.sum(gw * gw), [w], executor=executor)
    assert executor.stats.captured_runs == runs  # create_graph: per node, recorded
    reference = tc.ReferenceExecutor()
    loss, _ = _loss(w, b, x)
    (rw,) = tc.grad(loss, [w], executor=reference, create_graph=True)
    (rrw,) = tc.grad(tc.sum(rw * rw), [w], executor=reference)
    np.testing.assert_allclose(ggw, rrw, rtol=1e-12)


def test_capture_off_and_a_subclass_that_runs_nodes_itself() -> None:
    class Counting(CompiledExecutor):
        runs = 0

        def run_transposed_linear(self, *args: object, **kwargs: object) -> list:
            Counting.runs += 1
            return super().run_transposed_linear(*args, **kwargs)  # type: ignore[arg-type]

    off, counting = _executor(capture=False), Counting(CACHE[0], background=False)
    for executor in (off, counting):
        _warm(executor)
        assert executor.capture is None and executor.stats.captured == 0
    assert Counting.runs > 0


def test_a_tape_past_max_nodes_runs_node_by_node_without_a_structure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tape of more than ``MAX_NODES`` nodes is left to the per-node path before its
    structure (a walk over every node) is built; its gradient is the per-node one."""
    from tidu_compile.executors import capture

    def no_structure(*args: object) -> None:
        raise AssertionError("the structure of a tape past MAX_NODES was built")

    monkeypatch.setattr(capture, "_tape", no_structure)
    executor = _executor()
    x = tc.tensor(np.linspace(-1.0, 1.0, 5), requires_grad=True)
    for _ in range(2):  # a structure is captured from its second backward
        h = x
        for _ in range(capture.MAX_NODES // 2 + 1):
            h = tc.tanh(h) * 0.9
        (gx,) = tc.grad(tc.sum(h), [x], executor=executor)
    (want,) = tc.grad(tc.sum(h), [x], executor=tc.ReferenceExecutor())
    np.testing.assert_allclose(gx, want, rtol=1e-12)
    assert executor.stats.captured == 0


def test_a_leaf_read_by_three_nodes_gets_one_summed_result() -> None:
    """``x`` used by three nodes: the program adds its three cotangents (two ``Add``
    instructions) and returns the sum, the only result."""
    executor = _executor()
    for seed in range(2):
        x = tc.tensor(np.random.default_rng(seed).standard_normal(6), requires_grad=True)
        (gx,) = tc.grad(tc.sum(tc.exp(x) * x + tc.sin(x)), [x], executor=executor)
    assert executor.capture is not None
    (layout,) = executor.capture.layouts.values()
    (captured,) = layout.plans.values()
    assert captured.results == (("leaf", 0),) and executor.stats.captured_runs == 1
    value = x.numpy()
    np.testing.assert_allclose(gx, np.exp(value) * (value + 1) + np.cos(value), rtol=1e-13)


def test_background_capture_takes_over_once_compiled() -> None:
    executor = CompiledExecutor(False, background=True)  # memory only: the workers compile
    workload = WORKLOADS[3]
    per_node = _executor(capture=False)
    step: Callable[[int], list] = lambda seed: _gradients(workload, executor, seed)  # noqa: E731
    for seed in range(2):
        assert _same(step(seed), _gradients(workload, per_node, seed))
    assert executor.wait_for_background(timeout=300)
    for seed in range(2, 4):
        assert _same(step(seed), _gradients(workload, per_node, seed))
    assert executor.stats.captured == 1 and executor.stats.captured_runs >= 1

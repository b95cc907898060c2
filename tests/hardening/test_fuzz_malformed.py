"""Fuzzing with malformed inputs: odd layouts must give right answers, bad values must
raise a specific error, and nothing may crash the process or poison the executor.

Runs ``TRIALS_PER_RUN`` seeded trials (``TIDU_FUZZ_SCALE`` multiplies the count, see
``fuzz_report``). Each trial picks a recorded node (``fuzz_inputs.NODES``) and one of:

* ``layout``: valid values in odd layouts (strided, reversed, big-endian, Fortran,
  unaligned, read-only, numpy scalars) as saved data and seeds: the compiled gradients
  must equal the reference gradients of clean copies;
* ``seed``: a malformed seed to ``grad``, ``backward`` or ``Tensor.backward``;
* ``direct``: ``run_transposed_linear`` called with malformed cotangents, a wrong count,
  missing or mistyped saved data. When the reference raises, the compiled executor must
  raise too; when it does not, both must agree;
* ``graph`` / ``tensor``: misuse of ``GraphBuilder``, ``RecordedGraph``, ``Recorder`` and
  ``tensor``.

Errors must be one of ``ALLOWED_ERRORS`` with a message naming what is wrong. Every
few trials a clean call checks that the executor still works without recompiling.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fuzz_inputs import (
    ALLOWED_ERRORS,
    LAYOUTS,
    NODES,
    Node,
    layout,
    malformed,
    message_names,
    node_arrays,
)
from fuzz_report import FuzzCounts, case_count, first_seed, timeout_seconds

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.eager import EagerInput, Recorder, Trace
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.graph import GraphBuilder, Linearized, Local, Primary

WORDS = ("seed", "cotangent", "saved", "input", "output", "shape", "dtype", "expected",
         "slot", "key", "graph", "tensor", "data", "role", "mask", "id")  # fmt: skip


class Finding(Exception):
    """A wrong answer or an unexpected exception."""


def expect_error(call: Callable[[], Any], words: tuple[str, ...] = WORDS) -> BaseException:
    try:
        call()
    except ALLOWED_ERRORS as error:
        if not message_names(error, words):
            raise Finding(f"{type(error).__name__} does not name the argument: {error}") from None
        return error
    except Exception as error:  # noqa: BLE001
        raise Finding(f"unexpected {type(error).__name__}: {error}") from error
    raise Finding("no error raised")


def close(a: Any, b: Any, dtype: np.dtype) -> bool:
    tol = 1e-4 if np.dtype(dtype).name in ("float32", "complex64") else 1e-10
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True))


def record(node: Node, x: np.ndarray, c: Any) -> tuple[tc.Tensor, tc.Tensor]:
    leaf = tc.tensor(x, requires_grad=True)
    return leaf, node.function(leaf, tc.Tensor(c) if isinstance(c, np.ndarray) else c)


def trial_layout(rng: np.random.Generator, node: Node, ex: CompiledExecutor) -> None:
    dtype = str(rng.choice(["float32", "float64"]))
    x, c = node_arrays(node, rng, dtype)
    leaf, y = record(node, x, c)
    seed = rng.standard_normal(y.shape).astype(y.dtype)
    expected = tc.grad(y, [leaf], seed=seed, executor=tc.ReferenceExecutor())[0]
    kinds = [str(k) for k in rng.choice(LAYOUTS, 2)]
    odd_c = layout(c, kinds[0])
    if not isinstance(odd_c, np.ndarray):
        odd_c = c
    leaf2, y2 = record(node, x, odd_c)
    odd_seed = layout(seed, kinds[1])
    got = tc.backward(y2._key, y2._trace, odd_seed, ex).get(leaf2._key)
    if not close(got, expected, x.dtype):
        raise Finding(f"layouts {kinds}: {got} != {expected}")


def trial_seed(rng: np.random.Generator, node: Node, ex: CompiledExecutor) -> None:
    x, c = node_arrays(node, rng, "float64")
    leaf, y = record(node, x, c)
    bad, what = malformed(rng, y.numpy())
    api = int(rng.integers(3))
    if api != 1:  # grad and .backward cast a seed of the right shape (same_kind)
        try:
            array = np.asarray(1.0 if bad is None and y.shape == () else bad)  # the default
            valid = array.shape == y.shape and np.can_cast(array.dtype, y.dtype, "same_kind")
        except Exception:  # noqa: BLE001
            valid = False
        if valid and api == 2:
            with tc.use_executor(ex):
                y.backward(bad, retain_graph=True)  # the expected grad below reads it again
            got = leaf.grad
        elif valid:
            got = tc.grad(y, [leaf], seed=bad, executor=ex)[0]
        if valid:
            seed = np.asarray(1.0 if bad is None else bad, dtype=y.dtype)
            expected = tc.grad(y, [leaf], seed=seed, executor=tc.ReferenceExecutor())[0]
            if not close(got, expected, x.dtype):
                raise Finding(f"grad with a {what} seed: {got} != {expected}")
            return
        if api == 0:
            expect_error(lambda: tc.grad(y, [leaf], seed=bad, executor=ex), ("seed",))
        else:
            with tc.use_executor(ex):
                expect_error(lambda: y.backward(bad), ("seed",))
    else:
        expect_error(lambda: tc.backward(y._key, y._trace, bad, ex), ("seed",))


def direct_call(ex: tc.BackwardExecutor, trace: Trace, cts: list, saved: dict) -> list:
    linear = ex.linearize_recorded_graph(trace.graph, [0], None)
    forward = ex.execute_forward(linear.primitive_graph, saved)
    return ex.run_transposed_linear(linear, cts, forward, None)


def trial_direct(rng: np.random.Generator, node: Node, ex: CompiledExecutor) -> None:
    x, c = node_arrays(node, rng, "float64")
    leaf, y = record(node, x, c)
    trace = y._trace
    if trace is None or len(trace.output_keys) != 1:
        return
    seed = rng.standard_normal(y.shape)
    saved = dict(trace.saved_values)
    cts: list[Any] = [seed]
    mode = int(rng.integers(4))
    if mode == 0:
        cts = [malformed(rng, seed)[0]]
    elif mode == 1:
        cts = [seed] * int(rng.choice([0, 2, 3]))
    elif mode == 2 and saved:
        saved.pop(list(saved)[int(rng.integers(len(saved)))])
    elif saved:
        key = list(saved)[int(rng.integers(len(saved)))]
        saved[key] = malformed(rng, np.asarray(saved[key]))[0]
    try:
        expected: Any = direct_call(tc.ReferenceExecutor(), trace, cts, saved)
    except ALLOWED_ERRORS:
        expected = None
    except Exception as error:  # noqa: BLE001
        raise Finding(f"reference: unexpected {type(error).__name__}: {error}") from error
    if expected is None and mode < 2:  # malformed cotangents: the compiled path must refuse
        expect_error(lambda: direct_call(ex, trace, cts, saved))
        return
    try:
        got = direct_call(ex, trace, cts, saved)
    except ALLOWED_ERRORS as error:
        if not message_names(error, WORDS):
            raise Finding(f"{type(error).__name__} does not name the argument: {error}") from None
        return  # stricter than the reference is fine
    except Exception as error:  # noqa: BLE001
        raise Finding(f"compiled: unexpected {type(error).__name__}: {error}") from error
    if expected is None:  # bad saved data the node never reads: the answer of clean data
        expected = direct_call(tc.ReferenceExecutor(), trace, cts, dict(trace.saved_values))
    for g, e in zip(got, expected, strict=True):
        if (g is None) != (e is None) or (g is not None and not close(g, e, np.float64)):
            raise Finding(f"direct call: {g} != {e}")


def trial_graph(rng: np.random.Generator, node: Node, ex: CompiledExecutor) -> None:
    builder = GraphBuilder()
    a = builder.add_input(tc.Name("a"))
    bad_ids: list[Any] = [-1, 7, "a", 1.5, None, Local(9), (a,)]
    bad = bad_ids[int(rng.integers(len(bad_ids)))]
    cases: list[Callable[[], Any]] = [
        lambda: builder.add_operation(ops.Exp(), [bad], Primary()),
        lambda: builder.add_operation(ops.Mul(), [a], Primary()),
        lambda: builder.add_operation(ops.Exp(), [a, a], Primary()),
        lambda: builder.add_operation(ops.Mul(), [a, a], Linearized((True,))),
        lambda: builder.add_operation(ops.Exp(), [a], "primary"),
        lambda: builder.set_outputs([bad]),
        lambda: builder.global_key(bad),
        lambda: tc.RecordedGraph.from_primitive(ops.Mul(), [tc.Name("a")]),
        lambda: tc.RecordedGraph.from_primitive(ops.Exp(), []),
        lambda: tc.RecordedGraph.from_primitive(ops.Exp(), [tc.Name("a")]).linearize([bad]),
        lambda: ex.linearize_recorded_graph(
            tc.RecordedGraph.from_primitive(ops.SinCos(), [tc.Name("a")]), [2], None
        ),
        lambda: Recorder().record_graph(
            tc.RecordedGraph.from_primitive(ops.Exp(), [tc.Name("a")]), [], [np.ones(2)]
        ),
        lambda: Recorder().record_graph(
            tc.RecordedGraph.from_primitive(ops.Exp(), [tc.Name("a")]),
            [EagerInput(tc.Input(tc.Name("k")), None, True, np.ones(2))] * 2,
            [np.ones(2)],
        ),
        lambda: tc.backward(tc.Input(tc.Name("nope")), record(node, *node_arrays(
            node, rng, "float64"))[1]._trace, np.ones(()), ex),  # fmt: skip
    ]
    expect_error(cases[int(rng.integers(len(cases)))])


def trial_tensor(rng: np.random.Generator, node: Node, ex: CompiledExecutor) -> None:
    values: list[Any] = [[[1.0], [1.0, 2.0]], [object()], "abc", np.ones(3, np.int64),
                         np.ones(2, bool), np.ones(2, np.float16), {"a": 1}, None,
                         np.ones(2, "datetime64[D]"), b"bytes"]  # fmt: skip
    value = values[int(rng.integers(len(values)))]
    try:
        t = tc.tensor(value, requires_grad=True)
    except ALLOWED_ERRORS as error:
        if not message_names(error, ("tensor", "dtype", "data")):
            raise Finding(f"tensor({value!r}): {error}") from None
        return
    except Exception as error:  # noqa: BLE001
        raise Finding(f"tensor({value!r}): unexpected {type(error).__name__}: {error}") from error
    if t.dtype.name not in ops.DIFFERENTIABLE_DTYPES:
        raise Finding(f"tensor({value!r}, requires_grad=True) made a {t.dtype} tensor")


TRIALS = {"layout": trial_layout, "seed": trial_seed, "direct": trial_direct,
          "graph": trial_graph, "tensor": trial_tensor}  # fmt: skip


def clean_check(ex: CompiledExecutor) -> None:
    """The executor still answers correctly, from its caches (no compile)."""
    node = NODES[0]
    x, c = node_arrays(node, np.random.default_rng(0), "float64")
    leaf, y = record(node, x, c)
    compiles = ex.stats.compiles
    got = tc.grad(tc.sum(y), [leaf], executor=ex)[0]
    if not close(got, c, np.float64) or ex.stats.compiles != compiles:
        raise Finding("the executor no longer works after malformed inputs")


#: Trials per CI run.
TRIALS_PER_RUN = 1500


@pytest.mark.timeout(timeout_seconds(240))
def test_fuzz_malformed_inputs() -> None:
    counts = FuzzCounts("malformed-input fuzzer")
    ex = CompiledExecutor(cache_dir=False)
    node = NODES[0]
    leaf, y = record(node, *node_arrays(node, np.random.default_rng(0), "float64"))
    for _ in range(2):  # warm: clean_check must not compile (the second backward of a
        tc.grad(tc.sum(y), [leaf], executor=ex)  # tape compiles its captured program)
    start, total = first_seed(), case_count(TRIALS_PER_RUN)
    tried: dict[str, int] = dict.fromkeys(TRIALS, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's invalid-value warnings
        for seed in range(start, start + total):
            rng = np.random.default_rng(seed)
            kind = str(rng.choice(list(TRIALS)))
            node = NODES[int(rng.integers(len(NODES)))]
            try:
                TRIALS[kind](rng, node, ex)
                if seed % 25 == 0:
                    clean_check(ex)
            except Finding as finding:
                counts.fail(f"seed {seed} {kind} {node.name}: {finding}")
            except Exception as error:  # noqa: BLE001
                counts.fail(f"seed {seed} {kind} {node.name}: {type(error).__name__}: {error}")
            tried[kind] += 1
            counts.inputs += 1
    counts.programs = len(NODES)
    counts.finish()
    print(counts.line(), tried)
    assert counts.inputs == total
    assert total < 50 or all(n > 0 for n in tried.values()), tried
    assert not counts.failures, "\n".join(counts.failures[:15])

"""Bad and odd inputs at every entry point, one test per item (and per bug found).

Odd-but-valid inputs (0-d, zero-size, non-finite, strided, reversed, big-endian,
Fortran, unaligned, numpy scalars) must give the reference's answer; bad ones must raise
``ValueError``/``TypeError``/``KeyError``/``ADRuleError`` naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from fuzz_inputs import LAYOUTS, layout

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.eager import Trace
from tidu_compile.executors.compiled import CompiledExecutor

EXECUTORS: list[Callable[[], tc.BackwardExecutor]] = [
    tc.ReferenceExecutor, lambda: CompiledExecutor(cache_dir=False)
]  # fmt: skip


@pytest.fixture(params=EXECUTORS, ids=["reference", "compiled"])
def executor(request: pytest.FixtureRequest) -> tc.BackwardExecutor:
    return request.param()  # type: ignore[no-any-return]


def leaf(data: Any) -> tc.Tensor:
    return tc.tensor(np.asarray(data, dtype=np.float64), requires_grad=True)


# ------------------------------------------------------------------ regressions: crashes


def test_zero_d_fan_out_does_not_crash(executor: tc.BackwardExecutor) -> None:
    """np.add of two 0-d cotangents is a numpy *scalar*; its id() once reached a kernel."""
    x = leaf(2.0)
    y = tc.exp(x)
    (g,) = tc.grad(tc.sin(y * y + y), [x], executor=executor)
    e = np.exp(2.0)
    np.testing.assert_allclose(g, np.cos(e * e + e) * (2 * e + 1) * e, rtol=1e-12)


@pytest.mark.parametrize("layout_kind", ["scalar", "bigendian"])
def test_zero_d_seed_of_any_layout(executor: tc.BackwardExecutor, layout_kind: str) -> None:
    """A 0-d big-endian seed once came back 1-d (np.ascontiguousarray makes 0-d 1-d)."""
    x, c = leaf([1.0, 2.0]), leaf(3.0)
    s = tc.sum(x) + c  # Add passes the seed through unchanged
    seed = layout(np.array(2.0), layout_kind)
    grads = tc.backward(s._key, s._trace, seed, executor)
    assert np.shape(grads[c._key]) == () and float(grads[c._key]) == 2.0
    np.testing.assert_array_equal(grads[x._key], [2.0, 2.0])


ZERO_SIZE: list[tuple[str, Callable[[tc.Tensor], tc.Tensor], tuple[int, ...]]] = [
    ("sin", lambda x: tc.sum(tc.sin(x) * 2.0), (0, 3)),
    ("vector", lambda x: tc.sum(tc.exp(x)), (0,)),
    ("matmul", lambda x: tc.sum(x @ np.ones((3, 2))), (0, 3)),
    ("k=0 matmul", lambda x: tc.sum(x @ np.ones((0, 2))), (2, 0)),
    ("reduce to non-empty", lambda x: tc.sum(tc.sum(x, axis=1) * np.arange(3.0)), (3, 0)),
    ("broadcast to empty", lambda x: tc.sum(tc.broadcast_to(x, (3, 0))) + tc.sum(x), (3, 1)),
    ("mean", lambda x: tc.mean(tc.tanh(x), axis=0), (0, 2)),
]


@pytest.mark.parametrize(("name", "function", "shape"), ZERO_SIZE, ids=[z[0] for z in ZERO_SIZE])
def test_zero_size_arrays(
    executor: tc.BackwardExecutor,
    name: str,
    function: Callable[[tc.Tensor], tc.Tensor],
    shape: tuple[int, ...],
) -> None:
    """Zero-extent kernels once read their row range from garbage registers (segfault)."""
    x = tc.tensor(np.ones(shape), requires_grad=True)
    out = function(x)
    seed = np.ones(out.shape)
    (g,) = tc.grad(out, [x], seed=seed, executor=executor)
    (want,) = tc.grad(function(x), [x], seed=seed, executor=tc.ReferenceExecutor())
    assert g.shape == shape and np.array_equal(g, want)


def test_mean_of_nothing_is_nan_like_numpy() -> None:
    x = tc.tensor(np.ones((3, 0)), requires_grad=True)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning, match="empty"):
        assert np.isnan(tc.mean(x).item()) and np.isnan(np.mean(np.ones((3, 0))))
        assert np.all(np.isnan(tc.mean(x, axis=1).numpy()))


# ------------------------------------------------------------------ seeds


@pytest.mark.parametrize("make", [lambda y: tc.sum(y * 2.0), lambda y: y + y, tc.sin],
                         ids=["sum", "add", "sin"])  # fmt: skip
def test_raw_backward_checks_the_seed(executor: tc.BackwardExecutor, make: Callable) -> None:
    """Add's rule passes a seed through: a wrong one once came out as the gradient."""
    x = leaf(np.arange(3.0))
    y = make(x)
    shape = y.shape
    cases: list[tuple[Any, type, str]] = [
        (np.ones((*shape, 2)), ValueError, "seed: shape"),
        (np.ones(shape, np.float32), TypeError, "seed: dtype"),
        (np.ones(shape, np.int64), TypeError, "seed: dtype"),
        (np.ones(shape, np.complex128), TypeError, "seed: dtype"),
        (None, TypeError, "seed"),
        ([1.0, 2.0], TypeError, "seed"),
        ("1", TypeError, "seed"),
    ]
    for seed, error, message in cases:
        with pytest.raises(error, match=message):
            tc.backward(y._key, y._trace, seed, executor)
    ok = tc.backward(y._key, y._trace, layout(np.ones(shape), "reversed"), executor)
    assert ok[x._key].shape == (3,)


def test_frontend_seed_rules(executor: tc.BackwardExecutor) -> None:
    x = leaf(np.arange(3.0))
    y = tc.sin(x)
    with pytest.raises(ValueError, match="seed is required"):
        tc.grad(y, [x], executor=executor)
    with pytest.raises(ValueError, match="seed: shape"):
        tc.grad(y, [x], seed=np.ones(4), executor=executor)
    with pytest.raises(TypeError, match="seed: dtype"):
        tc.grad(y, [x], seed=np.ones(3, complex), executor=executor)
    with pytest.raises(TypeError, match="inputs"):
        tc.grad(y, 3, executor=executor)  # type: ignore[arg-type]
    for odd in LAYOUTS[:-1]:  # every layout of the seed: the same answer
        (g,) = tc.grad(y, [x], seed=layout(np.arange(3.0) + 1.0, odd), executor=executor)
        np.testing.assert_allclose(g, np.cos(np.arange(3.0)) * (np.arange(3.0) + 1.0))


# ------------------------------------------------------------------ saved data in odd layouts


@pytest.mark.parametrize("odd", LAYOUTS[:-1])
def test_saved_data_in_odd_layouts(executor: tc.BackwardExecutor, odd: str) -> None:
    """``Tensor(array)`` does not copy: odd layouts reach the saved data as they are."""
    rng = np.random.default_rng(0)
    c_clean, w_clean = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    x = leaf(rng.standard_normal((4, 3)))

    def loss(c: np.ndarray, w: np.ndarray) -> tc.Tensor:
        return tc.sum(tc.tanh((x * tc.Tensor(c)) @ tc.Tensor(w))) + tc.sum(tc.sin(x) * tc.Tensor(c))

    (want,) = tc.grad(loss(c_clean, w_clean), [x], executor=tc.ReferenceExecutor())
    (got,) = tc.grad(loss(layout(c_clean, odd), layout(w_clean, odd)), [x], executor=executor)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_non_finite_values_flow_through_the_same_kernels() -> None:
    executor = CompiledExecutor(cache_dir=False)
    x = np.array([0.5, -1.0, 2.0, 3.0])

    def grads(data: np.ndarray, ex: tc.BackwardExecutor) -> np.ndarray:
        t = leaf(data)
        return tc.grad(tc.sum(tc.exp(t) * tc.tanh(t) / (t * t + 1.0)), [t], executor=ex)[0]

    for _ in range(2):  # the second: the tape's captured program (executors.capture)
        grads(x, executor)
    compiles, hits = executor.stats.compiles, executor.stats.memory_hits
    for bad in (np.nan, np.inf, -np.inf):
        poisoned = x.copy()
        poisoned[1] = bad
        with np.errstate(all="ignore"):
            got, want = grads(poisoned, executor), grads(poisoned, tc.ReferenceExecutor())
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert np.isfinite(got[[0, 2, 3]]).all()  # IEEE: only the poisoned entry
    assert executor.stats.compiles == compiles and executor.stats.memory_hits > hits


# ------------------------------------------------------------------ types, shapes, arity


def test_integer_and_bool_tensors() -> None:
    for data in ([1, 2], [True, False], np.ones(2, np.float16), "abc"):
        with pytest.raises(TypeError, match="requires_grad=True needs a float or complex"):
            tc.tensor(data, requires_grad=True)
    x = leaf([1.0, 2.0])
    counts = tc.tensor([3, 4])  # an integer constant is promoted, never differentiated
    (gx, gc) = tc.grad(tc.sum(x * counts), [x, counts])
    np.testing.assert_array_equal(gx, [3.0, 4.0])
    assert gc is None
    with pytest.raises(ValueError, match="cannot convert"):
        tc.tensor([[1.0], [1.0, 2.0]])


def test_shape_mismatches_that_numpy_rejects() -> None:
    x = leaf(np.ones(3))
    for call, message in [
        (lambda: x + np.ones(4), r"broadcast together with shapes \(3,\) \(4,\)"),
        (lambda: tc.where(np.ones(4, bool), x, x), r"where: condition of shape \(4,\)"),
        (lambda: x @ np.ones(4), "contracted dimensions differ"),
        (lambda: tc.matmul(tc.broadcast_to(x, (2, 3, 3)), np.ones((4, 3, 3))), "batch"),
        (lambda: tc.broadcast_to(x, (4,)), "cannot broadcast"),
        (lambda: tc.reshape(x, (2, 2)), "cannot reshape"),
        (lambda: tc.transpose(x, (1,)), "out of range"),
        (lambda: tc.transpose(tc.reshape(x, (3, 1)), (0, 3)), "out of range"),
        (lambda: tc.sum(x, axis=0.5), "axis"),
        (lambda: tc.sum(x, axis=1), "axis"),
    ]:
        with pytest.raises((ValueError, TypeError), match=message):
            call()


def test_wrong_arity_and_unknown_slots() -> None:
    with pytest.raises(ValueError, match="takes 2 inputs"):
        ops.Mul().infer_types(ops.TensorType((2,), "float64"))
    with pytest.raises(ValueError, match="inputs"):
        tc.RecordedGraph.from_primitive(ops.Mul(), [tc.Name("a")])
    graph = tc.RecordedGraph.from_primitive(ops.SinCos(), [tc.Name("a")])
    executor = CompiledExecutor(cache_dir=False)
    for slots in ([2], [-1], ["0"]):
        with pytest.raises(ValueError, match="output_slots"):
            executor.linearize_recorded_graph(graph, slots, None)
    assert len(executor._linearizations) == 0  # noqa: SLF001 - nothing bad was cached


class _OneTooMany(CompiledExecutor):
    def run_transposed_linear(self, linear: Any, cts: Sequence, data: Any, ctx: Any) -> list:
        return [*super().run_transposed_linear(linear, cts, data, ctx), None]


def test_executor_returning_the_wrong_number_of_cotangents() -> None:
    x = leaf([1.0, 2.0])
    with pytest.raises(ValueError, match="returned 2 cotangents for a node with 1 inputs"):
        tc.grad(tc.sum(tc.sin(x)), [x], executor=_OneTooMany(cache_dir=False))


def _direct(ex: tc.BackwardExecutor, trace: Trace, cts: list, saved: dict) -> list:
    linear = ex.linearize_recorded_graph(trace.graph, [0], None)
    return ex.run_transposed_linear(linear, cts, ex.execute_forward(linear.primitive_graph,
                                                                     saved), None)  # fmt: skip


def test_direct_executor_calls_are_checked(executor: tc.BackwardExecutor) -> None:
    x, c = leaf(np.arange(4.0)), tc.tensor(np.full(4, 2.0))
    y = tc.sin(x) * c
    trace = y._trace
    assert trace is not None
    seed, saved = np.ones(4), dict(trace.saved_values)
    with pytest.raises(ValueError, match="cotangent_out: expected 1"):
        _direct(executor, trace, [seed, seed], saved)
    with pytest.raises(TypeError, match="cotangent_out"):
        _direct(executor, trace, [None], saved)
    missing = {k: v for k, v in saved.items() if k != trace.graph.input_value_keys[1]}
    with pytest.raises(KeyError, match="saved"):
        _direct(executor, trace, [seed], missing)
    bad = dict(saved)
    bad[trace.graph.input_value_keys[1]] = np.ones(5)
    with pytest.raises((ValueError, TypeError), match="shape|input"):
        _direct(executor, trace, [seed], bad)
    good = _direct(executor, trace, [seed], saved)[0]  # still works afterwards
    np.testing.assert_allclose(good, np.full(4, 2.0))  # d(a * c)/da = c


# ------------------------------------------------------------------ tc.function: stale data


def test_composite_keeps_values_computed_from_arguments_in_the_graph() -> None:
    """reshape/transpose/broadcast/where inside ``tc.function`` once froze trace-time data
    into constants: the next call silently reused the first call's values."""

    @tc.function
    def f(x: tc.Tensor, c: tc.Tensor) -> tc.Tensor:
        y = tc.reshape(tc.sum(x, keepdims=True), (1,))
        z = tc.transpose(tc.reshape(c, (2, 2))) * tc.broadcast_to(y, (2, 2))
        return tc.sum(tc.where(x > 0, z, z * 0.5)) + tc.sum(tc.where(y > 0.0, y, -y))

    def plain(x: tc.Tensor, c: tc.Tensor) -> tc.Tensor:
        return f.__wrapped__(x, c)  # type: ignore[attr-defined, no-any-return]

    rng = np.random.default_rng(1)
    for _ in range(4):  # the first call traces, the others replay
        xd, cd = rng.standard_normal((2, 2)), rng.standard_normal(4)
        x1, x2 = leaf(xd), leaf(xd)
        got, want = f(x1, tc.tensor(cd)), plain(x2, tc.tensor(cd))
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
        (g1,) = tc.grad(got, [x1], executor=tc.ReferenceExecutor())
        (g2,) = tc.grad(want, [x2], executor=tc.ReferenceExecutor())
        np.testing.assert_allclose(g1, g2, rtol=1e-12)
    assert len(f.traces) == 1  # type: ignore[attr-defined]


def test_compiled_executor_is_importable_from_the_package() -> None:
    assert tc.CompiledExecutor is CompiledExecutor
    with pytest.raises(AttributeError):
        tc.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018

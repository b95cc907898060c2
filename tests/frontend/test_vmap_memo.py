"""``vmap``'s memoized traces: a call runs ``f`` only when its key is new.

The key (``frontend.closure_key.call_key``) holds the arguments' shapes and dtypes, their
other leaves by value, the axes, the batch size and what ``f`` reads besides its
arguments. Each test is a sequence of calls through one ``vmap`` (or one ``f``) that
changes one of these between calls; every result must equal the unbatched loop on the
reference executor, so a trace served stale fails. ``traces`` counts the calls that ran
``f``: a repeated call must not.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import batched_transforms, batching, func
from tidu_compile.frontend.closure_key import MAX_ARRAY_ELEMENTS, closure_key

RNG = np.random.default_rng(11)
X = RNG.normal(size=(3, 2))
SCALE = 0.5  # a global the functions below read


@pytest.fixture
def traces(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The traces run during a test (``vmap``'s and ``vmap(grad)``'s), in order; the
    memo starts empty."""
    ran: list[str] = []
    monkeypatch.setattr(batching, "_REPLAYS", OrderedDict())
    for module, name in ((batching, "_trace"), (batched_transforms, "_traced_program")):
        original = getattr(module, name)

        def counted(*args: Any, original: Any = original, name: str = name) -> Any:
            ran.append(name)
            return original(*args)

        monkeypatch.setattr(module, name, counted)
    yield ran


def _loop(f: Any, *args: Any, in_axes: tuple[int | None, ...] | None = None) -> np.ndarray:
    """``f`` on each example, stacked, on the reference executor."""
    in_axes = in_axes or (0,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes, strict=True) if ax is not None)
    with tc.use_executor(tc.ReferenceExecutor()):
        rows = [f(*(a if ax is None else tc.tensor(np.take(a, b, axis=ax))
                    for a, ax in zip(args, in_axes, strict=True))).numpy()
                for b in range(size)]  # fmt: skip
    return np.stack(rows)


def test_a_repeated_call_does_not_trace_and_a_new_signature_does(
    executor: tc.BackwardExecutor, traces: list[str]
) -> None:
    """Batch size, dtype, in_axes and an unmapped Python number each key a trace of
    their own (``0.0`` and ``-0.0`` apart); repeating any of them traces nothing."""
    f = lambda x, k: tc.tanh(tc.sum(x) * SCALE) + 1.0 / (k * tc.exp(tc.sum(x)))  # noqa: E731
    mapped = func.vmap(f, in_axes=(0, None))
    calls = [(X, 2.0), (X, 2.0), (X[:2], 2.0), (X.astype(np.float32), 2.0), (X, 0.0),
             (X, -0.0), (X, 0.0), (X[:2], 2.0)]  # fmt: skip
    for x, k in calls:
        got = mapped(x, k).numpy()
        np.testing.assert_allclose(got, _loop(lambda e, k=k: f(e, k), x), rtol=1e-6)
        assert got.dtype == x.dtype
    assert np.all(mapped(X, -0.0).numpy() < 0) and np.all(mapped(X, 0.0).numpy() > 0)
    assert len(traces) == 5
    columns = func.vmap(f, in_axes=(1, None))  # another vmap of f: another key
    np.testing.assert_allclose(columns(X.T, 2.0).numpy(), mapped(X, 2.0).numpy(), rtol=1e-12)
    assert len(traces) == 6


def test_changed_closures_are_never_served_stale(
    executor: tc.BackwardExecutor, traces: list[str]
) -> None:
    """A closed-over array changed in place, a tensor changed in place (one of equal
    values too: the trace bakes it in as a constant), a rebound number and a rebound
    global each trace anew; unchanged, the trace is reused."""
    global SCALE
    c = np.array([1.0, 2.0])
    bias = tc.tensor(np.array([0.3, -0.1]))
    shift = tc.tensor(np.full(2, 0.25))
    k = 1.5

    def f(x: Any) -> Any:
        return tc.sum(tc.sin(x * c + bias) * shift) * k + SCALE

    mapped = func.vmap(f)
    try:
        for change in (None, "array", None, "tensor", "splat", "number", "global", None):
            if change == "array":
                c[1] = -4.0
            elif change == "tensor":
                bias += 1.0
            elif change == "splat":
                shift.copy_(np.full(2, -2.0))
            elif change == "number":
                k = -0.0
            elif change == "global":
                SCALE = 3.0
            np.testing.assert_allclose(mapped(X).numpy(), _loop(f, X), rtol=1e-12)
    finally:
        SCALE = 0.5
    assert len(traces) == 6  # the first call and the five changes


def test_per_example_gradients_follow_a_changed_closure(
    executor: tc.BackwardExecutor, traces: list[str]
) -> None:
    """``vmap(grad(f))`` (one batched program) keys its trace the same way."""
    w = tc.tensor(np.array([0.5, -0.3]))
    target = tc.tensor(np.array([1.0, 1.0]))

    def loss(w: Any, x: Any) -> Any:
        return tc.sum((tc.tanh(x * w) - target) ** 2)

    per_example = func.vmap(func.grad(loss), in_axes=(None, 0))
    for step in range(3):
        if step == 2:
            target.copy_(np.array([-1.0, 2.0]))
        with tc.use_executor(tc.ReferenceExecutor()):
            expected = np.stack([func.grad(loss)(w, tc.tensor(x)).numpy() for x in X])
        np.testing.assert_allclose(per_example(w, X).numpy(), expected, rtol=1e-12)
    assert traces == ["_traced_program", "_traced_program"]


def test_what_the_key_cannot_compare_traces_at_every_call(traces: list[str]) -> None:
    """A random draw, a user object's state and a large array are outside the key:
    such an ``f`` runs at every call (each draw is new, a changed attribute is seen)."""

    class Model:
        def __init__(self) -> None:
            self.w = tc.tensor(np.array([1.0, 2.0]))

        def __call__(self, x: Any) -> Any:
            return tc.sum(x * self.w)

    model = Model()
    mapped = func.vmap(model)
    first = mapped(X).numpy()
    model.w = tc.tensor(np.array([-1.0, 0.0]))
    np.testing.assert_allclose(mapped(X).numpy(), X @ np.array([-1.0, 0.0]), rtol=1e-12)
    assert not np.allclose(first, mapped(X).numpy())
    noisy = func.vmap(lambda x: x + tc.tensor(np.random.default_rng().normal(size=2)))
    assert not np.allclose(noisy(X).numpy(), noisy(X).numpy())
    large = np.ones(MAX_ARRAY_ELEMENTS + 1)
    assert closure_key(lambda x: x * large[0]) is None
    assert len(traces) == 5


def test_closure_key_compares_by_value_and_identity() -> None:
    """Numbers by type and bits, arrays by bytes, tensors by identity and version."""
    t = tc.tensor(np.ones(2))

    def make(k: Any, a: np.ndarray) -> Any:
        return lambda x: x * k + a + t

    def key(f: Any) -> Any:
        found = closure_key(f)
        assert found is not None
        return found[0]

    a = np.zeros(2)
    assert key(make(1.0, a)) == key(make(1.0, a.copy()))
    assert key(make(0.0, a)) != key(make(-0.0, a))
    assert key(make(1, a)) != key(make(1.0, a)) != key(make(True, a))
    before = key(make(1.0, a))
    t += 1.0
    assert key(make(1.0, a)) != before
    assert closure_key(lambda x: x * tc.tensor(np.random.normal())) is None


def test_tc_vmap_is_func_vmap() -> None:
    assert tc.vmap is func.vmap

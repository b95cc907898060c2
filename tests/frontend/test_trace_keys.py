"""Trace keys of ``@tc.function``: static arguments compare by type and exact value.

A static argument that Python calls equal to another but that computes differently
(``0.0`` and ``-0.0``, ``1`` and ``1.0`` and ``True``, ``np.float32(1)`` and ``1.0``, NaNs
of different payloads) gets a trace of its own; equal ones (two NaNs of one payload, two
equal strings) share one.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


@pytest.fixture(params=["reference", "compiled"])
def executor(request: pytest.FixtureRequest) -> Iterator[tc.BackwardExecutor]:
    """Both executors; the compiled one compiles on the calling thread, so that every
    call runs native code (a kernel compiled for another trace would show)."""
    chosen = (tc.ReferenceExecutor() if request.param == "reference"
              else CompiledExecutor(cache_dir=False, background=False))  # fmt: skip
    with tc.use_executor(chosen), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 1 / 0
        yield chosen


def nan(payload: int, sign: int = 0) -> float:
    """A quiet NaN with ``payload`` in its low mantissa bits."""
    return struct.unpack("<d", struct.pack("<Q", sign << 63 | 0x7FF8 << 48 | payload))[0]


def bits(value: Any) -> list[int]:
    return np.asarray(value, dtype=np.float64).view(np.uint64).ravel().tolist()


def counting(fn: Any) -> tuple[Any, list[Any]]:
    """``tc.function(fn)`` and the list of the static arguments it traced with."""
    traced: list[Any] = []

    def body(x: tc.Tensor, s: Any) -> tc.Tensor:
        traced.append(s)
        return fn(x, s)

    return tc.function(body), traced


def ones() -> tc.Tensor:
    return tc.tensor(np.ones(3), requires_grad=True)


def test_zero_and_negative_zero_trace_apart(executor: tc.BackwardExecutor) -> None:
    f, traced = counting(lambda x, s: 1 / (x * s))
    x = ones()
    assert np.all(f(x, 0.0).numpy() == np.inf)
    assert np.all(f(x, -0.0).numpy() == -np.inf)  # the old key replayed the 0.0 trace: +inf
    assert np.all(f(x, 0.0).numpy() == np.inf)  # and each replays its own
    assert len(traced) == 2 and len(f.traces) == 2
    g = tc.function(lambda x, s: tc.sum(x * s))
    (dx_pos,) = tc.grad(g(x, 0.0), [x])
    (dx_neg,) = tc.grad(g(x, -0.0), [x])
    assert not np.signbit(dx_pos).any() and np.signbit(dx_neg).all()


def test_int_float_and_bool_trace_apart(executor: tc.BackwardExecutor) -> None:
    f, traced = counting(lambda x, s: x * s)
    x = ones()
    for s in [1, 1.0, True, 1, 1.0, True]:
        np.testing.assert_array_equal(f(x, s).numpy(), np.ones(3))
    assert [type(s) for s in traced] == [int, float, bool]


def test_numpy_scalars_trace_by_dtype_and_bits(executor: tc.BackwardExecutor) -> None:
    f, traced = counting(lambda x, s: 1 / (x * s))
    x = ones()
    for s in [np.float32(1), np.float64(1), 1.0, np.float32(1), np.float64(1)]:
        np.testing.assert_array_equal(f(x, s).numpy(), np.ones(3))
    assert [type(s) for s in traced] == [np.float32, np.float64, float]
    assert np.all(f(x, np.float64(0.0)).numpy() == np.inf)
    assert np.all(f(x, np.float64(-0.0)).numpy() == -np.inf)
    assert np.all(f(x, np.float32(-0.0)).numpy() == -np.inf)
    assert np.all(f(x, np.float32(0.0)).numpy() == np.inf)
    assert len(traced) == 7


def test_nans_share_a_trace_by_payload(executor: tc.BackwardExecutor) -> None:
    f, traced = counting(lambda x, s: x * s)
    x = ones()
    first, same = nan(1), nan(1)
    assert first is not same  # two objects, and nan != nan: the key compares bits
    f(x, first)
    f(x, same)
    assert len(traced) == 1
    f(x, nan(2))
    f(x, nan(1, sign=1))
    assert len(traced) == 3


def test_a_nan_payload_reaches_the_result() -> None:
    f = tc.function(lambda x, s: x * s)
    with tc.use_executor(tc.ReferenceExecutor()):
        x = ones()
        assert bits(f(x, nan(1)).numpy()) == bits([nan(1)] * 3)
        assert bits(f(x, nan(2)).numpy()) == bits([nan(2)] * 3)


@pytest.mark.parametrize(
    ("positive", "negative", "pick"),
    [
        ((0.0, 1), (-0.0, 1), lambda s: s[0]),
        ([2, [0.0]], [2, [-0.0]], lambda s: s[1][0]),
        ({"scale": 0.0}, {"scale": -0.0}, lambda s: s["scale"]),
        ({0.0: "k"}, {-0.0: "k"}, lambda s: next(iter(s))),
        ({"a": (1, {"b": [0.0]})}, {"a": (1, {"b": [-0.0]})}, lambda s: s["a"][1]["b"][0]),
        (frozenset({0.0}), frozenset({-0.0}), lambda s: next(iter(s))),
    ],
    ids=["tuple", "list", "dict-value", "dict-key", "deep", "frozenset"],
)
def test_nested_static_arguments_compare_exactly(
    executor: tc.BackwardExecutor, positive: Any, negative: Any, pick: Any
) -> None:
    assert positive == negative  # what the old key compared
    f, traced = counting(lambda x, s: 1 / (x * pick(s)))
    x = ones()
    assert np.all(f(x, positive).numpy() == np.inf)
    assert np.all(f(x, negative).numpy() == -np.inf)
    assert len(traced) == 2


def test_nested_tensors_and_static_numbers_together(executor: tc.BackwardExecutor) -> None:
    @tc.function
    def f(params: dict[str, Any]) -> tc.Tensor:
        w, (scale,) = params["w"], params["scale"]
        return 1 / (w * scale)

    w = ones()
    assert np.all(f({"w": w, "scale": (0.0,)}).numpy() == np.inf)
    assert np.all(f({"w": w, "scale": (-0.0,)}).numpy() == -np.inf)
    assert len(f.traces) == 2


def test_strings_and_none_share_a_trace_when_equal(executor: tc.BackwardExecutor) -> None:
    activations = {"tanh": tc.tanh, "exp": tc.exp, None: lambda x: x}
    f, traced = counting(lambda x, name: activations[name](x))
    x = ones()
    tanh = "".join(["ta", "nh"])  # equal to "tanh", another object
    for name in ["tanh", tanh, None, None, "exp", "tanh"]:
        np.testing.assert_allclose(f(x, name).numpy(), activations[name](x).numpy())
    assert traced == ["tanh", None, "exp"]


def test_op_parameters_compare_by_type_and_bits() -> None:
    """What keeps two traces' programs apart in the compiler's caches."""
    from tidu_compile.ops import Constant, Pad, Scale

    assert Scale(0.0) != Scale(-0.0) and Scale(1.0) != Scale(1) and Scale(2.0) == Scale(2.0)
    assert Constant(nan(1), (2,), "float64") == Constant(nan(1), (2,), "float64")
    assert hash(Constant(nan(1), (2,), "float64")) == hash(Constant(nan(1), (2,), "float64"))
    assert Constant(nan(1), (2,), "float64") != Constant(nan(2), (2,), "float64")
    assert Pad((1,), (1,), (4,), (2,), -0.0) != Pad((1,), (1,), (4,), (2,), 0.0)
    assert Pad((1,), (1,), (4,), (2,), 0.0) != Pad((0,), (1,), (4,), (2,), 0.0)

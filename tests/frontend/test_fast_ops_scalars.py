"""The recording fast path's 0-d float64 arithmetic and its lazily drawn tape keys.

A 0-d float64 op is computed on Python floats (``fast_ops._float64``): its value (bit
for bit, signed zeros and NaN payloads included), its warnings and its errors under
every ``np.errstate`` must be the general path's (``apply_op``, numpy's ufunc on 0-d
arrays). A node's key is drawn when first read: once, the same for every reader.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.eager_keys import CountingKeySource, EagerKey, KeySource
from tidu_compile.frontend import fast_ops
from tidu_compile.frontend.state import RECORDER
from tidu_compile.frontend.tensor import Tensor, apply_op
from tidu_compile.graph import Input

TINY = sys.float_info.min  # the smallest normal float64
HUGE = sys.float_info.max
#: Operand pairs around every floating-point exception and rounding edge.
PAIRS = [
    (0.3, 0.9), (HUGE, 2.0), (HUGE, -HUGE), (TINY, 0.5), (TINY, TINY), (5e-324, 0.5),
    (1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (0.0, -0.0), (np.inf, 0.0), (np.inf, np.inf),
    (-np.inf, np.inf), (np.nan, 1.0), (1.0, -np.nan), (-0.0, 3.0), (1e300, 1e10),
    (1e-300, 1e-10), (2.0, 3.0), (1.0, 3.0), (TINY * 2, 0.5), (HUGE, 1.0), (-HUGE, -1e292),
]  # fmt: skip
BINARY = [op for op, spec in fast_ops.SPECS.items() if op.input_count == 2
          and np.dtype(np.float64) in spec[2]]  # fmt: skip
UNARY = [op for op, spec in fast_ops.SPECS.items() if op.input_count == 1
         and np.dtype(np.float64) in spec[2]]  # fmt: skip
ERRSTATES = ["ignore", "warn", "raise"]


def _outcome(call: Callable[[], Tensor], errstate: str) -> tuple[Any, ...]:
    """What a call gives: the value's bytes and dtype and whether it is a read-only 0-d
    array, or the error; and the warnings' messages."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all=errstate):
        warnings.simplefilter("always")
        try:
            out = call()
        except FloatingPointError as error:
            result: Any = ("raised", str(error))
        else:
            data = out._data
            result = (data.tobytes(), data.dtype, type(data), data.shape,
                      data.flags.writeable)  # fmt: skip
    return result, [str(w.message) for w in caught]


@pytest.mark.parametrize("errstate", ERRSTATES)
@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_float64_scalars_give_the_ufuncs_bits_and_warnings(op: Any, errstate: str) -> None:
    for u, v in PAIRS:
        x = tc.tensor(np.float64(u), requires_grad=True)
        y = tc.tensor(np.float64(v))
        forms: list[tuple[Any, Any]] = [(x, y), (y, x), (x, v), (u, x)]
        if float(v).is_integer() and abs(v) < 2**53:
            forms.append((x, int(v)))
        for a, b in forms:
            fast = _outcome(lambda a=a, b=b: fast_ops.binary(op, a, b), errstate)  # type: ignore[misc]
            general = _outcome(
                lambda a=a, b=b: apply_op(op(), [_as_tensor(a), _as_tensor(b)])[0], errstate
            )
            assert fast == general, (op.__name__, a, b)


def _as_tensor(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else tc.tensor(np.float64(value))


@pytest.mark.parametrize("errstate", ERRSTATES)
@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.__name__)
def test_float64_scalar_functions_give_the_ufuncs_bits(op: Any, errstate: str) -> None:
    values = [0.3, -0.7, 2.5, 1e-310, -0.0, 0.0, 1.0, -1.0, 800.0, -800.0, HUGE,
              np.inf, -np.inf, np.nan]  # fmt: skip
    for value in values:
        x = tc.tensor(np.float64(value), requires_grad=True)
        fast = _outcome(lambda x=x: fast_ops.unary(op, x), errstate)  # type: ignore[misc]
        general = _outcome(lambda x=x: apply_op(op(), [x])[0], errstate)
        assert fast == general, (op.__name__, value)


def test_a_scalar_chain_records_and_differentiates_as_numpy() -> None:
    x, a, b = (tc.tensor(np.float64(v), requires_grad=True) for v in (0.3, 0.9, 0.2))
    y = x
    for _ in range(5):
        y = tc.sin(y * a + b) / 1.5 - 0.25
    assert type(y._data) is np.ndarray and y.numpy().shape == () and y.dtype == np.float64
    value = 0.3
    for _ in range(5):
        value = np.sin(np.float64(value) * 0.9 + 0.2) / 1.5 - 0.25
    assert y.item() == value
    h = 1e-6
    gx, ga, gb = tc.grad(y, [x, a, b], executor=tc.ReferenceExecutor())

    def chain(u: float, v: float, w: float) -> float:
        for _ in range(5):
            u = float(np.sin(u * v + w)) / 1.5 - 0.25
        return u

    for g, shift in zip((gx, ga, gb), np.eye(3), strict=True):
        plus, minus = chain(*(np.array([0.3, 0.9, 0.2]) + h * shift)), chain(
            *(np.array([0.3, 0.9, 0.2]) - h * shift))  # fmt: skip
        assert float(g) == pytest.approx((plus - minus) / (2 * h), rel=1e-6)


# ------------------------------------------------------------------ lazy keys


def test_a_node_draws_its_key_once_when_first_read() -> None:
    x = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * x
    trace = y._trace
    assert trace is not None and y._tape_key is None  # nothing drawn at recording
    key = y._key
    assert type(key) is Input and type(key.key) is EagerKey
    assert trace.output_keys == (key,) and y._key is key and trace.output_keys[0] is key
    z = y * 2.0
    w = tc.sum(z, axis=0)  # the general path (an axis given) reads z's key
    assert z._tape_key is not None and z._key is z._trace.output_keys[0]  # type: ignore[union-attr]
    assert len({x._key, y._key, z._key, w._key}) == 4
    node = w._trace
    assert node is not None and node.inputs[0].key is z._key


def _read_keys(slot: int, ys: list[Tensor], barrier: threading.Barrier, seen: list[Any]) -> None:
    """Read the keys of ``ys`` (forward or backward, by the tensor or by its node)."""
    barrier.wait()
    for y in ys if slot % 2 else reversed(ys):
        seen.append(y._key if slot < 2 else y._trace.output_keys[0])  # type: ignore[union-attr]


def test_readers_in_threads_agree_on_the_key() -> None:
    x = tc.tensor(np.array(0.5), requires_grad=True)
    for _ in range(20):
        ys = [x * x for _ in range(50)]
        barrier = threading.Barrier(4)
        seen: list[list[Any]] = [[] for _ in range(4)]

        threads = [threading.Thread(target=_read_keys, args=(i, ys, barrier, seen[i]))
                   for i in range(4)]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        by_node = [seen[0][::-1], seen[1], seen[2][::-1], seen[3]]
        for keys in zip(*by_node, strict=True):
            assert all(k is keys[0] for k in keys)
        assert len({k.key for k in by_node[1]}) == len(ys)


def test_keys_come_from_the_recorders_key_source() -> None:
    class Letters(KeySource):
        def __init__(self) -> None:
            self.count = 0

        def fresh_input_key(self) -> str:
            self.count += 1
            return f"k{self.count}"

    x = tc.tensor(np.array(0.5), requires_grad=True)
    previous = RECORDER.key_source
    RECORDER.key_source = Letters()
    try:
        y = tc.sin(x * x)
    finally:
        RECORDER.key_source = previous
    assert isinstance(previous, CountingKeySource)
    assert y._key == Input("k1")  # drawn (when read) from the source it was recorded with
    (gx,) = tc.grad(y, [x], executor=tc.ReferenceExecutor())
    assert float(gx) == pytest.approx(np.cos(0.25) * 1.0)


def test_mul_by_zero_and_overflow_keep_numpys_signs_and_infinities() -> None:
    x = tc.tensor(np.float64(-0.0), requires_grad=True)
    assert np.signbit((x * 3.0).item()) and np.signbit((3.0 * x).item())
    big = tc.tensor(np.float64(HUGE), requires_grad=True)
    with np.errstate(over="ignore"):
        assert (big * 2).item() == np.inf and (big * -2.0).item() == -np.inf
    with pytest.raises(FloatingPointError), np.errstate(over="raise"):
        big + big  # noqa: B018 - the operator's error
    assert ops.Mul in fast_ops.SPECS and fast_ops.SPECS[ops.Mul][3] is not None


@pytest.mark.parametrize("shape", [(), (3,)])
def test_operators_and_functions_take_the_fast_path_and_record_the_general_node(
    shape: tuple[int, ...],
) -> None:
    x = tc.tensor(np.full(shape, 0.75), requires_grad=True)
    y = tc.tensor(np.full(shape, 1.25), requires_grad=True)
    general = {
        ops.Mul: lambda a, b: apply_op(ops.Mul(), [_as(a, x), _as(b, x)])[0],
        ops.Sub: lambda a, b: apply_op(ops.Sub(), [_as(a, x), _as(b, x)])[0],
        ops.Div: lambda a, b: apply_op(ops.Div(), [_as(a, x), _as(b, x)])[0],
    }
    calls: list[tuple[Tensor, Tensor]] = [
        (x * y, general[ops.Mul](x, y)), (tc.multiply(x, y), general[ops.Mul](x, y)),
        (2.0 * x, general[ops.Mul](2.0, x)), (x - 3, general[ops.Sub](x, 3)),
        (1.5 / x, general[ops.Div](1.5, x)), (y / x, general[ops.Div](y, x)),
        (-x, apply_op(ops.Neg(), [x])[0]), (tc.sin(x), apply_op(ops.Sin(), [x])[0]),
    ]  # fmt: skip
    for fast, want in calls:
        trace = fast._trace
        assert trace is not None and trace._output is not None  # recorded by fast_ops
        assert trace.graph is want._trace.graph  # type: ignore[union-attr]
        assert fast._data.tobytes() == want._data.tobytes() and not fast._data.flags.writeable
        assert type(fast._data) is np.ndarray and fast.shape == shape
        assert [(e.key, e.requires_grad) for e in trace.inputs] == [
            (e.key, e.requires_grad) for e in want._trace.inputs  # type: ignore[union-attr]
        ]
        assert trace.needed_inputs == want._trace.needed_inputs  # type: ignore[union-attr]
        saved, wanted = trace.saved_values, want._trace.saved_values  # type: ignore[union-attr]
        assert list(saved) == list(wanted)
        for a, b in zip(saved.values(), wanted.values(), strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _as(value: Any, like: Tensor) -> Tensor:
    return value if isinstance(value, Tensor) else tc.tensor(np.full(like.shape, float(value)))

"""The recording fast path (``frontend.fast_ops``) against the general path.

For every op it handles and every operand form (two tensors, tensor and number, number
and tensor; with and without gradients), it must give what ``apply_op`` gives: the same
values and dtype, the same tape node (graph, edges, needed inputs, saved data) and the
same gradients; and it must leave every other case to the general path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.eager_keys import EagerKey, TangentKey
from tidu_compile.frontend import fast_ops
from tidu_compile.frontend.elementwise import promoted
from tidu_compile.frontend.tensor import Tensor, apply_op

BINARY = [op for op in fast_ops.SPECS if op.input_count == 2]
UNARY = [op for op in fast_ops.SPECS if op.input_count == 1]


def _data(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    real = rng.uniform(0.2, 0.9, shape)  # inside every op's domain (log, arcsin, ...)
    if np.dtype(dtype).kind == "c":
        return (real + 0.1j * rng.uniform(0.2, 0.9, shape)).astype(dtype)
    return real.astype(dtype)


def _same_node(fast: Tensor, general: Tensor) -> None:
    assert fast.dtype == general.dtype and fast.shape == general.shape
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    assert fast.requires_grad == general.requires_grad
    assert not fast.numpy().flags.writeable and not fast._data.flags.writeable
    if general._trace is None:
        assert fast._trace is None
        return
    a, b = fast._trace, general._trace
    assert a is not None and a.graph is b.graph  # one recorded graph per op
    assert [(e.key, e.trace, e.requires_grad) for e in a.inputs] == [
        (e.key, e.trace, e.requires_grad) for e in b.inputs
    ]
    assert a.needed_inputs == b.needed_inputs and len(a.output_keys) == 1
    assert type(fast._key.key) is EagerKey and fast._key in a.output_keys
    assert list(a.saved_values) == list(b.saved_values)
    for x, y in zip(a.saved_values.values(), b.saved_values.values(), strict=True):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def _general(op: type[ops.TensorOp], *operands: Any) -> Tensor:
    return apply_op(op(), promoted(op, *operands))[0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_ops_record_what_the_general_path_records(op: Any, dtype: str) -> None:
    spec = fast_ops.SPECS[op]
    if np.dtype(dtype) not in spec[2]:
        x = tc.tensor(_data(dtype, (3,), 0), requires_grad=True)
        assert fast_ops.binary(op, x, x) is None  # the general path raises its error
        return
    for shape in [(), (2, 3)]:
        x = tc.tensor(_data(dtype, shape, 1), requires_grad=True)
        y = tc.tensor(_data(dtype, shape, 2), requires_grad=True)
        c = tc.tensor(_data(dtype, shape, 3))  # no gradient
        number = 0.75 if np.dtype(dtype).kind == "f" else 0.5 - 0.25j
        for a, b in [(x, y), (x, c), (c, y), (x, number), (number, y), (x, 3)]:
            fast = fast_ops.binary(op, a, b)
            assert fast is not None, (a, b)
            _same_node(fast, _general(op, a, b))
        assert fast_ops.binary(op, c, c)._trace is None  # type: ignore[union-attr]


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.__name__)
def test_unary_ops_record_what_the_general_path_records(op: Any, dtype: str) -> None:
    x = tc.tensor(_data(dtype, (4,), 5), requires_grad=True)
    if np.dtype(dtype) not in fast_ops.SPECS[op][2]:
        assert fast_ops.unary(op, x) is None
        return
    with np.errstate(all="ignore"):
        fast = fast_ops.unary(op, x)
        assert fast is not None
        _same_node(fast, apply_op(op(), [x])[0])


@pytest.mark.parametrize("op", [ops.Add, ops.Mul, ops.Sub], ids=lambda op: op.__name__)
@pytest.mark.parametrize(("left", "right"), [((2, 3), (3,)), ((3,), (2, 3)),
                                             ((2, 1), (1, 3)), ((), (2, 3))])  # fmt: skip
def test_broadcast_operands_record_what_the_general_path_records(
    op: Any, left: tuple[int, ...], right: tuple[int, ...]
) -> None:
    """``x @ w + b``: each operand broadcast as ``promotion.broadcast_to`` does (its own
    ``BroadcastInDim`` node when it records one), then the op's node; the same values,
    graphs, needed inputs, saved data and gradients as the general path."""
    x = tc.tensor(_data("float32", left, 1), requires_grad=True)
    y = tc.tensor(_data("float32", right, 2), requires_grad=True)
    c = tc.tensor(_data("float32", right, 3))  # no gradient
    for a, b in [(x, y), (x, c), (c, x)]:
        fast = fast_ops.binary(op, a, b)
        assert fast is not None, (a.shape, b.shape)
        general = _general(op, a, b)
        np.testing.assert_array_equal(fast.numpy(), general.numpy())
        assert fast._trace is not None and general._trace is not None
        assert fast._trace.graph is general._trace.graph
        assert fast._trace.needed_inputs == general._trace.needed_inputs
        sources = [(e.trace.graph if e.trace is not None else None, e.requires_grad)
                   for e in fast._trace.inputs]  # fmt: skip
        assert sources == [(e.trace.graph if e.trace is not None else None, e.requires_grad)
                           for e in general._trace.inputs]  # fmt: skip
        weights = _data("float32", fast.shape, 4)
        leaves = [t for t in (a, b) if t.requires_grad]
        got = tc.grad(tc.sum(fast * weights), leaves, executor=tc.ReferenceExecutor())
        want = tc.grad(tc.sum(general * weights), leaves, executor=tc.ReferenceExecutor())
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize(("left", "right"), [((3, 4), (4, 2)), ((4,), (4, 2)),
                                             ((3, 4), (4,)), ((4,), (4,))])  # fmt: skip
def test_a_matmul_of_vectors_and_matrices_records_what_the_general_path_records(
    dtype: str, left: tuple[int, ...], right: tuple[int, ...]
) -> None:
    x = tc.tensor(_data(dtype, left, 1), requires_grad=True)
    y = tc.tensor(_data(dtype, right, 2), requires_grad=True)
    cx, cy = tc.tensor(_data(dtype, left, 3)), tc.tensor(_data(dtype, right, 4))
    op = ops.DotGeneral((len(left) - 1,), (0,), (), (), left, right)
    for a, b in [(x, y), (x, cy), (cx, y), (cx, cy)]:
        fast = fast_ops.matmul_up_to_2d(a, b)
        assert fast is not None
        general = apply_op(op, [a, b])[0]
        _same_node(fast, general)
        _same_node(a @ b, general)  # the operator takes the fast path
    weights = _data(dtype, general.shape, 5)
    got = tc.grad(tc.sum(tc.real(fast_ops.matmul_up_to_2d(x, y) * weights)), [x, y])  # type: ignore[operator]
    want = tc.grad(tc.sum(tc.real(apply_op(op, [x, y])[0] * weights)), [x, y])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_other_matmuls_take_the_general_path() -> None:
    x = tc.tensor(np.ones((3, 4)), requires_grad=True)
    others: list[Any] = [
        tc.tensor(np.array(2.0)),  # 0-d: the general path raises
        tc.tensor(np.ones((2, 4, 2))),  # batched
        tc.tensor(np.ones((4, 2), np.float32)),  # promotion
        tc.tensor(np.ones((4, 2), np.int64)),  # an integer operand
        tc.tensor(np.ones((5, 2))),  # inner extents differ: the general path raises
        np.ones((4, 2)),  # an array
    ]
    for other in others:
        assert fast_ops.matmul_up_to_2d(x, other) is None, other
    with pytest.raises(ValueError, match="contracted dimensions differ"):
        x @ tc.tensor(np.ones((5, 2)))
    integers = tc.tensor(np.ones((3, 4), np.int64))
    assert fast_ops.matmul_up_to_2d(integers, integers.T) is None

    @tc.function
    def traced(a: tc.Tensor) -> tc.Tensor:
        assert fast_ops.matmul_up_to_2d(a, a.T) is None  # traced ops go to the capture
        return tc.sum(a @ a.T)

    traced(x)


@pytest.mark.parametrize("key", [slice(None, 2), slice(1, None), slice(None, None, 2),
                                 slice(None, None, -1), slice(5, 1, -2), slice(-3, -1)],
                         ids=repr)  # fmt: skip
@pytest.mark.parametrize("shape", [(6,), (6, 3)])
def test_a_slice_of_the_first_axis_records_what_the_general_path_records(
    key: slice, shape: tuple[int, ...]
) -> None:
    from tidu_compile.frontend.indexing import basic_index, window

    for requires_grad in (False, True):  # the last x requires grad: its gradient below
        x = tc.tensor(_data("float64", shape, 1), requires_grad=requires_grad)
        fast = fast_ops.slice_leading(x, key)
        assert fast is not None
        index = basic_index(x.shape, (key,))
        _same_node(fast, window(x, index.start, index.step, index.counts))
        _same_node(x[key], fast)  # the operator takes the fast path
    weights = _data("float64", fast.shape, 2)
    (got,) = tc.grad(tc.sum(fast_ops.slice_leading(x, key) * weights), [x])  # type: ignore[operator]
    (want,) = tc.grad(tc.sum(window(x, index.start, index.step, index.counts) * weights), [x])
    np.testing.assert_array_equal(got, want)


def test_other_slices_take_the_general_path() -> None:
    x = tc.tensor(np.arange(6.0), requires_grad=True)
    assert fast_ops.slice_leading(x, slice(None)) is x  # the whole axis: x itself
    assert fast_ops.slice_leading(x, slice(3, 1)) is None  # empty: folded by the general path
    assert x[3:1].shape == (0,)
    assert fast_ops.slice_leading(tc.tensor(np.array(1.0)), slice(1)) is None  # 0-d
    with tc.no_grad():
        plain = fast_ops.slice_leading(x, slice(2))
    assert plain is not None and plain._trace is None and not plain.requires_grad

    @tc.function
    def traced(a: tc.Tensor) -> tc.Tensor:
        assert fast_ops.slice_leading(a, slice(2)) is None  # traced ops go to the capture
        return tc.sum(a[:2])

    traced(x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("exponent", [2, 3.0, -1, 0.5, 0.0, -0.0, 1 << 60], ids=repr)
@pytest.mark.parametrize("shape", [(), (3, 2)])
def test_a_power_by_a_number_records_what_the_general_path_records(
    dtype: str, exponent: Any, shape: tuple[int, ...]
) -> None:
    for requires_grad in (False, True):
        x = tc.tensor(_data(dtype, shape, 1), requires_grad=requires_grad)
        fast = fast_ops.power_by_number(x, exponent)
        assert fast is not None
        general = apply_op(ops.Pow(float(exponent)), [x])[0]
        _same_node(fast, general)
        _same_node(x**exponent, general)  # the operator takes the fast path
        _same_node(tc.power(x, exponent), general)
    (got,) = tc.grad(tc.sum(tc.real(fast_ops.power_by_number(x, exponent))), [x])  # type: ignore[arg-type]
    (want,) = tc.grad(tc.sum(tc.real(apply_op(ops.Pow(float(exponent)), [x])[0])), [x])
    np.testing.assert_array_equal(got, want)


def test_signed_zero_exponents_are_two_ops() -> None:
    x = tc.tensor(np.ones(2), requires_grad=True)
    positive, negative = fast_ops.power_by_number(x, 0.0), fast_ops.power_by_number(x, -0.0)
    assert positive is not None and negative is not None
    assert positive._trace is not None and negative._trace is not None
    assert positive._trace.graph is not negative._trace.graph  # Pow(0.0) != Pow(-0.0)
    assert "-0.0" in str(negative._trace.graph.graph)
    assert "-0.0" not in str(positive._trace.graph.graph)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
@pytest.mark.parametrize("shape", [(4,), (3, 2), (2, 0, 3)])
def test_a_total_sum_records_what_the_general_path_records(
    dtype: str, shape: tuple[int, ...]
) -> None:
    for requires_grad in (False, True):
        x = tc.tensor(_data(dtype, shape, 1), requires_grad=requires_grad)
        fast = fast_ops.sum_all(x)
        assert fast is not None
        general = apply_op(ops.ReduceSum(tuple(range(len(shape))), shape), [x])[0]
        _same_node(fast, general)
        _same_node(tc.sum(x), general)  # tc.sum takes the fast path
    (got,) = tc.grad(tc.real(fast_ops.sum_all(x) * 3.0), [x])  # type: ignore[operator]
    (want,) = tc.grad(tc.real(apply_op(ops.ReduceSum(tuple(range(len(shape))), shape),
                                       [x])[0] * 3.0), [x])  # fmt: skip
    np.testing.assert_array_equal(got, want)


def test_other_powers_and_sums_take_the_general_path() -> None:
    x = tc.tensor(np.arange(1.0, 4.0), requires_grad=True)
    for exponent in (np.float64(2.0), np.int64(2), True, 2j, x, np.ones(3)):
        assert fast_ops.power_by_number(x, exponent) is None, exponent
    integers = tc.tensor(np.arange(3))
    assert fast_ops.power_by_number(integers, 2) is None  # exact integer powers
    assert (integers**2).dtype == np.int64
    assert fast_ops.sum_all(integers) is None  # accumulates in int64
    assert fast_ops.sum_all(tc.tensor(np.array(2.0))) is None  # 0-d: itself
    assert fast_ops.sum_all(np.ones(3)) is None

    @tc.function
    def traced(a: tc.Tensor) -> tc.Tensor:
        assert fast_ops.power_by_number(a, 2) is None  # traced ops go to the capture
        assert fast_ops.sum_all(a) is None
        return tc.sum(a**2)

    traced(x)


def test_the_general_path_keeps_everything_else() -> None:
    op = ops.Mul
    x = tc.tensor(np.ones(3), requires_grad=True)
    others: list[Any] = [
        tc.tensor(np.ones(4)),  # shapes that do not broadcast (the general path raises)
        tc.tensor(np.ones(3, np.float32)),  # promotion
        tc.tensor(np.arange(3)),  # an integer tensor
        np.ones(3),  # an array
        np.float64(2.0),  # a numpy scalar (not weak: it promotes)
        2.0j,  # a complex number with a real tensor
        True,  # a bool
        1 << 60,  # an integer beyond exact float64
    ]
    for other in others:
        assert fast_ops.binary(op, x, other) is None, other
        assert fast_ops.binary(op, other, x) is None, other
    integers = tc.tensor(np.arange(3))
    assert fast_ops.unary(ops.Exp, integers) is None  # computes in float64: promoted
    assert fast_ops.binary(op, integers, 2.5) is None  # float64 result: promoted
    product = fast_ops.binary(op, integers, integers)  # exact, of their dtype: fast
    assert product is not None and product.dtype == np.int64
    big = fast_ops.binary(ops.Add, tc.tensor(np.array([2**53])), 1)
    assert big is not None and big.numpy()[0] == 2**53 + 1

    @tc.function
    def traced(a: tc.Tensor) -> tc.Tensor:
        assert fast_ops.binary(op, a, a) is None  # traced ops go to the capture
        return tc.sum(a * a)

    traced(x)


def test_no_grad_records_nothing() -> None:
    x = tc.tensor(np.array(2.0), requires_grad=True)
    with tc.no_grad():
        y = x * x + 1.0
    assert y._trace is None and not y.requires_grad and y.item() == 5.0


def test_operators_and_functions_give_the_general_paths_gradients() -> None:
    rng = np.random.default_rng(7)
    values = [rng.uniform(0.5, 1.5, (4,)) for _ in range(3)]
    x, y, z = (tc.tensor(v, requires_grad=True) for v in values)
    loss = tc.sum(tc.sin(x * y + 2.0) / (1.5 - z) - tc.exp(-x) * tc.tanh(z) + 3 * y)
    grads = tc.grad(loss, [x, y, z], executor=tc.ReferenceExecutor())
    a, b, c = values
    ds = np.cos(a * b + 2.0) / (1.5 - c)
    want = [ds * b + np.exp(-a) * np.tanh(c), ds * a + 3.0,
            np.sin(a * b + 2.0) / (1.5 - c) ** 2 - np.exp(-a) / np.cosh(c) ** 2]  # fmt: skip
    for g, w in zip(grads, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13)


def test_eager_keys_are_ints_and_their_tangents_add_passes() -> None:
    key = EagerKey(7)
    assert key == 7 and key.index == 7 and key.passes == () and repr(key) == "EagerKey(7)"
    tangent = key.tangent_of(2).tangent_of(5)
    assert tangent == TangentKey(7, (2, 5)) and tangent != key

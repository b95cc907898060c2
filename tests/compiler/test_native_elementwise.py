"""The eager path's large transcendental results come from the compiled kernels
(``frontend.native_elementwise``): for every op of ``NATIVE_OPS``, a float32 or float64
tensor of ``NATIVE_ELEMENTS`` elements runs its one-op program on a ``CompiledExecutor``
from the second call of its shape and dtype on (the first is numpy's) and matches numpy
as the lowering rows must (a few ulps, the same NaN and inf pattern and signs of zero,
on the rows' edge values); a smaller, strided or complex tensor, a one-off shape, the
``ReferenceExecutor`` or an executor that may not compile get numpy's ufunc bit for
bit; gradients are unchanged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_lowering_rows import _check, _inputs

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend import fast_ops
from tidu_compile.frontend.native_elementwise import (
    NATIVE_BINARY_ELEMENTS,
    NATIVE_BINARY_OPS,
    NATIVE_ELEMENTS,
    NATIVE_OPS,
)

NATIVE = sorted((op for op in fast_ops.SPECS if op.__name__ in NATIVE_OPS),
                key=lambda op: op.__name__)  # fmt: skip


def _runs(executor: CompiledExecutor) -> int:
    """Programs the executor ran or compiled for ``run_graph`` and backward nodes."""
    stats = executor.stats
    return stats.compiles + stats.memory_hits + stats.disk_hits + stats.generic_hits


@pytest.fixture(scope="module")
def executor(shared_cache_dir: Path) -> CompiledExecutor:
    return CompiledExecutor(shared_cache_dir)


def test_every_native_op_has_a_fast_path() -> None:
    assert {op.__name__ for op in NATIVE} == NATIVE_OPS
    # their kernels are NaN past 1.5 * 2^22 in float32, where numpy's are right
    assert not {"Sin", "Cos", "Tan"} & NATIVE_OPS


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("primitive", NATIVE, ids=lambda p: p.mnemonic)
def test_a_large_tensor_runs_the_kernel_and_matches_numpy(
    executor: CompiledExecutor, primitive: type[ops.TensorOp], dtype: str
) -> None:
    # a length no other test uses: its first call here is the first sighting (``_SEEN``)
    x = np.resize(_inputs(primitive, dtype, np.random.default_rng(5)), NATIVE_ELEMENTS + 3)
    ufunc = fast_ops.SPECS[primitive][0]
    with np.errstate(all="ignore"):
        want = ufunc(x)
    before, fallbacks = _runs(executor), executor.stats.fallbacks
    with tc.use_executor(executor), np.errstate(all="ignore"):
        first = function_of(primitive)(tc.tensor(x)).numpy()
        assert _runs(executor) == before, "a shape met for the first time: numpy's loop"
        got = function_of(primitive)(tc.tensor(x)).numpy()
    assert first.tobytes() == want.tobytes()
    assert _runs(executor) == before + 1 and executor.stats.fallbacks == fallbacks
    assert got.dtype == want.dtype and got.shape == want.shape
    _check(primitive, got, want, x)


BINARY = sorted((op for op in fast_ops.SPECS if op.__name__ in NATIVE_BINARY_OPS),
                key=lambda op: op.__name__)  # fmt: skip
EDGE_PAIRS = [(0.0, 0.0), (-0.0, 0.0), (np.inf, np.inf), (-np.inf, 1.0), (np.nan, 2.0),
              (1e-310, 1e10), (5e-324, 0.5), (1e308, 1e-308), (3.0, -0.0)]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("primitive", BINARY, ids=lambda p: p.mnemonic)
def test_very_large_arithmetic_runs_the_kernel_and_is_numpys_bit_for_bit(
    executor: CompiledExecutor, primitive: type[ops.TensorOp], dtype: str
) -> None:
    rng = np.random.default_rng(13)
    n = NATIVE_BINARY_ELEMENTS + 3  # a length no other test uses (a first sighting)
    a, b = (rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n)) for _ in range(2))
    a[: len(EDGE_PAIRS)], b[: len(EDGE_PAIRS)] = zip(*EDGE_PAIRS, strict=True)
    with np.errstate(all="ignore"):
        a, b = a.astype(dtype), b.astype(dtype)
        want = fast_ops.SPECS[primitive][0](a, b)
    assert {op.__name__ for op in BINARY} == NATIVE_BINARY_OPS
    before = _runs(executor)
    with tc.use_executor(executor), np.errstate(all="ignore"):
        for call in range(2):  # a first sighting (numpy's), then the kernel
            got = apply_binary(primitive, tc.tensor(a), tc.tensor(b)).numpy()
            assert _runs(executor) == before + call
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_strided_operand_keeps_arithmetic_on_numpy(executor: CompiledExecutor) -> None:
    a = tc.tensor(np.linspace(-1.0, 1.0, 2 * NATIVE_BINARY_ELEMENTS))[::2]
    b = tc.tensor(np.linspace(2.0, 3.0, NATIVE_BINARY_ELEMENTS))
    before = _runs(executor)
    with tc.use_executor(executor):
        for _ in range(2):
            got = (a * b).numpy()
    assert _runs(executor) == before and got.tobytes() == (a.numpy() * b.numpy()).tobytes()


def apply_binary(primitive: type[ops.TensorOp], a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
    """``a <op> b`` through the operators (``Tensor.__mul__`` for ``Mul``)."""
    operators = {"Add": tc.Tensor.__add__, "Sub": tc.Tensor.__sub__,
                 "Mul": tc.Tensor.__mul__, "Div": tc.Tensor.__truediv__}  # fmt: skip
    return operators[primitive.__name__](a, b)  # type: ignore[no-any-return]


def function_of(primitive: type[ops.TensorOp]):  # type: ignore[no-untyped-def]
    """The frontend function of ``primitive`` (``tc.tanh`` for ``Tanh``)."""
    return getattr(tc, primitive.mnemonic)


def _values(n: int) -> tc.Tensor:
    return tc.tensor(np.linspace(-2.0, 2.0, n))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: _values(NATIVE_ELEMENTS - 1), id="smaller"),
        pytest.param(lambda: _values(2 * NATIVE_ELEMENTS)[::2], id="strided"),
        pytest.param(lambda: _values(NATIVE_ELEMENTS).reshape(128, -1).T, id="transposed"),
        pytest.param(lambda: _values(NATIVE_ELEMENTS) * (1 + 1j), id="complex"),
    ],
)
def test_other_tensors_get_numpys_values_bit_for_bit(make, executor: CompiledExecutor) -> None:  # type: ignore[no-untyped-def]
    x = make()
    before = _runs(executor)
    with tc.use_executor(executor):
        for _ in range(2):  # not only a first sighting
            got = tc.tanh(x).numpy()
    assert _runs(executor) == before, "numpy's ufunc computes these"
    assert got.tobytes() == np.tanh(x.numpy()).tobytes()


def test_the_reference_executor_gets_numpys_values_bit_for_bit() -> None:
    x = np.linspace(-3.0, 3.0, NATIVE_ELEMENTS)
    with tc.use_executor(tc.ReferenceExecutor()):
        for _ in range(2):
            assert tc.exp(tc.tensor(x)).numpy().tobytes() == np.exp(x).tobytes()


def test_a_one_off_shape_starts_no_compile(tmp_path: Path) -> None:
    """Variable-length data: each length met once is numpy's, compiled never."""
    fresh = CompiledExecutor(tmp_path)
    with tc.use_executor(fresh):
        for extra in range(4):
            x = np.linspace(-3.0, 3.0, NATIVE_ELEMENTS + 7 + extra)
            assert tc.exp(tc.tensor(x)).numpy().tobytes() == np.exp(x).tobytes()
    assert _runs(fresh) == 0 and fresh.stats.background_runs == 0


def test_an_executor_that_may_not_compile_gets_numpys_values(tmp_path: Path) -> None:
    forbidding = CompiledExecutor(tmp_path, forbid_compile=True)
    x = np.linspace(-3.0, 3.0, NATIVE_ELEMENTS)
    with tc.use_executor(forbidding):
        for _ in range(2):
            got = tc.exp(tc.tensor(x)).numpy()
            assert got.tobytes() == np.exp(x).tobytes() and _runs(forbidding) == 0


def test_gradients_through_a_native_result_match_the_reference(executor: CompiledExecutor) -> None:
    x = np.random.default_rng(3).standard_normal((4, NATIVE_ELEMENTS // 4))
    grads = []
    for run_on in (executor, executor, tc.ReferenceExecutor()):  # the second: native
        t = tc.tensor(x, requires_grad=True)
        with tc.use_executor(run_on):
            (g,) = tc.grad(tc.sum(tc.tanh(t) * tc.exp(-t)), [t])
        grads.append(g)
    np.testing.assert_allclose(grads[1], grads[2], rtol=1e-13, atol=1e-15)


def test_one_executor_serves_a_sequence_of_shapes_and_dtypes(executor: CompiledExecutor) -> None:
    """Each (shape, dtype) its own program: sizes, ranks and dtypes in turn through one
    executor, the first again with new values, each matching numpy."""
    rng = np.random.default_rng(9)
    shapes = [(NATIVE_ELEMENTS,), (2 * NATIVE_ELEMENTS,), (128, NATIVE_ELEMENTS // 128),
              (NATIVE_ELEMENTS,)]  # fmt: skip
    for dtype in ("float64", "float32", "float64"):
        for shape in shapes:
            x = rng.standard_normal(shape).astype(dtype) * 3
            for _ in range(2):  # a first sighting, then native
                with tc.use_executor(executor):
                    got = tc.tanh(tc.tensor(x)).numpy()
                assert got.dtype == x.dtype and got.shape == x.shape
                _check(ops.Tanh, got, np.tanh(x), x)

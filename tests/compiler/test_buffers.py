"""Recycled output memory: reuse only after the last view is gone, a bounded idle pool,
and gradients handed out without a copy only when nothing else shares their memory."""

from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.compiler.buffers import MIN_POOLED_BYTES, BufferPool
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.executors.reference import ReferenceExecutor
from tidu_compile.ownership import exclusive_owner

F64 = np.dtype(np.float64)


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def test_allocate_gives_a_writable_c_contiguous_array() -> None:
    pool = BufferPool()
    a = pool.allocate((3, 4), np.dtype(np.float32))
    assert a.shape == (3, 4) and a.dtype == np.float32
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    a[...] = 1.5
    assert float(a.sum()) == 18.0


def test_a_released_block_is_reused() -> None:
    pool = BufferPool()
    a = pool.allocate((1000,), F64)
    address = _address(a)
    del a
    assert pool.idle_bytes == 8000
    b = pool.allocate((10, 100), F64)  # same byte size, another shape
    assert _address(b) == address and pool.reuses == 1 and pool.idle_bytes == 0


def test_a_view_keeps_the_block_leased() -> None:
    pool = BufferPool()
    a = pool.allocate((1000,), F64)
    a[:] = np.arange(1000.0)
    view = a[::2]
    address = _address(a)
    del a
    gc.collect()
    assert pool.idle_bytes == 0  # the view still holds it
    b = pool.allocate((1000,), F64)
    b[:] = -1.0
    assert _address(b) != address
    np.testing.assert_array_equal(view, np.arange(0.0, 1000.0, 2.0))
    del view
    assert pool.idle_bytes == 8000


def test_idle_memory_is_bounded() -> None:
    pool = BufferPool(max_idle_bytes=10_000)
    arrays = [pool.allocate((1000,), F64) for _ in range(3)]
    del arrays
    assert pool.idle_bytes == 8000  # one kept, two freed
    small = [pool.allocate((100,), F64) for _ in range(3)]
    del small  # the long-idle 8000-byte block makes room for the new sizes
    assert pool.idle_bytes == 2400 and 8000 not in [b.nbytes for b in pool.idle_blocks()]
    huge = pool.allocate((2000,), F64)
    del huge  # larger than the bound on its own: not kept, nothing evicted for it
    assert pool.idle_bytes == 2400 and pool.reuses == 0
    off = BufferPool(max_idle_bytes=0)
    a = off.allocate((10,), F64)
    del a
    assert off.idle_bytes == 0
    pool.clear()
    assert pool.idle_bytes == 0
    with pytest.raises(ValueError, match="max_idle_bytes"):
        BufferPool(-1)


def test_leases_may_die_on_other_threads() -> None:
    import threading

    pool = BufferPool()
    arrays = [pool.allocate((100,), F64) for _ in range(8)]
    threads = [threading.Thread(target=arrays.pop) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert pool.idle_bytes == 8 * 800


def test_exclusive_owner() -> None:
    owned = np.zeros(4)
    assert exclusive_owner(owned) is owned
    assert exclusive_owner(owned[1:]) is None  # a view of someone else's memory
    assert exclusive_owner(np.broadcast_to(owned, (2, 4))) is None  # read-only
    assert exclusive_owner(np.zeros((4, 4)).T) is None  # not C-contiguous
    assert exclusive_owner(np.float64(1.0)) is None
    pooled = BufferPool().allocate((2, 3), F64)
    assert exclusive_owner(pooled) is pooled.base
    assert exclusive_owner(pooled.reshape(6)) is pooled.base  # same memory, same owner
    assert exclusive_owner(pooled[0]) is None


def test_bad_pool_size_in_the_environment_is_an_error() -> None:
    code = "import tidu_compile"
    env = {"TIDU_COMPILE_POOL_BYTES": "lots", "PATH": ""}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode != 0 and "TIDU_COMPILE_POOL_BYTES" in done.stderr


@pytest.mark.parametrize("executor", [ReferenceExecutor, lambda: CompiledExecutor(False)])
def test_gradients_never_share_memory(executor) -> None:  # type: ignore[no-untyped-def]
    n = MIN_POOLED_BYTES // 8  # large enough for pooled kernel outputs
    x = tc.tensor(np.linspace(-1.0, 1.0, n), requires_grad=True)
    y = tc.tensor(np.linspace(2.0, 3.0, n), requires_grad=True)
    z = x + y  # one cotangent for both operands, and for z itself
    loss = tc.sum(z * 2.0)
    chosen = executor()
    grads = tc.grad(loss, [x, y, z, x], executor=chosen)
    for i, g in enumerate(grads):
        assert g is not None and g.flags.writeable and g.flags.c_contiguous
        for h in grads[i + 1 :]:
            assert not np.shares_memory(g, h)
    grads[0][:] = 0.0  # mutating one result changes no other, nor the next call's
    np.testing.assert_array_equal(grads[1], np.full(n, 2.0))
    again = tc.grad(loss, [x, y], executor=chosen)
    np.testing.assert_array_equal(again[0], np.full(n, 2.0))
    np.testing.assert_array_equal(grads[0], np.zeros(n))


def test_pooled_gradients_survive_later_calls() -> None:
    n = 2 * MIN_POOLED_BYTES // 8
    x = tc.tensor(np.linspace(-1.0, 1.0, n), requires_grad=True)
    loss = tc.sum(tc.exp(x) * x)
    executor = CompiledExecutor(False)
    first = tc.grad(loss, [x], executor=executor)[0]
    snapshot = np.array(first, copy=True)
    np.testing.assert_allclose(snapshot, np.exp(x.numpy()) * (x.numpy() + 1.0), rtol=1e-12,
                               atol=1e-15)  # fmt: skip
    for _ in range(3):  # blocks of dropped results are reused; the kept one is not
        tc.grad(loss, [x], executor=executor)
    np.testing.assert_array_equal(first, snapshot)
    assert first is not None and exclusive_owner(first) is not None  # not a copy


def test_backward_accumulates_in_place_into_unshared_grads() -> None:
    x = tc.tensor(np.ones(3), requires_grad=True)
    (x + x).sum().backward()
    first = x.grad
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad, np.full(3, 5.0))
    assert first is x.grad  # accumulated in place (PyTorch's): a held reference sees it


def test_contractions_write_into_recycled_memory() -> None:
    from tidu_compile.ops.structural import DotGeneral

    rng = np.random.default_rng(3)
    lhs, rhs = rng.standard_normal((4, 5, 3)), rng.standard_normal((4, 3, 6))
    op = DotGeneral((2,), (1,), (0,), (0,), lhs.shape, rhs.shape)  # batched, like matmul
    out = BufferPool().allocate((4, 5, 6), F64)
    assert op.evaluate_into(out, lhs, rhs) is out
    np.testing.assert_allclose(out, lhs @ rhs, rtol=1e-12)
    (fresh,) = op.evaluate(lhs, rhs)
    np.testing.assert_array_equal(fresh, out)
    transposed = DotGeneral((0,), (0,), (), (), (5, 3), (5, 6))  # x^T @ y, no copy
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 6))
    np.testing.assert_allclose(transposed.evaluate_into(np.empty((3, 6)), x, y), x.T @ y,
                               rtol=1e-12)  # fmt: skip

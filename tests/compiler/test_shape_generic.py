"""Native code shared across shapes: a new batch size reuses the object code of kernels
compiled before, and only when its own kernels are the same text.

Every program is lowered for its own shapes; ``compiler.kernel_code`` keys the object
code by the kernels' canonical text (leading extents dynamic, ``mean``'s ``1/n`` a
run-time parameter), so reuse shows as ``stats.generic_hits`` with ``stats.compiles``
unchanged, and a program whose kernels bake in something else (a slice's border, an
inner extent) compiles. Every gradient is compared with a cold compile and the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.compiler.generic import abstract
from tidu_compile.compiler.ssa_program import ArgSource, Instr, NodeProgram
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.ops import BroadcastInDim, Mul
from tidu_compile.ops.base import TensorType

BATCHES = (256, 200, 128, 64, 33)
FEATURES, HIDDEN, OUT = 48, 40, 10
#: Ulps (of the largest magnitude) a captured backward may differ from the per-node one.
CAPTURE_ULPS = 64


def _mlp_loss(x: tc.Tensor, y: tc.Tensor, *params: tc.Tensor) -> tc.Tensor:
    w1, b1, w2, b2 = params
    return tc.sum((tc.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)


def _mlp_mean_loss(x: tc.Tensor, y: tc.Tensor, *params: tc.Tensor) -> tc.Tensor:
    """The mean over the batch: its ``1/n`` is read at run time (``runtime_scales``)."""
    w1, b1, w2, b2 = params
    return tc.mean((tc.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)


def _params(rng: np.random.Generator) -> list[tc.Tensor]:
    shapes = [(FEATURES, HIDDEN), (HIDDEN,), (HIDDEN, OUT), (OUT,)]
    return [tc.tensor(0.3 * rng.standard_normal(s), requires_grad=True) for s in shapes]


def _train(
    executor: CompiledExecutor, loss_fn: Callable[..., tc.Tensor], batches=BATCHES
) -> list[int]:
    """Two SGD steps per batch size; the compiles each size cost. Every gradient is
    checked against the reference and against a cold compile of its own shape: bit for
    bit node by node; a captured backward (the second step of a tape structure), whose
    program fuses across node boundaries (an FMA may take a product and a sum of two
    nodes), within a few ulps of it (``test_whole_backward_capture``'s bound)."""
    rng = np.random.default_rng(0)
    params = _params(rng)
    costs = []
    for batch in batches:
        before = executor.stats.compiles
        own_shape = CompiledExecutor(False, capture=False)  # compiles this batch size only
        for _ in range(2):
            x = tc.tensor(rng.standard_normal((batch, FEATURES)))
            y = tc.tensor(rng.standard_normal((batch, OUT)))
            loss = loss_fn(x, y, *params)
            grads = tc.grad(loss, params, executor=executor)
            cold = tc.grad(loss, params, executor=own_shape)
            reference = tc.grad(loss, params, executor=tc.ReferenceExecutor())
            for g, c, r in zip(grads, cold, reference, strict=True):
                if executor.capture is None:
                    np.testing.assert_array_equal(g, c)
                else:
                    scale = np.finfo(c.dtype).eps * CAPTURE_ULPS * max(1.0, np.abs(c).max())
                    np.testing.assert_allclose(g, c, rtol=0, atol=scale)
                np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)
            params = [tc.tensor(p.numpy() - 1e-3 * g, requires_grad=True)
                      for p, g in zip(params, grads, strict=True)]  # fmt: skip
        costs.append(executor.stats.compiles - before)
    return costs


@pytest.mark.parametrize("loss", [_mlp_loss, _mlp_mean_loss], ids=["sum", "mean"])
@pytest.mark.parametrize(("composite", "capture"), [(False, False), (False, True), (True, True)],
                         ids=["per-node", "captured", "function"])  # fmt: skip
def test_new_batch_sizes_compile_nothing(
    tmp_path: Path, composite: bool, capture: bool, loss: Any
) -> None:
    executor = CompiledExecutor(tmp_path, capture=capture)
    costs = _train(executor, tc.function(loss) if composite else loss)
    assert costs[0] > 0 and costs[1:] == [0] * (len(BATCHES) - 1), costs
    assert executor.stats.generic_hits >= len(BATCHES) - 1


def test_a_shape_class_comes_back_from_disk(tmp_path: Path) -> None:
    _train(CompiledExecutor(tmp_path), _mlp_loss, batches=(256,))
    again = CompiledExecutor(tmp_path, forbid_compile=True)  # running LLVM raises
    _train(again, _mlp_loss, batches=(33,))
    assert again.stats.compiles == 0 and again.stats.generic_hits > 0


def test_an_extent_the_kernels_spell_out_is_compiled_again(tmp_path: Path) -> None:
    """``x`` is 10 x n: a kernel's rows are the 10, its inner loop runs over n (a bound
    in its code), so a new n shares the class but not the code: it compiles."""
    executor = CompiledExecutor(tmp_path)
    rng = np.random.default_rng(1)
    v = tc.tensor(rng.standard_normal(10), requires_grad=True)
    compiles = []
    for n in (256, 200):
        x = tc.tensor(rng.standard_normal((10, n)), requires_grad=True)
        before = executor.stats.compiles
        loss = tc.sum(tc.exp(x) * v[:, None])
        got = tc.grad(loss, [x, v], executor=executor)
        compiles.append(executor.stats.compiles - before)
        expected = tc.grad(loss, [x, v], executor=tc.ReferenceExecutor())
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-12)
    assert compiles[0] > 0 and compiles[1] > 0, compiles


def test_abstraction_names_extents_by_first_appearance() -> None:
    def program(n: int, m: int) -> NodeProgram:
        types = (TensorType((n, m), "float64"), TensorType((m,), "float64"),
                 TensorType((n, m), "float64"), TensorType((n, m), "float64"))  # fmt: skip
        broadcast = BroadcastInDim(shape=(n, m), broadcast_dimensions=(1,), operand_shape=(m,))
        instrs = (Instr(broadcast, (1,), (2,)), Instr(Mul(), (0, 2), (3,)))
        return NodeProgram((ArgSource("seed", 0), ArgSource("saved", 0)), types, instrs, (3,))

    a, b = abstract(program(256, 10)), abstract(program(33, 10))
    assert a.text == b.text and a.binding == (256, 10) and b.binding == (33, 10)
    assert "shape=(s0, s1,)" in a.text and "operand_shape=(s1,)" in a.text
    assert "256" not in a.text
    assert abstract(program(10, 10)).text != a.text  # equal extents: another class
    assert abstract(program(1, 10)).text != a.text  # 1 stays literal (broadcasts)

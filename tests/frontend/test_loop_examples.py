"""The loop examples (``tools/examples/gru_language_model.py``, ``neural_ode.py``):
each ``scan`` against the same program unrolled op by op and against central
differences, compiled with no fallback; and what ``checkpoint=True`` saves."""

from __future__ import annotations

import numpy as np
import pytest
from tidu_compile.tools.examples import gru_language_model as gru
from tidu_compile.tools.examples import neural_ode as ode

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor


def _tensors(arrays: dict[str, np.ndarray]) -> dict[str, tc.Tensor]:
    return {k: tc.tensor(v, requires_grad=True) for k, v in arrays.items()}


def _check(scan_loss, unrolled_loss, arrays: dict[str, np.ndarray]) -> None:  # type: ignore[no-untyped-def]
    """The compiled scan's gradient against the unrolled program's on the reference
    executor (every parameter), and against a central difference of the scan's loss
    along one random direction in all parameters at once (two loss evaluations, not two
    per element)."""
    compiled = CompiledExecutor(cache_dir=False, background=False)
    with tc.use_executor(ReferenceExecutor()):
        params = _tensors(arrays)
        expected = tc.grad(unrolled_loss(params), list(params.values()))
        value = float(unrolled_loss(params).numpy())
    with tc.use_executor(compiled):
        params = _tensors(arrays)
        loss = scan_loss(params)
        grads = tc.grad(loss, list(params.values()))
    assert compiled.stats.fallbacks == 0, compiled.stats.errors
    assert float(loss.numpy()) == pytest.approx(value, rel=1e-12)
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)
    rng = np.random.default_rng(0)
    direction = {n: rng.standard_normal(a.shape) for n, a in arrays.items()}

    def along(step: float) -> float:
        moved = {n: tc.tensor(a + step * direction[n]) for n, a in arrays.items()}
        with tc.use_executor(ReferenceExecutor()), tc.no_grad():
            return float(scan_loss(moved))

    step = 1e-6
    fd = (along(step) - along(-step)) / (2 * step)
    slope = sum(float(np.sum(g * direction[n])) for g, n in zip(grads, arrays, strict=True))
    assert slope == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_gru_language_model_over_token_ids() -> None:
    rng = np.random.default_rng(3)
    arrays, sequence = gru.init_params(rng), gru.tokens(rng, 16)
    _check(lambda p: gru.loss(p, sequence), lambda p: gru.loss_unrolled(p, sequence), arrays)


def test_rk4_neural_ode_over_50_steps() -> None:
    rng = np.random.default_rng(4)
    arrays = {**ode.init_params(rng), "y0": np.array([1.0, -0.5])}

    def split(p: dict[str, tc.Tensor]) -> tuple[dict[str, tc.Tensor], tc.Tensor]:
        return {k: p[k] for k in ode.PARAMETERS}, p["y0"]

    _check(lambda p: ode.loss(*split(p)), lambda p: ode.loss_unrolled(*split(p)), arrays)
    _check(lambda p: ode.loss(*split(p), checkpoint=True), lambda p: ode.loss_unrolled(*split(p)),
           arrays)  # fmt: skip


def _saved_bytes(checkpoint: bool) -> int:
    w = tc.tensor(np.eye(64) * 0.5, requires_grad=True)
    final, _ = tc.scan(lambda h, x: (tc.tanh(h @ w + x), None), tc.zeros(64),
                       tc.tensor(np.ones((100, 64))), checkpoint=checkpoint)  # fmt: skip
    return sum(np.asarray(v).nbytes for v in final._trace.saved_values.values())


def test_checkpoint_keeps_no_per_step_carries() -> None:
    """Without ``checkpoint`` the node keeps the 100 carries (100 x 64 f64, 51 KiB) for
    the backward; with it, only the inputs and outputs, and the backward recomputes them."""
    with tc.use_executor(ReferenceExecutor()):
        assert _saved_bytes(False) - _saved_bytes(True) == 100 * 64 * 8

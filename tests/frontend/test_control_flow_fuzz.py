"""Scans of random bodies from the op table: every smooth unary elementwise op of the
table may appear, twice per body; the scan's values and gradients must equal the same
steps unrolled op by op (reference executor; two seeds compiled too)."""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile import CompiledExecutor, ReferenceExecutor, ops
from tidu_compile.frontend.tensor import apply_op

SMOOTH_UNARY = [
    primitive for primitive in ops.OP_TABLE.values()
    if issubclass(primitive, ops.Unary) and primitive.domain == "real"
    and primitive.differentiable and "float64" in getattr(primitive, "allowed_dtypes", ())
    and not primitive.__dataclass_fields__ and primitive.numpy_names
]  # fmt: skip


def _random_step(rng: np.random.Generator, w: tc.Tensor):  # type: ignore[no-untyped-def]
    first, second = (SMOOTH_UNARY[i]() for i in rng.integers(0, len(SMOOTH_UNARY), 2))

    def step(h: tc.Tensor, x: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:
        (inner,) = apply_op(first, [h])
        (outer,) = apply_op(second, [inner * w + x])
        h = tc.tanh(outer)
        return h, tc.sum(h * x)

    return step, (first, second)


def _loss(step, h0: tc.Tensor, xs: tc.Tensor, scan: bool) -> tc.Tensor:  # type: ignore[no-untyped-def]
    if scan:
        h, ys = tc.scan(step, h0, xs)
        return tc.sum(ys) + tc.sum(h * h)
    h, ys = h0, []
    for t in range(xs.shape[0]):
        h, y = step(h, xs[t])
        ys.append(y)
    return tc.sum(tc.stack(ys)) + tc.sum(h * h)


@pytest.mark.parametrize("seed", range(8))
def test_a_random_body_scans_as_it_unrolls(seed: int) -> None:
    assert len(SMOOTH_UNARY) >= 8  # exp, sin, cos, tanh, expm1, exp2, ...
    rng = np.random.default_rng(seed)
    compiled = seed < 2
    executor = (CompiledExecutor(cache_dir=False, background=False) if compiled
                else ReferenceExecutor())  # fmt: skip
    w = tc.tensor(rng.uniform(-0.5, 0.5, 3), requires_grad=True)
    h0 = tc.tensor(rng.uniform(-0.5, 0.5, 3), requires_grad=True)
    xs = tc.tensor(rng.uniform(-0.5, 0.5, (5, 3)), requires_grad=True)
    step, chosen = _random_step(rng, w)
    with tc.use_executor(ReferenceExecutor()):
        unrolled = _loss(step, h0, xs, scan=False)
        expected = tc.grad(unrolled, [w, h0, xs])
    with tc.use_executor(executor):
        loss = _loss(step, h0, xs, scan=True)
        grads = tc.grad(loss, [w, h0, xs])
    what = f"seed {seed}: {chosen}"
    np.testing.assert_allclose(loss.numpy(), unrolled.numpy(), rtol=1e-12, err_msg=what)
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12, err_msg=what)
    if compiled:
        assert executor.stats.fallbacks == 0, (what, executor.stats.errors)

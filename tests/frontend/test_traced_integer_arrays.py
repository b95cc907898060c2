"""Integer arrays inside ``@tc.function`` traces compile natively (issue 21).

The two programs of the issue: a GRU that slices an int64 token array inside the trace
(once ``TypeError: Slice(...): input has dtype int64``) and a PPO loss that reshapes its
``tensor<32xi64>`` actions (once ``VerifyException: tidu.reshape operand is
tensor<32xi64>``, then the reference path). Both on a compiling executor: the
reference's values, no numpy fallback, no warning; slices, reshapes, transposes,
concatenations, pads and gathers of every signed integer dtype likewise.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


def _gru(params: dict[str, tc.Tensor], tokens: tc.Tensor) -> tc.Tensor:
    """A one-layer GRU over int64 tokens ``(batch, time)``, next-token cross-entropy."""
    embed, wz, wr, wh, out = (params[k] for k in ("embed", "wz", "wr", "wh", "out"))
    h = tc.zeros((tokens.shape[0], wz.shape[1]))
    inputs, targets = tokens[:, :-1], tokens[:, 1:]  # int64 slices inside the trace
    loss = 0.0
    for t in range(inputs.shape[1]):
        x = embed[inputs[:, t]]
        xh = tc.concatenate([x, h], axis=1)
        z, r = tc.sigmoid(xh @ wz), tc.sigmoid(xh @ wr)
        candidate = tc.tanh(tc.concatenate([x, r * h], axis=1) @ wh)
        h = (1 - z) * h + z * candidate
        logp = tc.log_softmax(h @ out, axis=1)
        loss = loss - tc.mean(logp[tc.arange(tokens.shape[0]), targets[:, t]])
    return loss


def _ppo(logits: tc.Tensor, actions: tc.Tensor, advantages: tc.Tensor,
         old_logp: tc.Tensor) -> tc.Tensor:  # fmt: skip
    """PPO's clipped surrogate; ``actions`` int64 of shape ``(32, 1)``, reshaped."""
    flat = tc.reshape(actions, (32,))  # the reshape of tensor<32xi64>
    logp = tc.take_along_axis(tc.log_softmax(logits, axis=-1), flat.reshape(32, 1), axis=1)
    ratio = tc.exp(logp[:, 0] - old_logp)
    clipped = tc.clip(ratio, 0.8, 1.2)
    return -tc.mean(tc.minimum(ratio * advantages, clipped * advantages))


def _run(f: Callable[..., tc.Tensor], args: list, wrt: list[int]) -> tuple:
    compiled = CompiledExecutor(cache_dir=False, background=False)
    results = []
    for executor in (compiled, tc.ReferenceExecutor()):
        with tc.use_executor(executor), warnings.catch_warnings():
            warnings.simplefilter("error")
            traced = tc.function(f)
            for _ in range(2):  # the trace, then the compiled program
                loss = traced(*args)
                grads = tc.grad(loss, [args[i] for i in wrt] if wrt != [-1] else
                                list(args[0].values()))  # fmt: skip
            results.append((loss.numpy(), grads))
    assert compiled.stats.fallbacks == 0, compiled.stats
    (loss_c, grads_c), (loss_r, grads_r) = results
    np.testing.assert_allclose(loss_c, loss_r, rtol=1e-10)
    for g_c, g_r in zip(grads_c, grads_r, strict=True):
        np.testing.assert_allclose(g_c, g_r, rtol=1e-8, atol=1e-12)
    return loss_c, grads_c


def test_gru_slicing_int64_tokens_in_a_trace_compiles() -> None:
    rng = np.random.default_rng(0)
    vocab, hidden, width = 11, 6, 4
    params = {
        "embed": rng.standard_normal((vocab, width)), "out": rng.standard_normal((hidden, vocab)),
        **{k: rng.standard_normal((width + hidden, hidden)) * 0.3 for k in ("wz", "wr", "wh")},
    }  # fmt: skip
    tensors = {k: tc.tensor(v, requires_grad=True) for k, v in params.items()}
    tokens = tc.tensor(rng.integers(0, vocab, (3, 6)))
    assert tokens.dtype == np.int64
    _run(_gru, [tensors, tokens], [-1])


def test_ppo_reshaping_int64_actions_in_a_trace_compiles() -> None:
    rng = np.random.default_rng(1)
    logits = tc.tensor(rng.standard_normal((32, 5)), requires_grad=True)
    actions = tc.tensor(rng.integers(0, 5, (32, 1)))
    args = [logits, actions, tc.tensor(rng.standard_normal(32)),
            tc.tensor(np.log(rng.uniform(0.1, 0.5, 32)))]  # fmt: skip
    _run(_ppo, args, [0])


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "bool"])
def test_integer_layout_ops_in_a_trace_are_native(dtype: str) -> None:
    def f(x: tc.Tensor, idx: tc.Tensor) -> tc.Tensor:
        flat = idx.reshape(-1)[1:]
        joined = tc.concatenate([flat, tc.pad(flat, (1, 1))])
        turned = tc.transpose(idx)[::-1]
        weights = joined.astype(np.float64)
        return tc.sum(x[: weights.shape[0]] * weights) + tc.sum(turned.astype(np.float64))

    rng = np.random.default_rng(2)
    x = tc.tensor(rng.standard_normal(64), requires_grad=True)
    _run(f, [x, tc.tensor(rng.integers(0, 2, (4, 5)).astype(dtype))], [0])

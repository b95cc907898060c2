"""A GRU language model over integer token ids, its time loop one ``tc.scan``.

The carry is the hidden state; each step reads a token id and the next one (``xs``,
integer arrays), looks the token's embedding up (a gather inside the body) and returns
the next token's negative log-likelihood. The whole sequence is ONE tape node whose
backward is a reverse scan; the body compiles once, whatever the sequence length.
``loss_unrolled`` is the same program written as a Python loop (one node per op).
"""

from __future__ import annotations

import numpy as np

import tidu_compile as tc

VOCABULARY, HIDDEN = 12, 8
PARAMETERS = ("embed", "w", "u", "b", "w_out", "b_out")


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``w``: (H, 3H) input weights of the gates z, r, n; ``u``: (H, 3H) recurrent ones."""
    return {
        "embed": 0.5 * rng.standard_normal((VOCABULARY, HIDDEN)),
        "w": 0.3 * rng.standard_normal((HIDDEN, 3 * HIDDEN)),
        "u": 0.3 * rng.standard_normal((HIDDEN, 3 * HIDDEN)),
        "b": 0.1 * rng.standard_normal(3 * HIDDEN),
        "w_out": 0.3 * rng.standard_normal((HIDDEN, VOCABULARY)),
        "b_out": np.zeros(VOCABULARY),
    }


def tokens(rng: np.random.Generator, length: int) -> np.ndarray:
    return rng.integers(0, VOCABULARY, length).astype(np.int64)


def gru_step(params: dict[str, tc.Tensor], h: tc.Tensor, token: tc.Tensor,
             following: tc.Tensor) -> tuple[tc.Tensor, tc.Tensor]:  # fmt: skip
    """One step: the new hidden state and ``-log p(following | tokens so far)``."""
    x = params["embed"][token]
    gates_x = x @ params["w"] + params["b"]
    gates_h = h @ params["u"]
    z = tc.sigmoid(gates_x[:HIDDEN] + gates_h[:HIDDEN])
    r = tc.sigmoid(gates_x[HIDDEN : 2 * HIDDEN] + gates_h[HIDDEN : 2 * HIDDEN])
    n = tc.tanh(gates_x[2 * HIDDEN :] + r * gates_h[2 * HIDDEN :])
    h = (1.0 - z) * n + z * h
    log_p = tc.log_softmax(h @ params["w_out"] + params["b_out"])
    return h, -log_p[following]


def loss(params: dict[str, tc.Tensor], sequence: np.ndarray) -> tc.Tensor:
    """The mean next-token negative log-likelihood, the time loop a ``scan``."""
    def step(h: tc.Tensor, pair: tuple[tc.Tensor, tc.Tensor]) -> tuple[tc.Tensor, tc.Tensor]:
        return gru_step(params, h, *pair)

    _, nll = tc.scan(step, tc.zeros(HIDDEN), (sequence[:-1], sequence[1:]))
    return tc.mean(nll)


def loss_unrolled(params: dict[str, tc.Tensor], sequence: np.ndarray) -> tc.Tensor:
    h, terms = tc.zeros(HIDDEN), []
    for token, following in zip(sequence[:-1], sequence[1:], strict=True):
        h, term = gru_step(params, h, tc.tensor(token), tc.tensor(following))
        terms.append(term)
    return tc.mean(tc.stack(terms))

"""A neural ODE integrated with RK4 over 50 steps, the integrator one ``tc.scan``.

The vector field is a small MLP, ``f(y) = tanh(y @ w1 + b1) @ w2``; each step is the
classical Runge-Kutta update (four evaluations of ``f``), the carry the state. The
loss is the squared distance of the final state to a target: its gradient with respect
to the MLP's weights and the initial state is ONE reverse scan.
"""

from __future__ import annotations

import numpy as np

import tidu_compile as tc

STATE, WIDTH, STEPS, DT = 2, 16, 50, 0.05
PARAMETERS = ("w1", "b1", "w2")
TARGET = np.array([0.5, -0.25])


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "w1": 0.5 * rng.standard_normal((STATE, WIDTH)),
        "b1": 0.1 * rng.standard_normal(WIDTH),
        "w2": 0.5 * rng.standard_normal((WIDTH, STATE)),
    }


def rk4_step(params: dict[str, tc.Tensor], y: tc.Tensor) -> tc.Tensor:
    def f(state: tc.Tensor) -> tc.Tensor:
        return tc.tanh(state @ params["w1"] + params["b1"]) @ params["w2"]

    k1 = f(y)
    k2 = f(y + DT / 2 * k1)
    k3 = f(y + DT / 2 * k2)
    k4 = f(y + DT * k3)
    return y + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def loss(params: dict[str, tc.Tensor], y0: tc.Tensor, checkpoint: bool = False) -> tc.Tensor:
    """``|y(T) - target|^2``, the 50 steps a ``scan`` (``checkpoint``: the states are
    recomputed in the backward instead of kept)."""
    final, _ = tc.scan(lambda y, _: (rk4_step(params, y), None), y0, length=STEPS,
                       checkpoint=checkpoint)  # fmt: skip
    return tc.sum((final - TARGET) ** 2)


def loss_unrolled(params: dict[str, tc.Tensor], y0: tc.Tensor) -> tc.Tensor:
    y = y0
    for _ in range(STEPS):
        y = rk4_step(params, y)
    return tc.sum((y - TARGET) ** 2)

"""Adam and AdamW, as ``torch.optim.Adam``/``AdamW`` compute them (the single-tensor path,
operation for operation, so float64 trajectories agree to rounding). At step ``t``::

    g = -grad if maximize else grad
    p = p * (1 - lr * weight_decay)                (AdamW: decoupled weight decay)
    g = g + weight_decay * p                       (Adam with weight_decay != 0)
    m = m + (1 - beta1) * (g - m)                  (torch's lerp; 1 - beta1 >= 0.5:
                                                    m = g - (g - m) * beta1)
    v = v * beta2 + (1 - beta2) * g * g
    v_max = maximum(v_max, v)                      (amsgrad; then v_max replaces v below)
    denom = sqrt(v) / sqrt(1 - beta2 ** t) + eps
    p = p + (-lr / (1 - beta1 ** t)) * m / denom

The scalars (``lr / (1 - beta1 ** t)``, ``sqrt(1 - beta2 ** t)``) are computed in
Python as torch computes them, and passed to the compiled step as 0-d values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.optim.optimizer import Optimizer, check_nonnegative

__all__ = ["Adam", "AdamW"]


@dataclass(frozen=True)
class AdamOptions:
    """What changes the computation of an Adam step (part of the program's key)."""

    amsgrad: bool
    weight_decay: str  # "none", "coupled" (Adam) or "decoupled" (AdamW)
    lerp_from_average: bool  # torch's lerp: m + w * (g - m) when w = 1 - beta1 < 0.5
    maximize: bool


def adam_rule(
    param: Tensor, grad: Tensor, state: dict[str, Tensor], s: dict[str, Tensor], o: AdamOptions
) -> tuple[Tensor, ...]:
    """One parameter's Adam step: the new parameter, ``exp_avg``, ``exp_avg_sq`` (and
    ``max_exp_avg_sq`` with amsgrad)."""
    g = -grad if o.maximize else grad
    if o.weight_decay == "decoupled":
        param = param * s["decay_factor"]
    elif o.weight_decay == "coupled":
        g = g + s["weight_decay"] * param
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m = m + s["one_minus_beta1"] * (g - m) if o.lerp_from_average else g - (g - m) * s["beta1"]
    v = v * s["beta2"] + s["one_minus_beta2"] * g * g
    sqrt = FUNCTIONS["sqrt"]
    if o.amsgrad:
        v_max = FUNCTIONS["maximum"](state["max_exp_avg_sq"], v)
        denom = sqrt(v_max) / s["bias_correction2_sqrt"] + s["eps"]
    else:
        denom = sqrt(v) / s["bias_correction2_sqrt"] + s["eps"]
    new_param = param + s["neg_step_size"] * m / denom
    return (new_param, m, v, v_max) if o.amsgrad else (new_param, m, v)


class Adam(Optimizer, rule=adam_rule):
    """``torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    amsgrad=False, *, maximize=False, decoupled_weight_decay=False)``: every parameter
    updated in one compiled step."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        decoupled_weight_decay: bool = False,
    ) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize,
                    "decoupled_weight_decay": decoupled_weight_decay}  # fmt: skip
        super().__init__(params, defaults)

    def check_group(self, group: dict[str, Any]) -> None:
        check_nonnegative(group, "lr", "eps", "weight_decay")
        for index, beta in enumerate(group["betas"]):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: {beta}")

    def state_names(self, group: dict[str, Any]) -> tuple[str, ...]:
        names = ("exp_avg", "exp_avg_sq")
        return (*names, "max_exp_avg_sq") if group["amsgrad"] else names

    def initial_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        zeros = np.zeros(param.shape, param.dtype)
        return {"step": 0.0, **{name: zeros for name in self.state_names(group)}}

    def scalars(self, group: dict[str, Any], state: dict[str, Any]) -> dict[str, float]:
        state["step"] += 1
        step, lr, (beta1, beta2) = state["step"], group["lr"], group["betas"]
        step_size = lr / (1 - beta1**step)
        return {"decay_factor": 1 - lr * group["weight_decay"],
                "weight_decay": group["weight_decay"], "one_minus_beta1": 1 - beta1,
                "beta1": 1 - (1 - beta1), "beta2": beta2, "one_minus_beta2": 1 - beta2,
                "bias_correction2_sqrt": math.sqrt(1 - beta2**step),
                "neg_step_size": -step_size, "eps": group["eps"]}  # fmt: skip

    def options(self, group: dict[str, Any]) -> AdamOptions:
        if group["weight_decay"] == 0:
            decay = "none"
        else:
            decay = "decoupled" if group["decoupled_weight_decay"] else "coupled"
        return AdamOptions(amsgrad=bool(group["amsgrad"]), weight_decay=decay,
                           lerp_from_average=1 - group["betas"][0] < 0.5,
                           maximize=bool(group["maximize"]))  # fmt: skip


class AdamW(Adam):
    """``torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    weight_decay=1e-2, amsgrad=False, *, maximize=False)``: Adam with decoupled weight
    decay (``p = p * (1 - lr * weight_decay)`` before the update)."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)  # fmt: skip

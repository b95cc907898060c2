"""Stochastic gradient descent, as ``torch.optim.SGD`` computes it (its single-tensor
path, operation for operation, so float64 trajectories agree to rounding)::

    g = -grad if maximize else grad
    g = g + weight_decay * p                       (weight_decay != 0)
    b = g                                          (momentum != 0, first step)
    b = momentum * b + (1 - dampening) * g         (momentum != 0, later steps)
    g = g + momentum * b  if nesterov  else  b     (momentum != 0)
    p = p + (-lr) * g
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidu_compile.frontend.tensor import Tensor
from tidu_compile.optim.optimizer import Optimizer, check_nonnegative

__all__ = ["SGD"]


@dataclass(frozen=True)
class SGDOptions:
    """What changes the computation of an SGD step (part of the program's key)."""

    momentum: bool
    nesterov: bool
    weight_decay: bool
    maximize: bool


def sgd_rule(
    param: Tensor, grad: Tensor, state: dict[str, Tensor], s: dict[str, Tensor], o: SGDOptions
) -> tuple[Tensor, ...]:
    """One parameter's SGD step: the new parameter (and momentum buffer)."""
    g = -grad if o.maximize else grad
    if o.weight_decay:
        g = g + s["weight_decay"] * param
    if not o.momentum:
        return (param + (-s["lr"]) * g,)
    if "momentum_buffer" in state:
        buffer = state["momentum_buffer"] * s["momentum"] + s["one_minus_dampening"] * g
    else:
        buffer = g
    g = g + s["momentum"] * buffer if o.nesterov else buffer
    return param + (-s["lr"]) * g, buffer


class SGD(Optimizer, rule=sgd_rule):
    """``torch.optim.SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
    nesterov=False, *, maximize=False)``: every parameter updated in one compiled step."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov,
                    "maximize": maximize}  # fmt: skip
        super().__init__(params, defaults)

    def check_group(self, group: dict[str, Any]) -> None:
        check_nonnegative(group, "lr", "momentum", "weight_decay")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def state_names(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("momentum_buffer",) if group["momentum"] != 0 else ()

    def scalars(self, group: dict[str, Any], state: dict[str, Any]) -> dict[str, float]:
        return {"lr": group["lr"], "momentum": group["momentum"],
                "one_minus_dampening": 1 - group["dampening"],
                "weight_decay": group["weight_decay"]}  # fmt: skip

    def options(self, group: dict[str, Any]) -> SGDOptions:
        return SGDOptions(momentum=group["momentum"] != 0, nesterov=bool(group["nesterov"]),
                          weight_decay=group["weight_decay"] != 0,
                          maximize=bool(group["maximize"]))  # fmt: skip

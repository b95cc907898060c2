"""The optimizer base of ``tidu_compile.optim``: parameter groups, ``zero_grad`` and a
``step`` that updates every parameter with ONE compiled program.

``Optimizer(params, defaults)`` takes what ``torch.optim`` takes: a list (or any nesting
of lists, tuples and dicts) of leaf tensors that require gradients, or a list of
parameter groups (dicts with ``"params"`` and per-group settings that override
``defaults``). ``optimizer.state[p]`` holds each parameter's state (numpy arrays such as
``exp_avg``, and counters such as ``step``), created on its first step.

An algorithm (``SGD``, ``Adam``) says what it computes for one parameter, as a *rule*
written with tidu_compile functions::

    rule(param, grad, state, scalars, options) -> (new_param, *new_state)

``state`` holds the parameter's arrays (``state_names(group)``, those present),
``scalars`` its 0-d settings for this step (``lr``, bias corrections: arrays of the
parameter's dtype, so a new learning rate is a new value, not a new program) and
``options`` the settings that change the computation (``nesterov``, ``amsgrad``: part
of the program's key). ``step()`` gathers every parameter that has a ``.grad`` and runs
the rules of all of them as one ``@tc.function(always_compiled=True)`` program: traced
once per structure (shapes, dtypes, options), then on a ``CompiledExecutor`` one native
program per step for all parameters (torch's ``foreach``/``fused`` paths do the same on
GPUs). Each parameter then takes its new values in place (``Tensor.replace_values``:
a graph recorded before the step raises at backward, as torch's version counter does).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tidu_compile.frontend.composite_function import function
from tidu_compile.frontend.state import enable_grad, no_grad
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.frontend.trees import leaves

__all__ = ["Optimizer", "Rule", "check_nonnegative", "fused_program"]

#: ``rule(param, grad, state, scalars, options) -> (new_param, *new_state)``.
Rule = Callable[[Tensor, Tensor, dict[str, Tensor], dict[str, Tensor], Any], tuple[Tensor, ...]]
#: One parameter's arguments of the fused program: param, grad, state, scalars, options.
Entry = tuple[Tensor, Tensor, dict[str, Tensor], dict[str, np.ndarray], Hashable]


def fused_program(rule: Rule, name: str) -> Callable[[list[Entry]], tuple[Tensor, ...]]:
    """The compiled step of ``rule`` over a list of parameters' entries: the outputs of
    every parameter's rule, in order, as one traced program."""

    def step(entries: list[Entry]) -> tuple[Tensor, ...]:
        outputs: list[Tensor] = []
        for param, grad, state, scalars, options in entries:
            outputs.extend(rule(param, grad, state, scalars, options))  # type: ignore[arg-type]
        return tuple(outputs)

    step.__name__ = step.__qualname__ = f"{name}.step"
    return function(step, always_compiled=True)  # type: ignore[no-any-return]


def _grad_array(grad: Any) -> np.ndarray:
    """``.grad``'s values without a copy: a view of the array, which ``backward`` may
    later add to in place (``_not_aliasing`` keeps results apart)."""
    return (grad._data if isinstance(grad, Tensor) else np.asarray(grad)).view()


#: ``Optimizer._traces`` keeps at most this many layouts (cleared when full).
_MAX_TRACES = 64
#: ``Optimizer._traces``'s entry for a layout whose trace runs only by the call (a long
#: trace cut into segments: ``frontend.trace_segments``).
_BY_CALL: Any = object()


@dataclass
class _Target:
    """One parameter of a step: its state, gradient values, state arrays present,
    scalars and options."""

    param: Tensor
    state: dict[str, Any]
    names: tuple[str, ...]
    grad: np.ndarray
    present: tuple[str, ...]
    scalars: dict[str, np.ndarray]
    options: Hashable

    def key(self) -> Hashable:
        """What the traced step depends on: layouts, state and scalar names, options."""
        data, state = self.param._data, self.state
        return (data.shape, data.dtype, self.present, tuple(self.scalars), self.options,
                tuple((state[n].shape, state[n].dtype) for n in self.present))  # fmt: skip


def _not_aliasing(result: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``result``, copied when it may be ``grad``'s memory (SGD's first momentum buffer
    is the gradient itself), so a later backward adding into ``.grad`` cannot change it."""
    return result.copy() if np.may_share_memory(result, grad) else result


def _parameter_groups(params: Any) -> list[dict[str, Any]]:
    """torch's ``params`` argument as a list of groups (each a dict with ``"params"``)."""
    if isinstance(params, Tensor):
        raise TypeError(
            "params argument given to the optimizer should be an iterable of Tensors or "
            "dicts, but got a Tensor (wrap it in a list)"
        )
    if not isinstance(params, (list, tuple, dict)):
        params = list(params)  # a generator
    if (
        isinstance(params, (list, tuple))
        and params
        and all(isinstance(g, dict) and "params" in g for g in params)
    ):
        return [dict(g) for g in params]
    return [{"params": params}]


class Optimizer:
    """The base of the optimizers (``torch.optim.Optimizer``'s interface): a subclass
    names its per-parameter rule (``class SGD(Optimizer, rule=sgd_rule)``) and says what
    state a parameter has and which scalars and options a step passes (see the module
    docstring)."""

    #: The program that runs the class's rule for all parameters at once.
    program: ClassVar[Callable[[list[Entry]], tuple[Tensor, ...]]]

    def __init_subclass__(cls, rule: Rule | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if rule is not None:
            cls.program = fused_program(rule, cls.__name__)

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        #: Each parameter's state (by identity), made on its first step.
        self.state: dict[Tensor, dict[str, Any]] = {}
        #: The traced steps by the layouts of their arguments (``_run``).
        self._traces: dict[Hashable, Any] = {}
        groups = _parameter_groups(params)
        if not groups or not any(True for g in groups for _ in leaves(g["params"])):
            raise ValueError("optimizer got an empty parameter list")
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group (``{"params": ..., "lr": ...}``; unset settings from ``defaults``)."""
        group = {**self.defaults, **param_group}
        params = list(leaves(group["params"]))
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(p).__name__}")
            if not p.requires_grad or not p.is_leaf:
                raise ValueError("optimizer can only optimize leaf tensors that require "
                                 "gradients (tc.tensor(..., requires_grad=True))")  # fmt: skip
            if p.dtype.kind != "f":
                raise TypeError(f"optimizer: parameters must be real floating tensors, got "
                                f"{p.dtype} (complex parameters are not supported)")  # fmt: skip
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
            seen.add(id(p))
        group["params"] = params
        self.check_group(group)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad``: to None (torch's default), or to zeros in
        place (``set_to_none=False``: a reference held to ``.grad`` sees the zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif isinstance(p.grad, Tensor):  # after backward(create_graph=True)
                    p.grad = np.zeros(p.shape, p.dtype)
                else:
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a ``.grad``, all in one compiled program;
        returns ``closure()`` (re-evaluated with gradients enabled) when given."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        targets: list[_Target] = []
        for group in self.param_groups:
            names, options = self.state_names(group), self.options(group)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state.get(p)
                if state is None:
                    state = self.state[p] = self.initial_state(p, group)
                scalars = {
                    k: np.asarray(v, dtype=p.dtype) for k, v in self.scalars(group, state).items()
                }
                grad = _grad_array(p.grad)
                if grad.shape != p.shape or grad.dtype != p.dtype:
                    raise TypeError(
                        f"optimizer: a parameter of shape {p.shape} and dtype {p.dtype} has "
                        f"a .grad of shape {grad.shape} and dtype {grad.dtype}"
                    )
                present = tuple(n for n in names if n in state)
                targets.append(_Target(p, state, names, grad, present, scalars, options))
        if targets:
            results = iter(self._run(targets))
            for target in targets:
                target.param.replace_values(_not_aliasing(next(results), target.grad))
                for n in target.names:
                    target.state[n] = _not_aliasing(next(results), target.grad)
        return loss

    def _run(self, targets: list[_Target]) -> list[np.ndarray]:
        """The outputs of ``program`` for ``targets``: its trace replayed on the arrays
        themselves, found by a key of their layouts (``_Target.key``), not through the
        ``@tc.function`` call (which walks and wraps every leaf: 0.1 ms of a 784-256-10
        MLP's 0.2 ms step); a new key traces through the call's own lookup."""
        key = tuple(t.key() for t in targets)
        traced = self._traces.get(key)
        if traced is None or traced is _BY_CALL:
            entries: list[Entry] = [
                (t.param.detach(), Tensor(t.grad), {n: Tensor(t.state[n]) for n in t.present},
                 t.scalars, t.options)
                for t in targets
            ]  # fmt: skip
            with no_grad():
                found = None if traced is _BY_CALL else type(self).program.trace_for(  # type: ignore[attr-defined]
                    (entries,), needs_gradient=False)  # fmt: skip
                if len(self._traces) >= _MAX_TRACES:
                    self._traces.clear()
                if found is None or found[0].forward_plan is None:  # segmented: by the call
                    self._traces[key] = _BY_CALL
                    return [r.numpy() for r in type(self).program(entries)]
            traced = self._traces[key] = found[0]
        data: list[Any] = []
        for t in targets:
            data += (t.param._data, t.grad, *(t.state[n] for n in t.present),
                     *t.scalars.values())  # fmt: skip
        values = traced.forward(data + traced.constants)
        return [np.asarray(values[i]) for i in traced.graph.outputs]

    # ------------------------------------------------------------ set by each algorithm
    def check_group(self, group: dict[str, Any]) -> None:
        """Raise ``ValueError`` for settings the algorithm refuses."""

    def state_names(self, group: dict[str, Any]) -> tuple[str, ...]:
        """The state arrays a step returns after the new parameter, in order."""
        return ()

    def initial_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        """A parameter's state before its first step."""
        return {}

    def scalars(self, group: dict[str, Any], state: dict[str, Any]) -> dict[str, float]:
        """This step's 0-d values for one parameter (may advance ``state``'s counters)."""
        return {}

    def options(self, group: dict[str, Any]) -> Hashable:
        """The settings that change the computation (part of the program's key)."""
        return ()

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self.defaults.items())
        return f"{type(self).__name__}({settings}; {len(self.param_groups)} group(s))"


def check_nonnegative(group: dict[str, Any], *names: str) -> None:
    """torch's ``ValueError("Invalid <name> value: ...")`` for a negative setting."""
    for name in names:
        if not group[name] >= 0.0:
            label = "learning rate" if name == "lr" else f"{name} value"
            raise ValueError(f"Invalid {label}: {group[name]}")

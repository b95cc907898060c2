"""``tidu_compile.optim``: torch.optim's trajectories, to 1e-12 in float64 over 100 steps.

The expected trajectories are torch 2.13's single-tensor update formulas
(``torch/optim/sgd.py``, ``adam.py``), written here with numpy on the same problem with
its gradients written by hand (no torch at test time). Each step is one compiled
program for all parameters (``fallbacks == 0``, one program run per step).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

STEPS = 100
RNG = np.random.default_rng(22)
X = RNG.normal(size=(16, 3))
Y = RNG.normal(size=(16, 4))
W0 = RNG.normal(size=(3, 4))
B0 = RNG.normal(size=4)

Arrays = list[np.ndarray]


def loss_of(w: Any, b: Any) -> Any:
    return tc.mean((tc.matmul(X, w) + b - Y) ** 2)


def numpy_gradients(w: np.ndarray, b: np.ndarray) -> Arrays:
    ct = 2.0 * (X @ w + b - Y) / Y.size
    return [X.T @ ct, ct.sum(axis=0)]


# ------------------------------------------------------------------ torch's formulas


def torch_sgd(lr: float, momentum: float = 0.0, dampening: float = 0.0,
              weight_decay: float = 0.0, nesterov: bool = False) -> list[Arrays]:  # fmt: skip
    params, buffers, path = [W0.copy(), B0.copy()], [None, None], []
    for _ in range(STEPS):
        for i, grad in enumerate(numpy_gradients(*params)):
            if weight_decay != 0:
                grad = grad + weight_decay * params[i]
            if momentum != 0:
                buf = buffers[i]
                buf = grad.copy() if buf is None else buf * momentum + (1 - dampening) * grad
                buffers[i] = buf
                grad = grad + momentum * buf if nesterov else buf
            params[i] = params[i] + (-lr) * grad
        path.append([p.copy() for p in params])
    return path


def torch_adam(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
               weight_decay: float = 0.0, amsgrad: bool = False,
               decoupled: bool = False) -> list[Arrays]:  # fmt: skip
    beta1, beta2 = betas
    params = [W0.copy(), B0.copy()]
    m, v, v_max = [np.zeros_like(p) for p in params], [np.zeros_like(p) for p in params], [
        np.zeros_like(p) for p in params]  # fmt: skip
    path = []
    for step in range(1, STEPS + 1):
        for i, grad in enumerate(numpy_gradients(*params)):
            if weight_decay != 0:
                if decoupled:
                    params[i] = params[i] * (1 - lr * weight_decay)
                else:
                    grad = grad + weight_decay * params[i]
            weight = 1 - beta1  # torch's lerp_(grad, 1 - beta1)
            if weight < 0.5:
                m[i] = m[i] + weight * (grad - m[i])
            else:
                m[i] = grad - (grad - m[i]) * (1 - weight)
            v[i] = v[i] * beta2 + (1 - beta2) * grad * grad
            step_size = lr / (1 - beta1**step)
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            if amsgrad:
                v_max[i] = np.maximum(v_max[i], v[i])
                denom = np.sqrt(v_max[i]) / bias_correction2_sqrt + eps
            else:
                denom = np.sqrt(v[i]) / bias_correction2_sqrt + eps
            params[i] = params[i] + (-step_size) * m[i] / denom
        path.append([p.copy() for p in params])
    return path


# ------------------------------------------------------------------ trajectories


def trajectory(make: Callable[[list[tc.Tensor]], tc.optim.Optimizer],
               executor: CompiledExecutor, by_backward: bool = True) -> list[Arrays]:  # fmt: skip
    """The parameters after each step, the gradients from ``backward()`` or (to compare
    the optimizer alone: Adam's normalized steps grow rounding-level differences of two
    gradient computations) the same numpy gradients as the expected path."""
    w, b = tc.tensor(W0.copy(), requires_grad=True), tc.tensor(B0.copy(), requires_grad=True)
    optimizer = make([w, b])
    path = []
    with tc.use_executor(executor):
        for _ in range(STEPS):
            optimizer.zero_grad()
            if by_backward:
                loss_of(w, b).backward()
            else:
                w.grad, b.grad = numpy_gradients(w.numpy(), b.numpy())
            optimizer.step()
            path.append([w.numpy().copy(), b.numpy().copy()])
    return path


def assert_same_path(got: list[Arrays], expected: list[Arrays]) -> None:
    for step, (g, e) in enumerate(zip(got, expected, strict=True)):
        for name, a, x in zip(("w", "b"), g, e, strict=True):
            np.testing.assert_allclose(
                a, x, rtol=1e-12, atol=1e-12, err_msg=f"{name}, step {step + 1}"
            )


SGD_CASES = {
    "plain": {"lr": 0.1},
    "momentum": {"lr": 0.05, "momentum": 0.9},
    "dampening": {"lr": 0.05, "momentum": 0.9, "dampening": 0.3},
    "nesterov": {"lr": 0.05, "momentum": 0.8, "nesterov": True},
    "weight_decay": {"lr": 0.05, "momentum": 0.5, "weight_decay": 0.01},
}


@pytest.mark.parametrize("case", SGD_CASES)
def test_sgd_follows_torch_for_100_steps(case: str, compiled: CompiledExecutor) -> None:
    settings = SGD_CASES[case]
    before = compiled.stats.fallbacks
    got = trajectory(lambda params: tc.optim.SGD(params, **settings), compiled)
    assert_same_path(got, torch_sgd(**settings))
    assert compiled.stats.fallbacks == before


ADAM_CASES: dict[str, dict[str, Any]] = {
    "default": {"lr": 0.01},
    "betas": {"lr": 0.005, "betas": (0.3, 0.999)},  # 1 - beta1 >= 0.5: lerp's other branch
    "weight_decay": {"lr": 0.01, "weight_decay": 0.05},
    "amsgrad": {"lr": 0.01, "amsgrad": True, "eps": 1e-6},
}


@pytest.mark.parametrize("case", ADAM_CASES)
def test_adam_follows_torch_for_100_steps(case: str, compiled: CompiledExecutor) -> None:
    settings = ADAM_CASES[case]
    before = compiled.stats.fallbacks
    got = trajectory(lambda params: tc.optim.Adam(params, **settings), compiled, False)
    assert_same_path(got, torch_adam(**settings))
    assert compiled.stats.fallbacks == before


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_follows_torch_for_100_steps(amsgrad: bool, compiled: CompiledExecutor) -> None:
    got = trajectory(lambda params: tc.optim.AdamW(params, lr=0.01, amsgrad=amsgrad), compiled,
                     False)  # fmt: skip
    assert_same_path(got, torch_adam(lr=0.01, weight_decay=1e-2, amsgrad=amsgrad, decoupled=True))


def test_adam_with_decoupled_weight_decay_is_adamw(compiled: CompiledExecutor) -> None:
    adamw = trajectory(lambda params: tc.optim.AdamW(params, lr=0.01, weight_decay=0.1), compiled)
    adam = trajectory(lambda params: tc.optim.Adam(
        params, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True), compiled)  # fmt: skip
    assert_same_path(adam, adamw)


# ------------------------------------------------------------------ one program per step


def test_a_step_is_one_compiled_program_for_all_parameters() -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    shapes = [(64, 32), (32,), (32, 10), (10,), (5, 5, 5)]
    params = [tc.tensor(RNG.normal(size=s), requires_grad=True) for s in shapes]
    optimizer = tc.optim.Adam(params, lr=1e-2)
    runs = []
    with tc.use_executor(executor):
        for step in range(4):
            for p in params:
                p.grad = RNG.normal(size=p.shape)
            stats = executor.stats
            before = stats.compiles + stats.memory_hits + stats.disk_hits + stats.generic_hits
            optimizer.step()
            stats = executor.stats
            runs.append(stats.compiles + stats.memory_hits + stats.disk_hits
                        + stats.generic_hits - before)  # fmt: skip
            if step == 1:
                optimizer.param_groups[0]["lr"] = 1e-3  # a new value, not a new program
    assert runs == [1, 1, 1, 1]  # one program each step, for the five parameters
    assert executor.stats.compiles == 1 and executor.stats.fallbacks == 0
    assert len(tc.optim.Adam.program.traces) >= 1  # type: ignore[attr-defined]


def test_a_step_replays_its_trace_by_the_layouts_of_its_arguments() -> None:
    """``step`` finds its traced program by the arguments' layouts (``_Target.key``):
    one trace per layout, a new one when a parameter's gradient appears or goes, when
    the momentum buffer appears (first step), or when a state array's dtype changes;
    every step's values are SGD's by hand."""
    executor = CompiledExecutor(cache_dir=False, background=False)
    w, b = tc.tensor(W0.copy(), requires_grad=True), tc.tensor(B0.copy(), requires_grad=True)
    optimizer = tc.optim.SGD([w, b], lr=0.1, momentum=0.5)
    want_w, want_b = W0.copy(), B0.copy()
    buffers: dict[str, np.ndarray] = {}
    with tc.use_executor(executor):
        for step in range(5):
            optimizer.zero_grad()
            grads = {"w": RNG.normal(size=W0.shape), "b": RNG.normal(size=B0.shape)}
            w.grad = grads["w"].copy()
            if step != 3:  # step 3: b has no gradient (it keeps its value)
                b.grad = grads["b"].copy()
            if step == 4:  # a float32 buffer given by hand: computed in float64 again
                optimizer.state[w]["momentum_buffer"] = buffers["w"].astype(np.float32)
                buffers["w"] = buffers["w"].astype(np.float32).astype(np.float64)
            optimizer.step()
            for name, param, want in (("w", w, want_w), ("b", b, want_b)):
                if name == "b" and step == 3:
                    continue
                g = grads[name]
                buffers[name] = g if name not in buffers else 0.5 * buffers[name] + g
                want -= 0.1 * buffers[name]
                np.testing.assert_allclose(param.numpy(), want, rtol=1e-6 if step == 4 else 1e-14)
    # first step, later steps (buffers present), b without a gradient, the float32 buffer
    assert len(optimizer._traces) == 4  # noqa: SLF001
    assert executor.stats.fallbacks == 0


def test_float32_parameters_stay_float32(compiled: CompiledExecutor) -> None:
    w = tc.tensor(np.ones(3, np.float32), requires_grad=True)
    optimizer = tc.optim.Adam([w], lr=0.1)
    with tc.use_executor(compiled):
        tc.sum(w * w).backward()
        optimizer.step()
    assert w.dtype == np.float32 and optimizer.state[w]["exp_avg"].dtype == np.float32
    np.testing.assert_allclose(w.numpy(), 0.9, rtol=1e-6)  # Adam's first step: lr * sign


# ------------------------------------------------------------------ torch's interface


def test_param_groups_and_pytrees(compiled: CompiledExecutor) -> None:
    w, b = tc.tensor(W0.copy(), requires_grad=True), tc.tensor(B0.copy(), requires_grad=True)
    by_tree = tc.optim.SGD({"layer": [w], "bias": (b,)}, lr=0.1)
    tree_params = by_tree.param_groups[0]["params"]
    assert len(tree_params) == 2 and tree_params[0] is w and tree_params[1] is b
    w2, b2 = tc.tensor(W0.copy(), requires_grad=True), tc.tensor(B0.copy(), requires_grad=True)
    grouped = tc.optim.SGD([{"params": [w2]}, {"params": b2, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in grouped.param_groups] == [0.1, 0.5]
    assert grouped.param_groups[1]["momentum"] == 0.9
    with tc.use_executor(compiled):
        loss_of(w2, b2).backward()
        gw, gb = w2.grad.copy(), b2.grad.copy()
        grouped.step()
    np.testing.assert_allclose(w2.numpy(), W0 - 0.1 * gw, rtol=1e-15)
    np.testing.assert_allclose(b2.numpy(), B0 - 0.5 * gb, rtol=1e-15)


def test_zero_grad_and_parameters_without_grad() -> None:
    w, unused = tc.tensor(np.ones(2), requires_grad=True), tc.tensor(np.ones(2), requires_grad=True)
    optimizer = tc.optim.SGD([w, unused], lr=0.5)
    tc.sum(w * w).backward()
    held = w.grad
    optimizer.zero_grad(set_to_none=False)
    assert w.grad is held and np.all(held == 0.0)  # zeros in place
    tc.sum(w * w).backward()
    optimizer.step()  # unused has no .grad: skipped, no state
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(unused.numpy(), [1.0, 1.0])
    assert unused not in optimizer.state
    optimizer.zero_grad()
    assert w.grad is None


def test_step_with_a_closure_and_maximize() -> None:
    w = tc.tensor(np.array([1.0, -2.0]), requires_grad=True)
    optimizer = tc.optim.SGD([w], lr=0.25, maximize=True)

    def closure() -> tc.Tensor:
        optimizer.zero_grad()
        loss = tc.sum(w * w)
        loss.backward()
        return loss

    with tc.no_grad():  # step evaluates the closure with gradients enabled, as torch
        loss = optimizer.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(w.numpy(), [1.5, -3.0])  # ascent: w + lr * 2w


def test_a_graph_recorded_before_a_step_refuses_backward() -> None:
    w = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    optimizer = tc.optim.SGD([w], lr=0.1)
    tc.sum(w * w).backward()
    stale = tc.sum(tc.exp(w) * w)
    optimizer.step()
    with pytest.raises(RuntimeError, match="has been modified by an inplace operation"):
        stale.backward()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: tc.optim.SGD(p, lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda p: tc.optim.SGD(p, momentum=-0.5), "Invalid momentum value"),
        (lambda p: tc.optim.SGD(p, nesterov=True), "Nesterov momentum requires a momentum"),
        (lambda p: tc.optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True), "zero dampening"),
        (lambda p: tc.optim.Adam(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1"),
        (lambda p: tc.optim.Adam(p, eps=-1e-8), "Invalid eps value"),
        (lambda p: tc.optim.AdamW(p, weight_decay=-0.1), "Invalid weight_decay value"),
        (lambda p: tc.optim.SGD([], lr=0.1), "empty parameter list"),
        (lambda p: tc.optim.SGD(p + p, lr=0.1), "more than one parameter group"),
        (lambda p: tc.optim.SGD([p[0] * 2.0]), "leaf tensors that require gradients"),
        (lambda p: tc.optim.SGD([tc.tensor(np.ones(2))]), "leaf tensors that require gradients"),
    ],
)
def test_bad_settings_raise_as_in_torch(
    make: Callable[[list[tc.Tensor]], Any], message: str
) -> None:
    params = [tc.tensor(np.ones(2), requires_grad=True)]
    with pytest.raises(ValueError, match=message):
        make(params)


def test_bad_parameters_raise_type_errors() -> None:
    w = tc.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(TypeError, match="wrap it in a list"):
        tc.optim.SGD(w)
    with pytest.raises(TypeError, match="complex parameters are not supported"):
        tc.optim.Adam([tc.tensor(np.ones(2, np.complex128), requires_grad=True)])
    with pytest.raises(TypeError, match="only optimize Tensors, got ndarray"):
        tc.optim.SGD([np.ones(2)])
    optimizer = tc.optim.SGD([w], lr=0.1)
    for wrong in (np.ones(2, np.float32), np.ones(3)):
        w.grad = wrong
        with pytest.raises(TypeError, match=r"a parameter of shape \(2,\) and dtype float64"):
            optimizer.step()
    np.testing.assert_array_equal(w.numpy(), [1.0, 1.0])


def test_the_bias_corrections_are_pythons_floats() -> None:
    """Adam's 0-d scalars at step 3, as torch computes them in Python."""
    w = tc.tensor(np.ones(1), requires_grad=True)
    optimizer = tc.optim.Adam([w], lr=0.1, betas=(0.8, 0.99))
    state = {"step": 2.0}
    scalars = optimizer.scalars(optimizer.param_groups[0], state)
    assert state["step"] == 3.0
    assert scalars["neg_step_size"] == -(0.1 / (1 - 0.8**3.0))
    assert scalars["bias_correction2_sqrt"] == math.sqrt(1 - 0.99**3.0)


def test_state_never_shares_memory_with_grad() -> None:
    """SGD's first momentum buffer is the gradient: a later backward adding into
    ``.grad`` in place must not change it (the step reads ``.grad`` without a copy)."""
    w = tc.tensor(np.array([1.0, 2.0]), requires_grad=True)
    optimizer = tc.optim.SGD([w], lr=0.1, momentum=0.9)
    tc.sum(w * w).backward()
    first = w.grad.copy()
    optimizer.step()
    tc.sum(w * w).backward()  # no zero_grad: adds into the same array
    np.testing.assert_array_equal(optimizer.state[w]["momentum_buffer"], first)
    assert not np.may_share_memory(optimizer.state[w]["momentum_buffer"], w.grad)


def test_always_compiled_runs_the_traced_program_when_nothing_records() -> None:
    """What ``step()`` stands on: without gradients, a ``@tc.function(always_compiled=True)``
    call runs the compiled program (no tape node); a plain ``@tc.function`` runs Python."""
    executor = CompiledExecutor(cache_dir=False, background=False)
    calls = []

    def update(p: tc.Tensor, g: tc.Tensor) -> tc.Tensor:
        calls.append(1)
        return p - 0.5 * g

    compiled_update, eager_update = tc.function(update, always_compiled=True), tc.function(update)
    p, g = tc.tensor(np.ones(3)), np.full(3, 2.0)
    with tc.use_executor(executor):
        for _ in range(3):
            out = compiled_update(p, g)
            assert not out.requires_grad and out.is_leaf
            np.testing.assert_array_equal(out.numpy(), [0.0, 0.0, 0.0])
        assert len(calls) == 1  # traced once, then replayed
        assert executor.stats.compiles == 1 and executor.stats.memory_hits == 2
        eager_update(p, g)
    assert len(calls) == 2 and executor.stats.compiles == 1

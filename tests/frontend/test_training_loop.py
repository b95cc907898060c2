"""The PyTorch training loop, unchanged: in-place updates, ``.grad`` in place, backward's
arguments, gradient modes, PyTorch's method spellings and constructors.

Expected values are what torch 2.13 gives, computed here with numpy (no torch at test time).
"""

from __future__ import annotations

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor


def leaf(values: object, dtype: object = np.float64) -> tc.Tensor:
    return tc.tensor(np.array(values, dtype=dtype), requires_grad=True)


# ------------------------------------------------------------------ in-place updates


def test_parameters_in_a_list_update_in_place_as_in_torch() -> None:
    """The issue's repro: torch prints 1.0, 0.64, 0.4096."""
    params = [tc.tensor(np.zeros(1), requires_grad=True)]
    losses = []
    for _ in range(3):
        loss = tc.sum((params[0] - 1.0) ** 2)
        loss.backward()
        with tc.no_grad():
            for p in params:
                p -= 0.1 * p.grad
        for p in params:
            p.grad = None
        losses.append(loss.item())
    np.testing.assert_allclose(losses, [1.0, 0.64, 0.4096], rtol=1e-15)
    assert params[0].requires_grad and params[0].is_leaf


@pytest.mark.parametrize("update", ["isub", "sub_", "add_", "data", "data_sub_", "copy_"])
def test_every_spelling_of_an_sgd_step_changes_the_leaf(update: str) -> None:
    w = leaf([1.0, -2.0])
    held = w
    for _ in range(2):
        tc.sum(w * w).backward()
        g = np.array(w.grad)
        expected = w.numpy() - 0.25 * g
        with tc.no_grad():
            if update == "isub":
                w -= 0.25 * w.grad
            elif update == "sub_":
                w.sub_(w.grad, alpha=0.25)
            elif update == "add_":
                w.add_(tc.tensor(w.grad), alpha=-0.25)
            elif update == "copy_":
                w.copy_(w - 0.25 * w.grad)
        if update == "data":
            w.data = w.data - 0.25 * w.grad
        elif update == "data_sub_":
            w.data.sub_(0.25 * w.grad)
        w.grad.zero_()
        assert w is held and w.requires_grad and w.is_leaf
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-15)


def test_in_place_on_a_leaf_that_requires_grad_outside_no_grad_raises() -> None:
    x = leaf([1.0, 2.0])
    for change in (lambda: x.__iadd__(1.0), lambda: x.add_(1.0), lambda: x.zero_(),
                   lambda: x.copy_(np.zeros(2))):  # fmt: skip
        with pytest.raises(RuntimeError, match="leaf tensor that requires gradients.*no_grad"):
            change()
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


def test_in_place_keeps_dtype_and_shape_as_numpy() -> None:
    counts = tc.tensor(np.array([1, 2, 3]))
    counts += 2
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts.numpy(), [3, 4, 5])
    with pytest.raises(TypeError, match="cannot be cast.*same_kind"):
        counts += 0.5
    row = tc.tensor(np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        row += np.ones((2, 3))
    row.copy_(7)  # copy_ broadcasts and casts, as torch's
    np.testing.assert_array_equal(row.numpy(), [7.0, 7.0, 7.0])
    row.fill_(2).masked_fill_(np.array([True, False, False]), -1.0).clamp_(min=0.0)
    np.testing.assert_array_equal(row.numpy(), [0.0, 2.0, 2.0])


def test_a_recorded_in_place_change_of_a_computed_tensor_is_differentiated() -> None:
    x, b = leaf([1.0, 2.0, 3.0]), leaf([0.5, -1.0, 2.0])
    h = x * 2.0
    h += b  # torch: h becomes the recorded sum
    h *= h
    assert not h.is_leaf
    gx, gb = tc.grad(tc.sum(h), [x, b])
    u = 2.0 * x.numpy() + b.numpy()
    np.testing.assert_allclose(gx, 4.0 * u)
    np.testing.assert_allclose(gb, 2.0 * u)
    c = tc.tensor(np.zeros(3))  # a constant that takes a value needing gradients
    c += x
    assert c.requires_grad and not c.is_leaf
    np.testing.assert_allclose(tc.grad(tc.sum(c * c), [x])[0], 2.0 * x.numpy())


def test_a_backward_that_would_read_a_changed_value_raises() -> None:
    w = leaf([1.0, 2.0])
    via_fast_path = tc.sum(w * w)  # a fast_ops node keeps w itself
    via_general_path = tc.sum(tc.matmul(w, w))  # a general node keeps w's array
    with tc.no_grad():
        w.mul_(3.0)
    for loss in (via_fast_path, via_general_path):
        with pytest.raises(RuntimeError, match="has been modified by an inplace operation"):
            loss.backward()
    assert w.grad is None
    tc.sum(w * w).backward()  # recorded after the change: fine
    np.testing.assert_allclose(w.grad, [6.0, 12.0])


def test_a_computed_tensor_changed_after_use_is_refused_not_misread() -> None:
    x = leaf([1.0, 2.0])
    a = tc.tanh(x)
    b = a * 2.0  # recorded with a as it was
    a += 1.0
    with pytest.raises(RuntimeError, match="has been modified by an inplace operation"):
        tc.grad(tc.sum(a + b), [x])


def test_compiled_plans_and_saved_arrays_are_never_changed_in_place() -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)
    w = leaf(np.linspace(-1.0, 1.0, 64))
    seen_before = w.numpy()
    with tc.use_executor(executor):
        for _ in range(4):
            loss = tc.sum(tc.tanh(w) * w)
            loss.backward()
            t = np.tanh(w.numpy())
            np.testing.assert_allclose(w.grad, t + w.numpy() * (1 - t * t), rtol=1e-13)
            with tc.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
    assert executor.stats.fallbacks == 0 and executor.stats.compiles >= 1
    np.testing.assert_array_equal(seen_before, np.linspace(-1.0, 1.0, 64))  # a snapshot


# ------------------------------------------------------------------ .grad and backward


def test_grad_accumulates_in_place_and_zero_clears_it() -> None:
    w = leaf([1.0, 2.0])
    tc.sum(w * w).backward()
    held = w.grad
    tc.sum(w * 3.0).backward()
    assert held is w.grad  # torch: the reference held before sees the sum
    np.testing.assert_allclose(held, [5.0, 7.0])
    assert w.grad.zero_() is held
    np.testing.assert_array_equal(held, [0.0, 0.0])
    tc.sum(w).backward()
    np.testing.assert_array_equal(held, [1.0, 1.0])  # a new step adds into the zeros
    assert type(2.0 * w.grad) is np.ndarray


def test_a_second_backward_over_a_freed_graph_raises_unless_retained() -> None:
    w = leaf([1.0, 2.0])
    loss = tc.sum(tc.exp(w) * w)
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(w.grad, 2 * np.exp(w.numpy()) * (w.numpy() + 1.0))
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        loss.backward()
    shared = tc.exp(w)  # torch: a node shared by two losses is freed by the first
    first, second = tc.sum(shared), tc.sum(shared * 2.0)
    first.backward()
    with pytest.raises(RuntimeError, match="second time"):
        second.backward()
    again = tc.sum(w * w)
    tc.grad(again, [w])  # tc.grad keeps the graph by default
    tc.grad(again, [w], retain_graph=False)
    with pytest.raises(RuntimeError, match="second time"):
        tc.grad(again, [w])


def test_backward_takes_torchs_gradient_and_inputs() -> None:
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    out = x * y
    out.backward(gradient=np.array([1.0, -1.0]), retain_graph=True)
    np.testing.assert_allclose(x.grad, [3.0, -4.0])
    out.backward(seed=np.array([1.0, 1.0]), inputs=[y])
    np.testing.assert_allclose(y.grad, [1.0 + 1.0, -2.0 + 2.0])
    np.testing.assert_allclose(x.grad, [3.0, -4.0])  # not among inputs
    with pytest.raises(TypeError, match="gradient= or seed="):
        (x * y).backward(gradient=np.ones(2), seed=np.ones(2))


def test_create_graph_makes_grad_a_tensor_to_differentiate_again() -> None:
    x = leaf([0.5, 1.5])
    tc.sum(x**3).backward(create_graph=True)
    assert isinstance(x.grad, tc.Tensor) and x.grad.requires_grad
    (second,) = tc.grad(tc.sum(x.grad), [x])
    np.testing.assert_allclose(second, 6.0 * x.numpy())


def test_grad_allow_unused() -> None:
    x, unused = leaf([1.0]), leaf([2.0])
    loss = tc.sum(x * x)
    assert tc.grad(loss, [x, unused])[1] is None  # tidu_compile's contract: None
    with pytest.raises(ValueError, match=r"inputs\[1\].*allow_unused=True"):
        tc.grad(loss, [x, unused], allow_unused=False)


def test_retain_grad_fills_the_grad_of_a_non_leaf() -> None:
    x = leaf([1.0, 2.0])
    h = x * 3.0
    h.retain_grad()
    tc.sum(h * h).backward()
    np.testing.assert_allclose(h.grad, 2.0 * h.numpy())
    np.testing.assert_allclose(x.grad, 6.0 * h.numpy())


def test_requires_grad_and_is_leaf() -> None:
    x = tc.tensor(np.array([1.0, 2.0]))
    assert x.is_leaf and not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad and x.is_leaf
    tc.sum(x * x).backward()
    np.testing.assert_allclose(x.grad, [2.0, 4.0])
    with pytest.raises(TypeError, match="float and complex"):
        tc.tensor(np.array([1, 2])).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf tensors"):
        (x * 2.0).requires_grad_(False)


def test_gradient_modes() -> None:
    x = leaf([1.0])
    assert tc.is_grad_enabled()
    with tc.no_grad():
        assert not tc.is_grad_enabled() and not (x * 2.0).requires_grad
        with tc.enable_grad():
            assert tc.is_grad_enabled() and (x * 2.0).requires_grad
    with tc.set_grad_enabled(False):
        assert not (x * 2.0).requires_grad
    assert tc.is_grad_enabled()
    tc.set_grad_enabled(False)
    try:
        assert not tc.is_grad_enabled()
    finally:
        tc.set_grad_enabled(True)

    @tc.no_grad()
    def untracked(t: tc.Tensor) -> tc.Tensor:
        return t * 2.0

    assert not untracked(x).requires_grad

    @tc.set_grad_enabled(False)
    def also_untracked(t: tc.Tensor) -> tc.Tensor:
        return t * 2.0

    assert tc.is_grad_enabled()  # decorating does not switch the mode
    assert not also_untracked(x).requires_grad and tc.is_grad_enabled()


def test_in_place_inside_a_traced_function() -> None:
    @tc.function
    def loss(x: tc.Tensor) -> tc.Tensor:
        h = x * 2.0
        h += 1.0
        h *= x
        return tc.sum(h)

    x = leaf([1.0, 2.0])
    for _ in range(2):  # traced, then replayed
        assert loss(x).item() == pytest.approx(3.0 + 10.0)
        np.testing.assert_allclose(tc.grad(loss(x), [x])[0], 4.0 * x.numpy() + 1.0)

    @tc.function
    def changes_its_argument(x: tc.Tensor) -> tc.Tensor:
        x += 1.0
        return tc.sum(x)

    with pytest.raises(TypeError, match="only tensors computed in the function"):
        changes_its_argument(leaf([1.0]))


# ------------------------------------------------------------------ method spellings


def test_torch_method_spellings() -> None:
    x = leaf(np.arange(6.0).reshape(2, 3) - 2.0)
    a = x.numpy()
    assert x.unsqueeze(0).shape == (1, 2, 3) and x.view(3, 2).shape == (3, 2)
    assert x.view(-1).shape == (6,) and x.permute(1, 0).shape == (3, 2)
    assert x.dim() == 2 and x.numel() == 6 and x.t().shape == (3, 2)
    assert x.float().dtype == np.float32 and x.float().double().dtype == np.float64
    np.testing.assert_allclose(x.exp().numpy(), np.exp(a))
    np.testing.assert_allclose(x.abs().sqrt().numpy(), np.sqrt(np.abs(a)))
    np.testing.assert_allclose(x.pow(2).numpy(), a**2)
    np.testing.assert_allclose(x.clamp(min=-1.0, max=1.0).numpy(), np.clip(a, -1.0, 1.0))
    np.testing.assert_allclose(x.masked_fill(a > 0, 0.0).numpy(), np.where(a > 0, 0.0, a))
    np.testing.assert_allclose(x.sum(dim=1, keepdim=True).numpy(), a.sum(1, keepdims=True))
    np.testing.assert_allclose(x.mean(dim=0).numpy(), a.mean(0))
    assert x.clone() is not x and x.clone().requires_grad
    assert x.var().item() == pytest.approx(a.var())  # numpy's meaning: ddof=0
    (g,) = tc.grad(tc.sum(x.clone().t().exp()), [x])
    np.testing.assert_allclose(g, np.exp(a))


# ------------------------------------------------------------ torch's constructors


def test_constructors_take_requires_grad_and_make_leaves() -> None:
    made = [tc.zeros((2, 3), requires_grad=True), tc.ones(3, requires_grad=True),
            tc.empty(2, requires_grad=True), tc.full(2, 0.5, requires_grad=True),
            tc.eye(2, requires_grad=True), tc.zeros_like(np.ones(2), requires_grad=True),
            tc.randn(2, 2, requires_grad=True), tc.rand(3, requires_grad=True)]  # fmt: skip
    assert all(t.requires_grad and t.is_leaf for t in made)
    assert not tc.zeros(2).requires_grad and not tc.randn(2).requires_grad
    with pytest.raises(TypeError, match="zeros: only float and complex tensors can require"):
        tc.zeros(3, dtype=np.int64, requires_grad=True)
    with pytest.raises(TypeError, match="full: requires_grad=True makes a leaf"):
        tc.full(2, leaf(1.0), requires_grad=True)


def test_randn_and_rand_follow_manual_seed() -> None:
    tc.manual_seed(7)
    first = tc.randn(3, 4).numpy(), tc.rand((2,)).numpy()
    tc.manual_seed(7)
    again = tc.randn((3, 4)).numpy(), tc.rand(2).numpy()
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    want = np.random.default_rng(7)
    np.testing.assert_array_equal(first[0], want.standard_normal((3, 4)))
    np.testing.assert_array_equal(first[1], want.random((2,)))
    assert first[0].dtype == np.float64 and tc.randn(2, dtype="float32").dtype == np.float32
    assert np.all((first[1] >= 0.0) & (first[1] < 1.0))
    for wrong, match in [(lambda: tc.randn(2, dtype=np.int64), "float dtype"),
                         (lambda: tc.rand(-1), "non-negative integers"),
                         (lambda: tc.randn(2.5), "non-negative integers")]:  # fmt: skip
        with pytest.raises(TypeError, match=match):
            wrong()
    with pytest.raises(ValueError, match="manual_seed"):
        tc.manual_seed(-1)


def test_a_torch_style_step_with_cat_mm_and_add() -> None:
    """``torch.randn(..., requires_grad=True)``, ``x.mm(w).add(b, alpha=2)``, ``cat`` on
    ``dim``, ``from_numpy``: values and gradients as numpy computes them; no numpy name."""
    tc.manual_seed(0)
    w, b = tc.randn(3, 4, requires_grad=True), tc.zeros(4, requires_grad=True)
    x = tc.from_numpy(np.linspace(-1.0, 1.0, 15).reshape(5, 3))
    h = x.mm(w).add(b, alpha=2.0).tanh()
    loss = tc.cat([h, h.mul(2.0).sub(b, alpha=0.5).div(3.0)], dim=1).sum()
    loss.backward()
    xv, wv = x.numpy(), w.detach().numpy()
    t = np.tanh(xv @ wv)
    np.testing.assert_allclose(loss.item(), np.sum(t) + np.sum(t * 2.0 / 3.0), rtol=1e-12)
    dt = (1.0 + 2.0 / 3.0) * (1.0 - t**2)
    np.testing.assert_allclose(w.grad, xv.T @ dt, rtol=1e-12)
    np.testing.assert_allclose(b.grad, 2.0 * dt.sum(axis=0) - 0.5 / 3.0 * 5, rtol=1e-12)
    assert x.matmul(w).shape == (5, 4)
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        tc.from_numpy([1.0, 2.0])
    import tidu_compile.numpy as tnp

    assert not any(hasattr(tnp, n) for n in ("cat", "randn", "rand", "from_numpy"))

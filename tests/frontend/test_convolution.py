"""``conv``, ``convolve``, ``correlate`` and ``sliding_window_view`` against numpy, scipy
and a loop-by-loop oracle; gradients against central differences and by the adjoint
test; compiled per op and as one ``@tc.function`` with no numpy fallback; clear errors."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.signal
from helpers.frontend import check_frontend_grad
from helpers.numeric import real_inner

import tidu_compile as tc
import tidu_compile.numpy as tnp
from tidu_compile import func
from tidu_compile.executors.compiled import CompiledExecutor


def conv_oracle(x: np.ndarray, w: np.ndarray, stride: tuple[int, ...],
                pads: list[tuple[int, int]], dilation: tuple[int, ...],
                groups: int) -> np.ndarray:  # fmt: skip
    """NCHW convolution by its definition: one window at a time, one group at a time."""
    rank = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    kernel = w.shape[2:]
    outs = [(n - (k - 1) * d - 1) // s + 1
            for n, k, s, d in zip(xp.shape[2:], kernel, stride, dilation, strict=True)]  # fmt: skip
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0], *outs), np.result_type(x, w))
    axes = list(range(1, rank + 2))
    for p in np.ndindex(*outs):
        taps = tuple(slice(q * s, q * s + (k - 1) * d + 1, d)
                     for q, k, s, d in zip(p, kernel, stride, dilation, strict=True))  # fmt: skip
        for g in range(groups):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg), *taps)]
            block = w[g * og : (g + 1) * og]
            out = (slice(None), slice(g * og, (g + 1) * og), *p)
            y[out] = np.tensordot(patch, block, (axes, axes))
    return y


#: (spatial sizes, kernel, stride, padding as conv takes it, the same as pairs, dilation, groups)
CONV_CASES = [
    ((7,), (3,), 1, 0, [(0, 0)], 1, 1),
    ((8,), (3,), 2, "SAME", [(0, 1)], 1, 2),
    ((9,), (2,), 1, [(2, 1)], [(2, 1)], 3, 1),
    ((6, 5), (3, 2), 1, "VALID", [(0, 0), (0, 0)], 1, 1),
    ((7, 6), (3, 3), (2, 1), 1, [(1, 1), (1, 1)], (1, 2), 2),
    ((5, 5), (2, 2), 2, "SAME", [(0, 1), (0, 1)], 1, 4),  # depthwise (4 channels)
    ((4, 5, 4), (2, 3, 2), 1, (1, 0, 1), [(1, 1), (0, 0), (1, 1)], 1, 1),
    ((5, 4, 6), (3, 2, 2), (2, 1, 2), "SAME", [(1, 1), (1, 1), (0, 0)], (1, 2, 1), 2),
]


def _case_arrays(case: tuple, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    sizes, kernel, *_, groups = case
    rng = np.random.default_rng(seed)
    out_channels = 4 if groups == 4 else 6
    return rng.standard_normal((2, 4, *sizes)), rng.standard_normal((out_channels, 4 // groups,
                                                                     *kernel))  # fmt: skip


def _stride(value: Any, rank: int) -> tuple[int, ...]:
    return (value,) * rank if isinstance(value, int) else tuple(value)


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: f"{len(c[0])}d-{c[3]}-g{c[6]}")
def test_conv_matches_the_oracle_in_both_layouts(case: tuple) -> None:
    sizes, _, stride, padding, pairs, dilation, groups = case
    x, w = _case_arrays(case)
    rank = len(sizes)
    want = conv_oracle(x, w, _stride(stride, rank), pairs, _stride(dilation, rank), groups)
    got = tc.conv(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    channels_last = tc.conv(np.moveaxis(x, 1, -1), np.moveaxis(w, (0, 1), (-1, -2)),
                            stride, padding, dilation, groups, layout="NHWC")  # fmt: skip
    np.testing.assert_allclose(np.moveaxis(channels_last.numpy(), -1, 1), want, rtol=1e-12,
                               atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("mode", ["valid", "full", "same"])
def test_conv_of_one_channel_is_scipy_correlate(mode: str) -> None:
    rng = np.random.default_rng(1)
    image, kernel = rng.standard_normal((9, 7)), rng.standard_normal((3, 4))
    padding = {"valid": 0, "full": [(2, 2), (3, 3)], "same": [(1, 1), (2, 1)]}[mode]
    got = tc.conv(image[None, None], kernel[None, None], padding=padding).numpy()[0, 0]
    np.testing.assert_allclose(got, scipy.signal.correlate(image, kernel, mode), atol=1e-12)


@pytest.mark.parametrize("case", CONV_CASES[1::2], ids=lambda c: f"{len(c[0])}d-g{c[6]}")
def test_conv_gradients_are_central_differences(case: tuple) -> None:
    sizes, kernel, stride, padding, pairs, dilation, groups = case
    rank = len(sizes)
    small = (tuple(min(n, 5) for n in sizes), kernel, stride, padding, pairs, dilation, groups)
    x, w = _case_arrays(small, seed=2)
    x = x[:1]

    def ours(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        return tc.conv(a, b, stride=stride, padding=padding, dilation=dilation, groups=groups)

    if padding == "SAME":  # the pairs are those of the full sizes: recompute for the small
        pairs = [(p[0], p[1]) for p in _same_pairs(small[0], kernel, _stride(stride, rank),
                                                   _stride(dilation, rank))]  # fmt: skip

    def theirs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return conv_oracle(a, b, _stride(stride, rank), pairs, _stride(dilation, rank), groups)

    check_frontend_grad(ours, theirs, [x, w])


def _same_pairs(sizes: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...],
                dilation: tuple[int, ...]) -> list[tuple[int, int]]:  # fmt: skip
    """jax's "SAME": ``ceil(n / s)`` outputs, the odd padding element high."""
    pairs = []
    for n, k, s, d in zip(sizes, kernel, stride, dilation, strict=True):
        total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
        pairs.append((total // 2, total - total // 2))
    return pairs


def test_conv_passes_the_adjoint_test_in_each_operand() -> None:
    """``<J t, ct> = <t, J^T ct>`` for the linear maps ``x -> conv(x, w)`` and ``w ->
    conv(x, w)`` (jvp against vjp), at equal extents where axis mix-ups keep shapes."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 4, 4)), rng.standard_normal((3, 3, 2, 2))
    tx, tw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)

    def f(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        return tc.conv(a, b, stride=(1, 2), padding="SAME", dilation=(2, 1))

    out, vjp_fn = func.vjp(f, x, w)
    ct = rng.standard_normal(out.shape)
    ct_x, ct_w = vjp_fn(tc.tensor(ct))
    for tangents, ct_in in (((tx, np.zeros_like(w)), ct_x), ((np.zeros_like(x), tw), ct_w)):
        _, tangent_out = func.jvp(f, (x, w), tangents)
        t_in = tangents[0] if ct_in is ct_x else tangents[1]
        lhs, rhs = real_inner(tangent_out.numpy(), ct), real_inner(t_in, ct_in.numpy())
        assert abs(lhs - rhs) <= 1e-10 * max(1.0, abs(lhs))


def _compiled_matches_reference(f: Callable[..., tc.Tensor], *arrays: np.ndarray) -> None:
    """Loss and gradients of ``f`` per op and as one ``@tc.function`` on a compiling
    executor: the reference's values, no numpy fallback, no warning."""
    for fn in (f, tc.function(f)):
        results = []
        compiled = CompiledExecutor(cache_dir=False, background=False)
        for executor in (compiled, tc.ReferenceExecutor()):
            with tc.use_executor(executor), warnings.catch_warnings():
                warnings.simplefilter("error")
                tensors = [tc.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
                for _ in range(2):  # a @tc.function traces, then runs its program
                    loss = fn(*tensors)
                    grads = tc.grad(loss, [t for t in tensors if t.requires_grad])
                results.append((loss.numpy(), grads))
        assert compiled.stats.fallbacks == 0
        assert compiled.stats.compiles > 0
        (loss_c, grads_c), (loss_r, grads_r) = results
        np.testing.assert_allclose(loss_c, loss_r, rtol=1e-5)
        for g_c, g_r in zip(grads_c, grads_r, strict=True):
            np.testing.assert_allclose(g_c, g_r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_compiles_per_op_and_traced(dtype: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 7, 6)).astype(dtype)
    w = rng.standard_normal((6, 2, 3, 2)).astype(dtype)

    def loss(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        y = tc.conv(a, b, stride=(2, 1), padding="SAME", dilation=(1, 2), groups=2)
        return tc.sum(tc.tanh(y) ** 2)

    _compiled_matches_reference(loss, x, w)


def test_convolve_and_windows_compile_per_op_and_traced() -> None:
    rng = np.random.default_rng(5)
    a, v, m = rng.standard_normal(9), rng.standard_normal(4), rng.standard_normal((5, 6))

    def loss(a: tc.Tensor, v: tc.Tensor, m: tc.Tensor) -> tc.Tensor:
        windows = tnp.lib.stride_tricks.sliding_window_view(m, (2, 3))
        return (tc.sum(tnp.convolve(a, v, "same") ** 2) + tc.sum(tnp.correlate(a, v, "full"))
                + tc.sum(tc.sin(windows) * windows.mean(axis=(-1, -2), keepdims=True)))  # fmt: skip

    _compiled_matches_reference(loss, a, v, m)


# --------------------------------------------------------------------------- numpy's functions

SIZES = [(7, 3), (7, 4), (3, 7), (4, 7), (5, 5), (1, 4), (6, 1), (4, 6)]


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_are_numpys(name: str, mode: str) -> None:
    rng = np.random.default_rng(6)
    ours, theirs = getattr(tnp, name), getattr(np, name)
    for n, m in SIZES:
        a = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        v = rng.standard_normal(m) + 1j * rng.standard_normal(m)
        for x, y in ((a, v), (a.real, v.real), (a.real, v)):
            got, want = ours(x, y, mode).numpy(), theirs(x, y, mode)
            assert got.dtype == want.dtype and got.shape == want.shape, (n, m)
            np.testing.assert_allclose(got, want, atol=1e-12)
        ints = (rng.integers(-5, 5, n), rng.integers(-5, 5, m))
        got, want = ours(*ints, mode).numpy(), theirs(*ints, mode)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)  # integers: exact
    if name == "convolve":  # a number is a 1-element array
        want = theirs(3.0, [1.0, 2.0], mode)
        np.testing.assert_allclose(ours(3.0, [1.0, 2.0], mode).numpy(), want)
    else:  # numpy refuses it
        with pytest.raises(ValueError):
            theirs(3.0, [1.0, 2.0], mode)
        with pytest.raises(ValueError, match="must be 1-D"):
            ours(3.0, [1.0, 2.0], mode)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_and_correlate_gradients(name: str) -> None:
    rng = np.random.default_rng(7)
    for mode in ("full", "same", "valid"):
        for n, m in ((6, 3), (3, 5)):
            ours = lambda a, v, mode=mode: getattr(tnp, name)(a, v, mode)  # noqa: E731
            theirs = lambda a, v, mode=mode: getattr(np, name)(a, v, mode)  # noqa: E731
            arrays = [rng.standard_normal(n) + 1j * rng.standard_normal(n), rng.standard_normal(m)]
            check_frontend_grad(ours, theirs, arrays)


WINDOW_CASES = [((2, 3), (0, 2)), ((2, 2, 2), None), ((2, 2), (1, 1)), (3, -1), ((1,), 0),
                ((4, 2), (2, 0))]  # fmt: skip


@pytest.mark.parametrize(("window", "axis"), WINDOW_CASES)
def test_sliding_window_view_is_numpys(window: Any, axis: Any) -> None:
    rng = np.random.default_rng(8)
    for x in (rng.standard_normal((4, 5, 6)), rng.integers(0, 9, (4, 5, 6))):
        want = np.lib.stride_tricks.sliding_window_view(x, window, axis)
        got = tnp.lib.stride_tricks.sliding_window_view(x, window, axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    shape = (3, 4, 4)
    check_frontend_grad(lambda t: tc.sliding_window_view(t, window, axis),
                        lambda a: np.lib.stride_tricks.sliding_window_view(a, window, axis),
                        [rng.standard_normal(shape)])  # fmt: skip


def test_numpys_functions_on_tensors_keep_the_gradient() -> None:
    x = tc.tensor(np.arange(6.0), requires_grad=True)
    windows = np.lib.stride_tricks.sliding_window_view(x, 3)
    assert isinstance(windows, tc.Tensor) and windows.shape == (4, 3)
    (g,) = tc.grad(tc.sum(windows) + tc.sum(np.convolve(x, [1.0, -1.0])), [x])
    np.testing.assert_array_equal(g, [1, 2, 3, 3, 2, 1])


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("call", "error", "text"), [
    (lambda x, w: tc.conv(x, w[:, :3]), ValueError, "takes 3 input channels"),
    (lambda x, w: tc.conv(x, w, groups=3), ValueError, "groups=3 must divide"),
    (lambda x, w: tc.conv(x, w[:5, :2], groups=2), ValueError, "output channels \\(5\\)"),
    (lambda x, w: tc.conv(x, w[0]), ValueError, "must have the rank of x"),
    (lambda x, w: tc.conv(x[0, 0], w[0, 0]), ValueError, "1-3 spatial"),
    (lambda x, w: tc.conv(x, w, layout="NCDHW"), ValueError, "layout NCDHW"),
    (lambda x, w: tc.conv(x, w, layout="CHWN"), ValueError, "layout 'CHWN'"),
    (lambda x, w: tc.conv(x, w, padding="FULL"), ValueError, "'VALID', 'SAME'"),
    (lambda x, w: tc.conv(x, w, padding=-1), ValueError, "int >= 0 or a pair"),
    (lambda x, w: tc.conv(x, w, padding=(1, 1, 1)), ValueError, "2 spatial"),
    (lambda x, w: tc.conv(x, w, stride=0), ValueError, "stride must be"),
    (lambda x, w: tc.conv(x, w, dilation=(1, 2, 3)), ValueError, "dilation must be"),
    (lambda x, w: tc.conv(x, w, dilation=5), ValueError, "does not fit"),
])  # fmt: skip
def test_conv_errors_name_the_problem(call: Callable, error: type, text: str) -> None:
    x, w = np.ones((2, 4, 5, 5)), np.ones((6, 4, 2, 2))
    with pytest.raises(error, match=text):
        call(x, w)


@pytest.mark.parametrize("args", [
    ((np.ones(4), 2), {}), ((np.ones(4), -1), {}), ((np.ones(4), 5), {}),
    ((np.ones((3, 4)), 2), {}), ((np.ones((3, 4)), (2, 2)), {"axis": 0}),
    ((np.ones((3, 4)), 2), {"axis": 2}), ((np.ones(4), 2), {"writeable": True}),
])  # fmt: skip
def test_sliding_window_view_errors_are_numpys(args: tuple) -> None:
    positional, keywords = args
    try:
        want = np.lib.stride_tricks.sliding_window_view(*positional, **keywords)
    except Exception as error:  # noqa: BLE001 - numpy's exception class is the point
        with pytest.raises(type(error)):
            tc.sliding_window_view(*positional, **keywords)
        return
    if keywords.get("writeable"):  # numpy's view can be written: tensors cannot
        with pytest.raises(ValueError, match="immutable"):
            tc.sliding_window_view(*positional, **keywords)
        return
    np.testing.assert_array_equal(tc.sliding_window_view(*positional, **keywords).numpy(), want)


@pytest.mark.parametrize(("args", "text"), [
    ((np.ones(0), np.ones(2)), "a cannot be empty"),
    ((np.ones(3), np.ones(0)), "v cannot be empty"),
    ((np.ones((2, 2)), np.ones(2)), "must be 1-D"),
    ((np.ones(3), np.ones(2), "middle"), "mode"),
])  # fmt: skip
def test_convolve_errors(args: tuple, text: str) -> None:
    for name in ("convolve", "correlate"):
        with pytest.raises(ValueError):
            getattr(np, name)(*args)
        with pytest.raises(ValueError, match=text):
            getattr(tnp, name)(*args)


def test_conv_of_complex_and_integer_values_is_the_oracles() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 2, 5, 4)) + 1j * rng.standard_normal((1, 2, 5, 4))
    w = rng.standard_normal((3, 2, 2, 2)) - 1j * rng.standard_normal((3, 2, 2, 2))
    want = conv_oracle(x, w, (1, 1), [(1, 0), (0, 1)], (1, 1), 1)
    np.testing.assert_allclose(tc.conv(x, w, padding=[(1, 0), (0, 1)]).numpy(), want,
                               atol=1e-12)  # fmt: skip
    xi, wi = rng.integers(-9, 9, (2, 2, 5, 4)), rng.integers(-9, 9, (2, 1, 3, 2))
    got = tc.conv(xi, wi, groups=2)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), conv_oracle(xi, wi, (1, 1), [(0, 0)] * 2,
                                                           (1, 1), 2))  # fmt: skip


def test_conv_differentiates_twice() -> None:
    """A Hessian-vector product through ``conv`` (forward over reverse: the scatter-add
    of the gradient differentiated) against a central difference of the gradient."""
    rng = np.random.default_rng(10)
    x, w = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((2, 2, 3, 3)) * 0.5
    vx, vw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)

    def f(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
        return tc.sum(tc.tanh(tc.conv(a, b, padding="SAME", stride=2)))

    gradient = func.grad(f, argnums=(0, 1))
    _, (hx, hw) = func.jvp(gradient, (x, w), (vx, vw))
    h = 1e-6
    plus, minus = gradient(x + h * vx, w + h * vw), gradient(x - h * vx, w - h * vw)
    for got, p, m in zip((hx, hw), plus, minus, strict=True):
        np.testing.assert_allclose(got.numpy(), (p.numpy() - m.numpy()) / (2 * h), rtol=1e-5,
                                   atol=1e-7)  # fmt: skip

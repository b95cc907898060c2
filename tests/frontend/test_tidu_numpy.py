"""``tidu_compile.numpy``: numpy's names for tidu_compile's functions, numpy's constants
and dtypes, ``random`` for data, and ``AttributeError`` for everything else."""

from __future__ import annotations

import numpy
import pytest

import tidu_compile as tc
import tidu_compile.numpy as tnp
import tidu_compile.numpy.random as tnpr
from tidu_compile.frontend import FUNCTIONS


def test_every_frontend_function_numpy_has_is_here_under_its_name() -> None:
    for name, function in FUNCTIONS.items():
        if hasattr(numpy, name):
            assert getattr(tnp, name) is function, name
        elif name not in tnp.AUTOGRAD_NAMES:  # autograd's additions its programs call
            assert name not in tnp.names(), f"{name} is not a numpy name"
    assert tnp.pow is FUNCTIONS["power"]  # numpy's alias (numpy.pow is numpy.power)
    assert tnp.conjugate is FUNCTIONS["conj"]


def test_the_other_names_are_numpys_own_objects() -> None:
    others = [n for n in tnp.names() if getattr(tnp, n) not in FUNCTIONS.values()]
    assert set(others) >= {"pi", "e", "inf", "nan", "newaxis", "float32", "float64",
                           "complex128", "int64", "bool_", "dtype", "random", "shape"}  # fmt: skip
    for name in others:
        if name not in ("random", "linalg", "lib", "r_", "c_"):
            assert getattr(tnp, name) is getattr(numpy, name), name
    assert tnp.random is tnpr
    assert tnp.lib.stride_tricks.sliding_window_view is FUNCTIONS["sliding_window_view"]
    assert tnp.r_[tc.tensor(numpy.ones(2)), 3.0].shape == (3,)  # ours: they concatenate tensors


def test_shape_and_dtype_functions_work_on_tensors() -> None:
    x = tc.tensor(numpy.ones((2, 3), numpy.float32), requires_grad=True)
    assert tnp.shape(x) == (2, 3) and tnp.ndim(x) == 2 and tnp.size(x) == 6
    assert tnp.result_type(x, 1.0) == numpy.float32 and not tnp.iscomplexobj(x)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("median", "no 'median' .*numpy.median .*on t.numpy()"),
        ("fft", "no 'fft'"),
        ("no_such_name", "has no attribute 'no_such_name'"),
    ],
)
def test_other_names_raise_attribute_error_saying_what_to_use(name: str, message: str) -> None:
    with pytest.raises(AttributeError, match=message):
        getattr(tnp, name)


def test_linalg_holds_norm_and_names_the_rest() -> None:
    x = tc.tensor(numpy.array([[3.0, 0.0], [4.0, 1.0]]), requires_grad=True)
    (g,) = tc.grad(tnp.linalg.norm(x[:, 0]), [x])
    numpy.testing.assert_allclose(g, [[0.6, 0.0], [0.8, 0.0]])
    with pytest.raises(AttributeError, match="no 'eig' .*numpy.linalg.eig"):
        tnp.linalg.eig  # noqa: B018


def test_random_is_numpys_outside_traces() -> None:
    assert tnpr.RandomState is numpy.random.RandomState
    assert tnpr.default_rng is numpy.random.default_rng
    tnpr.seed(3)
    first = tnpr.randn(3)
    numpy.random.seed(3)
    numpy.testing.assert_array_equal(first, numpy.random.randn(3))
    assert "normal" in dir(tnpr)


def test_an_autograd_program_runs_unchanged() -> None:
    """autograd's README example, with only the import changed."""
    np = tnp

    def tanh(x):  # type: ignore[no-untyped-def]
        y = np.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)

    x = tc.tensor(1.0, requires_grad=True)
    (g,) = tc.grad(tanh(x), [x])
    assert g == pytest.approx(1 - numpy.tanh(1.0) ** 2, rel=1e-14)
    data = np.linspace(-7, 7, 20)
    assert isinstance(data, tc.Tensor) and data.dtype == numpy.float64
    values = np.sum(tanh(data) * np.ones_like(data))
    assert float(values) == pytest.approx(float(numpy.sum(numpy.tanh(data.numpy()))), abs=1e-12)


def test_the_readme_example_of_tidu_compile_numpy_runs() -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("## `tidu_compile.numpy` and the Tensor protocol") :]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(block.group(1), namespace)
    preds = 1 / (1 + numpy.exp(-namespace["inputs"].numpy() @ numpy.zeros(3)))  # type: ignore[attr-defined]
    targets = numpy.array([1.0, 1.0, 0.0])
    expected = namespace["inputs"].numpy().T @ (preds - targets)  # type: ignore[attr-defined]
    numpy.testing.assert_allclose(namespace["g"], expected, rtol=1e-12)

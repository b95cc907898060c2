"""The examples written as autograd programs (``tools/examples/``): gradients against
central differences, compiled against reference, composite against per-op, the same
program under plain numpy, and ``tidu-compile demo --example NAME``."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import numpy
import pytest
from helpers import central_difference_grad
from tidu_compile.tools import cli
from tidu_compile.tools.examples import EXAMPLES

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor

AUTOGRAD_STYLE = ("logistic_regression", "mlp_classifier", "black_box_svi")
#: Examples too big for central differences in every element (the demo checks one
#: random direction per input).
LARGER = ("cnn_classifier",)


def loss_of_arrays(name: str):  # type: ignore[no-untyped-def]
    example = EXAMPLES[name]

    def loss(arrays: list[numpy.ndarray]) -> float:
        with tc.no_grad():
            return float(example.function(*(tc.tensor(a) for a in arrays)))

    return loss


@pytest.mark.parametrize("name", AUTOGRAD_STYLE)
def test_gradients_match_central_differences_and_the_reference(name: str) -> None:
    example = EXAMPLES[name]
    arrays = example.make_inputs(numpy.random.default_rng(5), numpy.float64)
    inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
    loss = example.function(*inputs)
    executor = tc.get_default_executor()  # compiled, with the disk cache of kernels
    assert isinstance(executor, CompiledExecutor)
    fallbacks = executor.stats.fallbacks
    grads = tc.grad(loss, inputs, executor=executor)
    reference = tc.grad(loss, inputs, executor=tc.ReferenceExecutor())
    assert executor.stats.fallbacks == fallbacks
    for i, (g, r) in enumerate(zip(grads, reference, strict=True)):
        numpy.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-13)
        expected = central_difference_grad(loss_of_arrays(name), arrays, i)
        numpy.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7, err_msg=f"input {i}")


@pytest.mark.parametrize("name", AUTOGRAD_STYLE + LARGER)
def test_composite_recording_gives_the_same_gradients(name: str) -> None:
    example = EXAMPLES[name]
    composite = tc.function(example.function)
    for seed in (1, 2):  # traced, then replayed
        arrays = example.make_inputs(numpy.random.default_rng(seed), numpy.float64)
        inputs = [tc.tensor(a, requires_grad=True) for a in arrays]
        got = tc.grad(composite(*inputs), inputs)
        want = tc.grad(example.function(*inputs), inputs)
        for g, w in zip(got, want, strict=True):
            numpy.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-13)
    assert len(composite.traces) == 1


@pytest.mark.parametrize("name", AUTOGRAD_STYLE + LARGER)
def test_the_program_is_a_numpy_program(name: str) -> None:
    """The module with ``tidu_compile.numpy`` replaced by ``numpy`` computes the same
    loss with plain numpy: the examples are written against numpy's names only."""
    path = Path(importlib.import_module(f"tidu_compile.tools.examples.{name}").__file__ or "")
    source = path.read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports and all("tidu_compile.numpy" in line for line in imports), imports
    plain = types.ModuleType(f"plain_{name}")
    exec(compile(source.replace("tidu_compile.numpy", "numpy"), str(path), "exec"), plain.__dict__)
    example = EXAMPLES[name]
    arrays = example.make_inputs(numpy.random.default_rng(0), numpy.float64)
    ours = float(example.function(*(tc.tensor(a) for a in arrays)))
    if name == "logistic_regression":
        theirs = plain.training_loss(*arrays)
    elif name == "mlp_classifier":
        theirs = plain.objective([(arrays[0], arrays[1]), (arrays[2], arrays[3])])
    elif name == "cnn_classifier":
        theirs = plain.objective(*arrays)
    else:
        theirs = plain.objective(arrays[0], 0)
    assert isinstance(theirs, float | numpy.floating)
    assert ours == pytest.approx(float(theirs), rel=1e-12)


@pytest.mark.parametrize("name", AUTOGRAD_STYLE + LARGER)
def test_demo_checks_and_trains_each_example(name: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert cli.main(["demo", "--example", name]) == 0
    out = capsys.readouterr().out
    assert "gradient descent" in out and out.rstrip().endswith("demo OK")


def test_the_cnn_convolution_is_tc_conv() -> None:
    """The example's ``sliding_window_view`` + ``einsum`` layer is ``tc.conv`` (valid,
    one input channel), values and gradients."""
    from tidu_compile.tools.examples import cnn_classifier

    rng = numpy.random.default_rng(3)
    images = tc.tensor(rng.standard_normal((2, 9, 8)), requires_grad=True)
    filters = tc.tensor(rng.standard_normal((3, 3, 3)), requires_grad=True)
    ours = cnn_classifier.conv2d(images, filters)
    theirs = tc.conv(images[:, None], filters[:, None])
    numpy.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
    seed = rng.standard_normal(ours.shape)
    for g, h in zip(tc.grad(ours, [images, filters], seed=seed),
                    tc.grad(theirs, [images, filters], seed=seed), strict=True):  # fmt: skip
        numpy.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)


def test_demo_rejects_unknown_examples(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        cli.main(["demo", "--example", "nope"])
    assert "invalid choice" in capsys.readouterr().err
    assert "tidu_compile.tools.examples.black_box_svi" in sys.modules

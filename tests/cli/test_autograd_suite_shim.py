"""``tools/autograd_suite.py``'s shim: its ``check_grads`` passes right derivatives and
fails wrong ones, in both modes, for real and complex inputs and tuples of arguments
(autograd's own test files are not part of this project: the tool reads them from a
directory given on its command line)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from tidu_compile.tools import autograd_suite

import tidu_compile as tc
import tidu_compile.numpy as tnp


@pytest.fixture
def shim(tmp_path: Path) -> Iterator[ModuleType]:
    package = tmp_path / "autograd"
    package.mkdir()
    (package / "__init__.py").write_text(autograd_suite.SHIM_INIT)
    (package / "test_util.py").write_text(autograd_suite.SHIM_TEST_UTIL)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("autograd.test_util")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "autograd" or n.startswith("autograd.")]:
            del sys.modules[name]


def test_right_derivatives_pass(shim: ModuleType) -> None:
    import autograd
    import autograd.numpy as anp

    assert anp is tnp
    shim.check_grads(lambda x: tnp.sum(tnp.sin(x) * x))(np.linspace(-1.0, 1.0, 4))
    shim.check_grads(lambda z: tnp.exp(z) * z)(np.array([0.3 + 0.2j, -0.1j]))
    shim.check_grads(lambda x, y: x * tnp.cos(y), argnum=(0, 1))(1.5, np.array([0.2, 0.4]))
    shim.combo_check(tnp.sum, (0,))([np.ones((2, 3))], axis=[None, 0], keepdims=[True, False])
    assert float(autograd.grad(lambda x: x * x)(3.0)) == 6.0


def test_wrong_derivatives_fail(shim: ModuleType) -> None:
    def lying(x):  # type: ignore[no-untyped-def]
        return tc.stop_gradient(x * x) + x  # the value x^2 + x, the derivative 1: wrong

    for mode in ("rev", "fwd"):
        with pytest.raises(AssertionError):
            shim.check_grads(lying, modes=[mode], order=1)(np.array([0.5, 2.0]))

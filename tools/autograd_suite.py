"""Run HIPS/autograd's numpy tests against ``tidu_compile.numpy``.

``python -m tidu_compile.tools.autograd_suite AUTOGRAD_TESTS_DIR [pytest args...]``
copies autograd's ``test_numpy.py``, ``test_scalar_ops.py``, ``test_systematic.py`` and
their helpers (``numpy_utils.py``, ``conftest.py``; autograd is MIT-licensed, and its
files are read from the given directory, never stored in this project) into a temporary
directory next to a shim package ``autograd``:

* ``autograd.numpy`` is ``tidu_compile.numpy``, ``autograd.numpy.random`` its
  ``random``;
* ``autograd.grad`` is ``tidu_compile.func.grad``;
* ``autograd.test_util.check_grads`` is autograd's check written with
  ``tidu_compile.func.vjp`` and ``jvp``: ``<v, vjp(u)> = <u, J v>`` against central
  differences, for ``modes`` fwd and rev, and again on the VJP (JVP) function itself
  up to ``order``.

Complex values: tidu_compile's VJP is the real adjoint of ``J`` under
``<a, b> = Re(sum(conj(a) b))`` (PyTorch's convention), so the check needs none of
autograd's ``covector`` conjugations (autograd's VJP is JAX's, the conjugate).

The tests run unchanged; pytest's summary line is the count (289 tests in autograd
1.9.1). Get the sources with ``pip download autograd==1.9.1 --no-deps --no-binary
:all:`` and unpack the tarball: its ``tests`` directory is ``AUTOGRAD_TESTS_DIR``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TEST_FILES = ("test_numpy.py", "test_scalar_ops.py", "test_systematic.py")
HELPER_FILES = ("numpy_utils.py", "conftest.py")

SHIM_INIT = '''"""The autograd names autograd's numpy tests use, mapped onto tidu_compile."""
import sys

import tidu_compile.numpy
import tidu_compile.numpy.random
from tidu_compile import func

numpy = tidu_compile.numpy
sys.modules[__name__ + ".numpy"] = tidu_compile.numpy
sys.modules[__name__ + ".numpy.random"] = tidu_compile.numpy.random


def grad(fun, argnum=0):
    return func.grad(fun, argnums=argnum)
'''

SHIM_TEST_UTIL = '''"""autograd.test_util's checks, written with tidu_compile.func."""
from itertools import product

import numpy as onp

import tidu_compile as tc
from tidu_compile import func

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree.numpy() if isinstance(tree, tc.Tensor) else onp.asarray(tree)]


def _randn_like(tree):
    """A random value of the vector space of ``tree`` (tuples and lists kept)."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_randn_like(item) for item in tree)
    x = tree.numpy() if isinstance(tree, tc.Tensor) else onp.asarray(tree)
    r = onp.asarray(onp.random.randn(*x.shape))
    if onp.iscomplexobj(x):
        r = r + 1j * onp.random.randn(*x.shape)
    return r.astype(x.dtype) if x.dtype.kind in "fc" else r


def _add(tree, v, scale):
    if isinstance(tree, (tuple, list)):
        return type(tree)(_add(t, w, scale) for t, w in zip(tree, v, strict=True))
    return tree + v * scale


def _as_output(out):
    """autograd differentiates an output that does not depend on the input (zero
    derivative); tidu_compile's transforms take tensors: a constant output becomes one."""
    if isinstance(out, (tuple, list)):
        return type(out)(_as_output(o) for o in out)
    return out if isinstance(out, tc.Tensor) else tc.tensor(onp.asarray(out))


def _inner(a, b):
    return sum(float(onp.real(onp.vdot(x, y))) for x, y in zip(_leaves(a), _leaves(b),
                                                               strict=True))


def _numerical_jvp(f, xs, vs):
    plus = f(*_add(xs, vs, EPS / 2))
    minus = f(*_add(xs, vs, -EPS / 2))
    return [(p - m) / EPS for p, m in zip(_leaves(plus), _leaves(minus), strict=True)]


def _check_vjp(f, xs):
    y, vjp_fn = func.vjp(f, *xs)
    x_v, y_v = _randn_like(xs), _randn_like(y)
    exact = _inner(x_v, vjp_fn(y_v))
    numeric = _inner(y_v, _numerical_jvp(f, xs, x_v))
    assert scalar_close(numeric, exact), (
        f"Derivative (VJP) check failed:\\nanalytic: {exact}\\nnumeric:  {numeric}")
    return y


def _check_jvp(f, xs):
    x_v = _randn_like(xs)
    _, tangent = func.jvp(f, xs, x_v)
    numeric = _numerical_jvp(f, xs, x_v)
    v = _randn_like(numeric)
    assert scalar_close(_inner(tangent, v), _inner(numeric, v)), (
        f"Value mismatch:\\nx: {tangent}\\ny: {numeric}")


def _check(f, xs, modes, order):
    if "fwd" in modes:
        _check_jvp(f, xs)
        if order > 1:
            n = len(xs)

            def jvp_f(*args):
                return func.jvp(f, args[:n], args[n:])[1]

            _check(jvp_f, (*xs, *_randn_like(xs)), modes, order - 1)
    if "rev" in modes:
        y = _check_vjp(f, xs)
        if order > 1:
            n = len(xs)

            def vjp_f(*args):
                return func.vjp(f, *args[:n])[1](args[n])

            _check(vjp_f, (*xs, _randn_like(y)), modes, order - 1)


def _as_value(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_as_value(item) for item in x)
    return x if isinstance(x, tc.Tensor) else onp.asarray(x)


def check_grads(f, argnum=0, modes=("fwd", "rev"), order=2):
    assert all(m in ("fwd", "rev") for m in modes)
    argnums = (argnum,) if isinstance(argnum, int) else tuple(argnum)

    def checked(*args, **kwargs):
        def selected(*xs):
            full = list(args)
            for n, x in zip(argnums, xs, strict=True):
                full[n] = x
            return _as_output(f(*full, **kwargs))

        _check(selected, tuple(_as_value(args[n]) for n in argnums), modes, order)

    return checked


def combo_check(fun, *args, **kwargs):
    def _combo_check(*check_args, **check_kwargs):
        kwarg_key_vals = [[(k, x) for x in xs] for k, xs in check_kwargs.items()]
        for _args in product(*check_args):
            for _kwargs in product(*kwarg_key_vals):
                check_grads(fun, *args, **kwargs)(*_args, **dict(_kwargs))

    return _combo_check
'''


def prepare(tests_dir: Path, into: Path) -> None:
    """Copy autograd's test files from ``tests_dir`` into ``into`` beside the shim."""
    for name in (*TEST_FILES, *HELPER_FILES):
        shutil.copy(tests_dir / name, into / name)
    shim = into / "autograd"
    shim.mkdir()
    (shim / "__init__.py").write_text(SHIM_INIT)
    (shim / "test_util.py").write_text(SHIM_TEST_UTIL)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    tests_dir = Path(argv[0]).resolve()
    with tempfile.TemporaryDirectory(prefix="autograd-suite-") as tmp:
        prepare(tests_dir, Path(tmp))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "no:randomly", *TEST_FILES, *argv[1:]]  # fmt: skip
        return subprocess.call(command, cwd=tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

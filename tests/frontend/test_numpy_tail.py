"""The long tail of numpy's names (``frontend/numpy_tail.py``), ``r_``/``c_``, einsum's
second form and lists of tensors as array-likes: values against numpy, gradients against
central differences, on both executors (the ``executor`` fixture) and in a compiled
``@tc.function``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.frontend import check_frontend_grad

import tidu_compile as tc
import tidu_compile.numpy as tnp

RNG = np.random.default_rng(7)
M = RNG.standard_normal((3, 4))
CUBE = RNG.standard_normal((3, 4, 5))

#: (name, tidu_compile function, numpy function, inputs)
CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], list[np.ndarray]]] = [
    ("deg2rad", tnp.deg2rad, np.deg2rad, [M * 90]),
    ("radians", tnp.radians, np.radians, [M * 90]),
    ("rad2deg", tnp.rad2deg, np.rad2deg, [M]),
    ("degrees", tnp.degrees, np.degrees, [M]),
    ("fabs", tnp.fabs, np.fabs, [M]),
    ("fliplr", tnp.fliplr, np.fliplr, [M]),
    ("flipud", tnp.flipud, np.flipud, [M]),
    ("rot90", tnp.rot90, np.rot90, [M]),
    ("rot90 k=3 axes", lambda x: tnp.rot90(x, 3, (2, 0)), lambda x: np.rot90(x, 3, (2, 0)), [CUBE]),
    ("rot90 k=2", lambda x: tnp.rot90(x, 2), lambda x: np.rot90(x, 2), [M]),
    ("rollaxis", lambda x: tnp.rollaxis(x, 2, 1), lambda x: np.rollaxis(x, 2, 1), [CUBE]),
    ("rollaxis start", lambda x: tnp.rollaxis(x, 0, 3), lambda x: np.rollaxis(x, 0, 3), [CUBE]),
    ("row_stack", lambda a, b: tnp.row_stack((a, b)), lambda a, b: np.vstack((a, b)), [M, M[:1]]),
    ("dsplit", lambda x: tnp.dsplit(x, [1, 3])[1], lambda x: np.dsplit(x, [1, 3])[1], [CUBE]),
    ("partition", lambda x: tnp.partition(x, 2), lambda x: np.partition(x, 2), [M]),
    ("gradient", lambda x: tnp.gradient(x, 0.5)[1], lambda x: np.gradient(x, 0.5)[1], [M]),
    ("gradient axis", lambda x: tnp.gradient(x, axis=-1), lambda x: np.gradient(x, axis=-1),
     [CUBE]),
    ("select", lambda a, b: tnp.select([M > 0, M < -1], [a, b], 2.0),
     lambda a, b: np.select([M > 0, M < -1], [a, b], 2.0), [M, M * 3]),
    ("real_if_close", lambda z: tnp.real_if_close(z + 0j), lambda z: np.real_if_close(z + 0j), [M]),
    ("r_", lambda a, b: tnp.r_[a, b, 1:4], lambda a, b: np.r_[a, b, 1:4], [M[0], M[1]]),
    ("r_ directive", lambda a, b: tnp.r_["1,3", a, b], lambda a, b: np.r_["1,3", a, b], [M, M]),
    ("c_", lambda a, b: tnp.c_[a, b], lambda a, b: np.c_[a, b], [M[0], M[1]]),
    ("einsum sublists", lambda a, b: tnp.einsum(a, [0, 1], b, [1, 2], [0, 2]),
     lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), [M, M.T]),
    ("einsum sublists implicit", lambda a: tnp.einsum(a, [Ellipsis, 1], [1, Ellipsis]),
     lambda a: np.einsum(a, [Ellipsis, 1], [1, Ellipsis]), [M]),
    ("mean of a list", lambda a: tnp.mean([a, a + 2.0]), lambda a: np.mean([a, a + 2.0]), [M]),
    ("std of a tuple", lambda a: tnp.std((a, 2.0 * a), axis=0),
     lambda a: np.std((a, 2.0 * a), axis=0), [M]),
    ("std of one element", lambda a: tnp.std(a[:1], axis=0), lambda a: np.std(a[:1], axis=0), [M]),
    ("make_diagonal", tnp.make_diagonal, lambda d: d[..., :, None] * np.eye(d.shape[-1]), [M]),
    ("append a list", lambda a: tnp.append([a[0], a[1]], 4.0),
     lambda a: np.append([a[0], a[1]], 4.0), [M[0, :2]]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "fn", "np_fn", "arrays"), CASES, ids=[c[0] for c in CASES])
def test_value_and_gradient(
    name: str, fn: Callable[..., Any], np_fn: Callable[..., Any], arrays: list[np.ndarray],
    executor: tc.BackwardExecutor,
) -> None:  # fmt: skip
    check_frontend_grad(fn, np_fn, arrays, executor=executor)


def test_std_of_one_element_has_gradient_zero(executor: tc.BackwardExecutor) -> None:
    x = tc.tensor(np.array(3.5), requires_grad=True)
    (g,) = tc.grad(tnp.std(x), [x], executor=executor)
    assert g == 0.0


@pytest.mark.parametrize("name", ["deg2rad", "rot90", "gradient", "c_", "partition"])
def test_compiled_in_a_traced_function(name: str, executor: tc.BackwardExecutor) -> None:
    """Inside ``@tc.function``: one traced node, compiled with no fallback (the fixture
    checks), values and gradients as eagerly (``partition`` sorts in a trace: the values
    of a partition of ``M``'s rows are then sorted, a partition too)."""
    functions = {
        "deg2rad": lambda x: tnp.deg2rad(x) * x,
        "rot90": lambda x: tnp.rot90(x) * 2.0,
        "gradient": lambda x: tnp.gradient(x)[0] * x,
        "c_": lambda x: tnp.c_[x[0], x[1]] ** 2,
        "partition": lambda x: tnp.sort(tnp.partition(x, 1)) * 3.0,
    }
    eager = functions[name]
    traced = tc.function(lambda x: tnp.sum(tnp.sin(eager(x))))
    for _ in range(2):  # the trace, then its replay
        x = tc.tensor(M, requires_grad=True)
        (g,) = tc.grad(traced(x), [x], executor=executor)
        y = tc.tensor(M, requires_grad=True)
        (want,) = tc.grad(tnp.sum(tnp.sin(eager(y))), [y], executor=tc.ReferenceExecutor())
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def test_argsort_is_numpy_stable_order_also_complex() -> None:
    z = np.array([1 + 2j, 1 + 1j, 0 + 5j, 1 + 1j, -1j])
    np.testing.assert_array_equal(tnp.argsort(z).numpy(), np.argsort(z, kind="stable"))
    traced = tc.function(lambda t: tnp.argsort(t))
    t = tc.tensor(z, requires_grad=True)
    np.testing.assert_array_equal(traced(t).numpy(), np.argsort(z, kind="stable"))
    np.testing.assert_array_equal(tnp.argsort(M, axis=0).numpy(), np.argsort(M, axis=0))
    np.testing.assert_array_equal(tnp.argsort(M, axis=None).numpy(), np.argsort(M, axis=None))


def test_bad_arguments_raise_clear_errors() -> None:
    with pytest.raises(TypeError, match="fabs: numpy has no loop for complex"):
        tnp.fabs(np.array([1j]))
    with pytest.raises(ValueError, match="same length"):
        tnp.select([M > 0], [M, M])
    with pytest.raises(TypeError, match="should be boolean"):
        tnp.select([M], [M])
    with pytest.raises(ValueError, match="3 or more dimensions"):
        tnp.dsplit(M, 2)
    with pytest.raises(TypeError, match="directive 'r'"):
        tnp.r_["r", M[0]]
    with pytest.raises(TypeError, match="sublist holds integers"):
        tnp.einsum(M, [0, "a"])
    with pytest.raises(ValueError, match="at least"):
        tnp.gradient(np.ones(1))
    with pytest.raises(ValueError, match="two different axes"):
        tnp.rot90(M, 1, (0, 0))
    with pytest.raises(NotImplementedError, match="only offset=0, axis1=-1, axis2=-2"):
        tnp.make_diagonal(M, axis1=0, axis2=1)


def test_allclose_and_array_equal_read_values_as_numpy_does() -> None:
    x = tc.tensor(M, requires_grad=True)
    assert tnp.allclose(x, M + 1e-9) and not tnp.allclose(x, M + 1e-3)
    assert tnp.allclose([np.nan], np.array([np.nan]), equal_nan=True)
    assert tnp.array_equal(x, M) and not tnp.array_equal(x, M[:2])

    @tc.function
    def reads(t: tc.Tensor) -> tc.Tensor:
        assert tnp.allclose(t, t)
        return tc.sum(t)

    with pytest.raises(tc.TracedValueError):
        reads(x)


def test_numpy_version_is_numpys() -> None:
    assert tnp.__version__ == np.__version__
    assert {"r_", "c_", "argsort", "rot90", "gradient"} <= set(tnp.names())

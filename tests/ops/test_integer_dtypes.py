"""Integer and bool arithmetic is numpy's: numpy 2's dtypes and exact values.

One table of operations (``BINARY``, ``UNARY``, ``REDUCTIONS``), each run against numpy
on every dtype pair of ``DTYPES`` and with Python scalars (weak, as numpy 2 promotes
them): the same dtype and the same values (bit for bit: 2**53 + 1, wrapping int32
overflow, negative floor division and modulo), or the same exception class where numpy
refuses (``bool - bool``, ``int ** -1``, ``uint8 + 300``). Three ways: eager recording
(the frontend and its fast path, 0-d values too), a ``@tc.function`` whose forward a
``CompiledExecutor`` compiles (native integer kernels: no fallback except for unsigned
values, which are not compiled) and one on the ``ReferenceExecutor``.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
import tidu_compile.numpy as tnp
from tidu_compile.executors.compiled import CompiledExecutor

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, as numpy's

SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
DTYPES = (*SIGNED, *UNSIGNED, "bool", "float32", "float64")


def values(dtype: str, second: bool = False) -> np.ndarray:
    """Eight values of ``dtype`` with both signs, zeros, the extremes and, for int64,
    2**53 + 1; the ``second`` operand has -1 and 0 (divisors numpy special-cases)."""
    if dtype == "bool":
        return np.array([True, False, True, True, False, False, True, False])
    if dtype.startswith("float"):
        data = [2.0, -2.0, 3.0, 0.5, 1.0, -1.0, -1.0, 0.0] if second else [
            -7.5, 7.5, 0.0, -0.0, 3.0, 1e30, -1.0, 2.5]
        return np.array(data, dtype)
    info = np.iinfo(dtype)
    if second:
        data = [2, -2, 3, 1, 1, -1, -1, 0]
    else:
        big = 2**53 + 1 if dtype == "int64" else info.max
        data = [-7, 7, 0, big, info.max, info.min, -1, 3]
    if dtype in UNSIGNED:
        data = [abs(v) if v >= 0 else info.max - abs(v) + 1 for v in data]
    return np.array(data).astype(dtype)


def _same(got: Any, want: Any, what: str, close: bool = False) -> None:
    """Equal dtypes, shapes and values: bit for bit, or for floats within 4 ulps when
    ``close`` (integers and bool always exactly)."""
    got = got.numpy() if isinstance(got, tc.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, numpy {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, numpy {want.shape}"
    if want.dtype.kind == "f" and close:
        equal = (got == want) | (np.isnan(got) & np.isnan(want))
        near = np.abs(got - want) <= 4 * np.abs(np.spacing(want))
        assert np.all(equal | near), f"{what}: {got} vs {want}"
    elif want.dtype.kind == "f":
        np.testing.assert_array_equal(got.view(f"u{want.itemsize}"),
                                      want.view(f"u{want.itemsize}"), err_msg=what)  # fmt: skip
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _numpy_or_error(fn: Callable[..., Any], *args: Any) -> tuple[Any, type[Exception] | None]:
    """``fn(*args)``, or None and the builtin class of numpy's exception."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except OverflowError:  # before ValueError: numpy's is both
            return None, OverflowError
        except (TypeError, ValueError) as error:  # numpy's subclasses: the builtin class
            return None, TypeError if isinstance(error, TypeError) else ValueError


def _check(what: str, ours: Callable[..., Any], theirs: Callable[..., Any], *args: Any) -> None:
    """``ours`` of ``args`` as tensors (Python numbers as they are) gives what ``theirs``
    (numpy) gives of ``args``: its dtype and values, or an exception of its class."""
    want, error = _numpy_or_error(theirs, *args)
    tensors = [a if isinstance(a, (bool, int, float)) else tc.tensor(a) for a in args]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if error is not None:
            with pytest.raises(error):
                ours(*tensors)
            return
        got = ours(*tensors)
    _same(got, want, what)


def _of_first(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` of 0-d arrays, as numpy computes it: on 1-element arrays (numpy's 0-d
    results are scalars), first element."""
    return lambda *xs: np.asarray(
        fn(*(np.reshape(x, 1) if isinstance(x, np.ndarray) else x for x in xs))
    )[0]


# ---------------------------------------------------------------- the operations

BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (operator.add, np.add),
    "sub": (operator.sub, np.subtract),
    "mul": (operator.mul, np.multiply),
    "floordiv": (operator.floordiv, np.floor_divide),
    "mod": (operator.mod, np.remainder),
    "truediv": (operator.truediv, np.true_divide),
    "pow": (operator.pow, np.power),
    "maximum": (tc.maximum, np.maximum),
    "minimum": (tc.minimum, np.minimum),
    "lt": (operator.lt, np.less),
    "ge": (operator.ge, np.greater_equal),
    "eq": (operator.eq, np.equal),
    "where": (lambda a, b: tc.where(_MASK, a, b), lambda a, b: np.where(_MASK, a, b)),
}
_MASK = np.array([True, False, False, True, True, False, True, False])

UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "neg": (operator.neg, np.negative),
    "abs": (abs, np.abs),
    "sign": (tc.sign, np.sign),
    "square": (tnp.square, np.square),
    "floor": (tc.floor, np.floor),
    "pow0": (lambda x: x**0, lambda x: x**0),
    "pow3": (lambda x: x**3, lambda x: x**3),
    "pow-1": (lambda x: x**-1, lambda x: x**-1),
    "pow2.5": (lambda x: x**2.5, lambda x: x**2.5),
    "astype_int32": (lambda x: x.astype(np.int32), lambda x: x.astype(np.int32)),
    "astype_float64": (lambda x: x.astype(np.float64), lambda x: x.astype(np.float64)),
    "astype_bool": (lambda x: x.astype(bool), lambda x: x.astype(bool)),
    "conj": (tc.conj, np.conj),
    "real": (tc.real, np.real),
    "imag": (tc.imag, np.imag),
}

#: Contractions of a 2 x 4 and a 4 x 2 operand (both of ``values``): exact for integers
#: and bools, as numpy's (never through float64).
CONTRACTIONS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "matmul": (operator.matmul, np.matmul),
    "dot": (tc.dot, np.dot),
    "tensordot": (lambda a, b: tc.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1)),
    "inner": (lambda a, b: tc.inner(a, b.T), lambda a, b: np.inner(a, b.T)),
    "outer": (tc.outer, np.outer),
    "vdot": (lambda a, b: tc.vdot(a, b.T), lambda a, b: np.vdot(a, b.T)),
    "einsum": (lambda a, b: tc.einsum("ij,jk->ik", a, b),
               lambda a, b: np.einsum("ij,jk->ik", a, b)),  # fmt: skip
    "einsum_sum": (lambda a, b: tc.einsum("ij,jk->", a, b),
                   lambda a, b: np.einsum("ij,jk->", a, b)),  # fmt: skip
}

REDUCTIONS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "sum": (tc.sum, np.sum),
    "prod": (tc.prod, np.prod),
    "max": (tc.max, np.max),
    "min": (tc.min, np.min),
    "cumsum": (tc.cumsum, np.cumsum),
    "cumprod": (tc.cumprod, np.cumprod),
    "argmax": (tc.argmax, np.argmax),
    "sum_axis": (lambda x: tc.sum(x, axis=1), lambda x: np.sum(x, axis=1)),
}

SCALARS = (1, -3, 2**53 + 1, 300, 2.5, True)


# ---------------------------------------------------------------- eager


@pytest.mark.parametrize("name", sorted(BINARY))
def test_eager_binary_ops_follow_numpy_promotion_and_values(name: str) -> None:
    ours, theirs = BINARY[name]
    for left in DTYPES:
        for right in DTYPES:
            a, b = values(left), values(right, second=True)
            _check(f"{name}({left}, {right})", ours, theirs, a, b)
            if name != "where":  # 0-d: the fast path's own branch
                _check(f"{name}({left}, {right}) 0-d", ours, _of_first(theirs),
                       np.array(a[1]), np.array(b[1]))  # fmt: skip
        for number in SCALARS:
            a = values(left)
            if name == "where" and type(number) is int and np.dtype(left).kind in "iu" and (
                not np.iinfo(left).min <= number <= np.iinfo(left).max
            ):
                continue  # numpy's where casts it unsafely (wraps); we refuse, as numpy's +
            _check(f"{name}({left}, {number!r})", ours, theirs, a, number)
            _check(f"{name}({number!r}, {left})", ours, theirs, number, a)
            if name != "where":  # 0-d with a number: the fast path's own branch
                _check(f"{name}({left} 0-d, {number!r})", ours, _of_first(theirs),
                       np.array(a[1]), number)  # fmt: skip


@pytest.mark.parametrize("name", sorted(UNARY))
def test_eager_unary_ops_follow_numpy(name: str) -> None:
    ours, theirs = UNARY[name]
    for dtype in DTYPES:
        x = values(dtype)
        _check(f"{name}({dtype})", ours, theirs, x)
        _check(f"{name}({dtype}) 0-d", ours, _of_first(theirs), np.array(x[3]))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_eager_reductions_follow_numpy(name: str) -> None:
    ours, theirs = REDUCTIONS[name]
    for dtype in DTYPES:
        _check(f"{name}({dtype})", ours, theirs, values(dtype).reshape(2, 4))


@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
def test_eager_contractions_follow_numpy(name: str) -> None:
    ours, theirs = CONTRACTIONS[name]
    for left in DTYPES:
        for right in DTYPES:
            if np.result_type(left, right).kind == "f":
                continue  # float contractions run on BLAS: other rounding, other tests
            a, b = values(left).reshape(2, 4), values(right, second=True).reshape(4, 2)
            _check(f"{name}({left}, {right})", ours, theirs, a, b)


def test_the_issue_reproductions() -> None:
    big = tc.tensor(np.array([2**53 + 1])) + 0
    assert big.dtype == np.int64 and big.numpy()[0] == 2**53 + 1
    pred, labels = tc.tensor(np.array([0, 2, 1, 1])), np.array([0, 2, 1, 0])
    hits = (pred == labels).sum()
    assert hits.dtype == np.int64 and hits.item() == 3
    x = tc.tensor(np.arange(8.0), requires_grad=True)
    picked = x[tc.arange(4) * 2]
    np.testing.assert_array_equal(picked.numpy(), [0.0, 2.0, 4.0, 6.0])
    (g,) = tc.grad(tc.sum(picked), [x])
    np.testing.assert_array_equal(g, [1, 0, 1, 0, 1, 0, 1, 0])
    wrapped = tc.tensor(np.array([2**31 - 1], np.int32)) + 1
    assert wrapped.dtype == np.int32 and wrapped.numpy()[0] == -(2**31)


def test_integer_results_carry_no_gradient() -> None:
    x = tc.tensor(np.array([1.5, -2.5, 3.0]), requires_grad=True)
    for result in (x // 2, x.astype(np.int64), x > 0, tc.argmax(x)):
        assert not result.requires_grad
    with pytest.raises(ValueError, match="does not require gradients"):
        tc.grad(tc.sum(x // 1.0), [x])


def test_float_mod_gradient_is_numpy_autograds() -> None:
    """``d(x % y)/dx = 1`` and ``d(x % y)/dy = -floor(x / y)`` (numpy-autograd's rule)."""
    xs, ys = np.array([-7.5, 7.5, 5.2, -0.3]), np.array([2.0, -2.0, 1.5, 0.7])
    x, y = tc.tensor(xs, requires_grad=True), tc.tensor(ys, requires_grad=True)
    for executor in (tc.ReferenceExecutor(), CompiledExecutor(cache_dir=False, background=False)):
        gx, gy = tc.grad(tc.sum(x % y), [x, y], executor=executor)
        np.testing.assert_array_equal(gx, np.ones(4))
        np.testing.assert_array_equal(gy, -np.floor(xs / ys))
        gx, gy = tc.grad(tc.sum(7.0 % y + x % 3.0), [x, y], executor=executor)  # reflected
        np.testing.assert_array_equal(gx, np.ones(4))
        np.testing.assert_array_equal(gy, -np.floor(7.0 / ys))


def test_numpy_names_and_ufuncs_on_tensors() -> None:
    a, b = values("int64"), values("int64", second=True)
    with np.errstate(all="ignore"):
        for ours, theirs in ((tnp.floor_divide, np.floor_divide), (tnp.mod, np.mod),
                             (tnp.remainder, np.remainder)):  # fmt: skip
            _same(ours(tc.tensor(a), b), theirs(a, b), ours.__name__)
            _same(theirs(tc.tensor(a), tc.tensor(b)), theirs(a, b), f"np.{theirs.__name__}")
        _same(7 % tc.tensor(b), 7 % b, "7 % tensor")
        _same(7 // tc.tensor(b), 7 // b, "7 // tensor")


# ---------------------------------------------------------------- traced


def _one_like(x: tc.Tensor, a: tc.Tensor) -> tc.Tensor:
    """Ones (True) shaped and typed like ``a``, computed from ``x`` (as many elements):
    in a trace, a value of the program (not of numpy's prelude), so what is done with it
    compiles."""
    every = tc.reshape(x, a.shape) < 1e300
    return every if a.dtype == np.bool_ else every.astype(a.dtype)


def _traced(functions: list[Callable[..., Any]]) -> Callable[..., Any]:
    """Every one of ``functions`` of the integer arguments inside one ``@tc.function``
    (one program; the arguments pass through a value computed from ``x``, so the
    program computes them)."""

    @tc.function
    def f(x: tc.Tensor, *args: tc.Tensor) -> Any:
        computed = [a * _one_like(x, a) for a in args]  # a itself, -0.0 too
        return (tc.sum(x), *(function(*computed) for function in functions))

    return f


_TRACED_DTYPES = ("int8", "int32", "int64", "uint8", "bool", "float64")
_TRACED_PAIRS = [(d, d) for d in _TRACED_DTYPES] + [("int32", "int64"), ("bool", "int8")]
_TRACED_UNARY = ("neg", "abs", "sign", "pow3", "astype_int32", "astype_float64")
_TRACED_REDUCTIONS = ("sum", "prod", "max", "min", "cumsum", "sum_axis")


def _traced_groups() -> list[tuple[str, list[str], list[Callable[..., Any]], list[Any], list]]:
    """Per dtype (pair): the operations numpy takes, ours and numpy's, and the operands."""
    groups = []
    native = sorted(set(BINARY) - {"pow"})  # integer ** tensor: a numpy library call
    tables = [(BINARY, native, pair) for pair in _TRACED_PAIRS]
    tables += [(UNARY, _TRACED_UNARY, (d,)) for d in _TRACED_DTYPES]
    tables += [(REDUCTIONS, _TRACED_REDUCTIONS, (d,)) for d in _TRACED_DTYPES]
    for table, names, dtypes in tables:
        arrays = [values(d, second=i == 1) for i, d in enumerate(dtypes)]
        if table is REDUCTIONS:
            arrays = [a.reshape(2, 4) for a in arrays]
        taken = [n for n in names if _numpy_or_error(table[n][1], *arrays)[1] is None]
        groups.append((",".join(dtypes), taken, [table[n][0] for n in taken],
                       [table[n][1] for n in taken], arrays))  # fmt: skip
    return groups


@pytest.mark.parametrize("executor_name", ["compiled", "reference"])
def test_traced_ops_are_numpys(executor_name: str) -> None:
    """Each operation inside a ``@tc.function``: numpy's dtypes and values, on a compiled
    program with no numpy fallback (unsigned values excepted: they are not compiled)."""
    executor: tc.BackwardExecutor
    if executor_name == "compiled":
        executor = CompiledExecutor(cache_dir=False, background=False)
    else:
        executor = tc.ReferenceExecutor()
    x = tc.tensor(np.ones(8), requires_grad=True)
    close = executor_name == "compiled"  # float formulas within a few ulps (README)
    with tc.use_executor(executor):
        for dtypes, names, ours, theirs, arrays in _traced_groups():
            f = _traced(ours)
            before = executor.stats.fallbacks if close else 0  # type: ignore[attr-defined]
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                f(x, *(tc.tensor(a) for a in arrays))  # the trace
                got = f(x, *(tc.tensor(a) for a in arrays))[1:]  # the compiled program
                want = [theirs_one(*arrays) for theirs_one in theirs]
            for name, g, w in zip(names, got, want, strict=True):
                _same(g, w, f"traced {name}({dtypes})", close)
            if close and "uint8" not in dtypes:
                fallbacks = executor.stats.fallbacks - before  # type: ignore[attr-defined]
                assert fallbacks == 0, f"{dtypes}: {fallbacks} numpy fallbacks"
    if close:
        compiled = [g for g in _traced_groups() if "uint8" not in g[0]]  # one program each
        assert executor.stats.compiles >= len(compiled)  # type: ignore[attr-defined]


def test_traced_exact_big_integers_and_indices() -> None:
    executor = CompiledExecutor(cache_dir=False, background=False)

    @tc.function
    def f(x: tc.Tensor, k: tc.Tensor) -> Any:
        a = tc.floor(x * 3).astype(np.int64)
        return tc.sum(x * a), a + k, (x > 0).sum(), x[tc.arange(2) * 2]

    xs = np.array([-1.3, 0.2, 2.9, -0.4])
    ks = np.array([2**53 + 1, 1, 2, 3])
    x = tc.tensor(xs, requires_grad=True)
    with tc.use_executor(executor):
        for _ in range(2):
            loss, total, positives, picked = f(x, tc.tensor(ks))
        a = np.floor(xs * 3).astype(np.int64)
        _same(total, a + ks, "a + k")
        _same(positives, (xs > 0).sum(), "(x > 0).sum()")
        _same(picked, xs[[0, 2]], "x[arange(2) * 2]")
        (g,) = tc.grad(loss, [x])
    np.testing.assert_array_equal(g, a.astype(np.float64))
    assert executor.stats.fallbacks == 0

"""0-d tensors on the recording fast path: numpy's dtype and bits for every fast op.

``fast_ops`` computes a 0-d result apart from the n-d one (Python floats for float64,
an ``out=`` array for the other dtypes), so a 0-d float32 value computed in float64, or
a complex64 one in complex128, is wrong only there. Every op of ``fast_ops.SPECS``
in every dtype it allows, by every way in (``fast_ops.unary``/``binary``, the frontend
functions named in the op's ``numpy_names``, the operators of ``fast_ops.
BINARY_OPERATORS``/``UNARY_OPERATORS`` with their reflected twins, tensor and Python
number operands), must give what numpy's ufunc gives on 0-d arrays (``np.array(x,
dtype)``): the same dtype, the same bytes (signed zeros, infinities, NaN, subnormals) and
the same warnings. The rows derive from those tables: a new fast op gets them.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tidu_compile as tc
from tidu_compile.frontend import elementwise, fast_ops
from tidu_compile.frontend.tensor import Tensor

DTYPES = ("float32", "float64", "complex64", "complex128")
ROWS = [(op, dtype) for op, spec in fast_ops.SPECS.items() for dtype in DTYPES
        if np.dtype(dtype) in spec[2]]  # fmt: skip
UNARY_ROWS = [row for row in ROWS if row[0].input_count == 1]
BINARY_ROWS = [row for row in ROWS if row[0].input_count == 2]


def _id(row: tuple[Any, str]) -> str:
    return f"{row[0].__name__}-{row[1]}"


def _reals(dtype: str, count: int) -> list[float]:
    """Signed zeros, infinities, NaN, the subnormal and normal limits of the real dtype
    of ``dtype``, ordinary values, and ``count`` random ones (rounding differs there)."""
    info = np.finfo(np.dtype(dtype))
    sub, tiny, huge = float(info.smallest_subnormal), float(info.tiny), float(info.max)
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 0.7, 3.0, 100.0, -100.0, tiny, -tiny, sub,
               -sub, tiny - sub, huge, -huge, np.inf, -np.inf, np.nan]  # fmt: skip
    rng = np.random.default_rng(count)
    real = info.dtype.name
    random = [float(np.asarray(v, real)) for v in rng.uniform(-4.0, 4.0, count)]
    return special + random


def _values(dtype: str, count: int) -> list[Any]:
    """Values of ``dtype`` (as Python numbers): ``_reals``, and for complex dtypes every
    pairing of a few of them as real and imaginary parts."""
    reals = _reals(dtype, count)
    if np.dtype(dtype).kind == "f":
        return reals
    subnormal = float(np.finfo(np.dtype(dtype)).smallest_subnormal)
    parts = [0.0, -0.0, 1.0, -1.5, subnormal, np.inf, np.nan, reals[-1]]
    return [complex(a, b) for a in parts for b in parts] + [complex(r, -r) for r in reals]


def _numbers(dtype: str, with_complex: bool) -> list[Any]:
    """Python numbers to pair with a tensor of ``dtype``: floats, ints, and complex
    numbers ``with_complex`` (an op of real values only raises for them)."""
    floats = _reals(dtype, 2)[::2] + [np.nan, -0.0, 1e300]
    complexes = [1.5 - 2j, complex(np.inf, 0.0), complex(0.0, -0.0)] if with_complex else []
    return [*floats, 0, 1, -3, 7, 2**40, 2**60, -(2**53 + 1), *complexes]


def _outcome(call: Callable[[], Any]) -> tuple[Any, list[str]] | None:
    """A call's result as (dtype, shape, bytes, writable) and its warnings' texts (None
    where ``fast_ops`` leaves the call to the general path)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
        warnings.simplefilter("always")
        out = call()
    if out is None:
        return None
    data = out._data if isinstance(out, Tensor) else np.asarray(out)
    return (data.dtype, data.shape, data.tobytes(), data.flags.writeable), sorted(
        str(w.message) for w in caught
    )


def _expected(ufunc: np.ufunc, *operands: Any) -> tuple[Any, list[str]]:
    """numpy on 0-d arrays (numbers stay Python numbers), read-only like a tensor's data."""
    outcome = _outcome(lambda: ufunc(*operands))
    assert outcome is not None
    (dtype, shape, data, _), messages = outcome
    return (dtype, shape, data, False), messages


def _unary_entries(op: Any) -> list[tuple[str, Callable[[Any], Any]]]:
    entries: list[tuple[str, Callable[[Any], Any]]] = [
        ("fast_ops.unary", lambda x: fast_ops.unary(op, x))
    ]
    entries += [(f"tc.{name}", getattr(tc, name)) for name in op.numpy_names]
    entries += [(f"__{name}__", getattr(operator, name))
                for name, (o, _) in fast_ops.UNARY_OPERATORS.items() if o is op]  # fmt: skip
    return entries


def _binary_entries(op: Any) -> list[tuple[str, Callable[[Any, Any], Any]]]:
    entries: list[tuple[str, Callable[[Any, Any], Any]]] = [
        ("fast_ops.binary", lambda a, b: fast_ops.binary(op, a, b))
    ]
    entries += [(f"tc.{name}", getattr(tc, name)) for name in op.numpy_names]
    entries += [(f"__{name}__", getattr(operator, name))  # number-first: ``__r{name}__``
                for name, (o, _) in fast_ops.BINARY_OPERATORS.items() if o is op]  # fmt: skip
    return entries


def test_the_rows_cover_every_fast_op_and_way_in() -> None:
    assert {op for op, _ in ROWS} == set(fast_ops.SPECS)
    names = {(op.__name__, d) for op, d in ROWS}
    assert names >= {("Sin", "float32"), ("Neg", "complex64"), ("Div", "complex64")}
    for name, (op, function) in {**fast_ops.BINARY_OPERATORS,
                                 **fast_ops.UNARY_OPERATORS}.items():  # fmt: skip
        assert op in fast_ops.SPECS and getattr(Tensor, f"__{name}__").__name__ == "function"
        assert elementwise.TABLE_FUNCTIONS[function] is getattr(tc, function)


@pytest.mark.parametrize("row", UNARY_ROWS, ids=_id)
def test_unary_fast_ops_on_0d_give_numpys_dtype_and_bits(row: tuple[Any, str]) -> None:
    op, dtype = row
    ufunc = fast_ops.SPECS[op][0]
    for value in _values(dtype, 16):
        array = np.array(value, dtype)
        want = _expected(ufunc, array)
        for grad in (True, False):
            x = tc.tensor(array, requires_grad=grad)
            for name, entry in _unary_entries(op):
                got = _outcome(lambda entry=entry, x=x: entry(x))  # type: ignore[misc]
                assert got == want, (op.__name__, dtype, name, value, grad)
            with np.errstate(all="ignore"):
                recorded = fast_ops.unary(op, x)
            assert recorded is not None and (recorded._trace is not None) == grad
            if grad:  # the fast path's own node, not the general path's
                assert recorded._trace._output is not None  # type: ignore[union-attr]


def _binary_forms(dtype: str, with_complex: bool) -> list[tuple[Any, Any]]:
    """Operand pairs: two 0-d arrays of ``dtype``, or one and a Python number (never
    wrapped in an array: numpy keeps the array's dtype for it, as the fast path does)."""
    values = _values(dtype, 8)
    if np.dtype(dtype).kind == "c":
        values = values[:: max(1, len(values) // 14)]
    arrays = [np.array(v, dtype) for v in values]
    pairs: list[tuple[Any, Any]] = [(a, b) for a in arrays for b in arrays]
    for number in _numbers(dtype, with_complex):
        for a in arrays[:: max(1, len(arrays) // 8)]:
            pairs += [(a, number), (number, a)]
    return pairs


@pytest.mark.parametrize("row", BINARY_ROWS, ids=_id)
def test_binary_fast_ops_on_0d_give_numpys_dtype_and_bits(row: tuple[Any, str]) -> None:
    op, dtype = row
    ufunc = fast_ops.SPECS[op][0]
    entries = _binary_entries(op)
    with_complex = any(d.kind == "c" for d in fast_ops.SPECS[op][2])
    for a, b in _binary_forms(dtype, with_complex):
        want = _expected(ufunc, a, b)
        ta, tb = (tc.tensor(w, requires_grad=True) if isinstance(w, np.ndarray) else w
                  for w in (a, b))  # fmt: skip
        for name, entry in entries:
            got = _outcome(lambda entry=entry, ta=ta, tb=tb: entry(ta, tb))  # type: ignore[misc]
            assert got == want or got is None and name == "fast_ops.binary", (
                op.__name__, dtype, name, a, b)  # fmt: skip
        with np.errstate(all="ignore"):
            fast = fast_ops.binary(op, ta, tb)
        if all(type(w) is not complex and not (type(w) is int and abs(w) > 2**53)
               for w in (a, b)):  # fmt: skip
            assert fast is not None, ("the fast path declined", op.__name__, dtype, a, b)
        if fast is not None:  # the fast path's own node, not the general path's
            assert fast._trace is not None and fast._trace._output is not None

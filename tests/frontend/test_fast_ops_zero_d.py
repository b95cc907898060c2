"""0-d tensors on the recording fast path: numpy's dtype and bits for every fast op.

``fast_ops`` computes a 0-d result apart from the n-d one (Python floats for float64,
an ``out=`` array for the other dtypes), so a 0-d float32 value computed in float64, or
a complex64 one in complex128, is wrong only there. Every op of ``fast_ops.SPECS``
in every dtype it allows, by every way in (``fast_ops.unary``/``binary``, the frontend
functions named in the op's ``numpy_names``, the operators of ``fast_ops.
BINARY_OPERATORS``/``UNARY_OPERATORS`` with their reflected twins, tensor and Python
number operands), must give what numpy's ufunc (for an operator, numpy's operator)
gives on 0-d arrays (``np.array(x, dtype)``): the same dtype, the same bytes (signed
zeros, infinities, NaN, subnormals) and the same warnings. The rows derive from those
tables: a new fast op gets them.
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


def _expected(numpy: Callable[..., Any], *operands: Any) -> tuple[Any, list[str]]:
    """numpy on 0-d arrays (numbers stay Python numbers), read-only like a tensor's data."""
    outcome = _outcome(lambda: numpy(*operands))
    assert outcome is not None
    (dtype, shape, data, _), messages = outcome
    return (dtype, shape, data, False), messages


#: A way into the fast path: its name, the call on tensors and numbers, and numpy's call
#: on 0-d arrays and numbers (the op's ufunc; for an operator, numpy's operator).
Entry = tuple[str, Callable[..., Any], Callable[..., Any]]


def _entries(op: Any) -> list[Entry]:
    ufunc = fast_ops.SPECS[op][0]
    fast = fast_ops.unary if op.input_count == 1 else fast_ops.binary
    entries: list[Entry] = [(fast.__name__, lambda *xs: fast(op, *xs), ufunc)]
    entries += [(f"tc.{name}", getattr(tc, name), ufunc) for name in op.numpy_names]
    table = fast_ops.UNARY_OPERATORS if op.input_count == 1 else fast_ops.BINARY_OPERATORS
    entries += [(f"__{name}__", getattr(operator, name), getattr(operator, name))
                for name, (o, _) in table.items() if o is op]  # fmt: skip
    # (with a number first, ``operator.sub(2.0, t)`` is ``Tensor.__rsub__``)
    return entries


def test_the_rows_cover_every_fast_op_and_operator() -> None:
    assert {op for op, _ in ROWS} == set(fast_ops.SPECS)
    names = {(op.__name__, d) for op, d in ROWS}
    assert names >= {("Sin", "float32"), ("Neg", "complex64"), ("Div", "complex64")}
    x = tc.tensor(np.array(0.5, np.float32), requires_grad=True)
    operators = [(f"__{n}__", o, f) for n, (o, f) in fast_ops.UNARY_OPERATORS.items()]
    for name, (op, function) in fast_ops.BINARY_OPERATORS.items():
        operators += [(f"__{name}__", op, function), (f"__r{name}__", op, function)]
    for dunder, op, function in operators:
        operands = (x,) if op.input_count == 1 else (x, 2.0)
        out = getattr(Tensor, dunder)(*operands)
        assert out._trace._output is not None, dunder  # recorded by ``fast_ops``
        assert out._trace.graph is fast_ops.SPECS[op][1], dunder
        assert elementwise.TABLE_FUNCTIONS[function] is getattr(tc, function)


@pytest.mark.parametrize("row", UNARY_ROWS, ids=_id)
def test_unary_fast_ops_on_0d_give_numpys_dtype_and_bits(row: tuple[Any, str]) -> None:
    op, dtype = row
    entries = _entries(op)
    for value in _values(dtype, 16):
        array = np.array(value, dtype)
        for grad in (True, False):
            x = tc.tensor(array, requires_grad=grad)
            for name, entry, numpy in entries:
                got = _outcome(lambda entry=entry, x=x: entry(x))  # type: ignore[misc]
                assert got == _expected(numpy, array), (op.__name__, dtype, name, value, grad)
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
    entries = _entries(op)
    with_complex = any(d.kind == "c" for d in fast_ops.SPECS[op][2])
    for a, b in _binary_forms(dtype, with_complex):
        ta, tb = (tc.tensor(w, requires_grad=True) if isinstance(w, np.ndarray) else w
                  for w in (a, b))  # fmt: skip
        for name, entry, numpy in entries:
            got = _outcome(lambda entry=entry, ta=ta, tb=tb: entry(ta, tb))  # type: ignore[misc]
            assert got == _expected(numpy, a, b) or got is None and name == "binary", (
                op.__name__, dtype, name, a, b)  # fmt: skip
        with np.errstate(all="ignore"):
            fast = fast_ops.binary(op, ta, tb)
        if all(type(w) is not complex and not (type(w) is int and abs(w) > 2**53)
               for w in (a, b)):  # fmt: skip
            assert fast is not None, ("the fast path declined", op.__name__, dtype, a, b)
        if fast is not None:  # the fast path's own node, not the general path's
            assert fast._trace is not None and fast._trace._output is not None

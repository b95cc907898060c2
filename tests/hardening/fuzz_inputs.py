"""Odd but valid array layouts, malformed values, and recorded nodes to feed them to.

``layout(array, kind)`` returns the same values in another memory layout (a strided
view, reversed strides, big-endian, Fortran order, unaligned, read-only, a numpy
scalar). ``MALFORMED`` lists values that are never a valid cotangent. ``NODES`` are
small frontend functions, each recording one or a few tape nodes, to drive through the
executors with such inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tidu_compile as tc
from tidu_compile.ad import ADRuleError

LAYOUTS = ("strided", "reversed", "bigendian", "fortran", "unaligned", "readonly", "scalar")

#: What a malformed input may raise: a specific, documented exception.
ALLOWED_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, KeyError, ADRuleError)


def layout(array: np.ndarray, kind: str) -> Any:
    """``array``'s values in the memory layout ``kind`` (see ``LAYOUTS``)."""
    array = np.asarray(array)
    if kind == "strided":  # every other element of a twice-as-large array
        big = np.zeros(tuple(2 * d for d in array.shape) or (2,), array.dtype)
        view = big[tuple(slice(None, None, 2) for _ in array.shape)] if array.ndim else big[0:1]
        view[...] = array
        return view if array.ndim else view.reshape(())
    if kind == "reversed":  # negative strides
        copy = np.array(array[tuple(slice(None, None, -1) for _ in array.shape)], copy=True)
        return copy[tuple(slice(None, None, -1) for _ in array.shape)]
    if kind == "bigendian":
        return array.astype(array.dtype.newbyteorder(">"))
    if kind == "fortran":
        return np.asfortranarray(array) if array.ndim else array  # (it makes 0-d 1-d)
    if kind == "unaligned":
        raw = np.zeros(array.nbytes + 1, np.uint8)
        view = np.frombuffer(raw.data, array.dtype, count=array.size, offset=1)
        view = view.reshape(array.shape)
        if array.size:
            np.copyto(view, array)
        return view
    if kind == "readonly":
        copy = np.array(array, copy=True)
        copy.flags.writeable = False
        return copy
    if kind == "scalar":  # a numpy scalar (only for 0-d values)
        return array[()] if array.ndim == 0 else array
    raise ValueError(f"kind: unknown layout {kind!r}")


def malformed(rng: np.random.Generator, like: np.ndarray) -> tuple[Any, str]:
    """A value that is not a valid cotangent for ``like``, and what is wrong with it."""
    shape, dtype = like.shape, like.dtype
    choices: list[tuple[Callable[[], Any], str]] = [
        (lambda: np.ones((*shape, 2), dtype), "extra dimension"),
        (lambda: np.ones(shape[:-1] if shape else (3,), dtype), "missing dimension"),
        (lambda: np.ones(tuple(d + 1 for d in shape) or (1,), dtype), "wrong shape"),
        (lambda: np.ones(shape, np.float32 if dtype != np.float32 else np.float64), "dtype"),
        (lambda: np.ones(shape, np.int64), "integer"),
        (lambda: np.ones(shape, bool), "bool"),
        (lambda: np.ones(shape, np.complex128 if dtype.kind == "f" else np.float64), "kind"),
        (lambda: 1.0, "python float"),
        (lambda: [1.0] * max(1, like.size), "list"),
        (lambda: "seed", "string"),
        (lambda: None, "None"),
        (lambda: object(), "object"),
        (lambda: np.array([object()] * max(1, like.size)), "object array"),
        (lambda: np.ones(shape, "U3"), "unicode array"),
        (lambda: np.ones(shape, np.float16), "float16"),
    ]
    make, what = choices[int(rng.integers(len(choices)))]
    return make(), what


@dataclass(frozen=True)
class Node:
    """A frontend function of a leaf ``x`` and a constant ``c`` (shapes given)."""

    name: str
    function: Callable[[tc.Tensor, tc.Tensor], tc.Tensor]
    x_shape: tuple[int, ...]
    c_shape: tuple[int, ...]


def _nodes() -> list[Node]:
    return [
        Node("mul", lambda x, c: x * c, (3, 4), (3, 4)),
        Node("add", lambda x, c: x + c, (3, 4), (3, 4)),
        Node("sin-mul", lambda x, c: tc.sin(x) * c, (5,), (5,)),
        Node("div", lambda x, c: x / (c * c + 1.0), (2, 3), (2, 3)),
        Node("row-broadcast", lambda x, c: tc.exp(x) * c, (3, 4), (4,)),
        Node("column-broadcast", lambda x, c: tc.tanh(x + c), (3, 4), (3, 1)),
        Node("scalar", lambda x, c: tc.log(x * x + 1.0) * c, (), ()),
        Node("matmul", lambda x, c: tc.tanh(x @ c), (3, 4), (4, 2)),
        Node("matvec", lambda x, c: x @ c, (3, 4), (4,)),
        Node("sum-axis", lambda x, c: tc.sum(x * c, axis=0), (3, 4), (3, 4)),
        Node("mean", lambda x, c: tc.mean(tc.sqrt(x * x + c * c + 0.5)), (2, 5), (2, 5)),
        Node("transpose", lambda x, c: tc.transpose(x) * c, (3, 4), (4, 3)),
        Node("reshape", lambda x, c: tc.reshape(x, (4, 3)) * c, (3, 4), (4, 3)),
        Node("maximum", lambda x, c: tc.maximum(x, c), (6,), (6,)),
        Node("sincos", lambda x, c: tc.sincos(x)[0] * tc.sincos(x)[1] + c, (4,), (4,)),
        Node("where", lambda x, c: tc.where(c.numpy() > 1.0, x, x * c), (4,), (4,)),
        Node("zero-size", lambda x, c: tc.sin(x) * c, (0, 3), (0, 3)),
        Node("zero-k-matmul", lambda x, c: x @ c, (2, 0), (0, 3)),
        Node("complex", lambda x, c: tc.real(x * (1.0 + 2.0j) * c), (3,), (3,)),
        Node("composite", tc.function(lambda x, c: tc.tanh(x * c) + tc.exp(x)), (2, 2), (2, 2)),
    ]


NODES = _nodes()


def node_arrays(node: Node, rng: np.random.Generator, dtype: str) -> tuple[np.ndarray, ...]:
    x = rng.standard_normal(node.x_shape).astype(dtype)
    c = rng.uniform(0.5, 1.5, node.c_shape).astype(dtype)
    return x, c


def message_names(error: BaseException, words: tuple[str, ...]) -> bool:
    """Whether the error's text names one of ``words`` (the argument it rejects)."""
    text = str(error).lower()
    return any(word in text for word in words)

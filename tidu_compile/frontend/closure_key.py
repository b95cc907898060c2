"""What a Python function can read besides its arguments, as a key: a trace made for one
call serves a later call only when this key (and the arguments' signature) is the same.

A trace of ``f`` (``vmap``'s batched program) bakes in what ``f`` read at trace time:
the Python numbers it closed over, the values of the arrays and tensors it used. Unlike
``jax.jit``, which serves such a trace stale when a closed-over value changes, the key
of a memoized trace holds everything ``f`` can reach, compared at every call::

    c = np.array([1.0, 2.0]); k = 0.5
    f = lambda x: tc.sum(x * c) + k
    closure_key(f) == (("F", <code>, None, None, (("A", (2,), "<f8", b"..."),
                       ("float", b"...")), ()), [...])        # c by value, k by bits

* Python numbers and strings by type and exact value (``_static_key``: ``0.0`` is not
  ``-0.0``); lists, tuples, dicts and sets by their items.
* numpy arrays by shape, dtype and bytes (up to ``MAX_ARRAY_ELEMENTS``): changed in
  place, they key a new trace.
* Tensors by identity, the identity of their data and their version (``_version``,
  moved on by every in-place change: ``frontend.inplace``); the key keeps them alive,
  so an identity is never reused while its trace is memoized.
* Functions by their code, defaults, closure cells and the globals their code (and the
  code nested in it) names; the functions of ``tidu_compile`` and numpy by their code,
  closure and defaults (their globals are the library's own). Bound methods and
  ``functools.partial`` by their parts.
* Modules and classes of ``tidu_compile``, numpy and the standard numeric modules by
  identity; builtins bound to those modules by identity.

Anything else makes ``f`` unkeyable (``None``): a module or class of the user's (its
attributes may change), another object (its state is not visible here), an array past
the size limit, and code that names ``random`` (a draw at trace time would be frozen).
A caller that gets ``None`` traces at every call.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Hashable
from typing import Any

import numpy as np

from tidu_compile.frontend.composite_function import _static_key as static_key
from tidu_compile.frontend.tensor import Tensor

__all__ = ["MAX_ARRAY_ELEMENTS", "call_key", "closure_key"]

#: Larger closed-over arrays make a function unkeyable (comparing them costs a copy).
MAX_ARRAY_ELEMENTS = 1 << 16
#: How many values one key may visit, and how deep (past either: unkeyable).
MAX_VALUES = 4096
MAX_DEPTH = 12

_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_TRUSTED_MODULES = ("tidu_compile", "numpy", "math", "cmath", "builtins", "operator",
                    "functools", "itertools")  # fmt: skip
#: Names whose use may read state no key sees (a random draw): such code is unkeyable.
_STATEFUL_NAMES = frozenset({"random"})


class _Unkeyable(Exception):
    """``f`` reaches a value the key cannot compare."""


def _trusted(module_name: str | None) -> bool:
    if not module_name or module_name.startswith("numpy.random"):
        return False
    root = module_name.partition(".")[0]
    return root in _TRUSTED_MODULES


@functools.lru_cache(maxsize=4096)
def _names(code: types.CodeType) -> tuple[str, ...]:
    """The global and attribute names ``code`` and the code nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(_names(const))
    return tuple(sorted(names))


class _Walk:
    """One key: the values visited, the objects kept alive (keyed by identity)."""

    def __init__(self) -> None:
        self.alive: list[Any] = []
        self.visited = 0
        self.functions: set[int] = set()

    def key(self, value: Any, depth: int = 0) -> Hashable:
        self.visited += 1
        if self.visited > MAX_VALUES or depth > MAX_DEPTH:
            raise _Unkeyable
        kind = type(value)
        if kind in _SCALARS or isinstance(value, np.generic):
            return static_key(value)
        if kind is Tensor:
            self.alive.append(value)
            return ("T", id(value), id(value._data), getattr(value, "_version", 0),
                    value._requires_grad)  # fmt: skip
        if kind is np.ndarray:
            if value.dtype == object or value.size > MAX_ARRAY_ELEMENTS:
                raise _Unkeyable
            return ("A", value.shape, value.dtype.str, value.tobytes())
        if kind in (tuple, list):
            return (kind, tuple(self.key(v, depth + 1) for v in value))
        if kind is dict:
            return (dict, tuple((self.key(k, depth + 1), self.key(v, depth + 1))
                                for k, v in value.items()))  # fmt: skip
        if kind in (set, frozenset):
            return (kind, frozenset(self.key(v, depth + 1) for v in value))
        if kind is types.FunctionType:
            return self._function(value, depth)
        return self._other(value, depth)

    def _function(self, f: types.FunctionType, depth: int) -> Hashable:
        if id(f) in self.functions:  # recursion: the function is being keyed already
            self.alive.append(f)
            return ("recursive", id(f))
        self.functions.add(id(f))
        code = f.__code__
        names = _names(code)
        if _STATEFUL_NAMES.intersection(names):
            raise _Unkeyable
        cells = tuple(self._cell(cell, depth) for cell in f.__closure__ or ())
        defaults = (self.key(f.__defaults__, depth + 1), self.key(f.__kwdefaults__, depth + 1))
        if _trusted(f.__module__):  # library code: its globals are the library's
            return ("F", code, defaults, cells)
        scope = f.__globals__
        used = tuple((n, self.key(scope[n], depth + 1)) for n in names if n in scope)
        return ("F", code, defaults, cells, used)

    def _cell(self, cell: Any, depth: int) -> Hashable:
        try:
            contents = cell.cell_contents
        except ValueError:  # a cell not yet bound
            return ("empty",)
        return self.key(contents, depth + 1)

    def _other(self, value: Any, depth: int) -> Hashable:
        if isinstance(value, types.ModuleType):
            if not _trusted(value.__name__):
                raise _Unkeyable
            return ("M", value.__name__)
        if isinstance(value, np.dtype):
            return ("dtype", value.str)
        if isinstance(value, types.MethodType):
            return ("method", self.key(value.__func__, depth + 1),
                    self.key(value.__self__, depth + 1))  # fmt: skip
        if isinstance(value, functools.partial):
            return ("partial", self.key(value.func, depth + 1), self.key(value.args, depth + 1),
                    self.key(value.keywords, depth + 1))  # fmt: skip
        if isinstance(value, (types.BuiltinFunctionType, np.ufunc)):
            owner = getattr(value, "__self__", None)
            if isinstance(value, np.ufunc) or owner is None or (
                isinstance(owner, types.ModuleType) and _trusted(owner.__name__)
            ):
                self.alive.append(value)
                return ("builtin", id(value))
            raise _Unkeyable
        if isinstance(value, type) and _trusted(value.__module__):
            self.alive.append(value)
            return ("class", id(value))
        raise _Unkeyable


def closure_key(f: Any) -> tuple[Hashable, list[Any]] | None:
    """The key of what ``f`` can read besides its arguments (see the module), and the
    objects keyed by identity (to keep alive with whatever the key indexes); ``None``
    when ``f`` reaches something the key cannot compare."""
    walk = _Walk()
    try:
        key = walk.key(f)
    except _Unkeyable:
        return None
    return key, walk.alive


def _signature(walk: _Walk, value: Any, depth: int = 0) -> Hashable:
    """An argument tree as a key: tensors and arrays by shape and dtype (their values
    are the program's inputs, passed at every call), other leaves by ``_Walk.key``."""
    kind = type(value)
    if kind is Tensor or kind is np.ndarray:
        return (kind.__name__, value.shape, value.dtype.str)
    if kind in (tuple, list):
        return (kind, tuple(_signature(walk, v, depth + 1) for v in value))
    if kind is dict:
        return (dict, tuple((walk.key(k, depth + 1), _signature(walk, v, depth + 1))
                            for k, v in value.items()))  # fmt: skip
    return walk.key(value, depth)


def call_key(f: Any, args: Any, *statics: Any) -> tuple[Hashable, list[Any]] | None:
    """The key of calling ``f`` on ``args`` (a tree: its tensors and arrays by shape and
    dtype, the rest by value) with ``statics`` (numbers, axes: by value), and what it
    keeps alive, as ``closure_key``; ``None`` when any part is unkeyable."""
    walk = _Walk()
    try:
        key = (walk.key(f), _signature(walk, args), walk.key(statics))
    except _Unkeyable:
        return None
    return key, walk.alive

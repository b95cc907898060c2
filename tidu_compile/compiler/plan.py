"""Executable plans: what a compiled node runs on each backward call.

A plan is a list of steps over a table of buffers (numpy arrays). Buffers
``0..arg_count-1`` are the program's arguments; each step reads some buffers and
writes others:

* ``KernelStep``: a native function compiled from one fused ``tidu.kernel``; called
  through ctypes with one pointer per buffer (inputs, then freshly allocated outputs:
  ``np.empty``, or the recycled memory of ``compiler.buffers`` for large ones; filled
  with NaN first in the debug mode ``TIDU_COMPILE_DEBUG_FILL=nan``).
* ``LibraryStep``: a primitive evaluated by numpy between kernels: contractions
  (``dot_general`` runs on numpy's BLAS) and any op the compiler does not lower
  (counted as a fallback).

Every buffer handed to native code is checked first: shape, dtype, native byte order,
C-contiguity. A mismatch raises ``ValueError`` naming the buffer; nothing unchecked
reaches native code.
"""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from tidu_compile.backend.array_abi import ENTRY_SUFFIX, array_data_offset
from tidu_compile.compiler import buffers
from tidu_compile.compiler.buffers import MIN_POOLED_BYTES, POOL
from tidu_compile.compiler.parallel import ChunkedKernel
from tidu_compile.ops.base import TensorType, dtype_name

__all__ = [
    "BoundStep", "KernelStep", "LibraryStep", "Plan", "check_status", "library_values",
    "native_buffer", "native_copy",
]  # fmt: skip


def _data_pointer(array: np.ndarray) -> int:
    return int(array.ctypes.data)


def native_buffer(array: Any, expected: TensorType, what: str) -> np.ndarray:
    """``array`` as a C-contiguous, native-endian array of type ``expected``, or an error."""
    array = array if isinstance(array, np.ndarray) else np.asarray(array)
    if tuple(array.shape) != expected.shape:
        raise ValueError(f"{what}: shape {array.shape} does not match {expected.shape}")
    if dtype_name(array.dtype) != expected.dtype:
        raise TypeError(f"{what}: dtype {array.dtype} does not match {expected.dtype}")
    if not array.dtype.isnative or not array.flags.c_contiguous or not array.flags.aligned:
        array = native_copy(array, np.dtype(expected.dtype))
    return array


def native_copy(array: Any, dtype: np.dtype) -> np.ndarray:
    """A fresh C-contiguous, aligned, native-endian copy (keeps 0-d arrays 0-d, which
    ``np.ascontiguousarray`` does not)."""
    return np.array(array, dtype=dtype.newbyteorder("="), order="C", copy=True)


def _allocator(value_type: TensorType) -> Any:
    """How a step's output of this type is allocated: pooled when large, poisoned in the
    debug mode (``buffers.DEBUG_FILL``)."""
    nbytes = np.dtype(value_type.dtype).itemsize * int(np.prod(value_type.shape, dtype=np.int64))
    allocate = POOL.allocate if nbytes >= MIN_POOLED_BYTES else np.empty
    return buffers.poisoned(allocate) if buffers.DEBUG_FILL else allocate


@dataclass(frozen=True)
class KernelStep:
    """Call the native kernel ``symbol`` on buffers ``inputs``, filling ``outputs``.

    A chunked kernel (``extent > 0``) also takes the ``[lo, hi)`` rows of its domain's
    dimension 0 and may run on several threads (see ``compiler.parallel``);
    ``partial_outputs`` are the outputs it reduces over that dimension, combined as
    ``partial_combiners`` says (``add``, ``max``, ``min``, ``mul``; empty: all
    ``add``). ``work`` estimates
    its cost: the domain size times the operations of its loop body after the math
    functions are expanded (an exp is ~30 of them), halved for f32 (twice the lanes).
    A LAPACK kernel (``passes/tidu_lower_linalg.py``) with a ``status_error`` leaves a
    status in word 0 of its output ``status_output``: nonzero, ``check_status`` raises
    ``numpy.linalg.LinAlgError`` with that text.
    """

    symbol: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    extent: int = 0
    domain_size: int = 0
    partial_outputs: tuple[int, ...] = ()
    work: int = 0
    partial_combiners: tuple[str, ...] = ()
    status_output: int = -1
    status_error: str = ""


def check_status(status: np.ndarray, error: str) -> None:
    """Raise ``numpy.linalg.LinAlgError(error)`` when word 0 of ``status`` (a LAPACK
    kernel's info) is nonzero (``{info}``: the word, ``{diagonal}``: word - 1)."""
    info = int(status[0])
    if info:
        raise np.linalg.LinAlgError(error.format(info=info, diagonal=info - 1))


@dataclass(frozen=True)
class LibraryStep:
    """Evaluate primitive ``op`` with numpy on buffers ``inputs`` into ``outputs``."""

    op: Any
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    fallback: bool = False  # True when the compiler could not lower ``op``


class BoundStep(NamedTuple):
    """One step of a bound plan: ``kernel`` (None for a library call), the native
    function or the op, buffer indices, and ``(shape, dtype, allocate)`` per output."""

    kernel: KernelStep | None
    runner: Any
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    specs: tuple[tuple[tuple[int, ...], np.dtype, Any], ...]


@dataclass(frozen=True)
class Plan:
    """Steps, buffer types and result buffers of one compiled node (picklable)."""

    arg_count: int
    types: tuple[TensorType, ...]
    steps: tuple[KernelStep | LibraryStep, ...]
    results: tuple[int | None, ...]
    #: Buffers that hold the same f64 values on every run (kernels' ``%params``).
    constants: tuple[tuple[int, tuple[float, ...]], ...] = ()

    @property
    def kernel_symbols(self) -> tuple[str, ...]:
        return tuple(s.symbol for s in self.steps if isinstance(s, KernelStep))

    def renamed(self, symbols: dict[str, str]) -> Plan:
        """The plan with its kernels' symbols renamed (``symbols``: old -> new)."""
        steps = tuple(
            dataclasses.replace(s, symbol=symbols[s.symbol]) if isinstance(s, KernelStep) else s
            for s in self.steps
        )
        return Plan(self.arg_count, self.types, steps, self.results, self.constants)

    @property
    def fallback_count(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, LibraryStep) and s.fallback)

    def bind(self, addresses: dict[str, int]) -> BoundPlan:
        """Attach native function addresses to the kernel steps.

        ``addresses`` has each kernel symbol and, where available, its ``.arrays`` twin.
        """
        by_object = array_data_offset() is not None and all(
            s + ENTRY_SUFFIX in addresses for s in self.kernel_symbols
        )
        functions = {}
        for step in self.steps:
            if isinstance(step, KernelStep):
                symbol = step.symbol + ENTRY_SUFFIX if by_object else step.symbol
                if symbol not in addresses:
                    raise KeyError(f"plan: no native code loaded for kernel {symbol!r}")
                arity = len(step.inputs) + len(step.outputs)
                bounds = [ctypes.c_int64] * 2 if step.extent else []
                signature = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * arity), *bounds)
                functions[step.symbol] = signature(addresses[symbol])
        plain = {s: addresses[s] for s in self.kernel_symbols if s in addresses}
        return BoundPlan(self, functions, by_object, plain)


class BoundPlan:
    """A plan with its kernels loaded: ``run(args)`` returns the result buffers.

    The hot path is lean on purpose (it runs once per tape node): kernels are called
    through their ``.arrays`` entry points with ``id(array)`` arguments when the
    interpreter's ndarray layout allows it (see ``backend.array_entry``), outputs are
    allocated with ``np.empty`` (large ones from ``buffers.POOL``), and argument shapes
    and dtypes are checked only when ``run`` is asked to (the executor's cache key
    already guarantees them). The executor's usual call goes through the straight-line
    code ``compiler.fast_path`` generates from ``steps`` instead.
    """

    def __init__(self, plan: Plan, functions: dict[str, Any], by_object: bool,
                 kernel_addresses: dict[str, int] | None = None) -> None:  # fmt: skip
        self.plan = plan
        #: Per kernel symbol: the address of its data-pointer entry (``compiler.native_loop``
        #: calls it from native code).
        self.kernel_addresses = kernel_addresses or {}
        #: What a kernel is called with for an array: ``id`` (``.arrays`` entry points)
        #: or its data pointer.
        self.to_argument = id if by_object else _data_pointer
        self._dtypes = [np.dtype(t.dtype) for t in plan.types]
        self._arg_dtypes = [
            d if d.isnative else d.newbyteorder("=") for d in self._dtypes[: plan.arg_count]
        ]
        self._padding: list[Any] = [None] * (len(plan.types) - plan.arg_count)
        #: The constant buffers by index (made once: kernels only read them).
        self.constants = {index: _constant_buffer(values) for index, values in plan.constants}
        for index, array in self.constants.items():
            self._padding[index - plan.arg_count] = array
        #: The steps with what running them takes (``compiler.fast_path`` reads them).
        self.steps: list[BoundStep] = []
        #: Per chunked kernel symbol: its runner on one thread or several (shared by
        #: ``run`` and the fast path, so they learn which is faster together).
        self.chunked: dict[str, ChunkedKernel] = {}
        for step in plan.steps:
            specs = tuple((plan.types[o].shape, self._dtypes[o], _allocator(plan.types[o]))
                          for o in step.outputs)  # fmt: skip
            if isinstance(step, KernelStep):
                if step.extent:
                    self.chunked[step.symbol] = ChunkedKernel(
                        functions[step.symbol], step.partial_outputs, step.extent, step.work,
                        self.to_argument, step.partial_combiners,
                    )  # fmt: skip
                self.steps.append(BoundStep(step, functions[step.symbol], step.inputs,
                                            step.outputs, specs))  # fmt: skip
            else:
                self.steps.append(BoundStep(None, step.op, step.inputs, step.outputs, specs))
        #: Per argument: (shape, strides, dtype) of a C-contiguous native array.
        self.arg_layouts = [
            (t.shape, np.empty(t.shape, self._dtypes[i]).strides, self._arg_dtypes[i])
            for i, t in enumerate(plan.types[: plan.arg_count])
        ]

    def dtype_of(self, index: int) -> np.dtype:
        """The dtype of buffer ``index`` (an argument, a constant or a step's output)."""
        return self._dtypes[index]

    def run(self, args: Sequence[Any], check: bool = True) -> list[np.ndarray | None]:
        plan = self.plan
        if len(args) != plan.arg_count:
            raise ValueError(f"plan: expected {plan.arg_count} arguments, got {len(args)}")
        buffers: list[Any] = list(args)
        for i, arg in enumerate(args):
            if check:
                buffers[i] = native_buffer(arg, plan.types[i], f"argument {i}")
                continue
            if not isinstance(arg, np.ndarray):  # a numpy scalar, a Tensor: never id() it
                buffers[i] = native_copy(arg, self._arg_dtypes[i])
                continue
            flags = arg.flags
            if not (flags.c_contiguous and flags.aligned and arg.dtype.isnative):
                buffers[i] = native_copy(arg, self._arg_dtypes[i])
        buffers += self._padding
        to_argument = self.to_argument
        for kernel, runner, inputs, outputs, specs in self.steps:
            if kernel is not None:
                results = [allocate(shape, dtype) for shape, dtype, allocate in specs]
                for index, array in zip(outputs, results, strict=True):
                    buffers[index] = array
                if kernel.extent:
                    self.chunked[kernel.symbol]([buffers[i] for i in inputs], results)
                else:
                    runner(*[to_argument(buffers[i]) for i in inputs], *map(to_argument, results))
                if kernel.status_error:
                    check_status(results[kernel.status_output], kernel.status_error)
            else:
                values = library_values(runner, specs, *[buffers[i] for i in inputs])
                for index, value in zip(outputs, values, strict=True):
                    buffers[index] = value
        return [None if r is None else buffers[r] for r in plan.results]


def _constant_buffer(values: Sequence[float]) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    array.flags.writeable = False
    return array


def library_values(op: Any, specs: Sequence[tuple[Any, np.dtype, Any]], *inputs: Any) -> list:
    """``op`` evaluated by numpy on ``inputs``: C-contiguous arrays of the ``specs`` types.

    A contraction (an op with ``evaluate_into``) writes into an output allocated here
    (recycled memory when large); anything else is checked and copied if it must be.
    """
    if len(specs) == 1 and hasattr(op, "evaluate_into"):
        shape, dtype, allocate = specs[0]
        out = allocate(shape, dtype)
        value = op.evaluate_into(out, *inputs)
        if value is out:  # written where it was asked to be: of the spec's type, C-contiguous
            return [out]
        values: Any = (value,)
    else:
        values = op.evaluate(*inputs)
    arrays = []
    for value, (shape, dtype, _) in zip(values, specs, strict=True):
        value = np.asarray(value)
        if value.shape != shape or value.dtype != dtype:
            raise TypeError(
                f"library call {op!r} returned {value.shape} {value.dtype}, "
                f"the plan expects {shape} {dtype}"
            )
        if not value.flags.c_contiguous or not value.flags.aligned:
            value = native_copy(value, dtype)
        arrays.append(value)
    return arrays

"""Executable plans: what a compiled node runs on each backward call.

A plan is a list of steps over a table of buffers (numpy arrays). Buffers
``0..arg_count-1`` are the program's arguments; each step reads some buffers and
writes others:

* ``KernelStep``: a native function compiled from one fused ``tidu.kernel``; called
  through ctypes with one pointer per buffer (inputs, then freshly allocated outputs).
* ``LibraryStep``: a primitive evaluated by numpy between kernels: contractions
  (``dot_general`` runs on numpy's BLAS) and any op the compiler does not lower
  (counted as a fallback).

Every buffer handed to native code is checked first: shape, dtype, native byte order,
C-contiguity. A mismatch raises ``ValueError`` naming the buffer; nothing unchecked
reaches native code.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile.ops.base import TensorType

__all__ = ["KernelStep", "LibraryStep", "Plan", "native_buffer"]



def native_buffer(array: Any, expected: TensorType, what: str) -> np.ndarray:
    """``array`` as a C-contiguous, native-endian array of type ``expected``, or an error."""
    array = np.asarray(array)
    if tuple(array.shape) != expected.shape:
        raise ValueError(f"{what}: shape {array.shape} does not match {expected.shape}")
    if array.dtype.name != expected.dtype:
        raise TypeError(f"{what}: dtype {array.dtype} does not match {expected.dtype}")
    if not array.dtype.isnative or not array.flags.c_contiguous or not array.flags.aligned:
        array = np.ascontiguousarray(array, dtype=np.dtype(expected.dtype))
    return array


@dataclass(frozen=True)
class KernelStep:
    """Call the native kernel ``symbol`` on buffers ``inputs``, filling ``outputs``."""

    symbol: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class LibraryStep:
    """Evaluate primitive ``op`` with numpy on buffers ``inputs`` into ``outputs``."""

    op: Any
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    fallback: bool = False  # True when the compiler could not lower ``op``


@dataclass(frozen=True)
class Plan:
    """Steps, buffer types and result buffers of one compiled node (picklable)."""

    arg_count: int
    types: tuple[TensorType, ...]
    steps: tuple[KernelStep | LibraryStep, ...]
    results: tuple[int | None, ...]

    @property
    def kernel_symbols(self) -> tuple[str, ...]:
        return tuple(s.symbol for s in self.steps if isinstance(s, KernelStep))

    @property
    def fallback_count(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, LibraryStep) and s.fallback)

    def bind(self, addresses: dict[str, int]) -> BoundPlan:
        """Attach native function addresses to the kernel steps."""
        functions = {}
        for step in self.steps:
            if isinstance(step, KernelStep):
                if step.symbol not in addresses:
                    raise KeyError(f"plan: no native code loaded for kernel {step.symbol!r}")
                arity = len(step.inputs) + len(step.outputs)
                signature = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * arity))
                functions[step.symbol] = signature(addresses[step.symbol])
        return BoundPlan(self, functions)


class BoundPlan:
    """A plan with its kernels loaded: ``run(args)`` returns the result buffers."""

    def __init__(self, plan: Plan, functions: dict[str, Any]) -> None:
        self.plan = plan
        self._functions = functions
        self._dtypes = [np.dtype(t.dtype) for t in plan.types]

    def run(self, args: Sequence[Any]) -> list[np.ndarray | None]:
        plan = self.plan
        if len(args) != plan.arg_count:
            raise ValueError(f"plan: expected {plan.arg_count} arguments, got {len(args)}")
        buffers: list[Any] = [None] * len(plan.types)
        for i, arg in enumerate(args):
            buffers[i] = native_buffer(arg, plan.types[i], f"argument {i}")
        for step in plan.steps:
            if isinstance(step, KernelStep):
                self._run_kernel(step, buffers)
            else:
                values = step.op.evaluate(*(buffers[i] for i in step.inputs))
                for out, value in zip(step.outputs, values, strict=True):
                    buffers[out] = native_buffer(value, plan.types[out], f"{step.op!r} result")
        return [None if r is None else buffers[r] for r in plan.results]

    def _run_kernel(self, step: KernelStep, buffers: list[Any]) -> None:
        types = self.plan.types
        pointers = []
        for index in step.inputs:
            array = native_buffer(buffers[index], types[index], f"kernel {step.symbol} input")
            buffers[index] = array
            pointers.append(array.ctypes.data)
        for index in step.outputs:
            array = np.empty(types[index].shape, dtype=self._dtypes[index])
            buffers[index] = array
            pointers.append(array.ctypes.data)
        self._functions[step.symbol](*pointers)

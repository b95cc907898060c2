"""A hot plan as one native call: no Python between its steps.

A small program (a GRU step's segment: ~50-90 steps, half of them 8-wide contractions)
spends its time in the Python between the steps, not in them: each kernel call, output
allocation and contraction costs 1-3 us in ``compiler.fast_path``'s generated code.
``NativePlan`` runs all of a plan's steps from one LLVM function, the *plan driver*,
written with the loop drivers' machinery (``compiler.native_loop``: kernel calls in plan
order, contractions as the strided product routine, transposes as copying loops,
reshapes as aliases), but run once, with no loop::

    define void @tidu_loop_<digest>(ptr %buffers, ptr %kernels, ptr %u0, ptr %u1, i64 %u2) {
    entry:
      %arena.object = load ptr, ptr %arena.at        ; the scratch of this call
      %arena = load ptr, ptr %arena.data
      %b7 = getelementptr i8, ptr %arena, i64 0      ; an intermediate: a fixed offset
      %b3.object = load ptr, ptr %b3.at              ; an argument or result: an ndarray
      %b3 = load ptr, ptr %b3.data                   ;   (its data pointer read natively)
      ...
      call void %k0(ptr %b3, ptr %b4, ptr %b7)
      call void @tidu_loop_dot_float64(ptr %b8, ptr %b7, ptr %b5, i64 8, ...)
      ret void
    }

Per call Python does what a call must: allocate the results (fresh arrays, the caller
keeps them) and one arena for every intermediate (64-byte aligned offsets), pass the
``id`` of each array in one table, make the one native call. The kernel table is made
once. What the driver bakes in (buffer offsets, extents, strides) is in its text, the
key of the in-memory driver cache (``native_loop._compile_driver``); the arguments'
layouts are checked before the call by the fast path, as for every plan.

Which plans (``may_promote``, then ``NativePlan`` raising ``NotNative``): at least
``MIN_STEPS`` steps, intermediates of at most ``MAX_ARENA_BYTES`` in all (small
programs: a large one is bound by its kernels, and an arena would keep all of its
intermediates alive), no kernel worth threads, no LAPACK status to check between steps,
no contraction of more than ``MAX_PRODUCT_WORK`` multiply-adds (BLAS computes those
faster), no library step the driver cannot run; not in the debug mode ``TIDU_COMPILE_DEBUG_FILL``
(which poisons each output buffer); and only when ndarrays keep their data pointer where
the driver reads it. The fast path promotes a plan once it has run ``PROMOTE_AFTER``
times (``compiler.fast_path``): the driver's LLVM compile (40-130 ms for 50-90 steps,
AMD EPYC) is paid by hot plans only, on the calling thread, once per process.
"""

from __future__ import annotations

import ctypes
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.backend.array_abi import array_data_offset
from tidu_compile.compiler import buffers
from tidu_compile.compiler.native_loop import NotNative, _compile_driver, _PlanCalls, _table
from tidu_compile.compiler.plan import BoundPlan, KernelStep, LibraryStep
from tidu_compile.ops.structural import DotGeneral

__all__ = [
    "MAX_ARENA_BYTES", "MAX_PRODUCT_WORK", "MIN_STEPS", "PROMOTE_AFTER", "NativePlan",
    "may_promote", "promote",
]  # fmt: skip

#: Plans of fewer steps keep the fast path (its cost per step is what a driver saves).
MIN_STEPS = 8
#: The most bytes of intermediates a plan driver allocates per call.
MAX_ARENA_BYTES = 1 << 20
#: Calls of a plan before its driver is compiled.
PROMOTE_AFTER = 50
#: The most multiply-adds of one contraction a driver computes with its product routine
#: (plain loops, ~1.2 G/s); a larger one keeps the plan on the fast path, whose BLAS call
#: costs ~2 us more per call and runs 40-80x faster: a 784x256 layer's 128-row products
#: (51 M in all) took 44 ms per step in a driver against 0.4 ms by BLAS (Intel Xeon).
MAX_PRODUCT_WORK = 1 << 12
_ALIGN = 64


def _product_work(op: DotGeneral) -> int:
    """The multiply-adds of one contraction: batch x free x free x depth, which is the
    operands' element counts over their shared (batch and contracted) extent."""
    shared = math.prod(op.lhs_shape[d] for d in (*op.lhs_batch, *op.lhs_contracting))
    return math.prod(op.lhs_shape) * math.prod(op.rhs_shape) // max(shared, 1)


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return int(np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)))


class NativePlan:
    """``bound``'s steps as one driver; ``run(*arguments)`` returns the plan's results
    (the arguments checked by the caller: C-contiguous, of the plan's layouts)."""

    def __init__(self, bound: BoundPlan) -> None:
        plan = bound.plan
        if any(isinstance(s, KernelStep) and s.status_error for s in plan.steps):
            raise NotNative("a LAPACK status is checked between steps")
        for step in plan.steps:
            if isinstance(step, LibraryStep) and isinstance(step.op, DotGeneral):
                work = _product_work(step.op)
                if work > MAX_PRODUCT_WORK:
                    raise NotNative(f"a contraction of {work} multiply-adds (kept on BLAS)")
        probe = _PlanCalls(bound, "", {}, (), True, False)  # roots and intermediates
        results = {probe.root[r] for r in plan.results if r is not None}
        self.offsets: dict[int, int] = {}
        total = 0
        for index in dict.fromkeys(probe.allocated):
            if index in results:
                continue
            self.offsets[index] = total
            size = _nbytes(plan.types[index].shape, plan.types[index].dtype)
            total += -(-size // _ALIGN) * _ALIGN
        if total > MAX_ARENA_BYTES:
            raise NotNative(f"the plan's intermediates take {total} bytes")
        self.arena_bytes = max(total, 1)
        given = {index: f"%a{index}" for index in self.offsets}
        calls = _PlanCalls(bound, "", given, (), by_object=True, inline_products=False)
        arena = len(plan.types)
        lines = [f"  %arena.at = getelementptr ptr, ptr %buffers, i64 {arena}",
                 "  %arena.object = load ptr, ptr %arena.at",
                 f"  %arena.data = getelementptr i8, ptr %arena.object, i64 {array_data_offset()}",
                 "  %arena = load ptr, ptr %arena.data"]  # fmt: skip
        lines += [f"  %a{i} = getelementptr i8, ptr %arena, i64 {offset}"
                  for i, offset in self.offsets.items()]  # fmt: skip
        self.text = "\n".join([
            *sorted(calls.routines),
            "define void @NAME(ptr %buffers, ptr %kernels, ptr %u0, ptr %u1, i64 %u2) {",
            "entry:", *lines, *calls.entry(), *calls.calls(), "  ret void", "}",
        ])  # fmt: skip
        self.driver, self.symbol = _compile_driver(self.text)
        self.kernels = _table([bound.kernel_addresses[s.symbol] for s in calls.kernels])
        self.kernels_address = ctypes.addressof(self.kernels)
        #: Buffers every call shares: constants, and what the hoisted steps make of them.
        _, _, held = calls.tables({})
        shared = {i for i, _ in plan.constants} | {o for s in calls.hoisted for o in s.outputs}
        self.shared = {i: held[i] for i in shared}
        #: The table of ``id``s every call starts from: the shared buffers' (kept alive
        #: here), 0 where a call puts an argument, a result or the arena.
        self.template = [0] * (arena + 1)
        for index, array in self.shared.items():
            self.template[index] = id(array)
        self.table_type = ctypes.c_void_p * (arena + 1)
        self.arg_count = plan.arg_count
        fresh = [i for i in sorted(results) if i >= plan.arg_count and i not in shared]
        self.fresh = [(i, plan.types[i].shape, np.dtype(plan.types[i].dtype)) for i in fresh]
        #: Per result: None, or where its array is (``arg``ument, ``fresh`` result buffer
        #: or ``shared``: a copy, since the caller may write into what it gets), which
        #: one, and the shape to view it in when it is a reshape (else None).
        self.results: list[tuple[str, Any, tuple[int, ...] | None] | None] = []
        for r in plan.results:
            if r is None:
                self.results.append(None)
                continue
            root = calls.root[r]
            shape = plan.types[r].shape if plan.types[root].shape != plan.types[r].shape else None
            if root < plan.arg_count:
                self.results.append(("arg", root, shape))
            elif root in shared:
                self.results.append(("shared", self.shared[root], shape))
            else:
                self.results.append(("fresh", fresh.index(root), shape))

    def run(self, *arguments: np.ndarray) -> list[np.ndarray | None]:
        ids = self.template[:]
        ids[: self.arg_count] = map(id, arguments)
        made = [np.empty(shape, dtype) for _, shape, dtype in self.fresh]
        for (index, _, _), array in zip(self.fresh, made, strict=True):
            ids[index] = id(array)
        arena = np.empty(self.arena_bytes, np.uint8)
        ids[-1] = id(arena)
        table = self.table_type(*ids)  # held until the call returns
        self.driver(ctypes.addressof(table), self.kernels_address, None, None, 0)
        out: list[np.ndarray | None] = []
        for result in self.results:
            if result is None:
                out.append(None)
                continue
            where, which, shape = result
            array = (arguments[which] if where == "arg" else made[which] if where == "fresh"
                     else which.copy())  # fmt: skip
            out.append(array if shape is None else array.reshape(shape))
        return out


def may_promote(bound: BoundPlan) -> bool:
    """Whether ``bound`` is worth a driver, as far as is known without writing one."""
    plan = bound.plan
    return (len(plan.steps) >= MIN_STEPS and not buffers.DEBUG_FILL
            and array_data_offset() is not None)  # fmt: skip


def promote(bound: BoundPlan, native: list[Callable[..., list[Any]] | None]) -> None:
    """Set ``native[0]`` to ``NativePlan(bound).run`` (left None when the plan cannot run
    as a driver: it keeps the fast path; a driver LLVM refuses is warned about once)."""
    with _PROMOTE_LOCK:
        if native[0] is not None:
            return
        try:
            native[0] = NativePlan(bound).run
        except NotNative:
            return
        except Exception as error:  # noqa: BLE001 - the fast path still runs the plan
            message = f"plan driver: {type(error).__name__}: {error}".splitlines()[0]
            warnings.warn(f"tidu_compile: {message}; the plan keeps running step by step",
                          RuntimeWarning, stacklevel=3)  # fmt: skip


_PROMOTE_LOCK = forksafe.Lock()

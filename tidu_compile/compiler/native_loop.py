"""A scan's iterations as one native function: no Python between iterations.

The body of a ``Scan`` is compiled once, as any graph, to a plan of kernels
(``compiler.plan``); ``NativeScan`` writes a small LLVM function, the *driver*, that
runs that plan's kernels ``length`` times. Per iteration ``t`` (``length - 1 - t`` when
``reverse``) it points the body's ``xs`` arguments at row ``t`` of the stacked ``xs``,
calls every kernel of the body in plan order (a chunked one over its whole range, on
this thread), copies each ``y`` result into row ``t`` of its stacked output and each
carry result into the carry buffer the next iteration reads::

    define void @tidu_loop_<digest>(ptr %buffers, ptr %xs, ptr %ys, ptr %kernels,
                                    i64 %length) {
    entry:                                       ; loop-invariant pointers, loaded once
      %b0 = load ptr, ptr %buffers               ; consts, carries, kernel outputs
      %k0 = load ptr, ptr %kernels               ; the body's kernel entry points
      ...
    loop:
      %t = phi i64 [ 0, %entry ], [ %t.next, %loop ]
      %x0 = getelementptr i8, ptr %xs0, i64 (%t * row bytes)
      call void %k0(ptr %b0, ptr %x0, ptr %b2)
      call void @llvm.memcpy(ptr %y0.row, ptr %b2, i64 row bytes)   ; ys[t] = y
      call void @llvm.memcpy(ptr %b1, ptr %b2, i64 carry bytes)     ; carry = carry'
      ...
    }

The trip count is an argument (one driver serves every ``length``); what the driver
bakes in (the body's buffers, row sizes, the direction) is what its text, the key of
the in-memory driver cache, holds. Library steps of the body run natively only where
they need no loop: a step whose inputs are all loop-invariant (a constant, the
transpose of a weight) runs once, before the loop, and a ``Reshape`` is the same
memory under another shape (an alias). A body with any other library step (a BLAS
contraction that ``compiler.contraction_kernels`` kept, a nested loop) is refused
(``NotNative``): its scan runs one plan call per iteration instead.
"""

from __future__ import annotations

import ctypes
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.compiler.plan import (
    BoundPlan,
    KernelStep,
    LibraryStep,
    library_values,
    native_buffer,
)
from tidu_compile.ops.base import TensorType
from tidu_compile.ops.structural import Reshape

__all__ = ["NativeScan", "NotNative"]


class NotNative(ValueError):
    """The body's plan has a step that cannot run inside a native loop."""


def _nbytes(t: TensorType) -> int:
    return int(np.dtype(t.dtype).itemsize * int(np.prod(t.shape, dtype=np.int64)))


#: Driver text -> its native function (compiled once per process).
_DRIVERS: dict[str, Any] = {}

_SIGNATURE = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), ctypes.c_int64)


def _compile_driver(text: str, name: str) -> Any:
    """The driver ``name`` of LLVM IR ``text``, compiled (O3, host CPU) and loaded."""
    found = _DRIVERS.get(text)
    if found is not None:
        return found
    import llvmlite.binding as llvm

    from tidu_compile.backend import jit
    from tidu_compile.backend.engine import get_engine
    from tidu_compile.backend.target import TARGET_LOCK, host_target

    engine = get_engine()
    if engine.is_loaded(name):
        address = engine.address_of(name)
    else:
        host = host_target()
        full = f'target triple = "{host.triple}"\ntarget datalayout = "{host.data_layout}"\n{text}'
        with TARGET_LOCK:
            parsed = llvm.parse_assembly(full)
            parsed.verify()
        compiled = jit.object_code(jit.optimize(jit.LlvmIr(full, parsed)))
        address = engine.load(compiled, [name])[name]
    driver = _SIGNATURE(address)
    _DRIVERS[text] = driver
    return driver


class NativeScan:
    """Runs ``Scan(body, consts, carries, length, reverse)`` natively, given the body's
    bound plan (see the module docstring); ``NotNative`` if the plan cannot."""

    def __init__(self, bound: BoundPlan, consts: int, carries: int, reverse: bool) -> None:
        plan = bound.plan
        self.bound, self.consts, self.carries = bound, consts, carries
        self.reverse = reverse
        self.xs = plan.arg_count - consts - carries
        if plan.arg_count < consts + carries or len(plan.results) < carries:
            raise NotNative("the plan does not take the scan's inputs")
        if None in plan.results:
            raise NotNative("the body has a structurally zero result")
        invariant = set(range(consts)) | {index for index, _ in plan.constants}
        #: Buffer -> the buffer whose memory it is (a Reshape's output is its input's).
        self.root = {i: i for i in range(len(plan.types))}
        self.hoisted: list[LibraryStep] = []
        self.kernels: list[KernelStep] = []
        self.allocated: list[int] = []  # buffers the loop writes: kernel outputs
        for step in plan.steps:
            if isinstance(step, KernelStep):
                self.kernels.append(step)
                self.allocated.extend(step.outputs)
            elif all(i in invariant for i in step.inputs):
                self.hoisted.append(step)
                invariant.update(step.outputs)
            elif isinstance(step.op, Reshape):
                self.root[step.outputs[0]] = self.root[step.inputs[0]]
            else:
                raise NotNative(f"{step.op!r} runs between the kernels of every iteration")
        if any(s not in bound.kernel_addresses for s in plan.kernel_symbols):
            raise NotNative("the plan's kernels have no data-pointer entry points")
        self.text, self.name = self._driver_text()

    # ----------------------------------------------------------------- the driver

    def _pointer(self, buffer: int) -> str:
        root = self.root[buffer]
        first_x = self.consts + self.carries
        return f"%x{root - first_x}" if first_x <= root < self.plan.arg_count else f"%b{root}"

    @property
    def plan(self) -> Any:
        return self.bound.plan

    def _driver_text(self) -> tuple[str, str]:
        plan, first_x = self.plan, self.consts + self.carries
        types = plan.types
        body: list[str] = []
        tables = [f"  %b{i} = load ptr, ptr %buffer.{i}" for i in range(len(types))
                  if self.root[i] == i and not first_x <= i < plan.arg_count]  # fmt: skip
        addresses = [f"  %buffer.{i} = getelementptr ptr, ptr %buffers, i64 {i}"
                     for i in range(len(types))]  # fmt: skip
        for j in range(self.xs):
            row = _nbytes(types[first_x + j])
            addresses.append(f"  %xs.{j} = getelementptr ptr, ptr %xs, i64 {j}")
            tables.append(f"  %xbase{j} = load ptr, ptr %xs.{j}")
            body.append(f"  %xoff{j} = mul i64 %row, {row}")
            body.append(f"  %x{j} = getelementptr i8, ptr %xbase{j}, i64 %xoff{j}")
        for n, step in enumerate(self.kernels):
            addresses.append(f"  %kernel.{n} = getelementptr ptr, ptr %kernels, i64 {n}")
            tables.append(f"  %k{n} = load ptr, ptr %kernel.{n}")
            arguments = [f"ptr {self._pointer(b)}" for b in (*step.inputs, *step.outputs)]
            if step.extent:
                arguments += ["i64 0", f"i64 {step.extent}"]
            body.append(f"  call void %k{n}({', '.join(arguments)})")
        results = plan.results
        for j, result in enumerate(results[self.carries :]):
            row = _nbytes(types[result])
            addresses.append(f"  %ys.{j} = getelementptr ptr, ptr %ys, i64 {j}")
            tables.append(f"  %ybase{j} = load ptr, ptr %ys.{j}")
            body.append(f"  %yoff{j} = mul i64 %row, {row}")
            body.append(f"  %y{j} = getelementptr i8, ptr %ybase{j}, i64 %yoff{j}")
            body.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr %y{j}, ptr "
                        f"{self._pointer(result)}, i64 {row}, i1 false)")  # fmt: skip
        body += self._carry_updates()
        text = "\n".join([
            "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
            "define void @NAME(ptr %buffers, ptr %xs, ptr %ys, ptr %kernels, i64 %length) {",
            "entry:", *addresses, *tables,
            "  %empty = icmp eq i64 %length, 0",
            "  br i1 %empty, label %exit, label %loop",
            "loop:",
            "  %t = phi i64 [ 0, %entry ], [ %t.next, %loop ]",
            ("  %last = sub i64 %length, 1\n  %row = sub i64 %last, %t" if self.reverse
             else "  %row = add i64 %t, 0"),
            *body,
            "  %t.next = add i64 %t, 1",
            "  %done = icmp eq i64 %t.next, %length",
            "  br i1 %done, label %exit, label %loop",
            "exit:",
            "  ret void",
            "}",
        ])  # fmt: skip
        name = "tidu_loop_" + hashlib.sha256(text.encode()).hexdigest()[:20]
        return text.replace("@NAME", "@" + name), name

    def _carry_updates(self) -> list[str]:
        """``carry[j] = result[j]`` for every carry, through scratch buffers when a
        result is the memory of another carry (a swap must not read a copied one)."""
        plan, consts = self.plan, self.consts
        states = [consts + j for j in range(self.carries)]
        results = plan.results[: self.carries]
        sources = [self._pointer(r) for r in results]
        targets = [f"%b{s}" for s in states]
        nbytes = [_nbytes(plan.types[s]) for s in states]
        moves = [(s, t, n) for s, t, n in zip(sources, targets, nbytes, strict=True) if s != t]
        staged = any(s in targets for s, _, _ in moves)
        lines = []
        if staged:
            scratch = len(plan.types)
            lines.append(f"  %scratch.at = getelementptr ptr, ptr %buffers, i64 {scratch}")
            lines.append("  %scratch = load ptr, ptr %scratch.at")
            for j, (source, _, size) in enumerate(moves):
                lines.append(f"  %scratch.{j} = getelementptr i8, ptr %scratch, i64 "
                             f"{sum(n for _, _, n in moves[:j])}")  # fmt: skip
                lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr %scratch.{j}, ptr "
                             f"{source}, i64 {size}, i1 false)")  # fmt: skip
            moves = [(f"%scratch.{j}", t, n) for j, (_, t, n) in enumerate(moves)]
        for source, target, size in moves:
            lines.append(f"  call void @llvm.memcpy.p0.p0.i64(ptr {target}, ptr {source}, "
                         f"i64 {size}, i1 false)")  # fmt: skip
        self.scratch_bytes = sum(n for _, _, n in moves) if staged else 0
        return lines

    # ------------------------------------------------------------------- running

    def __call__(self, consts: Sequence[Any], carries: Sequence[Any], xs: Sequence[Any],
                 length: int) -> list[np.ndarray]:  # fmt: skip
        """The final carries and the stacked ``y`` of ``length`` iterations."""
        plan = self.plan
        types = plan.types
        driver = _compile_driver(self.text, self.name)
        buffers: list[Any] = [None] * len(types)
        for i, value in enumerate(consts):
            buffers[i] = native_buffer(value, types[i], f"const {i}")
        for j, value in enumerate(carries):
            state = np.array(value, dtype=types[self.consts + j].dtype, order="C", copy=True)
            buffers[self.consts + j] = native_buffer(state, types[self.consts + j], f"carry {j}")
        first_x = self.consts + self.carries
        rows = [native_buffer(x, TensorType((length, *types[first_x + j].shape),
                                            types[first_x + j].dtype), f"xs {j}")
                for j, x in enumerate(xs)]  # fmt: skip
        for index, array in self.bound.constants.items():
            buffers[index] = array
        for step in self.hoisted:
            specs = [(types[o].shape, np.dtype(types[o].dtype), np.empty) for o in step.outputs]
            values = library_values(step.op, specs, *(buffers[i] for i in step.inputs))
            for index, value in zip(step.outputs, values, strict=True):
                buffers[index] = value
        for index in self.allocated:
            buffers[index] = np.empty(types[index].shape, types[index].dtype)
        y_types = [types[r] for r in plan.results[self.carries :] if r is not None]
        ys = [np.empty((length, *t.shape), t.dtype) for t in y_types]
        scratch = np.empty(max(self.scratch_bytes, 1), np.uint8)
        table = [0 if b is None else b.ctypes.data for b in buffers] + [scratch.ctypes.data]
        tables = [
            (ctypes.c_void_p * max(len(table), 1))(*table),
            (ctypes.c_void_p * max(len(rows), 1))(*(r.ctypes.data for r in rows)),
            (ctypes.c_void_p * max(len(ys), 1))(*(y.ctypes.data for y in ys)),
            (ctypes.c_void_p * max(len(self.kernels), 1))(
                *(self.bound.kernel_addresses[s.symbol] for s in self.kernels)),
        ]  # fmt: skip
        driver(*(ctypes.addressof(t) for t in tables), length)
        return [*(buffers[self.consts + j] for j in range(self.carries)), *ys]

"""Loops as one native function each: no Python between iterations.

The body of a ``Scan`` (and the test and the step of a ``WhileLoop``) is compiled once,
as any graph, to a plan of kernels (``compiler.plan``); ``NativeScan`` and
``NativeWhile`` write a small LLVM function, the *driver*, that runs those kernels
until the loop ends. Per iteration ``t`` of a scan (``length - 1 - t`` when
``reverse``) the driver points the body's ``xs`` arguments at row ``t`` of the stacked
``xs``, calls every kernel of the body in plan order (a chunked one over its whole
range, on this thread), copies each ``y`` result into row ``t`` of its stacked output
and each carry result into the carry buffer the next iteration reads::

    define void @tidu_loop_<digest>(ptr %buffers, ptr %kernels, ptr %xs, ptr %ys,
                                    i64 %length) {
    entry:                                       ; loop-invariant pointers, loaded once
      %b0 = load ptr, ptr %b0.at                 ; consts, carries, kernel outputs
      %k0 = load ptr, ptr %k0.at                 ; the body's kernel entry points
      ...
    loop:
      %t = phi i64 [ 0, %entry ], [ %t.next, %latch ]
      %x0 = getelementptr i8, ptr %x0.base, i64 (%t * row bytes)
      call void %k0(ptr %b0, ptr %x0, ptr %b2)
      call void @llvm.memcpy(ptr %y0, ptr %b2, i64 row bytes)       ; ys[t] = y
      call void @llvm.memcpy(ptr %b1, ptr %b2, i64 carry bytes)     ; carry = carry'
      ...
    }

A while loop's driver runs the test's kernels on the carries, reads its bool, and runs
the step's kernels and the carry copies while it holds (the two plans share the carry
buffers). The trip count is an argument (one driver serves every ``length``); what a
driver bakes in (the plans' buffers, row sizes, the direction) is in its text, the key
of the in-memory driver cache. Library steps of a body run natively only where they
need no loop: a step whose inputs are all loop-invariant (a constant, the transpose of
a weight) runs once, before the loop, and a ``Reshape`` is the same memory under
another shape (an alias), a contraction a call of ``compiler.loop_contractions``'
routine and a transpose a copying loop. A body with any other library step (a nested
loop), or a kernel costly enough to run on several threads (``compiler.parallel``), is
refused (``NotNative``): its loop calls the body's plan once per iteration instead.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import forksafe
from tidu_compile.backend.array_abi import ARRAY_DATA_OFFSET
from tidu_compile.compiler.loop_contractions import DOT_DTYPES, dot_routine, strided_product
from tidu_compile.compiler.parallel import PARALLEL_WORK
from tidu_compile.compiler.plan import (
    BoundPlan,
    KernelStep,
    LibraryStep,
    library_values,
    native_buffer,
)
from tidu_compile.ops.base import TensorType
from tidu_compile.ops.structural import DotGeneral, Reshape, Transpose

__all__ = ["NativeScan", "NativeWhile", "NotNative"]


class NotNative(ValueError):
    """The body's plan has a step that cannot run inside a native loop."""


def _nbytes(t: TensorType) -> int:
    return int(np.dtype(t.dtype).itemsize * int(np.prod(t.shape, dtype=np.int64)))


def _memcpy(target: str, source: str, size: int) -> str:
    return f"  call void @llvm.memcpy.p0.p0.i64(ptr {target}, ptr {source}, i64 {size}, i1 false)"


#: Driver text -> its native function (compiled once per process, under the lock).
_DRIVERS: dict[str, Any] = {}
_DRIVERS_LOCK = forksafe.Lock()

_SIGNATURE = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), ctypes.c_int64)


def _load(text: str, name: str) -> int:
    """The address of function ``name`` of LLVM IR ``text``: loaded before, or compiled
    (O3, host CPU) and loaded now."""
    import llvmlite.binding as llvm

    from tidu_compile.backend import jit
    from tidu_compile.backend.engine import get_engine
    from tidu_compile.backend.target import TARGET_LOCK, host_target

    engine = get_engine()
    if engine.is_loaded(name):
        return engine.address_of(name)
    host = host_target()
    full = f'target triple = "{host.triple}"\ntarget datalayout = "{host.data_layout}"\n{text}'
    with TARGET_LOCK:
        parsed = llvm.parse_assembly(full)
        parsed.verify()
    compiled = jit.object_code(jit.optimize(jit.LlvmIr(full, parsed)))
    return engine.load(compiled, [name])[name]


def _compile_driver(text: str) -> tuple[Any, str]:
    """The driver of LLVM IR ``text`` (its function ``@NAME``), compiled and loaded, and
    its symbol: ``tidu_loop_`` and a digest of the text."""
    name = "tidu_loop_" + hashlib.sha256(text.encode()).hexdigest()[:20]
    found = _DRIVERS.get(text)
    if found is not None:
        return found, name
    with _DRIVERS_LOCK:  # two threads must not load the same symbol twice
        found = _DRIVERS.get(text)
        if found is None:
            found = _DRIVERS[text] = _SIGNATURE(_load(text.replace("@NAME", "@" + name), name))
    return found, name


class _PlanCalls:
    """One bound plan run inside a driver: the pointers it needs, its kernel calls.

    ``given`` names the SSA pointer of plan arguments the driver computes (an ``xs``
    row, another plan's carry buffer); every other buffer's pointer is loaded once, on
    entry, from the plan's buffer table (``%<prefix>buffers``), its kernels' addresses
    from ``%<prefix>kernels``. ``invariant`` are the arguments whose values no
    iteration changes (the consts).
    """

    def __init__(self, bound: BoundPlan, prefix: str, given: dict[int, str],
                 invariant: Sequence[int], by_object: bool = False,
                 inline_products: bool = True) -> None:  # fmt: skip
        plan = bound.plan
        self.bound, self.prefix, self.given = bound, prefix, given
        #: Whether the buffer table holds ``PyArrayObject`` addresses (``id``), whose data
        #: pointer the driver loads (``backend.array_abi``), rather than data pointers.
        self.by_object = by_object
        self.inline_products = inline_products  # see ``loop_contractions.dot_routine``
        if any(s not in bound.kernel_addresses for s in plan.kernel_symbols):
            raise NotNative("the plan's kernels have no data-pointer entry points")
        if None in plan.results and not by_object:  # a loop body's results are carries
            raise NotNative("the body has a structurally zero result")
        known = set(invariant) | {index for index, _ in plan.constants}
        #: Buffer -> the buffer whose memory it is (a Reshape's output is its input's).
        self.root = {i: i for i in range(len(plan.types))}
        self.hoisted: list[LibraryStep] = []
        self.kernels: list[KernelStep] = []
        #: Per iteration, in plan order: a kernel call or a contraction routine's.
        self.lines: list[str] = []
        self.routines: set[str] = set()  # the contraction routines' IR
        self.allocated: list[int] = []  # buffers the loop writes: kernel outputs
        for step in plan.steps:
            if isinstance(step, KernelStep):
                if step.work >= PARALLEL_WORK:  # per iteration Python costs little beside it
                    raise NotNative(f"kernel {step.symbol} runs on several threads")
                self.kernels.append(step)
                self.allocated.extend(step.outputs)
                self.lines.append(self._kernel_call(len(self.kernels) - 1, step))
            elif step.fallback:
                raise NotNative(f"{step.op!r} is not compiled")
            elif all(i in known for i in step.inputs):
                self.hoisted.append(step)
                known.update(step.outputs)
            elif isinstance(step.op, Reshape):
                self.root[step.outputs[0]] = self.root[step.inputs[0]]
            elif isinstance(step.op, DotGeneral):
                self.lines.append(self._contraction(step))
                self.allocated.extend(step.outputs)
            elif isinstance(step.op, Transpose):
                self.lines += self._transpose(step, len(self.allocated))
                self.allocated.extend(step.outputs)
            else:
                raise NotNative(f"{step.op!r} runs between the kernels of every iteration")

    @property
    def types(self) -> tuple[TensorType, ...]:
        return self.bound.plan.types

    def pointer(self, buffer: int) -> str:
        root = self.root[buffer]
        return self.given.get(root, f"%{self.prefix}b{root}")

    def result(self, j: int) -> str:
        return self.pointer(self.bound.plan.results[j])  # type: ignore[arg-type]

    def entry(self) -> list[str]:
        """Loading the pointers of the buffer table and of the kernels, once."""
        p, lines = self.prefix, []
        for i in range(len(self.types)):
            if self.root[i] == i and i not in self.given:
                lines.append(f"  %{p}b{i}.at = getelementptr ptr, ptr %{p}buffers, i64 {i}")
                if self.by_object:
                    lines.append(f"  %{p}b{i}.object = load ptr, ptr %{p}b{i}.at")
                    lines.append(f"  %{p}b{i}.data = getelementptr i8, ptr %{p}b{i}.object, "
                                 f"i64 {ARRAY_DATA_OFFSET}")  # fmt: skip
                    lines.append(f"  %{p}b{i} = load ptr, ptr %{p}b{i}.data")
                else:
                    lines.append(f"  %{p}b{i} = load ptr, ptr %{p}b{i}.at")
        for n in range(len(self.kernels)):
            lines.append(f"  %{p}k{n}.at = getelementptr ptr, ptr %{p}kernels, i64 {n}")
            lines.append(f"  %{p}k{n} = load ptr, ptr %{p}k{n}.at")
        return lines

    def calls(self) -> list[str]:
        """One iteration: every kernel and contraction, in plan order."""
        return list(self.lines)

    def _kernel_call(self, n: int, step: KernelStep) -> str:
        arguments = [f"ptr {self.pointer(b)}" for b in (*step.inputs, *step.outputs)]
        if step.extent:
            arguments += ["i64 0", f"i64 {step.extent}"]
        return f"  call void %{self.prefix}k{n}({', '.join(arguments)})"

    def _transpose(self, step: LibraryStep, unique: int) -> list[str]:
        """A loop copying the operand's elements into the permuted order, each element
        one load and store of its bytes (any dtype)::

            out[i] = in[sum_d index_d(i) * in_stride[permutation[d]]]
        """
        source, target = self.types[step.inputs[0]], self.types[step.outputs[0]]
        total = math.prod(target.shape)
        if total == 0:
            return []
        bits = 8 * np.dtype(target.dtype).itemsize
        strides = [math.prod(source.shape[d + 1 :]) for d in range(len(source.shape))]
        p = f"%{self.prefix}tr{unique}"
        label = f"{self.prefix}tr{unique}"
        lines = [f"  br label %{label}.pre", f"{label}.pre:", f"  br label %{label}.loop",
                 f"{label}.loop:",
                 f"  {p}.i = phi i64 [ 0, %{label}.pre ], [ {p}.next, %{label}.loop ]",
                 f"  {p}.at.0 = add i64 0, 0"]  # fmt: skip
        for d, extent in enumerate(target.shape):
            inner = math.prod(target.shape[d + 1 :])
            lines += [f"  {p}.q{d} = udiv i64 {p}.i, {inner}",
                      f"  {p}.x{d} = urem i64 {p}.q{d}, {extent}",
                      f"  {p}.o{d} = mul i64 {p}.x{d}, {strides[step.op.permutation[d]]}",
                      f"  {p}.at.{d + 1} = add i64 {p}.at.{d}, {p}.o{d}"]  # fmt: skip
        rank = len(target.shape)
        lines += [
            f"  {p}.from = getelementptr i{bits}, ptr {self.pointer(step.inputs[0])}, "
            f"i64 {p}.at.{rank}",
            f"  {p}.value = load i{bits}, ptr {p}.from",
            f"  {p}.to = getelementptr i{bits}, ptr {self.pointer(step.outputs[0])}, i64 {p}.i",
            f"  store i{bits} {p}.value, ptr {p}.to",
            f"  {p}.next = add i64 {p}.i, 1",
            f"  {p}.done = icmp eq i64 {p}.next, {total}",
            f"  br i1 {p}.done, label %{label}.end, label %{label}.loop",
            f"{label}.end:",
        ]  # fmt: skip
        return lines

    def _contraction(self, step: LibraryStep) -> str:
        """The call of the contraction routine for ``step`` (``compiler.loop_contractions``)."""
        dtype = self.types[step.outputs[0]].dtype
        product = strided_product(step.op)
        if dtype not in DOT_DTYPES or product is None:
            raise NotNative(f"{step.op!r} has no native routine here (kept on BLAS)")
        self.routines.add(dot_routine(dtype, self.inline_products))
        lhs, rhs = (self.pointer(i) for i in step.inputs)
        return (f"  call void @tidu_loop_dot_{dtype}(ptr {self.pointer(step.outputs[0])}, "
                f"ptr {lhs}, ptr {rhs}, {product.arguments()})")  # fmt: skip

    def tables(self, arguments: dict[int, Any]) -> tuple[list[int], Any, list[Any]]:
        """The buffer pointers and the kernel table for ``arguments`` (plan argument
        -> array; the hoisted steps run here), and the arrays the pointers point to."""
        types = self.types
        buffers: list[Any] = [None] * len(types)
        for index, array in arguments.items():
            buffers[index] = array
        for index, array in self.bound.constants.items():
            buffers[index] = array
        for step in self.hoisted:
            specs = [(types[o].shape, np.dtype(types[o].dtype), np.empty) for o in step.outputs]
            values = library_values(step.op, specs, *(buffers[i] for i in step.inputs))
            for index, value in zip(step.outputs, values, strict=True):
                buffers[index] = value
        for index in self.allocated:
            buffers[index] = np.empty(types[index].shape, types[index].dtype)
        pointers = [0 if b is None else b.ctypes.data for b in buffers]
        kernels = [self.bound.kernel_addresses[s.symbol] for s in self.kernels]
        return pointers, _table(kernels), buffers


def _table(addresses: Sequence[int]) -> Any:
    return (ctypes.c_void_p * max(len(addresses), 1))(*addresses)


def _carry_updates(targets: list[str], sources: list[str], sizes: list[int],
                   scratch: str) -> tuple[list[str], int]:  # fmt: skip
    """``target[j] = source[j]`` for every carry, through ``scratch`` when a source is
    another carry's buffer (a swap must not read a carry already copied); the lines and
    the scratch bytes they need."""
    moves = [(t, s, n) for t, s, n in zip(targets, sources, sizes, strict=True) if s != t]
    if not any(s in targets for _, s, _ in moves):
        return [_memcpy(t, s, n) for t, s, n in moves], 0
    lines, offset = [], 0
    for j, (_, source, size) in enumerate(moves):
        lines.append(f"  %scratch.{j} = getelementptr i8, ptr {scratch}, i64 {offset}")
        lines.append(_memcpy(f"%scratch.{j}", source, size))
        offset += size
    lines += [_memcpy(t, f"%scratch.{j}", n) for j, (t, _, n) in enumerate(moves)]
    return lines, offset


def _carry_states(values: Sequence[Any], types: Sequence[TensorType]) -> list[np.ndarray]:
    """Fresh C-contiguous copies of the initial carries: the buffers the loop updates."""
    return [native_buffer(np.array(v, dtype=t.dtype, order="C", copy=True), t, f"carry {j}")
            for j, (v, t) in enumerate(zip(values, types, strict=True))]  # fmt: skip


_DECLARE = "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)"


class NativeScan:
    """Runs ``Scan(body, consts, carries, length, reverse)`` natively, given the body's
    bound plan (see the module docstring); ``NotNative`` if the plan cannot."""

    def __init__(self, bound: BoundPlan, consts: int, carries: int, reverse: bool) -> None:
        plan = bound.plan
        self.consts, self.carries = consts, carries
        self.xs = plan.arg_count - consts - carries
        if self.xs < 0 or len(plan.results) < carries:
            raise NotNative("the plan does not take the scan's inputs")
        first_x = consts + carries
        self.body = _PlanCalls(bound, "", {first_x + j: f"%x{j}" for j in range(self.xs)},
                               range(consts))  # fmt: skip
        types, body = plan.types, self.body
        lines = []
        for j in range(self.xs):
            lines.append(f"  %x{j}.offset = mul i64 %row, {_nbytes(types[first_x + j])}")
            lines.append(f"  %x{j} = getelementptr i8, ptr %x{j}.base, i64 %x{j}.offset")
        lines += body.calls()
        self.y_types = [types[r] for r in plan.results[carries:]]  # type: ignore[index]
        for j, t in enumerate(self.y_types):
            lines.append(f"  %y{j}.offset = mul i64 %row, {_nbytes(t)}")
            lines.append(f"  %y{j} = getelementptr i8, ptr %y{j}.base, i64 %y{j}.offset")
            lines.append(_memcpy(f"%y{j}", body.result(carries + j), _nbytes(t)))
        states = [consts + j for j in range(carries)]
        updates, self.scratch_bytes = _carry_updates(
            [body.pointer(s) for s in states], [body.result(j) for j in range(carries)],
            [_nbytes(types[s]) for s in states], "%scratch")  # fmt: skip
        bases = [f"  %x{j}.base = load ptr, ptr %x{j}.at" for j in range(self.xs)]
        bases += [f"  %y{j}.base = load ptr, ptr %y{j}.at" for j in range(len(self.y_types))]
        self.text = "\n".join([
            _DECLARE, *sorted(body.routines),
            "define void @NAME(ptr %buffers, ptr %kernels, ptr %xs, ptr %ys, i64 %length) {",
            "entry:", *body.entry(),
            *(f"  %x{j}.at = getelementptr ptr, ptr %xs, i64 {j}" for j in range(self.xs)),
            *(f"  %y{j}.at = getelementptr ptr, ptr %ys, i64 {j}"
              for j in range(len(self.y_types))),
            *bases,
            f"  %scratch.at = getelementptr ptr, ptr %buffers, i64 {len(types)}",
            "  %scratch = load ptr, ptr %scratch.at",
            "  %empty = icmp eq i64 %length, 0",
            "  br i1 %empty, label %exit, label %loop",
            "loop:",
            "  %t = phi i64 [ 0, %entry ], [ %t.next, %latch ]",
            "  %last = sub i64 %length, 1\n  %row = sub i64 %last, %t" if reverse
            else "  %row = add i64 %t, 0",
            *lines, *updates,
            "  br label %latch",
            "latch:",
            "  %t.next = add i64 %t, 1",
            "  %done = icmp eq i64 %t.next, %length",
            "  br i1 %done, label %exit, label %loop",
            "exit:",
            "  ret void",
            "}",
        ])  # fmt: skip
        self.driver, self.symbol = _compile_driver(self.text)

    def __call__(self, consts: Sequence[Any], carries: Sequence[Any], xs: Sequence[Any],
                 length: int) -> list[np.ndarray]:  # fmt: skip
        """The final carries and the stacked ``y`` of ``length`` iterations."""
        driver = self.driver
        types, k, c = self.body.types, self.consts, self.carries
        arguments = {i: native_buffer(v, types[i], f"const {i}") for i, v in enumerate(consts)}
        states = _carry_states(carries, types[k : k + c])
        arguments.update((k + j, s) for j, s in enumerate(states))
        rows = [native_buffer(x, TensorType((length, *types[k + c + j].shape),
                                            types[k + c + j].dtype), f"xs {j}")
                for j, x in enumerate(xs)]  # fmt: skip
        ys = [np.empty((length, *t.shape), t.dtype) for t in self.y_types]
        scratch = np.empty(max(self.scratch_bytes, 1), np.uint8)
        pointers, kernels, held = self.body.tables(arguments)
        tables = (_table([*pointers, scratch.ctypes.data]), kernels,  # alive for the call
                  _table([r.ctypes.data for r in rows]), _table([y.ctypes.data for y in ys]))
        driver(*map(ctypes.addressof, tables), length)
        del held
        return [*states, *ys]


class NativeWhile:
    """Runs ``WhileLoop(cond_body, body, cond_consts)`` natively, given the bound plans
    of its test and its step; ``NotNative`` if either cannot."""

    def __init__(self, test: BoundPlan, step: BoundPlan, cond_consts: int, carries: int) -> None:
        self.cond_consts, self.carries = cond_consts, carries
        self.body_consts = step.plan.arg_count - carries
        if self.body_consts < 0 or test.plan.arg_count != cond_consts + carries:
            raise NotNative("the plans do not take the loop's inputs")
        k = self.body_consts
        self.step = _PlanCalls(step, "", {}, range(k))
        shared = {cond_consts + j: self.step.pointer(k + j) for j in range(carries)}
        self.test = _PlanCalls(test, "c", shared, range(cond_consts))
        types = step.plan.types
        updates, self.scratch_bytes = _carry_updates(
            [self.step.pointer(k + j) for j in range(carries)],
            [self.step.result(j) for j in range(carries)],
            [_nbytes(types[k + j]) for j in range(carries)], "%scratch")  # fmt: skip
        self.text = "\n".join([
            _DECLARE, *sorted(self.step.routines | self.test.routines),
            "define void @NAME(ptr %cbuffers, ptr %ckernels, ptr %buffers, ptr %kernels, "
            "i64 %unused) {",
            "entry:", *self.step.entry(), *self.test.entry(),
            f"  %scratch.at = getelementptr ptr, ptr %buffers, i64 {len(types)}",
            "  %scratch = load ptr, ptr %scratch.at",
            "  br label %test",
            "test:",
            *self.test.calls(),
            f"  %holds.byte = load i8, ptr {self.test.result(0)}",
            "  %holds = icmp ne i8 %holds.byte, 0",
            "  br i1 %holds, label %loop, label %exit",
            "loop:",
            *self.step.calls(), *updates,
            "  br label %test",
            "exit:",
            "  ret void",
            "}",
        ])  # fmt: skip
        self.driver, self.symbol = _compile_driver(self.text)

    def __call__(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        """The final carries, from ``arrays``: the test's consts, the step's, the carries."""
        driver = self.driver
        kc, kb = self.cond_consts, self.body_consts
        step_types, test_types = self.step.types, self.test.types
        test_args = {i: native_buffer(arrays[i], test_types[i], f"const {i}") for i in range(kc)}
        step_args = {i: native_buffer(arrays[kc + i], step_types[i], f"const {kc + i}")
                     for i in range(kb)}  # fmt: skip
        states = _carry_states(arrays[kc + kb :], step_types[kb : kb + self.carries])
        step_args.update((kb + j, s) for j, s in enumerate(states))
        scratch = np.empty(max(self.scratch_bytes, 1), np.uint8)
        pointers, kernels, held = self.step.tables(step_args)
        test_pointers, ckernels, cheld = self.test.tables(test_args)
        tables = (_table(test_pointers), ckernels, _table([*pointers, scratch.ctypes.data]),
                  kernels)  # alive for the call
        driver(*map(ctypes.addressof, tables), 0)
        del held, cheld
        return states

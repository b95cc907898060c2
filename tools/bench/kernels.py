"""``tidu-compile bench --kernels``: native kernel speed in ns per element.

    tidu-compile bench --kernels [--quick] [--json out.json]

Two kinds of rows, each timed on one thread and on all threads (``TIDU_COMPILE_THREADS``
or the CPUs available; chunks as ``compiler.parallel`` runs them), interleaved with
numpy in one loop so that load on a shared machine hits every column alike:

* each math function ``expand-math-polynomials`` expands (read from its
  ``EXPANSIONS`` table, so a function added there shows up here), in f64 and f32:
  ``y[i] = f(x[i])``, a kernel walked through the executor's stage table from ``fused``
  on (``compiler.stages``), against numpy's ufunc of the same name (``-`` where numpy
  has none);
* the fused backward kernels of W1 ``sum(tanh(x*y + exp(-x)) * y)`` (f64, f32) and W4
  ``sum(exp(A - v)**2)`` recorded with ``@tc.function``, compiled by the normal
  pipeline, against the hand-written numpy backward of ``bench.workloads``.

``floor`` is the memory-traffic bound: the bytes a kernel reads and writes per
element divided by the bandwidth of a single-thread ``np.copyto`` over the same
footprint (so in-cache sizes get the cache's bandwidth). The header names the CPU
model, LLVM's name for it, the vector width the kernels prefer and the interleave
count of heavy loops: the next regression on either vendor shows up here at once.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tidu_compile.tools.bench.report import cpu_model, json_safe
from tidu_compile.tools.bench.timing import interleaved

__all__ = ["INPUT_RANGES", "KernelRow", "command", "format_kernels", "math_functions", "run"]

INPUT_RANGES: dict[str, tuple[float, float]] = {
    "exp": (-20.0, 20.0),
    "log": (1e-3, 1e3),
    "tanh": (-5.0, 5.0),
    "sin": (-100.0, 100.0),
    "cos": (-100.0, 100.0),
}
"""Input interval per math function (uniform); others get ``DEFAULT_RANGE``."""

DEFAULT_RANGE = (-4.0, 4.0)

ELEMENTS = 10**5
"""Elements per kernel call (W4: the nearest square): the arrays stay in L2/L3 cache, so
the columns measure the generated code rather than what other processes leave of the
memory bandwidth (on a shared 2-vCPU machine, n = 1e6 f64 ran 2-3x slower under load)."""

QUICK_ELEMENTS = 2 * 10**4

DTYPES = {"f64": np.float64, "f32": np.float32}

UNARY_KERNEL = """
func.func @kernel(%x: memref<?xT> {llvm.noalias}, %y: memref<?xT> {llvm.noalias},
                  %lo: index, %hi: index) attributes {tidu.kernel} {
  %c1 = arith.constant 1 : index
  scf.for %i = %lo to %hi step %c1 {
    %v = memref.load %x[%i] : memref<?xT>
    %r = math.FUNCTION %v : T
    memref.store %r, %y[%i] : memref<?xT>
  }
  func.return
}
"""


@dataclass
class KernelRow:
    """One row: seconds per call of each column, elements per call, bytes per element."""

    name: str
    dtype: str
    elements: int
    bytes_per_element: int
    one_thread: float
    all_threads: float
    numpy: float | None
    floor: float
    bandwidth: float  # bytes per second of the single-thread copy

    def per_element(self, seconds: float | None) -> float | None:
        return None if seconds is None else seconds / self.elements * 1e9

    def to_json(self) -> dict[str, Any]:
        ns = {k: self.per_element(getattr(self, k))
              for k in ("one_thread", "all_threads", "numpy", "floor")}  # fmt: skip
        return {"name": self.name, "dtype": self.dtype, "elements": self.elements,
                "bytes_per_element": self.bytes_per_element,
                "bandwidth_gb_per_s": self.bandwidth / 1e9,
                "ns_per_element": ns}  # fmt: skip


def math_functions() -> list[str]:
    """The math functions the polynomial pass expands, in its table's order."""
    from tidu_compile.passes.expand_math_polynomials import EXPANSIONS

    return [op.name.removeprefix("math.") for op in EXPANSIONS]


def _copy_bandwidth(footprint: int, rounds: int) -> float:
    """Bytes read + written per second by ``np.copyto`` over ``footprint`` bytes."""
    half = max(footprint // 2, 1 << 12)
    src, dst = np.ones(half, np.uint8), np.zeros(half, np.uint8)
    seconds = interleaved({"copy": lambda: np.copyto(dst, src)}, rounds)["copy"]
    return 2 * half / seconds


def _threads_call(
    call: Callable[..., Any], inputs: Sequence[np.ndarray], outputs: list[np.ndarray],
    partial: Sequence[int], extent: int, work: int,
) -> Callable[[], None]:  # fmt: skip
    from tidu_compile.compiler import parallel

    work = max(work, parallel.PARALLEL_WORK)  # always split: this column is all threads

    def run() -> None:
        parallel.run_chunked(call, inputs, outputs, partial, extent, work, _address)

    return run


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def _unary_row(name: str, dtype: str, n: int, rounds: int) -> KernelRow:
    from xdsl.parser import Parser

    from tidu_compile.backend.engine import get_engine
    from tidu_compile.compiler.stages import tidu_context, walk

    text = UNARY_KERNEL.replace("FUNCTION", name).replace("T", dtype)
    module = Parser(tidu_context(), text).parse_module()
    kernels = walk(module, "fused", "kernels")  # as a fused node's kernel: expanded math
    (symbol,) = kernels.symbols.values()
    engine = get_engine()
    if engine.is_loaded(symbol):  # named by its text: compiled by an earlier row or run
        address = engine.address_of(symbol)
    else:
        address = engine.load(walk(kernels, "kernels", "codegen"), [symbol])[symbol]
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_int64)(address)  # fmt: skip
    lo, hi = INPUT_RANGES.get(name, DEFAULT_RANGE)
    x = np.random.default_rng(0).uniform(lo, hi, n).astype(DTYPES[dtype])
    y = np.empty_like(x)
    calls: dict[str, Callable[[], object]] = {
        "one": lambda: kernel(_address(x), _address(y), 0, n),
        "all": _threads_call(kernel, [x], [y], (), n, n * 64),
    }
    ufunc = getattr(np, name, None)
    if isinstance(ufunc, np.ufunc):
        calls["numpy"] = lambda: ufunc(x, out=y)
    times = interleaved(calls, rounds)
    return _row(name, dtype, n, 2 * x.itemsize, times, rounds)


def _row(name: str, dtype: str, elements: int, bytes_per_element: int,
         times: dict[str, float], rounds: int) -> KernelRow:  # fmt: skip
    bandwidth = _copy_bandwidth(elements * bytes_per_element, rounds)
    return KernelRow(name, dtype, elements, bytes_per_element, times["one"], times["all"],
                     times.get("numpy"), elements * bytes_per_element / bandwidth,
                     bandwidth)  # fmt: skip


def _fused_row(workload: Any, label: str, rounds: int) -> KernelRow:
    """The one kernel of ``workload``'s composite backward node; its arguments are random
    like the workload's inputs (standard normal; the 0-d seed is 1)."""
    from tidu_compile.tools.dump import backward_nodes

    import tidu_compile as tc
    from tidu_compile.backend.engine import get_engine
    from tidu_compile.compiler import native, pipeline

    arrays = workload.make_inputs(0)
    tensors = [tc.tensor(a, requires_grad=True) for a in arrays]
    (node,) = backward_nodes(workload.tidu_loss(*tensors))
    program = node.program()
    artifact, _ = pipeline.compile_program(program, native.program_digest(program))
    bound = native.bind(artifact)
    if len(bound.steps) != 1 or bound.steps[0].kernel is None:
        raise RuntimeError(f"{label}: expected one fused kernel, got {len(bound.steps)} steps")
    step = bound.steps[0]
    kernel = step.kernel
    assert kernel is not None  # checked above; narrows the type
    types = bound.plan.types
    rng = np.random.default_rng(1)
    buffers = [rng.standard_normal(t.shape).astype(t.dtype) if t.shape else np.ones((), t.dtype)
               for t in types[: bound.plan.arg_count]]  # fmt: skip
    inputs = [bound.constants[i] if i in bound.constants else buffers[i] for i in step.inputs]
    outputs = [np.empty(types[o].shape, types[o].dtype) for o in step.outputs]
    arity = len(inputs) + len(outputs)
    runner = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * arity), ctypes.c_int64,
                              ctypes.c_int64)(get_engine().address_of(kernel.symbol))  # fmt: skip
    pointers = [_address(a) for a in inputs + outputs]
    saved = workload.numpy_forward(*arrays)
    calls: dict[str, Callable[[], object]] = {
        "one": lambda: runner(*pointers, 0, kernel.extent),
        "all": _threads_call(
            runner, inputs, outputs, kernel.partial_outputs, kernel.extent, kernel.work
        ),
        "numpy": lambda: workload.numpy_backward(saved),
    }
    times = interleaved(calls, rounds)
    moved = sum(a.nbytes for a in inputs + outputs)
    short = "f32" if np.dtype(workload.dtype) == np.float32 else "f64"
    return _row(label, short, kernel.domain_size, moved // kernel.domain_size, times, rounds)


def run(quick: bool = False) -> dict[str, Any]:
    """Measure every row; the JSON-ready document."""
    from tidu_compile.tools.bench.workloads import make_w1, make_w4

    from tidu_compile.backend.target import host_target
    from tidu_compile.compiler.parallel import thread_count

    n = QUICK_ELEMENTS if quick else ELEMENTS
    rounds = 5 if quick else 40
    rows: list[KernelRow] = []
    for dtype in DTYPES:
        for name in math_functions():
            rows.append(_unary_row(name, dtype, n, rounds))
    for dtype in ("float64", "float32"):
        rows.append(_fused_row(make_w1(n, composite=True, dtype=dtype), "W1 backward", rounds))
    side = math.isqrt(n)
    rows.append(_fused_row(make_w4(side, composite=True), "W4 backward", rounds))
    host = host_target()
    return {
        "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpu": cpu_model(),
            "llvm_cpu": host.cpu,
            "vector_bits": host.tuning.vector_bits,
            "lanes": {"f64": host.tuning.lanes(64), "f32": host.tuning.lanes(32)},
            "interleave": host.tuning.interleave,
            "threads": thread_count(),
        },
        "elements": n,
        "rows": [row.to_json() for row in rows],
    }


def _ns(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_kernels(document: dict[str, Any]) -> str:
    """The table printed by ``--kernels``."""
    machine = document["machine"]
    threads = machine["threads"]
    lanes = machine["lanes"]
    header = ["kernel", "dtype", "1 thread", f"{threads} threads", "numpy", "1 thr/numpy",
              "floor", "copy GB/s"]  # fmt: skip
    table = [header]
    for row in document["rows"]:
        ns = row["ns_per_element"]
        ratio = ns["one_thread"] / ns["numpy"] if ns["numpy"] else None
        table.append([row["name"], row["dtype"], _ns(ns["one_thread"]), _ns(ns["all_threads"]),
                      _ns(ns["numpy"]), "-" if ratio is None else f"{ratio:.2f}",
                      _ns(ns["floor"]), f"{row['bandwidth_gb_per_s']:.1f}"])  # fmt: skip
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = [
        f"tidu-compile bench --kernels: ns per element (median, interleaved with numpy), "
        f"n = {document['elements']:.0e} elements per call",
        f"cpu: {machine['cpu']} (LLVM: {machine['llvm_cpu']}), {threads} threads; kernels: "
        f"{machine['vector_bits']}-bit vectors ({lanes['f64']} x f64, {lanes['f32']} x f32), "
        f"heavy loops interleaved x{machine['interleave']}",
        "floor: bytes read + written per element / single-thread np.copyto bandwidth at the "
        "same footprint",
        *("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
          for r in table),
    ]  # fmt: skip
    return "\n".join(lines)


def command(args: argparse.Namespace) -> int:
    """``tidu-compile bench --kernels``: print the table, write ``--json``."""
    document = run(quick=bool(args.quick))
    if args.json:
        Path(args.json).write_text(json.dumps(json_safe(document), indent=2) + "\n")
    sys.stdout.write(format_kernels(document) + "\n")
    sys.stdout.flush()
    return 0

"""Large transcendental and arithmetic results of the eager path, from compiled kernels.

numpy's ``tanh``, ``exp``, ``log``, ``sin``, ... loop over scalar libm calls on most
CPUs; the compiled kernels vectorize the same functions (``expand-math-polynomials``)
and run chunks on the kernel threads. On 1e6 float64 elements (AMD EPYC Zen 3, 2
vCPUs, one run): ``tanh`` 19.8 -> 2.2 ms, ``exp`` 10.2 -> 1.3 ms, ``log`` 9.7 -> 1.5
ms, ``log1p`` 15.6 -> 1.5 ms, ``expm1`` 13.9 -> 3.4 ms. ``neg`` or ``sqrt`` gain
nothing worth a call (numpy's loops are vector loops already), and ``sin``, ``cos``
and ``tan`` (17.0 -> 2.4 ms) stay numpy's too: their kernels are NaN past
``1.5 * 2^22`` in float32 (``1.5 * 2^51`` in float64), where numpy is right.

The four arithmetic ops (``NATIVE_BINARY_OPS``) on two tensors of one shape gain from
``NATIVE_BINARY_ELEMENTS`` on, where the memory traffic dominates and the kernels spread
it over the threads and reuse their buffers (1e7 float64 ``a * b``: 22.9 -> 10.8 ms on
two threads, 25.3 -> 15.6 ms on one; at 1e6 one thread is no faster than numpy); their
results are numpy's bit for bit (correctly rounded, no contraction in a one-op kernel).

So an eager op of ``NATIVE_OPS`` on a C-contiguous float32 or float64 tensor of at
least ``NATIVE_ELEMENTS`` elements, or of ``NATIVE_BINARY_OPS`` on two such tensors of
``NATIVE_BINARY_ELEMENTS`` (the fast paths of ``frontend.fast_ops``), asks the
executor in use for its one-op graph's outputs, when that executor runs graphs itself
(overrides ``BackwardExecutor.run_graph``, as the ``CompiledExecutor`` does): the
program is compiled once per shape and dtype and cached like any other (in the
background by default, numpy's own loop while it compiles), from the second call of a
shape and dtype on (``_SEEN``): a one-off shape, such as each clip of variable-length
data, never starts a compile. The values are the kernels', within the few ulps of
numpy's that the op table's tests allow, and like every native kernel they do not raise
numpy's floating-point warnings. Any other tensor, dtype or executor: numpy's ufunc, as
before.
"""

from __future__ import annotations

import numpy as np

from tidu_compile.eager import BackwardExecutor, RecordedGraph
from tidu_compile.frontend.state import get_default_executor

__all__ = [
    "NATIVE_BINARY_ELEMENTS", "NATIVE_BINARY_OPS", "NATIVE_ELEMENTS", "NATIVE_OPS",
    "native_result",
]  # fmt: skip

#: The smallest tensor (in elements) whose result is computed natively: numpy's loop
#: takes ~150 us there, a native call's fixed cost is ~10 us.
NATIVE_ELEMENTS = 1 << 14

#: The op classes (by name) whose numpy loop is scalar libm calls and whose kernels are
#: right on every input (``tests/compiler/test_lowering_rows.py``).
NATIVE_OPS = frozenset({
    "Tanh", "Exp", "Exp2", "Expm1", "Log", "Log2", "Log10", "Log1p", "Sinh", "Cosh",
    "Arcsin", "Arccos", "Arctan", "Arcsinh", "Arccosh", "Arctanh",
})  # fmt: skip

#: The binary op classes (by name) computed natively, from this many elements on.
NATIVE_BINARY_OPS = frozenset({"Add", "Sub", "Mul", "Div"})
NATIVE_BINARY_ELEMENTS = 1 << 20

_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_NUMPY_RUN_GRAPH = BackwardExecutor.run_graph
#: ``(graph, shape, dtype)`` met once (numpy computed it); cleared past ``_SEEN_MAX``.
_SEEN: set[tuple[RecordedGraph, tuple[int, ...], np.dtype]] = set()
_SEEN_MAX = 4096


def native_result(graph: RecordedGraph, data: np.ndarray, *more: np.ndarray) -> np.ndarray | None:
    """The output of the one-op ``graph`` on ``data`` (and ``more``: operands of its
    shape and dtype) from the executor in use, or None when numpy computes it: an
    operand not C-contiguous float32/float64, the shape and dtype not met before, an
    executor that evaluates graphs op by op with numpy anyway, or one that may not
    compile (``forbid_compile``, a test's proof of cache hits: an eager value needs no
    compile)."""
    if data.dtype not in _REAL or not data.flags.c_contiguous:
        return None
    if more and not all(m.flags.c_contiguous for m in more):
        return None
    executor = get_default_executor()
    if type(executor).run_graph is _NUMPY_RUN_GRAPH or getattr(executor, "forbid_compile", False):
        return None
    seen = (graph, data.shape, data.dtype)
    if seen not in _SEEN:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        _SEEN.add(seen)
        return None
    (out,) = executor.run_graph(graph, [data, *more])
    return np.asarray(out)

"""The benchmark's workloads: input recipes, tidu recordings and hand-written numpy gradients.

Every workload is a scalar loss of a few random inputs. For each one this module gives

* ``make_inputs(seed)``: the input arrays (the same seed gives the same arrays in every
  process, so the peer subprocesses rebuild them instead of receiving them);
* ``tidu_loss(*tensors)``: the loss recorded through the ``tidu_compile`` frontend;
* ``numpy_forward(*arrays)``: the forward pass in numpy, returning what the backward needs
  (the numpy analogue of recording the forward once);
* ``numpy_backward(saved)``: the analytic gradient written by hand, one array per
  differentiated input (``grad_inputs``), which is what the benchmark times for numpy
  and what every other gradient is checked against.

The hand-written W1 and W4 backward passes start from the inputs and recompute the
transcendentals (``exp``, ``tanh``), as the reference figures of the performance issue
do and as tidu's kernels do; W2 and W3 reuse the forward's values. Rows named
``composite`` record the loss with ``tidu_compile.function`` (one tape node); they share
the numpy, torch and jax columns of the per-op row.

W1 ``sum(tanh(x*y + exp(-x)) * y)``; W2 a chain of scalar (0-d) mul/add/sin ops;
W3 an MLP loss ``sum((tanh(X@W1 + b1)@W2 + b2 - Y)**2)``; W4 ``sum(exp(A - v[None,:])**2)``;
W5 (integer labels) and W6 (einsum chains): ``workloads_indexing``; W7 (a GP
likelihood): ``workloads_linalg``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .row import Workload, recorded, seeded
from .workloads_indexing import workloads as indexing_workloads
from .workloads_linalg import workloads as linalg_workloads

__all__ = [
    "GROUPS",
    "all_workloads",
    "find_workload",
    "make_w1",
    "make_w2",
    "make_w3",
    "make_w4",
    "select_workloads",
    "w2_chain",
    "w2_ops",
]

GROUPS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7")  # W5, W6: ``workloads_indexing``; W7: linalg


def _sci(n: int) -> str:
    """``1000000`` -> ``"1e6"``; other numbers unchanged."""
    exponent = len(str(n)) - 1
    return f"1e{exponent}" if n == 10**exponent and n >= 1000 else str(n)


# ------------------------------------------------------------------ W1


def make_w1(n: int, composite: bool = False, dtype: str = "float64") -> Workload:
    """W1: ``sum(tanh(x*y + exp(-x)) * y)`` on two vectors of length ``n`` (f64 or f32)."""
    np_dtype = np.dtype(dtype)
    short = "f32" if np_dtype == np.float32 else "f64"

    def make_inputs(seed: int) -> list[np.ndarray]:
        rng = seeded(seed, 1)
        return [rng.standard_normal(n).astype(np_dtype), rng.standard_normal(n).astype(np_dtype)]

    def loss(x: Any, y: Any) -> Any:
        import tidu_compile as tc

        return tc.sum(tc.tanh(x * y + tc.exp(-x)) * y)

    def tidu_loss(x: Any, y: Any) -> Any:
        return recorded(loss, composite)(x, y)

    def numpy_forward(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        return x, y

    def numpy_backward(saved: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        x, y = saved
        e = np.exp(-x)
        t = np.tanh(x * y + e)
        ds = y * (1 - t * t)  # d loss / d (x*y + exp(-x)), in the input dtype
        return [ds * (y - e), ds * x + t]

    def numpy_step(x: np.ndarray, y: np.ndarray) -> tuple[Any, ...]:
        e = np.exp(-x)
        t = np.tanh(x * y + e)
        ds = y * (1 - t * t)
        return np.sum(t * y), ds * (y - e), ds * x + t

    recording = "composite" if composite else "per-op"
    suffix = " composite" if composite else ""
    dtype_text = "" if short == "f64" else f" {short}"
    return Workload(
        key=f"W1{dtype_text} n={_sci(n)}{suffix}",
        group="W1",
        description=f"sum(tanh(x*y + exp(-x)) * y), {short}, {recording}",
        dtype=np_dtype.name,
        input_names=("x", "y"),
        grad_inputs=(0, 1),
        size=n,
        make_inputs=make_inputs,
        tidu_loss=tidu_loss,
        numpy_forward=numpy_forward,
        numpy_backward=numpy_backward,
        recording=recording,
        peer_key=f"W1{dtype_text} n={_sci(n)}",
        numpy_step=numpy_step,
    )


# ------------------------------------------------------------------ W2


def w2_ops(count: int) -> list[str]:
    """The op sequence of W2: ``mul, add, sin`` repeated (``x = sin(x*a + b)``), ``count`` long."""
    cycle = ("mul", "add", "sin")
    return [cycle[i % 3] for i in range(count)]


def w2_chain(ops: Sequence[str], sin: Callable[[Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """The W2 forward as a function of ``(x0, a, b)`` for any array library's ``sin``."""

    def chain(x: Any, a: Any, b: Any) -> Any:
        for op in ops:
            if op == "mul":
                x = x * a
            elif op == "add":
                x = x + b
            else:
                x = sin(x)
        return x

    return chain


def make_w2(ops: int = 1000, composite: bool = False) -> Workload:
    """W2: a chain of ``ops`` scalar (0-d) f64 ops ``x = sin(x*a + b)``; loss = the last x.

    ``composite`` records the chain as one tape node with ``tidu_compile.function``.
    """
    sequence = w2_ops(ops)
    chain_of_sin = functools.cache(lambda sin: w2_chain(sequence, sin))  # one chain per run

    def make_inputs(seed: int) -> list[np.ndarray]:
        rng = seeded(seed, 2)
        x0 = np.array(rng.standard_normal())
        a = np.array(0.5 + 0.5 * rng.random())  # |a| < 1 keeps the chain bounded
        b = np.array(0.5 * rng.standard_normal())
        return [x0, a, b]

    def tidu_loss(x: Any, a: Any, b: Any) -> Any:
        import tidu_compile as tc

        return recorded(chain_of_sin(tc.sin), composite)(x, a, b)

    def numpy_forward(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> Any:
        x = x[()]
        a = a[()]
        b = b[()]
        saved: list[Any] = []  # per op: the value the op's backward needs
        for op in sequence:
            if op == "mul":
                saved.append(x)
                x = x * a
            elif op == "add":
                saved.append(None)
                x = x + b
            else:
                saved.append(x)
                x = np.sin(x)
        return saved, a, x  # x: the loss

    def numpy_step(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[Any, ...]:
        state = numpy_forward(x, a, b)
        return (state[2], *numpy_backward(state))

    def numpy_backward(state: Any) -> list[np.ndarray]:
        saved, a, _ = state
        g = np.float64(1.0)
        ga = np.float64(0.0)
        gb = np.float64(0.0)
        for op, value in zip(reversed(sequence), reversed(saved), strict=True):
            if op == "sin":
                g = g * np.cos(value)
            elif op == "add":
                gb = gb + g
            else:
                ga = ga + g * value
                g = g * a
        return [np.asarray(g), np.asarray(ga), np.asarray(gb)]

    recording = "composite" if composite else "per-op"
    return Workload(
        key=f"W2 {ops} ops {recording}",
        group="W2",
        description=f"chain of {ops} 0-d mul/add/sin ops x = sin(x*a + b), f64, {recording}",
        dtype="float64",
        input_names=("x0", "a", "b"),
        grad_inputs=(0, 1, 2),
        size=ops,
        make_inputs=make_inputs,
        tidu_loss=tidu_loss,
        numpy_forward=numpy_forward,
        numpy_backward=numpy_backward,
        recording=recording,
        peer_key=f"W2 {ops} ops per-op",
        numpy_step=numpy_step,
    )


# ------------------------------------------------------------------ W3


def make_w3(
    dtype: str,
    batch: int = 256,
    features: int = 512,
    hidden: int = 512,
    outputs: int = 10,
    composite: bool = False,
) -> Workload:
    """W3: MLP loss ``sum((tanh(X@W1 + b1)@W2 + b2 - Y)**2)``; gradients of W1, b1, W2, b2."""
    np_dtype = np.dtype(dtype)
    default = (batch, features, hidden, outputs) == (256, 512, 512, 10)
    short = "f32" if np_dtype == np.float32 else "f64"

    def make_inputs(seed: int) -> list[np.ndarray]:
        rng = seeded(seed, 3)
        shapes = [(batch, features), (features, hidden), (hidden,), (hidden, outputs),
                  (outputs,), (batch, outputs)]  # fmt: skip
        scales = [1.0, features**-0.5, 0.1, hidden**-0.5, 0.1, 1.0]
        return [(rng.standard_normal(s) * c).astype(np_dtype)
                for s, c in zip(shapes, scales, strict=True)]  # fmt: skip

    def loss(x: Any, w1: Any, b1: Any, w2: Any, b2: Any, y: Any) -> Any:
        import tidu_compile as tc

        return tc.sum((tc.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    def tidu_loss(*args: Any) -> Any:
        return recorded(loss, composite)(*args)

    def numpy_forward(
        x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray,
        y: np.ndarray,
    ) -> tuple[np.ndarray, ...]:  # fmt: skip
        h = np.tanh(x @ w1 + b1)
        r = h @ w2 + b2 - y
        return x, w2, h, r

    def numpy_backward(saved: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        x, w2, h, r = saved
        dp = r + r  # d sum(r**2) / dr, in the input dtype
        dh = dp @ w2.T
        dz = dh * (1 - h * h)
        return [x.T @ dz, dz.sum(axis=0), h.T @ dp, dp.sum(axis=0)]

    def numpy_step(*arrays: np.ndarray) -> tuple[Any, ...]:
        saved = numpy_forward(*arrays)
        r = saved[3]
        return (np.sum(r * r), *numpy_backward(saved))

    size_text = "" if default else f" {batch}x{features}x{hidden}x{outputs}"
    recording = "composite" if composite else "per-op"
    return Workload(
        key=f"W3 {short}{size_text}{' composite' if composite else ''}",
        group="W3",
        description=f"MLP sum((tanh(X@W1+b1)@W2+b2-Y)**2), X {batch}x{features}, "
        f"W1 {features}x{hidden}, W2 {hidden}x{outputs}, {short}",
        dtype=np_dtype.name,
        input_names=("X", "W1", "b1", "W2", "b2", "Y"),
        grad_inputs=(1, 2, 3, 4),
        size=batch,
        make_inputs=make_inputs,
        tidu_loss=tidu_loss,
        numpy_forward=numpy_forward,
        numpy_backward=numpy_backward,
        recording=recording,
        peer_key=f"W3 {short}{size_text}",
        numpy_step=numpy_step,
    )


# ------------------------------------------------------------------ W4


def make_w4(rows: int = 2000, cols: int | None = None, composite: bool = False) -> Workload:
    """W4: ``sum(exp(A - v[None, :])**2)``, A ``rows x cols`` f64, v ``cols``."""
    width = rows if cols is None else cols

    def make_inputs(seed: int) -> list[np.ndarray]:
        rng = seeded(seed, 4)
        return [rng.standard_normal((rows, width)), rng.standard_normal(width)]

    def loss(a: Any, v: Any) -> Any:
        import tidu_compile as tc

        return tc.sum(tc.exp(a - v) ** 2)

    def tidu_loss(a: Any, v: Any) -> Any:
        return recorded(loss, composite)(a, v)

    def numpy_forward(a: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return a, v

    def numpy_backward(saved: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
        a, v = saved
        e = np.exp(a - v[None, :])
        da = 2.0 * e * e  # d exp(d)**2 / dd = 2 exp(d)**2
        return [da, -da.sum(axis=0)]

    def numpy_step(a: np.ndarray, v: np.ndarray) -> tuple[Any, ...]:
        e = np.exp(a - v[None, :])
        squares = e * e
        da = 2.0 * squares
        return np.sum(squares), da, -da.sum(axis=0)

    recording = "composite" if composite else "per-op"
    return Workload(
        key=f"W4 {rows}x{width}{' composite' if composite else ''}",
        group="W4",
        description=f"sum(exp(A - v[None,:])**2), A {rows}x{width} f64",
        dtype="float64",
        input_names=("A", "v"),
        grad_inputs=(0, 1),
        size=rows,
        make_inputs=make_inputs,
        tidu_loss=tidu_loss,
        numpy_forward=numpy_forward,
        numpy_backward=numpy_backward,
        recording=recording,
        peer_key=f"W4 {rows}x{width}",
        numpy_step=numpy_step,
    )


# ------------------------------------------------------------------ the suite


def all_workloads(quick: bool = False) -> list[Workload]:
    """The benchmark's rows in order; ``quick`` drops n=1e7 (f32: keeps n=1e5 only) and
    uses a small W4."""
    sizes = (10**3, 10**5, 10**6) if quick else (10**3, 10**5, 10**6, 10**7)
    f32_sizes = (10**5,) if quick else (10**5, 10**6, 10**7)
    rows = 500 if quick else 2000
    return [
        *(make_w1(n) for n in sizes),
        *(make_w1(n, composite=True) for n in sizes),
        *(make_w1(n, dtype="float32") for n in f32_sizes),
        *(make_w1(n, composite=True, dtype="float32") for n in f32_sizes),
        make_w2(1000),
        make_w2(1000, composite=True),
        make_w3("float32"),
        make_w3("float64"),
        make_w3("float32", composite=True),
        make_w3("float64", composite=True),
        make_w4(rows),
        make_w4(rows, composite=True),
        *indexing_workloads(quick),
        *linalg_workloads(quick),
    ]


def find_workload(key: str) -> Workload:
    """The workload (of the full or quick suite) named ``key``; ``KeyError`` if none."""
    for quick in (False, True):
        for workload in all_workloads(quick):
            if workload.key == key:
                return workload
    raise KeyError(key)


def select_workloads(spec: str | None, quick: bool = False) -> list[Workload]:
    """Rows matching a comma-separated filter of groups (``W1``) or row keys.

    ``None`` or an empty filter selects everything; an unknown name is a ``ValueError``.
    """
    suite = all_workloads(quick)
    if not spec:
        return suite
    names = [name.strip() for name in spec.split(",") if name.strip()]
    known = set(GROUPS) | {w.key for w in suite}
    unknown = [name for name in names if name.upper() not in known and name not in known]
    if unknown:
        raise ValueError(
            f"--workload: unknown {', '.join(unknown)} (choose from {', '.join(GROUPS)})"
        )
    wanted = {name.upper() if name.upper() in GROUPS else name for name in names}
    return [w for w in suite if w.group in wanted or w.key in wanted]

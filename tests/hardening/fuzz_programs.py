"""A seeded generator of random differentiable tensor programs, richer than
``tests/compiler/random_programs.py``.

A ``FuzzProgram`` is data: input shapes, a dtype and a list of ``Step``s over a pool of
values. ``run(tensors)`` interprets the steps with the frontend, so the same program can
be recorded (for gradients), replayed on plain arrays (for finite differences) and run
at another dtype (``widened``). It covers:

* float32, float64, complex64, complex128 (and real programs that go complex and back);
* unary math kept in its domain, binary ops with numpy broadcasting (rows, columns,
  0-d values), Python and array constants, ``where`` with data masks, ``maximum``;
* fan-out (values reused), the two-output ``sincos``, reductions (``sum``/``mean`` with
  axes and ``keepdims``), ``matmul`` (2-d, vector and batched), reshape and transpose;
* ``tc.function`` composites: a stretch of steps recorded as ONE tape node, or the whole
  program with its loss (a scalar: the joint forward);
* every parameterless elementwise op of the op table (``fuzz_table``);
* indexing (basic, advanced with repeated indices, ``.at``), joining and einsum steps
  (``fuzz_indexing``);
* equal extents (``rows == cols``) in about half the programs.

The loss is ``Re(sum(w * v))`` over a few pool values with fixed random weights ``w``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fuzz_indexing import INDEXING_KINDS, indexing_step
from fuzz_table import TABLE_OPS, table_step

import tidu_compile as tc

Shape = tuple[int, ...]

REAL = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
WIDE = {"float32": "float64", "complex64": "complex128"}


@dataclass(frozen=True)
class Step:
    """One operation: ``kind`` with operand pool indices ``args`` and parameters."""

    kind: str
    args: tuple[int, ...]
    params: tuple[Any, ...] = ()


@dataclass
class FuzzProgram:
    seed: int
    dtype: str
    shapes: tuple[Shape, ...]
    steps: list[Step]
    losses: tuple[int, ...]  # pool indices summed into the loss
    weights_seed: int
    composite: tuple[int, int] | None  # [start, stop) of the steps recorded as one node
    #: The whole program, loss included, is one ``tc.function`` (its scalar loss: the
    #: joint forward of a ``CompiledExecutor``, ``frontend.joint_forward``).
    whole: bool = False
    _functions: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)

    def arrays(self, dtype: str | None = None) -> list[np.ndarray]:
        """The program's inputs (seeded), at ``dtype`` (default: the program's)."""
        rng = np.random.default_rng(self.seed + 1)
        name = dtype or self.dtype
        out = []
        for shape in self.shapes:
            data = rng.standard_normal(shape)
            if name in COMPLEX:
                data = data + 1j * rng.standard_normal(shape)
            out.append(np.asarray(data).astype(name))
        return out

    def describe(self) -> str:
        steps = "; ".join(f"{s.kind}{list(s.args)}{list(s.params) or ''}" for s in self.steps)
        return (f"seed={self.seed} dtype={self.dtype} shapes={self.shapes} "
                f"composite={self.composite} whole={self.whole} steps: {steps}")  # fmt: skip

    def run(self, inputs: Sequence[tc.Tensor]) -> tc.Tensor:
        """Interpret the program on tensors (recorded if they require gradients)."""
        if not self.whole:
            return self._loss(*inputs)
        key = f"whole {inputs[0].dtype}"
        if key not in self._functions:  # one traced function per dtype, reused
            self._functions[key] = tc.function(self._loss)
        return self._functions[key](*inputs)  # type: ignore[no-any-return]

    def _loss(self, *inputs: tc.Tensor) -> tc.Tensor:
        pool: list[tc.Tensor] = list(inputs)
        start, stop = self.composite or (len(self.steps), len(self.steps))
        _interpret(self.steps[:start], pool)
        if self.composite is not None:
            key = str(inputs[0].dtype)
            if key not in self._functions:  # one traced function per dtype, reused
                self._functions[key] = tc.function(_block(self.steps[start:stop]))
            outputs = self._functions[key](*pool)
            pool.extend(outputs if isinstance(outputs, tuple) else (outputs,))
        _interpret(self.steps[stop:], pool)
        rng = np.random.default_rng(self.weights_seed)
        loss: tc.Tensor | None = None
        for index in self.losses:
            value = pool[index % len(pool)]
            weight = rng.standard_normal(value.shape)
            if value.dtype.kind == "c":
                weight = weight + 1j * rng.standard_normal(value.shape)
            term = tc.real(tc.sum(value * weight.astype(value.dtype)))
            loss = term if loss is None else loss + term
        assert loss is not None
        return loss


def _block(steps: list[Step]) -> Callable[..., Any]:
    """A function of the pool that runs ``steps`` and returns what they appended."""

    def composite(*pool_in: tc.Tensor) -> tuple[tc.Tensor, ...]:
        pool = list(pool_in)
        _interpret(steps, pool)
        new = pool[len(pool_in) :]
        return tuple(new) if new else (pool_in[0] * 1.0,)

    return composite


# ------------------------------------------------------------------ the interpreter


def _mask(x: tc.Tensor) -> tc.Tensor:
    """``Re(x) > 0.1``, computed by tidu_compile: inside a composite the mask stays in the
    traced graph (a numpy mask of a traced value is a ``TracedValueError``)."""
    return (tc.real(x) if x.dtype.kind == "c" else x) > 0.1


def _unary(name: str, x: tc.Tensor) -> tc.Tensor:
    complex_ = x.dtype.kind == "c"
    if name == "tanh":
        return tc.tanh(x * 0.5)
    if name == "sin":
        return tc.sin(x)
    if name == "cos":
        return tc.cos(x)
    if name == "exp":
        return tc.exp(tc.tanh(x) if not complex_ else x * 0.3)
    if name == "log":
        return tc.log(x * x + 1.5) if not complex_ else tc.log(x * 0.1 + 2.0)
    if name == "sqrt":
        return tc.sqrt(x * x + 0.5) if not complex_ else tc.sqrt(x * 0.1 + 2.0)
    if name == "neg":
        return -x
    if name == "square":
        return tc.tanh(x) ** 2 if not complex_ else x * x * 0.5
    if name == "affine":
        return x * 0.5 + 1.0
    if name == "recip":
        return 1.0 / (x * x + 1.5) if not complex_ else 1.0 / (x * 0.1 + 3.0)
    if name == "where":
        return tc.where(_mask(x), x, x * 0.2)
    if name == "maximum":
        return tc.maximum(x, 0.1) if not complex_ else tc.conj(x)
    if name == "sincos":
        s, c = tc.sincos(x)
        return s * c
    if name == "complex_trip":  # real -> complex -> real (Convert, Real, Imag, Conj)
        z = x * (0.5 + 0.25j)
        return tc.real(z * tc.conj(z)) + tc.imag(z) if not complex_ else tc.conj(x)
    raise AssertionError(name)


UNARY = ("tanh", "sin", "cos", "exp", "log", "sqrt", "neg", "square", "affine", "recip",
         "where", "maximum", "sincos", "complex_trip")  # fmt: skip
BINARY = ("add", "sub", "mul", "div", "maximum")


def _binary(name: str, a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
    if name == "add":
        return a + b
    if name == "sub":
        return a - b
    if name == "mul":
        return a * b
    if name == "div":
        return a / (b * b + 1.5) if b.dtype.kind != "c" else a / (b * 0.1 + 3.0)
    if a.dtype.kind == "c" or b.dtype.kind == "c":
        return a + b * 0.5
    return tc.maximum(a, b)


def _constant(shape: Shape, dtype: np.dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.uniform(0.5, 1.5, shape)
    return data.astype(dtype)


def _interpret(steps: Sequence[Step], pool: list[tc.Tensor]) -> None:
    for step in steps:
        a = pool[step.args[0] % len(pool)]
        if step.kind == "unary":
            pool.append(_unary(step.params[0], a))
        elif step.kind == "sincos":
            pool.extend(tc.sincos(a * 0.5))
        elif step.kind == "binary":
            b = pool[step.args[1] % len(pool)]
            try:
                np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                b = tc.mean(b)  # shapes that do not broadcast: use a reduction instead
            pool.append(_binary(step.params[0], a, b))
        elif step.kind == "constant":
            which, seed = step.params
            shape = a.shape if which == "full" else a.shape[-1:] if which == "row" else ()
            value = _constant(shape, a.dtype, seed)
            pool.append(a * value + 0.25 if which != "python" else a * 1.5 - 0.5)
        elif step.kind == "reduce":
            op, axis, keepdims = step.params
            axis = None if a.ndim == 0 or axis is None else axis % a.ndim
            function = tc.mean if op == "mean" else tc.sum
            pool.append(function(a, axis=axis, keepdims=keepdims))
        elif step.kind == "matmul":
            pool.append(_matmul(a, pool[step.args[1] % len(pool)]))
        elif step.kind == "shape":
            pool.append(_reshape(a, step.params[0]))
        elif step.kind == "table":
            pool.append(table_step(step.params[0], a, pool[step.args[1] % len(pool)]))
        elif step.kind in INDEXING_KINDS:
            pool.append(indexing_step(step.kind, a, pool[step.args[1] % len(pool)],
                                      step.params[0]))  # fmt: skip
        else:
            raise AssertionError(step.kind)


def _matmul(a: tc.Tensor, b: tc.Tensor) -> tc.Tensor:
    if a.ndim == 0:
        return a * 2.0
    if b.ndim >= 1 and (b.shape[0] if b.ndim == 1 else b.shape[-2]) == a.shape[-1]:
        try:
            product = a @ b
        except ValueError:  # batch dimensions that do not broadcast
            product = None
        if product is not None:
            return tc.tanh(product) if product.dtype.kind != "c" else product * 0.3
    if a.ndim == 1:
        return tc.sum(a * a) * 0.1
    product = a @ tc.transpose(a, tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2))
    return product * 0.1  # (..., m, m): batched when a has 3 dims


def _reshape(a: tc.Tensor, how: str) -> tc.Tensor:
    if a.ndim == 0:
        return tc.broadcast_to(a, (2, 3)) * 0.5
    if how == "flatten":
        return tc.reshape(a, (-1,))
    if how == "transpose":
        return tc.transpose(a)
    if how == "broadcast":
        return tc.broadcast_to(a, (2, *a.shape))
    return tc.reshape(a, (*a.shape, 1)) if a.ndim < 3 else tc.sum(a, axis=0)


# ------------------------------------------------------------------ the generator


def make_program(seed: int, steps: int | None = None, dtype: str | None = None) -> FuzzProgram:
    """A random program (``seed`` decides everything)."""
    rng = np.random.default_rng(seed)
    dtype = dtype or str(rng.choice(REAL + COMPLEX, p=[0.3, 0.35, 0.15, 0.2]))
    rows = int(rng.integers(1, 5))
    # Equal extents in about half the programs: square matrices, (2, n, n) batches and
    # rows that match columns, where a kernel or rule that mixes up two axes of the
    # same size still gets the shapes right and only the values wrong.
    cols = rows if rng.random() < 0.4 else int(rng.integers(1, 5))
    candidates: list[Shape] = [(rows, cols), (cols,), (rows, 1), (), (2, rows, cols), (cols, rows)]
    count = int(rng.integers(1, 5))
    shapes = tuple(candidates[int(i)] for i in rng.choice(len(candidates), count))
    shapes = ((rows, cols), *shapes)  # at least one matrix
    length = steps if steps is not None else int(rng.integers(3, 16))
    program: list[Step] = []
    for _ in range(length):
        a, b = (int(i) for i in rng.integers(0, 1 << 20, 2))
        kind = str(rng.choice(["unary", "binary", "table", "constant", "reduce", "matmul",
                               "shape", "sincos", *INDEXING_KINDS],
                              p=[0.14, 0.12, 0.18, 0.08, 0.08, 0.08, 0.08, 0.04,
                                 0.08, 0.05, 0.07]))  # fmt: skip
        params: tuple[Any, ...]
        if kind == "table":
            params = (str(rng.choice(sorted(TABLE_OPS))),)
        elif kind == "unary":
            params = (str(rng.choice(UNARY)),)
        elif kind == "binary":
            params = (str(rng.choice(BINARY)),)
        elif kind == "constant":
            params = (str(rng.choice(["full", "row", "scalar", "python"])), int(b))
        elif kind == "reduce":
            axis = None if rng.random() < 0.3 else int(rng.integers(0, 3))
            params = (str(rng.choice(["sum", "mean"])), axis, bool(rng.integers(2)))
        elif kind == "shape":
            params = (str(rng.choice(["flatten", "transpose", "broadcast", "expand"])),)
        elif kind in INDEXING_KINDS:
            params = (int(b),)  # the step's seed: it draws its key from the shapes it meets
        else:
            params = ()
        program.append(Step(kind, (a, b), params))
    composite = None
    if length >= 2 and rng.random() < 0.35:
        start = int(rng.integers(0, length - 1))
        composite = (start, int(rng.integers(start + 1, length + 1)))
    losses = tuple(int(i) for i in rng.integers(0, 1 << 20, int(rng.integers(1, 4))))
    # drawn apart, so that the other draws of a seed stay what they were; real programs
    # only: complex sinh, cosh, mul and div differ from numpy at infinite parts when
    # compiled (``passes/tidu_complex_lowering.py``), which a whole program recomputes
    whole = (composite is None and dtype in REAL
             and bool(np.random.default_rng(seed + 13).random() < 0.3))  # fmt: skip
    return FuzzProgram(seed, dtype, shapes, program, losses, seed + 7, composite, whole)


def wide_dtype(dtype: str) -> str:
    return WIDE.get(dtype, dtype)

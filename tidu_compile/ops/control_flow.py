"""Control-flow primitives: ``Scan``, ``Cond`` and ``WhileLoop``, each holding traced bodies.

A loop is one node whatever its trip count: the body is a ``Body`` (``ops.loop_body``)
traced once, run once per iteration (a compiled program on a ``CompiledExecutor``).

``Scan(body, consts, carries, length, reverse, saves)``: inputs ``K`` (consts, read
by every step), ``C`` (initial carries), ``X`` (stacked along axis 0, ``length`` rows);
``body(K, c, x_t) -> (c', y_t)``; outputs the final carries and the stacked ``y``::

    c = C
    for t in range(length) (reversed when ``reverse``):
        c, y[t] = body(K, c, X[t])
    return c, y

With ``saves`` the last ``carries`` of the ``y`` are the carries each step starts from
(the *history*), kept for the derivative (the frontend hides them).

Derivatives (JAX's scan rules, written with scans, so they nest to any order):

* JVP: the primal history ``H`` (the saved one, or a residual scan of the body that
  records it: ``checkpoint``) and a *linear* scan of the body's JVP
  (``node_graphs.jvp_graph``: residuals recomputed per step from ``K, H[t], X[t]``)::

      dc, dy = Scan(jvp body)(K, dK; dC; H, X, dX)        linear in dK, dC, dX

* transpose of a linear scan (every carry linear): a scan in the other direction over
  the body's VJP (``node_graphs.vjp_graph``), which carries the carries' cotangents and
  sums the cotangents of the linear consts::

      ct_C, ct_K, ct_X = Scan(vjp body, reverse=not reverse)(K_in; ct_c, 0; X_in, ct_y)

``Cond(true_body, false_body)``: ``pred`` (a bool scalar), then the operands; runs one
branch. Its JVP is a linear cond of the branches' JVPs, its transpose a linear cond of
their VJPs. ``WhileLoop(cond_body, body, cond_consts)`` is forward only (as
``jax.lax.while_loop`` under reverse mode): its derivative rules raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.evaluation import evaluate_graph
from tidu_compile.graph import Linearized, Primary
from tidu_compile.node_graphs import jvp_graph, vjp_graph
from tidu_compile.ops.base import (
    DIFFERENTIABLE_DTYPES,
    TensorOp,
    TensorType,
    primitive,
    refs,
)
from tidu_compile.ops.batching import batch_sequentially
from tidu_compile.ops.complex_ops import Constant
from tidu_compile.ops.loop_body import Body, BodyBuilder, native_loop, run_body

__all__ = ["Cond", "ControlFlow", "Scan", "WhileLoop"]


def _differentiable(t: TensorType) -> bool:
    return t.dtype in DIFFERENTIABLE_DTYPES


def _stacked(t: TensorType, length: int) -> TensorType:
    return TensorType((length, *t.shape), t.dtype)


def _zeros(b: Any, t: TensorType) -> int:
    """A zero tangent or cotangent: a linear op with no inputs."""
    return b.add_primitive(Constant(0.0, t.shape, t.dtype), [], Linearized(()))[0]


def _add_linear(b: Any, op: TensorOp, inputs: Sequence[Any], mask: Sequence[bool]) -> list[int]:
    return b.add_primitive(op, refs(inputs), Linearized(tuple(mask)))


def _only_linear_tangents(linear: tuple[bool, ...], ts: Sequence[Any]) -> bool:
    """Whether every tangent present is on an input the op is linear in."""
    return bool(linear) and all(t is None or lin for t, lin in zip(ts, linear, strict=True))


def _linear_jvp(b: Any, op: TensorOp, types: Sequence[TensorType], xs: Sequence[Any],
                ts: Sequence[Any]) -> list[int | None]:  # fmt: skip
    """The JVP of an op linear in its ``linear`` inputs, tangents on those only: the op
    itself on the tangents (zeros where absent), its other inputs unchanged."""
    linear = op.linear  # type: ignore[attr-defined]
    inputs = [(t if t is not None else _zeros(b, ty)) if lin else x
              for x, t, lin, ty in zip(xs, ts, linear, types, strict=True)]  # fmt: skip
    return list(_add_linear(b, op, inputs, linear))


class ControlFlow(TensorOp):
    """Base of the ops holding traced bodies: run between kernels by design, each
    iteration a call of the body's own program. ``vmap`` runs one loop per example
    (``batch_sequentially``: correct, ``B`` loops in the graph; a batched body is not
    written yet)."""

    library_call = True
    batch_rule = batch_sequentially


@dataclass(frozen=True)
class _ScanLayout:
    """Where a scan's consts, carries and xs sit among its inputs."""

    consts: int
    carries: int
    xs: int

    @property
    def carry_slice(self) -> slice:
        return slice(self.consts, self.consts + self.carries)

    @property
    def x_slice(self) -> slice:
        return slice(self.consts + self.carries, None)


@primitive
class Scan(ControlFlow):
    """A loop over the rows of ``xs`` with carries (see the module docstring)::

    %c, %ys = tidu.scan %k, %c0, %xs, op = "Scan(body=Body(...), ...)" : ... -> ...
    """

    body: Body
    consts: int
    carries: int
    length: int
    reverse: bool = False
    saves: bool = False
    #: The inputs the scan is linear in, jointly (the rules' linear scans; empty: none).
    linear: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        inputs, outputs = self.body.input_types, self.body.output_types
        if min(self.consts, self.carries) < 0 or self.consts + self.carries > len(inputs):
            raise ValueError(f"Scan: {self.consts} consts and {self.carries} carries do not "
                             f"fit a body of {len(inputs)} inputs")  # fmt: skip
        if self.length < 0:
            raise ValueError(f"Scan: length must be >= 0, got {self.length}")
        carried = inputs[self.consts : self.consts + self.carries]
        for i, (before, after) in enumerate(zip(carried, outputs, strict=False)):
            if before != after:
                raise TypeError(f"Scan: carry {i} enters the body as {before} and leaves it "
                                f"as {after}; a carry must keep its shape and dtype")  # fmt: skip
        if len(outputs) < self.carries:
            raise ValueError(f"Scan: the body returns {len(outputs)} values for "
                             f"{self.carries} carries")  # fmt: skip

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return len(self.body.input_types)

    @property
    def output_count(self) -> int:  # type: ignore[override]
        return len(self.body.output_types)

    @property
    def layout(self) -> _ScanLayout:
        xs = len(self.body.input_types) - self.consts - self.carries
        return _ScanLayout(self.consts, self.carries, xs)

    def expected_input_types(self) -> tuple[TensorType, ...]:
        types = self.body.input_types
        stacked = [_stacked(t, self.length) for t in types[self.layout.x_slice]]
        return (*types[: self.consts + self.carries], *stacked)

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        names = (["const"] * self.consts + ["carry"] * self.carries
                 + ["xs"] * self.layout.xs)  # fmt: skip
        for i, (got, want) in enumerate(zip(inputs, self.expected_input_types(), strict=True)):
            if got != want:
                raise TypeError(f"Scan: input {i} ({names[i]}) is {got}, the body was traced "
                                f"for {want}")  # fmt: skip
        outputs = self.body.output_types
        return (*outputs[: self.carries], *(_stacked(t, self.length)
                                            for t in outputs[self.carries :]))  # fmt: skip

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        layout = self.layout
        consts = list(arrays[: layout.consts])
        carry = list(arrays[layout.carry_slice])
        xs = arrays[layout.x_slice]
        native = native_loop(self)
        if native is not None:  # every iteration in one native call
            return tuple(native(consts, carry, xs, self.length))
        run = run_body(self.body)
        ys = [np.empty((self.length, *t.shape), t.dtype)
              for t in self.body.output_types[self.carries :]]  # fmt: skip
        steps = range(self.length - 1, -1, -1) if self.reverse else range(self.length)
        for t in steps:
            outputs = run([*consts, *carry, *(x[t] for x in xs)])
            carry = [np.asarray(c) for c in outputs[: self.carries]]
            for stacked, y in zip(ys, outputs[self.carries :], strict=True):
                stacked[t] = y
        return (*(np.array(c, copy=True) for c in carry), *ys)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The loop unrolled in Python, each step ``evaluate_graph`` of the body."""
        layout = self.layout
        carry = list(arrays[layout.carry_slice])
        rows: list[list[np.ndarray]] = []
        steps = range(self.length - 1, -1, -1) if self.reverse else range(self.length)
        for t in steps:
            values = [*arrays[: layout.consts], *carry, *(x[t] for x in arrays[layout.x_slice])]
            outputs = evaluate_graph(self.body.graph, dict(zip(self.body.recorded.input_keys,
                                                               values, strict=True)))  # fmt: skip
            carry, row = outputs[: self.carries], outputs[self.carries :]
            rows.append(row)
        if self.reverse:
            rows.reverse()
        ys = [np.array([row[j] for row in rows], dtype=t.dtype).reshape(self.length, *t.shape)
              for j, t in enumerate(self.body.output_types[self.carries :])]  # fmt: skip
        return (*carry, *ys)

    # ------------------------------------------------------------------ JVP

    def history_body(self) -> Body:
        """The body with the carries it starts from as extra ``y`` outputs."""
        b = BodyBuilder(self.body.input_types)
        outputs = b.inline(self.body.graph, b.inputs)
        return b.finish([*outputs, *b.inputs[self.layout.carry_slice]])

    def jvp_rule(self, b, xs, ys, ts, ctx):
        if _only_linear_tangents(self.linear, ts):
            return _linear_jvp(b, self, self.body.input_types, xs, ts)
        layout, types = self.layout, self.body.input_types
        if self.saves:
            history = list(ys[len(ys) - self.carries :])
        else:  # checkpointed: a residual scan records the history
            recorder = Scan(self.history_body(), self.consts, self.carries, self.length,
                            self.reverse, saves=True)  # fmt: skip
            outs = b.add_primitive(recorder, refs(xs), Primary())
            history = outs[len(outs) - self.carries :]
        present = [
            (layout.consts <= i < layout.consts + layout.carries or ts[i] is not None)
            and _differentiable(t)
            for i, t in enumerate(types)
        ]
        jvp = jvp_graph(self.body.recorded, present)
        tangent_index = {i: n for n, i in enumerate(i for i, p in enumerate(present) if p)}
        consts, carries, x_ids = (range(layout.consts), range(layout.consts, layout.consts
                                  + layout.carries), range(layout.consts + layout.carries,
                                  len(types)))  # fmt: skip
        t_consts = [i for i in consts if present[i]]
        t_carries = [i for i in carries if present[i]]
        t_xs = [i for i in x_ids if present[i]]
        # linear body inputs: K, dK | dC | H, X, dX
        order = ([("p", i) for i in consts] + [("t", i) for i in t_consts]
                 + [("t", i) for i in t_carries] + [("p", i) for i in carries]
                 + [("p", i) for i in x_ids] + [("t", i) for i in t_xs])  # fmt: skip
        lb = BodyBuilder([types[i] for _, i in order])
        position = {entry: lb.inputs[n] for n, entry in enumerate(order)}
        arguments = [position[("p", i)] for i in range(len(types))]
        arguments += [position[("t", i)] for i in sorted(tangent_index, key=tangent_index.get)]
        produced = lb.inline(jvp.recorded.graph, arguments)
        outputs_types = self.body.output_types
        wanted: list[int] = []  # body outputs the linear scan returns tangents of
        for j, t in enumerate(outputs_types):
            if _differentiable(t) and (j < self.carries and present[layout.consts + j]
                                       or j >= self.carries and jvp.results[j] is not None):
                wanted.append(j)
        lin_outputs = [lb.zeros(outputs_types[j]) if jvp.results[j] is None
                       else produced[jvp.results[j]] for j in wanted]  # fmt: skip
        carry_tangents = [ts[i] if ts[i] is not None else _zeros(b, types[i]) for i in t_carries]
        inputs = ([xs[i] for i in consts] + [ts[i] for i in t_consts] + carry_tangents
                  + list(history) + [xs[i] for i in x_ids] + [ts[i] for i in t_xs])  # fmt: skip
        mask = ([False] * len(consts) + [True] * (len(t_consts) + len(t_carries))
                + [False] * (len(carries) + len(x_ids)) + [True] * len(t_xs))  # fmt: skip
        linear_scan = Scan(lb.finish(lin_outputs), len(consts) + len(t_consts), len(t_carries),
                           self.length, self.reverse, linear=tuple(mask))  # fmt: skip
        results = _add_linear(b, linear_scan, inputs, mask)
        tangents: list[int | None] = [None] * len(outputs_types)
        for j, r in zip(wanted, results, strict=True):
            tangents[j] = r
        return tangents

    # ------------------------------------------------------------ transpose

    def transpose_rule(self, b, cts, inputs, role, ctx):
        layout, types = self.layout, self.body.input_types
        mask = role.active_mask
        if not all(mask[layout.carry_slice]):
            raise ADRuleError.invalid_input(
                self, ADRuleKind.TRANSPOSE, "every carry of a linear scan must be linear"
            )
        consts = range(layout.consts)
        x_ids = range(layout.consts + layout.carries, len(types))
        k_in = [i for i in consts if not mask[i]]
        k_active = [i for i in consts if mask[i]]
        x_in = [i for i in x_ids if not mask[i]]
        outputs_types = self.body.output_types
        y_slots = [j for j in range(self.carries, len(outputs_types)) if cts[j] is not None]
        slots = [*range(self.carries), *y_slots]
        vjp = vjp_graph(self.body.recorded, slots, mask)
        carry_types = [types[i] for i in range(layout.consts, layout.consts + layout.carries)]
        # transposed body inputs: K_in | ct_c, acc_K | X_in, ct_y
        tb = BodyBuilder([
            *(types[i] for i in k_in), *carry_types, *(types[i] for i in k_active),
            *(types[i] for i in x_in), *(outputs_types[j] for j in y_slots),
        ])  # fmt: skip
        n_kin, n_c, n_ka, n_xin = len(k_in), self.carries, len(k_active), len(x_in)
        at = iter(tb.inputs)
        kin_ids = [next(at) for _ in range(n_kin)]
        ct_c_ids = [next(at) for _ in range(n_c)]
        acc_ids = [next(at) for _ in range(n_ka)]
        xin_ids = [next(at) for _ in range(n_xin)]
        cty_ids = [next(at) for _ in y_slots]
        seed_of_slot = [*ct_c_ids, *cty_ids]
        arguments: list[int | None] = [seed_of_slot[s] for s in vjp.seeded]
        by_input: dict[int, int] = {**dict(zip(k_in, kin_ids, strict=True)),
                                    **dict(zip(x_in, xin_ids, strict=True))}  # fmt: skip
        arguments += [by_input.get(i) for i in range(len(types))]
        try:
            produced = tb.inline(vjp.recorded.graph, arguments)
        except ValueError as error:
            raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE,
                                            f"the body is not linear in its linear inputs ({error})"
                                            ) from None  # fmt: skip

        def cotangent(i: int) -> int | None:
            index = vjp.results[i]
            return None if index is None else produced[index]

        ct_carry_in = [cotangent(i) for i in range(layout.consts, layout.consts + layout.carries)]
        body_outputs = [tb.zeros(t) if c is None else c
                        for c, t in zip(ct_carry_in, carry_types, strict=True)]  # fmt: skip
        for acc, i in zip(acc_ids, k_active, strict=True):
            c = cotangent(i)
            body_outputs.append(acc if c is None else tb.add(acc, c))
        x_out = [i for i in x_ids if mask[i] and cotangent(i) is not None]
        body_outputs += [cotangent(i) for i in x_out]  # type: ignore[misc]
        seeds = [cts[j] if cts[j] is not None else _zeros(b, outputs_types[j])
                 for j in range(self.carries)]  # fmt: skip
        operands = ([inputs[i] for i in k_in] + seeds + [_zeros(b, types[i]) for i in k_active]
                    + [inputs[i] for i in x_in] + [cts[j] for j in y_slots])  # fmt: skip
        op_mask = ([False] * n_kin + [True] * (n_c + n_ka) + [False] * n_xin
                   + [True] * len(y_slots))  # fmt: skip
        transposed = Scan(tb.finish(body_outputs), n_kin, n_c + n_ka, self.length,
                          not self.reverse, linear=tuple(op_mask))  # fmt: skip
        results = _add_linear(b, transposed, operands, op_mask)
        cotangents: list[int | None] = [None] * len(types)
        for n, i in enumerate(range(layout.consts, layout.consts + layout.carries)):
            cotangents[i] = results[n]
        for n, i in enumerate(k_active):
            cotangents[i] = results[n_c + n]
        for n, i in enumerate(x_out):
            cotangents[i] = results[n_c + n_ka + n]
        return cotangents


def _check_branches(op: TensorOp, first: Body, second: Body, what: str) -> None:
    if first.input_types != second.input_types:
        raise TypeError(f"{op!r}: the {what} take different operands")
    if first.output_types != second.output_types:
        shown = " vs ".join(", ".join(map(str, b.output_types)) for b in (first, second))
        raise TypeError(f"cond: the branches return different types ({shown}); both must "
                        "return the same structure of shapes and dtypes")  # fmt: skip


@primitive
class Cond(ControlFlow):
    """``true_body(*operands) if pred else false_body(*operands)``; ``pred`` a bool scalar::

    %r = tidu.cond %pred, %x, op = "Cond(true_body=Body(...), ...)" : ... -> ...
    """

    true_body: Body
    false_body: Body
    #: The inputs the cond is linear in, jointly (the rules' linear conds; empty: none).
    linear: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        _check_branches(self, self.true_body, self.false_body, "branches")

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return 1 + len(self.true_body.input_types)

    @property
    def output_count(self) -> int:  # type: ignore[override]
        return len(self.true_body.output_types)

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        if inputs[0] != TensorType((), "bool"):
            raise TypeError(f"cond: the predicate must be a bool scalar, got {inputs[0]}")
        for i, (got, want) in enumerate(zip(inputs[1:], self.true_body.input_types, strict=True)):
            if got != want:
                raise TypeError(f"cond: operand {i} is {got}, the branches were traced for {want}")
        return self.true_body.output_types

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        body = self.true_body if bool(arrays[0]) else self.false_body
        return tuple(np.array(v, copy=True) for v in run_body(body)(list(arrays[1:])))

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        body = self.true_body if arrays[0] else self.false_body
        inputs = dict(zip(body.recorded.input_keys, arrays[1:], strict=True))
        return tuple(evaluate_graph(body.graph, inputs))

    def jvp_rule(self, b, xs, ys, ts, ctx):
        types = self.true_body.input_types
        if _only_linear_tangents(self.linear, ts):
            return _linear_jvp(b, self, (TensorType((), "bool"), *types), xs, ts)
        present = [ts[i + 1] is not None and _differentiable(t) for i, t in enumerate(types)]
        jvps = [jvp_graph(body.recorded, present) for body in (self.true_body, self.false_body)]
        outputs = self.true_body.output_types
        wanted = [j for j, t in enumerate(outputs)
                  if _differentiable(t) and any(g.results[j] is not None
                                                for g in jvps)]  # fmt: skip
        tangent_types = [t for t, p in zip(types, present, strict=True) if p]
        bodies = []
        for g in jvps:
            lb = BodyBuilder([*types, *tangent_types])
            produced = lb.inline(g.recorded.graph, lb.inputs)
            bodies.append(lb.finish([lb.zeros(outputs[j]) if g.results[j] is None
                                     else produced[g.results[j]] for j in wanted]))  # fmt: skip
        tangents_in = [ts[i + 1] for i, p in enumerate(present) if p]
        mask = [False] * (1 + len(types)) + [True] * len(tangents_in)
        results = _add_linear(b, Cond(*bodies, linear=tuple(mask)), [*xs, *tangents_in], mask)
        tangents: list[int | None] = [None] * len(outputs)
        for j, r in zip(wanted, results, strict=True):
            tangents[j] = r
        return tangents

    def transpose_rule(self, b, cts, inputs, role, ctx):
        mask = role.active_mask[1:]
        types = self.true_body.input_types
        outputs = self.true_body.output_types
        slots = [j for j, c in enumerate(cts) if c is not None]
        vjps = [vjp_graph(body.recorded, slots, mask) for body in (self.true_body, self.false_body)]
        inactive = [i for i, m in enumerate(mask) if not m]
        active = [i for i, m in enumerate(mask)
                  if m and any(g.results[i] is not None for g in vjps)]  # fmt: skip
        bodies = []
        for g in vjps:
            tb = BodyBuilder([*(types[i] for i in inactive), *(outputs[j] for j in slots)])
            by_input = dict(zip(inactive, tb.inputs, strict=False))
            seeds = tb.inputs[len(inactive):]
            arguments = [seeds[s] for s in g.seeded] + [by_input.get(i) for i in range(len(types))]
            try:
                produced = tb.inline(g.recorded.graph, arguments)
            except ValueError as error:
                raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE,
                                                f"a branch is not linear ({error})") from None
            bodies.append(tb.finish([tb.zeros(types[i]) if g.results[i] is None
                                     else produced[g.results[i]] for i in active]))  # fmt: skip
        operands = [inputs[0], *(inputs[i + 1] for i in inactive), *(cts[j] for j in slots)]
        op_mask = [False] * (1 + len(inactive)) + [True] * len(slots)
        results = _add_linear(b, Cond(*bodies, linear=tuple(op_mask)), operands, op_mask)
        cotangents: list[int | None] = [None] * (1 + len(types))
        for i, r in zip(active, results, strict=True):
            cotangents[i + 1] = r
        return cotangents


@primitive
class WhileLoop(ControlFlow):
    """``while cond_body(Kc, c): c = body(Kb, c)``; inputs ``Kc`` (the first
    ``cond_consts``), ``Kb``, then the carries. Forward only::

    %c = tidu.while_loop %kc, %kb, %c0, op = "WhileLoop(...)" : ... -> ...
    """

    cond_body: Body
    body: Body
    cond_consts: int

    def __post_init__(self) -> None:
        carries = self.cond_body.input_types[self.cond_consts :]
        body_consts = len(self.body.input_types) - len(carries)
        if self.cond_body.output_types != (TensorType((), "bool"),):
            shown = ", ".join(map(str, self.cond_body.output_types))
            raise TypeError(f"while_loop: cond_fun must return one bool scalar, got {shown}")
        if body_consts < 0 or self.body.input_types[body_consts:] != carries:
            raise TypeError("while_loop: cond_fun and body_fun take different carries")
        for i, (before, after) in enumerate(zip(carries, self.body.output_types, strict=True)):
            if before != after:
                raise TypeError(
                    f"while_loop: carry {i} enters body_fun as {before} and leaves it as "
                    f"{after}; a carry must keep its shape and dtype"
                )

    @property
    def carries(self) -> int:
        return len(self.cond_body.input_types) - self.cond_consts

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return self.cond_consts + len(self.body.input_types)

    @property
    def output_count(self) -> int:  # type: ignore[override]
        return self.carries

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        expected = (*self.cond_body.input_types[: self.cond_consts], *self.body.input_types)
        for i, (got, want) in enumerate(zip(inputs, expected, strict=True)):
            if got != want:
                raise TypeError(f"while_loop: input {i} is {got}, the loop was traced for {want}")
        return self.body.output_types

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        native = native_loop(self)
        if native is not None:  # every iteration in one native call
            return tuple(native(arrays))
        cond_consts = list(arrays[: self.cond_consts])
        body_consts = list(arrays[self.cond_consts : len(arrays) - self.carries])
        carry = list(arrays[len(arrays) - self.carries :])
        test, step = run_body(self.cond_body), run_body(self.body)
        while bool(test([*cond_consts, *carry])[0]):
            carry = [np.asarray(c) for c in step([*body_consts, *carry])]
        return tuple(np.array(c, copy=True) for c in carry)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        split = len(arrays) - self.carries
        carry = list(arrays[split:])

        def run(body: Body, consts: Sequence[np.ndarray]) -> list[np.ndarray]:
            inputs = dict(zip(body.recorded.input_keys, [*consts, *carry], strict=True))
            return evaluate_graph(body.graph, inputs)

        while run(self.cond_body, arrays[: self.cond_consts])[0]:
            carry = run(self.body, arrays[self.cond_consts : split])
        return tuple(carry)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        raise ADRuleError.invalid_input(
            self, ADRuleKind.JVP,
            "while_loop is forward only (its trip count depends on the data); for a "
            "derivative use tc.scan, or tc.fori_loop with Python int bounds",
        )

    def transpose_rule(self, b, cts, inputs, role, ctx):
        raise ADRuleError.unsupported(self, ADRuleKind.TRANSPOSE)

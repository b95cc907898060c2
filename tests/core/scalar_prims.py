"""A small scalar primitive set for testing the tidu core without numpy.

Operands are Python ``float`` or ``complex``. Every primitive is a frozen dataclass
subclassing ``tidu_compile.ad.Primitive``; its JVP and transpose rules are written with
the same primitives, so linear graphs can be transposed and linearized again.

Also here:

- ``EvalBuilder``: a ``PrimitiveBuilder`` that evaluates each op as it is added, with
  ``External(key)`` refs looked up in a dict;
- ``evaluate``: replays a graph (and its parents) through an ``EvalBuilder``;
- ``jvp_values`` / ``vjp_values`` / ``vjp_values_graph``: evaluate linearized and
  transposed graphs on concrete numbers;
- ``ScalarExecutor``: a ``BackwardExecutor`` over floats;
- ``Tape`` / ``Var``: a tiny eager frontend over ``Recorder``;
- ``RuleLog``: a ctx object that records every rule call it is handed.

Rules log to ``ctx`` when it is a ``RuleLog``: that is how tests check that ``ctx``
reaches every rule call.
"""

from __future__ import annotations

import cmath
import math
from abc import abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidu_compile.ad import (
    ADRuleError,
    ADRuleKind,
    LinearizedGraph,
    Name,
    Primitive,
    PrimitiveBuilder,
    PrimitiveGraph,
    linear_transpose,
    linear_transpose_with_builder,
)
from tidu_compile.eager import (
    BackwardExecutor,
    EagerInput,
    RecordedGraph,
    Recorder,
    Trace,
)
from tidu_compile.graph import (
    Derived,
    External,
    Graph,
    Input,
    Linearized,
    Local,
    Primary,
    PrimitiveValue,
    Role,
    ValueKey,
    resolve,
)

Scalar = float | complex
Ref = PrimitiveValue | int

LIN1 = Linearized((True,))
LIN_FIRST = Linearized((True, False))
LIN_SECOND = Linearized((False, True))
LIN_BOTH = Linearized((True, True))


# --------------------------------------------------------------------------- ctx


@dataclass
class RuleLog:
    """A ctx object: every rule that receives it appends ``(kind, op, args)``."""

    calls: list[tuple[ADRuleKind, Primitive, tuple[int | None, ...]]] = field(default_factory=list)

    def count(self, kind: ADRuleKind, op_type: type | None = None) -> int:
        return sum(
            1
            for k, op, _ in self.calls
            if k is kind and (op_type is None or isinstance(op, op_type))
        )

    def ops(self, kind: ADRuleKind) -> list[Primitive]:
        return [op for k, op, _ in self.calls if k is kind]


def log_rule(ctx: Any, kind: ADRuleKind, op: Primitive, args: Sequence[int | None]) -> None:
    if isinstance(ctx, RuleLog):
        ctx.calls.append((kind, op, tuple(args)))


# --------------------------------------------------------------------------- helpers


def _unary(real: Callable[[float], float], cplx: Callable[[complex], complex]) -> Callable:
    def apply(a: Scalar) -> Scalar:
        return cplx(a) if isinstance(a, complex) else real(a)

    return apply


_exp = _unary(math.exp, cmath.exp)
_sin = _unary(math.sin, cmath.sin)
_cos = _unary(math.cos, cmath.cos)


def _conj(a: Scalar) -> Scalar:
    return a.conjugate()


def _mask(op: Primitive, role: Role) -> tuple[bool, ...]:
    if not isinstance(role, Linearized):
        raise ADRuleError.invalid_input(op, ADRuleKind.TRANSPOSE, "op is not in a linear role")
    return role.active_mask


def add_all(builder: PrimitiveBuilder, terms: Sequence[int]) -> int | None:
    """Sum of linear terms (None when there are none)."""
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        (total,) = builder.add_primitive(Add(), [total, term], LIN_BOTH)
    return total


def scale_by_residual(builder: PrimitiveBuilder, linear: int, residual: Ref) -> int:
    """``linear * residual``, linear in the first operand."""
    (out,) = builder.add_primitive(Mul(), [linear, residual], LIN_FIRST)
    return out


# --------------------------------------------------------------------------- prims


class ScalarPrim(Primitive):
    """Base of the scalar primitive set: evaluation plus ``Add`` for accumulation."""

    @abstractmethod
    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]: ...

    @classmethod
    def add(cls) -> Primitive:
        return Add()


@dataclass(frozen=True)
class Add(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] + args[1],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return [add_all(builder, [t for t in tangent_inputs if t is not None])]

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        (ct,) = cotangent_outputs
        return [ct if active else None for active in _mask(self, role)]


@dataclass(frozen=True)
class SumN(ScalarPrim):
    """n-ary sum; its transpose broadcasts the one scalar cotangent to every input."""

    n: int

    @property
    def input_count(self) -> int:
        return self.n

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (sum(args),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        present = [t for t in tangent_inputs if t is not None]
        if len(present) == 1:
            return [present[0]]
        role = Linearized((True,) * len(present))
        (out,) = builder.add_primitive(SumN(len(present)), present, role)
        return [out]

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        (ct,) = cotangent_outputs
        return [ct if active else None for active in _mask(self, role)]


@dataclass(frozen=True)
class Mul(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (args[0] * args[1],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        x, y = primal_inputs
        dx, dy = tangent_inputs
        terms = []
        if dx is not None:
            terms += builder.add_primitive(Mul(), [dx, y], LIN_FIRST)
        if dy is not None:
            terms += builder.add_primitive(Mul(), [x, dy], LIN_SECOND)
        return [add_all(builder, terms)]

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        mask = _mask(self, role)
        if all(mask):
            raise ADRuleError.invalid_input(self, ADRuleKind.TRANSPOSE, "x*y is not linear in both")
        (ct,) = cotangent_outputs
        result: list[int | None] = [None, None]
        for i, active in enumerate(mask):
            if active:
                (other,) = builder.add_primitive(Conj(), [inputs[1 - i]], Primary())
                if i == 0:
                    result[0] = scale_by_residual(builder, ct, other)
                else:
                    (result[1],) = builder.add_primitive(Mul(), [other, ct], LIN_SECOND)
        return result


@dataclass(frozen=True)
class Neg(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (-args[0],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return builder.add_primitive(Neg(), [tangent_inputs[0]], LIN1)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        return builder.add_primitive(Neg(), [cotangent_outputs[0]], LIN1)


@dataclass(frozen=True)
class Scale(ScalarPrim):
    """``c * x`` for a constant ``c`` (a parameter of the op)."""

    c: Scalar

    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (self.c * args[0],)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return builder.add_primitive(self, [tangent_inputs[0]], LIN1)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        return builder.add_primitive(Scale(_conj(self.c)), [cotangent_outputs[0]], LIN1)


@dataclass(frozen=True)
class Conj(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_conj(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        return builder.add_primitive(Conj(), [tangent_inputs[0]], LIN1)

    def transpose_rule(self, builder, cotangent_outputs, inputs, role, ctx):
        # y = conj(z): df/dz = 0, df/dconj(z) = 1, so ct_z = conj(ct_y).
        log_rule(ctx, ADRuleKind.TRANSPOSE, self, cotangent_outputs)
        return builder.add_primitive(Conj(), [cotangent_outputs[0]], LIN1)


@dataclass(frozen=True)
class Exp(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_exp(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        # d exp(x) = dx * exp(x): the residual is the primal output.
        return [scale_by_residual(builder, tangent_inputs[0], primal_outputs[0])]


@dataclass(frozen=True)
class Sin(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_sin(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        (c,) = builder.add_primitive(Cos(), [primal_inputs[0]], Primary())
        return [scale_by_residual(builder, tangent_inputs[0], c)]


@dataclass(frozen=True)
class Cos(ScalarPrim):
    @property
    def input_count(self) -> int:
        return 1

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_cos(args[0]),)

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        (s,) = builder.add_primitive(Sin(), [primal_inputs[0]], Primary())
        (minus_s,) = builder.add_primitive(Neg(), [s], Primary())
        return [scale_by_residual(builder, tangent_inputs[0], minus_s)]


@dataclass(frozen=True)
class SinCos(ScalarPrim):
    """One input, two outputs: ``(sin x, cos x)``."""

    @property
    def input_count(self) -> int:
        return 1

    @property
    def output_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        return (_sin(args[0]), _cos(args[0]))

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        s, c = primal_outputs
        (dx,) = tangent_inputs
        (minus_s,) = builder.add_primitive(Neg(), [s], Primary())
        return [scale_by_residual(builder, dx, c), scale_by_residual(builder, dx, minus_s)]


@dataclass(frozen=True)
class Polar(ScalarPrim):
    """Two inputs, two outputs: ``(r cos t, r sin t)``."""

    @property
    def input_count(self) -> int:
        return 2

    @property
    def output_count(self) -> int:
        return 2

    def evaluate(self, *args: Scalar) -> tuple[Scalar, ...]:
        r, t = args
        return (r * _cos(t), r * _sin(t))

    def jvp_rule(self, builder, primal_inputs, primal_outputs, tangent_inputs, ctx):
        log_rule(ctx, ADRuleKind.JVP, self, tangent_inputs)
        _, t = primal_inputs
        px, py = primal_outputs
        dr, dt = tangent_inputs
        dx_terms: list[int] = []
        dy_terms: list[int] = []
        if dr is not None:
            (c,) = builder.add_primitive(Cos(), [t], Primary())
            (s,) = builder.add_primitive(Sin(), [t], Primary())
            dx_terms.append(scale_by_residual(builder, dr, c))
            dy_terms.append(scale_by_residual(builder, dr, s))
        if dt is not None:
            (minus_py,) = builder.add_primitive(Neg(), [py], Primary())
            dx_terms.append(scale_by_residual(builder, dt, minus_py))
            dy_terms.append(scale_by_residual(builder, dt, px))
        return [add_all(builder, dx_terms), add_all(builder, dy_terms)]


ALL_PRIMS: tuple[type[ScalarPrim], ...] = (
    Add,
    SumN,
    Mul,
    Neg,
    Scale,
    Conj,
    Exp,
    Sin,
    Cos,
    SinCos,
    Polar,
)


# --------------------------------------------------------------------------- builder


def as_value_key(key: Hashable) -> ValueKey:
    return key if isinstance(key, (Input, Derived)) else Input(key)


class EvalBuilder(PrimitiveBuilder):
    """Evaluates every op immediately. Ids index ``values``; ``External`` refs are looked
    up in ``external`` (value key -> number)."""

    def __init__(self, external: Mapping[ValueKey, Scalar] | None = None) -> None:
        self.external: dict[ValueKey, Scalar] = dict(external) if external else {}
        self.values: list[Scalar] = []
        self.ops: list[tuple[Primitive, Role]] = []

    def constant(self, value: Scalar) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def lookup(self, ref: Ref) -> Scalar:
        if isinstance(ref, bool):
            raise TypeError(f"inputs: not a value id: {ref!r}")
        if isinstance(ref, int):
            return self.values[ref]
        if isinstance(ref, Local):
            return self.values[ref.id]
        if isinstance(ref, External):
            if ref.key not in self.external:
                raise KeyError(f"no value for external key {ref.key!r}")
            return self.external[ref.key]
        raise TypeError(f"inputs: not a ref: {ref!r}")

    def add_primitive(self, op: Primitive, inputs: Sequence[Ref], role: Role) -> list[int]:
        if not isinstance(op, ScalarPrim):
            raise TypeError(f"op: not a scalar primitive: {op!r}")
        if len(inputs) != op.input_count:
            raise ValueError(f"inputs: {op!r} takes {op.input_count}, got {len(inputs)}")
        outputs = op.evaluate(*(self.lookup(r) for r in inputs))
        if len(outputs) != op.output_count:
            raise ValueError(f"{op!r} evaluated to {len(outputs)} values")
        self.ops.append((op, role))
        return [self.constant(v) for v in outputs]


def evaluate(graph: Graph, data: Mapping[Hashable, Scalar]) -> dict[ValueKey, Scalar]:
    """Every value of ``graph`` and its parents computable from ``data``.

    ``data`` keys are value keys or raw input keys. Ops with a missing input (tangent or
    cotangent inputs not given) are skipped, so a linear graph evaluated from primal data
    yields its residuals.
    """
    env = {as_value_key(k): v for k, v in data.items()}
    builder = EvalBuilder()
    builder.external = env  # shared: results become visible to later ops
    for g in resolve(graph).graphs:
        for node in g.operations:
            out_keys = [g.values[o].key for o in node.outputs]
            if all(k in env for k in out_keys):
                continue
            in_keys = [g.key_of(r) for r in node.inputs]
            if any(k not in env for k in in_keys):
                continue
            ids = builder.add_primitive(node.operation, [External(k) for k in in_keys], node.role)
            for k, i in zip(out_keys, ids, strict=True):
                env.setdefault(k, builder.values[i])
    return env


def jvp_values(
    linear: LinearizedGraph,
    primals: Mapping[Hashable, Scalar],
    tangents: Mapping[Hashable, Scalar],
) -> list[Scalar | None]:
    """Evaluate ``linear``: ``tangents`` maps each raw ``wrt`` key to its tangent."""
    data: dict[Hashable, Scalar] = dict(primals)
    for raw, local_id in linear.tangent_inputs:
        data[linear.graph.values[local_id].key] = tangents[raw]
    env = evaluate(linear.graph, data)
    return [None if t is None else env[linear.graph.values[t].key] for t in linear.tangent_outputs]


def vjp_values(
    linear: LinearizedGraph,
    primals: Mapping[Hashable, Scalar],
    cotangents: Sequence[Scalar | None],
    ctx: Any = None,
) -> list[Scalar | None]:
    """Transpose ``linear`` into an ``EvalBuilder``; one cotangent per tangent output."""
    if len(cotangents) != len(linear.tangent_outputs):
        raise ValueError("cotangents: one per tangent output")
    return vjp_values_from_data(linear, evaluate(linear.graph, primals), cotangents, ctx)


def vjp_values_graph(
    linear: LinearizedGraph,
    primals: Mapping[Hashable, Scalar],
    cotangents: Sequence[Scalar],
    ctx: Any = None,
) -> list[Scalar | None]:
    """Same as ``vjp_values`` through ``linear_transpose`` (a graph), then evaluated."""
    transposed = linear_transpose(linear, ctx)
    data: dict[Hashable, Scalar] = dict(primals)
    pairs = zip(cotangents, linear.tangent_outputs, strict=True)
    present = [ct for ct, t in pairs if t is not None]
    for (raw, _), ct in zip(transposed.tangent_inputs, present, strict=True):
        data[raw] = ct
    env = evaluate(transposed.graph, data)
    return [
        None if t is None else env[transposed.graph.values[t].key]
        for t in transposed.tangent_outputs
    ]


def output_key(linear: LinearizedGraph, index: int = 0) -> ValueKey:
    """Value key of tangent output ``index`` (to linearize a linear graph again)."""
    local_id = linear.tangent_outputs[index]
    if local_id is None:
        raise ValueError(f"tangent output {index} is None")
    return linear.graph.values[local_id].key


# --------------------------------------------------------------------------- executor


class ScalarExecutor(BackwardExecutor):
    """A ``BackwardExecutor`` over Python numbers, counting what it is asked to do."""

    def __init__(self) -> None:
        self.linearize_calls: list[tuple[int, ...]] = []
        self.forward_calls = 0
        self.transpose_calls = 0
        self.add_calls = 0
        self.ctx_seen: list[Any] = []

    def execute_forward(self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]) -> dict:
        self.forward_calls += 1
        return evaluate(graph.graph, initial_data)

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list:
        self.transpose_calls += 1
        self.ctx_seen.append(ctx)
        return vjp_values_from_data(linear, external_data, cotangent_out, ctx)

    def add_operands(self, a: Any, b: Any) -> Any:
        self.add_calls += 1
        return a + b

    def linearize_recorded_graph(
        self, graph: RecordedGraph, output_slots: Sequence[int], ctx: Any
    ) -> LinearizedGraph:
        self.linearize_calls.append(tuple(output_slots))
        self.ctx_seen.append(ctx)
        return super().linearize_recorded_graph(graph, output_slots, ctx)


def vjp_values_from_data(
    linear: LinearizedGraph,
    external_data: Mapping[ValueKey, Any],
    cotangent_out: Sequence[Any],
    ctx: Any,
) -> list[Any]:
    builder = EvalBuilder(external_data)
    seeds = [
        None if ct is None else builder.constant(ct)
        for ct, t in zip(cotangent_out, linear.tangent_outputs, strict=True)
        if t is not None
    ]
    ids = linear_transpose_with_builder(linear, builder, seeds, ctx)
    return [None if i is None else builder.values[i] for i in ids]


# --------------------------------------------------------------------------- eager


@dataclass(frozen=True)
class Var:
    """An eager scalar: its value and its tape edge."""

    value: Scalar
    key: ValueKey
    trace: Trace | None
    requires_grad: bool

    def as_input(self) -> EagerInput:
        return EagerInput(self.key, self.trace, self.requires_grad, self.value)


class Tape:
    """A tiny eager frontend: evaluates ops on numbers and records them."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder = recorder if recorder is not None else Recorder()

    def leaf(self, value: Scalar, requires_grad: bool = True) -> Var:
        (key,) = self.recorder.fresh_input_keys(1)
        return Var(value, key, None, requires_grad)

    def apply(self, op: ScalarPrim, *args: Var) -> list[Var]:
        graph = RecordedGraph.from_primitive(op, [Name(f"in{i}") for i in range(len(args))])
        return self.apply_graph(graph, *args)

    def apply_graph(self, graph: RecordedGraph, *args: Var) -> list[Var]:
        data = {k: a.value for k, a in zip(graph.input_keys, args, strict=True)}
        env = evaluate(graph.graph, data)
        values = [env[k] for k in graph.output_keys]
        outs = self.recorder.record_graph(graph, [a.as_input() for a in args], values)
        return [Var(v, o.key, o.trace, o.requires_grad) for v, o in zip(values, outs, strict=True)]

    def apply1(self, op: ScalarPrim, *args: Var) -> Var:
        (out,) = self.apply(op, *args)
        return out


# --------------------------------------------------------------------------- graphs


def emit(builder: PrimitiveBuilder, op: Primitive, *inputs: Ref) -> int:
    """Add a one-output Primary op; returns its id."""
    (out,) = builder.add_primitive(op, list(inputs), Primary())
    return out

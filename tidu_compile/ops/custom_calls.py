"""Calls of traced user functions with the user's own derivative rules.

``tc.custom_jvp``, ``tc.custom_vjp`` and ``tc.autograd.Function`` trace the user's
functions (written with tidu_compile functions) into graphs of standard ops
(``TracedGraph``) and apply one of these call ops; its rules *inline* those graphs, so
linear and transposed graphs stay graphs of the standard op set, compiled like any
(``compiler.calls`` inlines the primal call too)::

    f = CustomJVPCall("log1pexp", function=F, jvp=J)        F: x -> log(1 + exp(x))
    linearize:  the ops of J(x, t) -> (y, t * sigmoid(x)), each op Linearized in the
                inputs that depend on the tangent t, the others Primary (residuals)

    g = CustomVJPCall("clip_gradient", fwd=F, bwd=B)         F: x -> (x, residuals)
    linearize:  residuals = F's ops on x (Primary);  dy = CustomVJPLinear(res, dx)
    transpose:  ct_x = the ops of B(res, ct_y), Linearized in what depends on ct_y

A graph's inputs are its declared inputs, then the constants it closed over; a call's
inputs are the user's arguments, then every constant of its graphs (``constants`` maps
a graph's constant inputs to the call's). A traced graph compares by structure (its
input and output keys), so retracing a function gives an equal op.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.evaluation import evaluate_graph
from tidu_compile.graph import External, Graph, Linearized, Primary, PrimitiveValue, ValueKey
from tidu_compile.ops.base import TensorOp, TensorType, apply
from tidu_compile.ops.complex_ops import Constant
from tidu_compile.ops.elementwise import Div, FullLike, Mul
from tidu_compile.ops.structural import DotGeneral
from tidu_compile.printing import graph_to_text

__all__ = [
    "CALL_OPS", "CustomJVPCall", "CustomVJPCall", "CustomVJPLinear", "TracedGraph", "inline",
]  # fmt: skip

#: A builder operand: a builder id or a value ref.
Operand = PrimitiveValue | int
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class TracedGraph:
    """A function traced into ``graph``: ``arity`` declared inputs, then constant inputs
    (``constants[i]``: the call's constant index of constant input ``i``); the
    ``input_types`` and ``output_types`` of the trace."""

    graph: Graph
    arity: int
    constants: tuple[int, ...]
    input_types: tuple[TensorType, ...]
    output_types: tuple[TensorType, ...]
    key: tuple[Any, ...] = field(init=False, repr=False)
    digest: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        structure = (self.arity, self.constants, tuple(self.graph.input_keys()),
                     tuple(self.graph.output_keys()), self.input_types)  # fmt: skip
        object.__setattr__(self, "key", structure)
        # what the call ops print, so that a program's text (and a loop body's digest,
        # which reads its ops' text) tells two traced functions of one name apart
        text = "|".join([graph_to_text(self.graph), str(self.arity), str(self.constants),
                         ",".join(map(str, self.input_types))])  # fmt: skip
        object.__setattr__(self, "digest", hashlib.sha256(text.encode()).hexdigest()[:16])

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, TracedGraph) and self.key == other.key)

    def __hash__(self) -> int:
        return hash(self.key)

    def operands(self, declared: Sequence[T], call_constants: Sequence[T]) -> list[T]:
        """The operands of the graph's inputs: ``declared``, then its constants among
        ``call_constants``."""
        return [*declared, *(call_constants[k] for k in self.constants)]

    def evaluate(self, declared: Sequence[Any], call_constants: Sequence[Any]) -> list[Any]:
        """The outputs' values (numpy, op by op)."""
        values = self.operands(declared, call_constants)
        raw = [self.graph.values[i].key.key for i in self.graph.inputs]  # type: ignore[union-attr]
        return evaluate_graph(self.graph, dict(zip(raw, values, strict=True)))

    def active_outputs(self, active: Sequence[bool]) -> list[bool]:
        """Which outputs depend on the inputs marked ``active`` (declared inputs only)."""
        reached = {i for i, a in zip(self.graph.inputs, active, strict=False) if a}
        for node in self.graph.operations:
            if any(r.id in reached for r in node.inputs):  # type: ignore[union-attr]
                reached.update(node.outputs)
        return [o in reached for o in self.graph.outputs]

    def is_zero_output(self, index: int) -> bool:
        """Whether output ``index`` is a constant zero (``zeros_like(x)``)."""
        producer = self.graph.values[self.graph.outputs[index]].producer
        if producer is None:
            return False
        op = self.graph.operations[producer[0]].operation
        return isinstance(op, Constant) and op.value == 0

    def nonlinear_op(self, active: Sequence[bool]) -> Any:
        """An op applied to values depending on the ``active`` inputs that is not linear
        in them (it has no transpose rule, or is a product of two of them), else None."""
        reached = {i for i, a in zip(self.graph.inputs, active, strict=False) if a}
        for node in self.graph.operations:
            hits = [r.id in reached for r in node.inputs]  # type: ignore[union-attr]
            if not any(hits):
                continue
            op = node.operation
            if type(op).transpose_rule is TensorOp.transpose_rule or (
                isinstance(op, (Mul, DotGeneral)) and all(hits)
            ) or (isinstance(op, Div) and hits[1]):
                return op
            reached.update(node.outputs)
        return None


def inline(
    builder: Any, traced: TracedGraph, operands: Sequence[Operand], active: Sequence[bool]
) -> tuple[list[Operand], list[bool]]:
    """Add ``traced``'s operations to ``builder`` on ``operands`` (one per graph input);
    an op reading a value that depends on the ``active`` operands (tangents, cotangents)
    is ``Linearized`` in those, the others ``Primary``. Returns the outputs' operands and
    whether each is active."""
    graph = traced.graph
    where: dict[int, Operand] = dict(zip(graph.inputs, operands, strict=True))
    reached = {i for i, a in zip(graph.inputs, active, strict=True) if a}
    for node in graph.operations:
        mask = tuple(r.id in reached for r in node.inputs)  # type: ignore[union-attr]
        role = Linearized(mask) if any(mask) else Primary()
        outputs = builder.add_primitive(
            node.operation, [where[r.id] for r in node.inputs], role  # type: ignore[union-attr]
        )
        where.update(zip(node.outputs, outputs, strict=True))
        if any(mask):
            reached.update(node.outputs)
    return [where[o] for o in graph.outputs], [o in reached for o in graph.outputs]


def _check_input_types(op: Any, expected: Sequence[TensorType], got: Sequence[TensorType]) -> None:
    if len(got) != len(expected):
        raise ValueError(f"{op!r} takes {len(expected)} inputs, got {len(got)}")
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        if want != have:
            raise TypeError(
                f"{op!r}: input {index} is {have}, the traced function took {want}"
            )


def _zero_like(builder: Any, primal: ValueKey) -> int:
    """A zero tangent of ``primal``'s type (a residual: nothing depends on a tangent)."""
    return apply(builder, FullLike(0.0), [External(primal)])


@dataclass(frozen=True)
class CustomJVPCall(TensorOp):
    """``f(*args)`` whose JVP is the user's rule ``jvp``: ``function`` takes the
    arguments (then constants), ``jvp`` the primals, the tangents (then constants) and
    gives the primal outputs, then the tangent outputs."""

    name: str
    function: TracedGraph
    jvp: TracedGraph
    constant_count: int

    def __repr__(self) -> str:
        return f"CustomJVPCall({self.name!r}, {self.function.digest}, {self.jvp.digest})"

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return self.function.arity + self.constant_count

    @property
    def output_count(self) -> int:  # type: ignore[override]
        return len(self.function.output_types)

    @property
    def body(self) -> TracedGraph:
        """The graph the call computes (what the compiler inlines)."""
        return self.function

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        _check_input_types(self, self.function.input_types, inputs[: self.function.arity])
        return self.function.output_types

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        arity = self.function.arity
        return tuple(self.function.evaluate(arrays[:arity], arrays[arity:]))

    def jvp_rule(self, b, xs, ys, ts, ctx):
        arity, count = self.function.arity, self.output_count
        primals = [External(x) for x in xs[:arity]]
        tangents = [t if t is not None else _zero_like(b, x)
                    for x, t in zip(xs[:arity], ts[:arity], strict=True)]  # fmt: skip
        constants = [External(x) for x in xs[arity:]]
        operands = self.jvp.operands([*primals, *tangents], constants)
        active = [False] * arity + [t is not None for t in ts[:arity]]
        outputs, reached = inline(b, self.jvp, operands, active + [False] * len(self.jvp.constants))
        return [o if r else None for o, r in zip(outputs[count:], reached[count:], strict=True)]


@dataclass(frozen=True)
class CustomVJPCall(TensorOp):
    """``f(*args)`` whose VJP is the user's rule ``bwd``: ``fwd`` takes the arguments
    (then constants) and gives the outputs, then the residuals; ``bwd`` takes the
    residuals and one cotangent per output (then constants) and gives one cotangent per
    argument."""

    name: str
    fwd: TracedGraph
    bwd: TracedGraph
    output_total: int
    constant_count: int

    def __repr__(self) -> str:
        return f"CustomVJPCall({self.name!r}, {self.fwd.digest}, {self.bwd.digest})"

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return self.fwd.arity + self.constant_count

    @property
    def output_count(self) -> int:  # type: ignore[override]
        return self.output_total

    @property
    def body(self) -> TracedGraph:
        """``fwd``: the compiler inlines it, its residual outputs unread."""
        return self.fwd

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        _check_input_types(self, self.fwd.input_types, inputs[: self.fwd.arity])
        return self.fwd.output_types[: self.output_total]

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        arity = self.fwd.arity
        return tuple(self.fwd.evaluate(arrays[:arity], arrays[arity:])[: self.output_total])

    def jvp_rule(self, b, xs, ys, ts, ctx):
        arity = self.fwd.arity
        constants = [External(x) for x in xs[arity:]]
        operands = self.fwd.operands([External(x) for x in xs[:arity]], constants)
        outputs, _ = inline(b, self.fwd, operands, [False] * len(operands))
        residuals = outputs[self.output_total :]
        tangents = [t if t is not None else External(x)
                    for x, t in zip(xs[:arity], ts[:arity], strict=True)]  # fmt: skip
        mask = [False] * (len(residuals) + len(constants)) + [t is not None for t in ts[:arity]]
        linear = CustomVJPLinear(self.name, self.bwd, len(residuals), self.constant_count,
                                 self.fwd.output_types[: self.output_total])  # fmt: skip
        return b.add_primitive(linear, [*residuals, *constants, *tangents], Linearized(tuple(mask)))


@dataclass(frozen=True)
class CustomVJPLinear(TensorOp):
    """The tangent map of a ``CustomVJPCall``, known only by its transpose ``bwd``:
    inputs are the residuals, the call's constants and one tangent per argument (linear
    in the tangents). Forward mode cannot evaluate it, as in JAX."""

    name: str
    bwd: TracedGraph
    residual_count: int
    constant_count: int
    output_types: tuple[TensorType, ...]

    def __repr__(self) -> str:
        return f"CustomVJPLinear({self.name!r}, {self.bwd.digest})"

    @property
    def input_count(self) -> int:  # type: ignore[override]
        return self.residual_count + self.constant_count + len(self.bwd.output_types)

    @property
    def output_count(self) -> int:  # type: ignore[override]
        return len(self.output_types)

    def forward_mode_error(self) -> TypeError:
        return TypeError(
            f"can't apply forward-mode autodiff (jvp, jacfwd, hessian) to the custom_vjp "
            f"function {self.name!r}: it has a reverse-mode rule only; use tc.custom_jvp "
            "for forward mode"
        )

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        return self.output_types

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        raise self.forward_mode_error()

    def jvp_rule(self, b, xs, ys, ts, ctx):
        raise ADRuleError.invalid_input(self, ADRuleKind.JVP, str(self.forward_mode_error()))

    def transpose_rule(self, b, cts, inputs, role, ctx):
        residuals = list(inputs[: self.residual_count])
        constants = list(inputs[self.residual_count : self.residual_count + self.constant_count])
        seeds: list[Operand] = [
            ct if ct is not None else apply(b, Constant(0.0, t.shape, t.dtype), [])
            for ct, t in zip(cts, self.output_types, strict=True)
        ]
        operands = self.bwd.operands([*residuals, *seeds], constants)
        active = [False] * len(residuals) + [ct is not None for ct in cts]
        outputs, reached = inline(b, self.bwd, operands,
                                  active + [False] * len(self.bwd.constants))  # fmt: skip
        wanted = role.active_mask[self.residual_count + self.constant_count :]
        result: list[int | None] = [None] * (self.residual_count + self.constant_count)
        for output, live, want in zip(outputs, reached, wanted, strict=True):
            result.append(output if live and want else None)  # type: ignore[arg-type]
        return result


#: The ops the compiler inlines (each has a ``body``).
CALL_OPS = (CustomJVPCall, CustomVJPCall)

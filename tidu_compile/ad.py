"""The rule contract and the two AD transforms: ``linearize`` and ``linear_transpose``.

``linearize`` turns the primal graph reachable from some outputs into a *linear* graph:
one tangent input per ``wrt`` key, tangent ops built by each primitive's JVP rule::

    y = exp(a * x)            dy = exp(a*x) * (da * x + a * dx)

Ops in role ``Primary()`` in that graph are residuals (``exp(a*x)``), ops in role
``Linearized(mask)`` are linear in their masked inputs. ``linear_transpose`` walks the
linear ops in reverse and calls each transpose rule, giving the VJP graph::

    ct_a = x * (exp(a*x) * ct_y)        ct_x = a * (exp(a*x) * ct_y)

Rules are written with primitives, so the result is again a graph of the same op set:
it can be printed, compiled, or linearized again (higher order).
"""

from __future__ import annotations

import enum
import functools
import itertools
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from tidu_compile.graph import (
    Derived,
    External,
    Graph,
    GraphBuilder,
    Input,
    Linearized,
    Local,
    OperationKey,
    PrimitiveValue,
    ProducedDef,
    ResolvedView,
    Role,
    ValueKey,
    resolve,
)

__all__ = [
    "ADKey",
    "ADRuleError",
    "ADRuleKind",
    "CotangentKey",
    "LinearizedGraph",
    "Name",
    "Primitive",
    "PrimitiveBuilder",
    "PrimitiveGraph",
    "fresh_pass_id",
    "linear_transpose",
    "linear_transpose_with_builder",
    "linearize",
]


class ADRuleKind(enum.Enum):
    JVP = "jvp"
    TRANSPOSE = "transpose"


class ADRuleError(Exception):
    """A rule is missing or cannot apply. ``str(err)`` names the op and the rule."""

    def __init__(self, op: Any, rule: ADRuleKind, message: str) -> None:
        self.op = op
        self.rule = rule
        self.message = message
        super().__init__(f"{rule.value} rule of {op!r}: {message}")

    @classmethod
    def unsupported(cls, op: Any, rule: ADRuleKind) -> ADRuleError:
        return cls(op, rule, "not supported")

    @classmethod
    def invalid_input(cls, op: Any, rule: ADRuleKind, message: str) -> ADRuleError:
        return cls(op, rule, message)


@runtime_checkable
class ADKey(Protocol):
    """A raw input key: hashable, with a derived key for its tangent in a pass."""

    def tangent_of(self, pass_id: int) -> Hashable: ...


@dataclass(frozen=True, slots=True)
class Name:
    """A ready-made raw key: ``Name("x")``; its tangents are ``Name("x", (pass,))``."""

    name: str
    tangent_passes: tuple[int, ...] = ()

    def tangent_of(self, pass_id: int) -> Name:
        return Name(self.name, self.tangent_passes + (pass_id,))

    def __repr__(self) -> str:
        return self.name + "".join(f"'{p}" for p in self.tangent_passes)


@dataclass(frozen=True, slots=True)
class CotangentKey:
    """Raw key of the seed input of a transposed graph: the cotangent of ``of``.

    Its tangents keep the whole structure (``passes`` grows), so distinct seeds never
    share a tangent key.
    """

    of: ValueKey
    passes: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return f"ct{hash(self.of) & 0xFFFF:04x}" + "".join(f"'{p}" for p in self.passes)

    def tangent_of(self, pass_id: int) -> CotangentKey:
        return CotangentKey(self.of, self.passes + (pass_id,))


_pass_ids = itertools.count(1)


def fresh_pass_id() -> int:
    """A pass id never handed out before in this process."""
    return next(_pass_ids)


class PrimitiveBuilder(ABC):
    """What rules build against. ``GraphBuilder`` is one; an evaluating builder is another."""

    @abstractmethod
    def add_primitive(
        self, op: Primitive, inputs: Sequence[PrimitiveValue | int], role: Role
    ) -> list[int]: ...


PrimitiveBuilder.register(GraphBuilder)


class Primitive(ABC):
    """A primitive operation: hashable, comparable, with JVP and transpose rules.

    Subclasses are typically frozen dataclasses. As in tidu, ``jvp_rule`` receives the
    primal inputs and outputs as *value keys* (``primal_in: &[ValueKey]``) and builder ids
    (or None) for the input tangents, and returns one tangent id (or None) per output; a
    rule that reads a primal wraps it itself, ``External(primal_inputs[1])``.
    ``transpose_rule`` receives builder ids (or None) for the output cotangents and the
    op's inputs as value refs (``External(key)``, tidu's ``&[PrimitiveValue]``), and
    returns one cotangent id (or None) per input.
    """

    @property
    @abstractmethod
    def input_count(self) -> int: ...

    @property
    def output_count(self) -> int:
        return 1

    @classmethod
    def add(cls) -> Primitive:
        """The addition op used to accumulate cotangents of this primitive set."""
        raise ADRuleError.unsupported(cls.__name__, ADRuleKind.TRANSPOSE)

    def jvp_rule(
        self,
        builder: PrimitiveBuilder,
        primal_inputs: Sequence[ValueKey],
        primal_outputs: Sequence[ValueKey],
        tangent_inputs: Sequence[int | None],
        ctx: Any,
    ) -> list[int | None]:
        raise ADRuleError.unsupported(self, ADRuleKind.JVP)

    def transpose_rule(
        self,
        builder: PrimitiveBuilder,
        cotangent_outputs: Sequence[int | None],
        inputs: Sequence[PrimitiveValue],
        role: Role,
        ctx: Any,
    ) -> list[int | None]:
        raise ADRuleError.unsupported(self, ADRuleKind.TRANSPOSE)


@dataclass(frozen=True)
class PrimitiveGraph:
    """A graph handed to an executor for evaluation."""

    graph: Graph


@dataclass(frozen=True)
class LinearizedGraph:
    """Result of a transform.

    ``tangent_inputs`` lists ``(input_key, local_id)`` per tangent input (for ``linearize``
    the raw ``wrt`` key; for ``linear_transpose`` the seed's ``CotangentKey``);
    ``tangent_outputs`` has one local id (or None) per requested output.
    """

    graph: Graph
    tangent_inputs: tuple[tuple[Hashable, int], ...]
    tangent_outputs: tuple[int | None, ...]

    @functools.cached_property
    def primitive_graph(self) -> PrimitiveGraph:
        """``PrimitiveGraph(self.graph)``, made once (``backward`` asks for it per node)."""
        return PrimitiveGraph(self.graph)


def _checked_rule_result(
    result: Any, expected: int, op: Any, rule: ADRuleKind
) -> list[int | None]:
    if not isinstance(result, (list, tuple)) or len(result) != expected:
        got = len(result) if isinstance(result, (list, tuple)) else type(result).__name__
        raise ADRuleError.invalid_input(op, rule, f"returned {got} values, expected {expected}")
    return list(result)


# --------------------------------------------------------------------------- linearize


def linearize(
    view: ResolvedView | Graph | Sequence[Graph],
    outputs: Sequence[ValueKey],
    wrt: Sequence[Hashable],
    pass_id: int,
    ctx: Any = None,
    aliases: Mapping[Hashable, ValueKey] | None = None,
) -> LinearizedGraph:
    """Build the JVP graph of ``outputs`` with respect to the raw input keys ``wrt``."""
    if not isinstance(view, ResolvedView):
        view = resolve(view)
    aliases = dict(aliases or {})
    for raw, target in aliases.items():
        if not isinstance(target, (Input, Derived)):
            raise TypeError(f"aliases[{raw!r}] must be a value key, got {target!r}")
    for key in outputs:
        if not isinstance(key, (Input, Derived)):
            raise TypeError(f"outputs: expected value keys, got {key!r}")

    builder = GraphBuilder()
    for graph in view.roots:
        builder.add_parent(graph)
    tangent_of: dict[ValueKey, int | None] = {}
    tangent_inputs: list[tuple[Hashable, int]] = []
    if len(set(wrt)) != len(wrt):
        raise ValueError(f"wrt: keys must be distinct, got {list(wrt)!r}")
    for raw in wrt:
        if not hasattr(raw, "tangent_of"):
            raise TypeError(f"wrt: key {raw!r} has no tangent_of(pass_id)")
        local_id = builder.add_input(raw.tangent_of(pass_id))
        tangent_inputs.append((raw, local_id))
        tangent_of[Input(raw)] = local_id

    op_tangents: dict[OperationKey, list[int | None]] = {}
    for key in _dependency_order(view, outputs, aliases, set(tangent_of)):
        if key in tangent_of:
            continue
        if isinstance(key, Input):
            alias = aliases.get(key.key)
            tangent_of[key] = tangent_of.get(alias) if alias is not None else None
            continue
        definition = view.resolve_value(key)
        if not isinstance(definition, ProducedDef):
            tangent_of[key] = None
            continue
        op_key = key.operation
        if op_key not in op_tangents:
            op_tangents[op_key] = _apply_jvp(builder, op_key, tangent_of, ctx)
        tangent_of[key] = op_tangents[op_key][key.output_slot]

    tangent_outputs = tuple(tangent_of.get(key) for key in outputs)
    builder.set_outputs(t for t in tangent_outputs if t is not None)
    return LinearizedGraph(builder.build(), tuple(tangent_inputs), tangent_outputs)


def _apply_jvp(
    builder: GraphBuilder,
    op_key: OperationKey,
    tangent_of: dict[ValueKey, int | None],
    ctx: Any,
) -> list[int | None]:
    op: Any = op_key.operation
    output_count = getattr(op, "output_count", 1)
    tangents = [tangent_of.get(k) for k in op_key.inputs]
    if all(t is None for t in tangents):
        return [None] * output_count
    primal_inputs = list(op_key.inputs)  # value keys, as tidu's rules receive them
    primal_outputs = [Derived(op_key, s) for s in range(output_count)]
    result = op.jvp_rule(builder, primal_inputs, primal_outputs, tangents, ctx)
    return _checked_rule_result(result, output_count, op, ADRuleKind.JVP)


def _dependency_order(
    view: ResolvedView,
    outputs: Sequence[ValueKey],
    aliases: Mapping[Hashable, ValueKey],
    known: set[ValueKey],
) -> list[ValueKey]:
    """Keys reachable from ``outputs``, each after its dependencies (iterative DFS)."""
    order: list[ValueKey] = []
    state: dict[ValueKey, bool] = {}  # False: on the stack, True: done
    stack: list[tuple[ValueKey, bool]] = [(k, False) for k in reversed(outputs)]
    while stack:
        key, expanded = stack.pop()
        if expanded:
            state[key] = True
            order.append(key)
            continue
        if key in state:
            continue
        state[key] = False
        stack.append((key, True))
        if key in known:
            continue
        for dep in reversed(_dependencies(view, key, aliases)):
            if dep not in state:
                stack.append((dep, False))
    return order


def _dependencies(
    view: ResolvedView, key: ValueKey, aliases: Mapping[Hashable, ValueKey]
) -> tuple[ValueKey, ...]:
    if isinstance(key, Input):
        alias = aliases.get(key.key)
        return (alias,) if alias is not None else ()
    definition = view.resolve_value(key)
    return definition.input_keys if isinstance(definition, ProducedDef) else ()


# --------------------------------------------------------------------------- transpose


def linear_transpose_with_builder(
    linear: LinearizedGraph,
    builder: PrimitiveBuilder,
    cotangent_seeds: Sequence[int | None],
    ctx: Any = None,
) -> list[int | None]:
    """Transpose ``linear`` into ``builder``.

    ``cotangent_seeds`` holds one builder id (or None) per present tangent output of
    ``linear`` (``linear.graph.outputs``). Returns one builder id (or None) per entry of
    ``linear.tangent_inputs``. The builder receives value refs only, as in tidu: the
    rules' and, where two cotangents of one value meet, the sum's::

        builder.add_primitive(op.add(), [Local(previous), Local(contribution)],
                              Linearized((True, True)))
    """
    graph = linear.graph
    if len(cotangent_seeds) != len(graph.outputs):
        raise ValueError(
            f"cotangent_seeds: expected {len(graph.outputs)} seeds (one per tangent "
            f"output), got {len(cotangent_seeds)}"
        )
    cotangent: dict[int, int] = {}

    def accumulate(local_id: int, contribution: int, op: Any) -> None:
        previous = cotangent.get(local_id)
        if previous is None:
            cotangent[local_id] = contribution
        else:
            # Value refs, as tidu passes them (``PrimitiveValue::Local``): a builder may
            # read its inputs as refs only.
            (cotangent[local_id],) = builder.add_primitive(
                type(op).add(), [Local(previous), Local(contribution)], Linearized((True, True))
            )

    for out_id, seed in zip(graph.outputs, cotangent_seeds, strict=True):
        if seed is None:
            continue
        some_op = _any_operation(graph) if out_id in cotangent else None
        if out_id in cotangent and some_op is None:
            raise ValueError(
                "cotangent_seeds: two seeds reach one value of a graph with no operations "
                "(nor its parents), so there is no primitive set to add them with"
            )
        accumulate(out_id, seed, some_op)

    for node in reversed(graph.operations):
        if not isinstance(node.role, Linearized):
            continue  # residual: evaluated forward, never transposed
        cts = [cotangent.get(o) for o in node.outputs]
        if all(c is None for c in cts):
            continue
        inputs = [External(graph.key_of(r)) for r in node.inputs]
        result = node.operation.transpose_rule(builder, cts, inputs, node.role, ctx)
        result = _checked_rule_result(
            result, len(node.inputs), node.operation, ADRuleKind.TRANSPOSE
        )
        for ref, active, contribution in zip(
            node.inputs, node.role.active_mask, result, strict=True
        ):
            if contribution is None:
                continue
            if not active:
                raise ADRuleError.invalid_input(
                    node.operation,
                    ADRuleKind.TRANSPOSE,
                    "returned a cotangent for an input that is not linear in its role",
                )
            if isinstance(ref, Local):
                accumulate(ref.id, contribution, node.operation)
    return [cotangent.get(local_id) for _, local_id in linear.tangent_inputs]


def _any_operation(graph: Graph) -> Any:
    """An op of ``graph`` or of its parents (breadth first), naming the primitive set whose
    ``add()`` accumulates cotangents; None when there is none."""
    queue = [graph]
    while queue:
        current = queue.pop(0)
        if current.operations:
            return current.operations[0].operation
        queue.extend(current.parents)
    return None


def linear_transpose(linear: LinearizedGraph, ctx: Any = None) -> LinearizedGraph:
    """The VJP graph of ``linear``: seeds in, one cotangent per tangent input out."""
    builder = GraphBuilder()
    builder.add_parent(linear.graph)
    seeds = []
    seed_inputs = []
    for out_id in linear.graph.outputs:
        raw = CotangentKey(linear.graph.values[out_id].key)
        seed = builder.add_input(raw)
        seeds.append(seed)
        seed_inputs.append((raw, seed))
    results = linear_transpose_with_builder(linear, builder, seeds, ctx)  # type: ignore[arg-type]
    builder.set_outputs(r for r in results if r is not None)
    return LinearizedGraph(builder.build(), tuple(seed_inputs), tuple(results))


"""The graph model: structural value keys, graphs, a builder and a resolver.

A value is named by its *structure*, not by an id: an input is ``Input(k)`` and the
``s``-th output of an operation is ``Derived(OperationKey(op, input_keys, role), s)``.
Two graphs that compute the same thing from the same inputs therefore name their values
with equal keys, which is what lets a transform refer to values of another graph
(``External(key)``) and lets ``resolve`` stitch graphs together.

Keys hash in O(1) (a fingerprint computed once at construction) and compare
structurally without recursion, so chains of 100k operations are fine.

This layer is pure Python: it knows nothing about numpy, AD or LLVM.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, Union

from tidu_compile import forksafe

T = TypeVar("T")

__all__ = [
    "interned",
    "Input",
    "Derived",
    "OperationKey",
    "ValueKey",
    "Primary",
    "Linearized",
    "Role",
    "Local",
    "External",
    "PrimitiveValue",
    "ValueNode",
    "OperationNode",
    "Graph",
    "GraphBuilder",
    "InputDef",
    "ProducedDef",
    "ResolvedView",
    "resolve",
]


# --------------------------------------------------------------------------- roles


@dataclass(frozen=True, slots=True)
class Primary:
    """Role of an operation that computes primal (non-tangent) values."""

    def __repr__(self) -> str:
        return "Primary()"


@dataclass(frozen=True, slots=True)
class Linearized:
    """Role of an operation that is linear in the inputs where ``active_mask`` is True.

    ``Mul`` in role ``Linearized((True, False))`` is ``dx * y``: linear in ``dx``,
    with ``y`` a residual (a primal value the linear map is parameterized by).
    """

    active_mask: tuple[bool, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.active_mask, tuple) or not all(
            isinstance(b, bool) for b in self.active_mask
        ):
            raise TypeError(
                f"Linearized.active_mask must be a tuple of bools, got {self.active_mask!r}"
            )


Role = Primary | Linearized


# --------------------------------------------------------------------------- keys


class _Key:
    """What the key classes share: a hash computed once, structural equality, and no
    change after construction (``_hash``, set last, freezes the key)."""

    __slots__ = ()
    _hash: int

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self) or self._hash != other._hash:  # type: ignore[attr-defined]
            return False
        return _structurally_equal(self, other)  # type: ignore[arg-type]

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_hash"):
            raise AttributeError(f"{type(self).__name__} keys are immutable")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} keys are immutable")


class Input(_Key):
    """Value key of a graph input named by the raw key ``key``."""

    __slots__ = ("key", "_hash")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._hash = hash(("Input", key))

    def __repr__(self) -> str:
        return f"Input({self.key!r})"


class OperationKey(_Key):
    """Structural key of one operation application: ``(operation, inputs, role)``."""

    __slots__ = ("operation", "inputs", "role", "_depth", "_hash")

    def __init__(self, operation: Hashable, inputs: tuple[ValueKey, ...], role: Role) -> None:
        inputs = tuple(inputs)
        for key in inputs:
            if not isinstance(key, (Input, Derived)):
                raise TypeError(f"OperationKey inputs must be value keys, got {key!r}")
        if not isinstance(role, (Primary, Linearized)):
            raise TypeError(f"OperationKey role must be Primary() or Linearized(...), got {role!r}")
        self.operation = operation
        self.inputs = inputs
        self.role = role
        self._depth = 1 + max((_depth_of(k) for k in inputs), default=0)
        # The op's type is hashed too: parameterless dataclass ops all hash like ().
        self._hash = hash((type(operation), operation, inputs, role))

    def __repr__(self) -> str:
        return f"OperationKey({self.operation!r}, <{len(self.inputs)} inputs>, {self.role!r})"


class Derived(_Key):
    """Value key of output ``output_slot`` of the operation ``operation``."""

    __slots__ = ("operation", "output_slot", "_hash")

    def __init__(self, operation: OperationKey, output_slot: int) -> None:
        if not isinstance(operation, OperationKey):
            raise TypeError(f"Derived.operation must be an OperationKey, got {operation!r}")
        self.operation = operation
        self.output_slot = output_slot
        self._hash = hash(("Derived", operation._hash, output_slot))

    def __repr__(self) -> str:
        return f"Derived({self.operation.operation!r}, slot={self.output_slot})"


ValueKey = Union["Input", "Derived"]


def _depth_of(key: ValueKey) -> int:
    return key.operation._depth if isinstance(key, Derived) else 0


def _structurally_equal(a: _Key, b: _Key) -> bool:
    """Compare two keys without recursion; shared sub-keys are compared once."""
    if type(a) is Input:  # a leaf: nothing to walk (the common case, kept cheap)
        return bool(a.key == b.key)  # type: ignore[attr-defined]
    stack: list[tuple[Any, Any]] = [(a, b)]
    seen: set[tuple[int, int]] = set()
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y) or x._hash != y._hash:
            return False
        pair = (id(x), id(y))
        if pair in seen:
            continue
        seen.add(pair)
        if isinstance(x, Input):
            if x.key != y.key:
                return False
        elif isinstance(x, Derived):
            if x.output_slot != y.output_slot:
                return False
            stack.append((x.operation, y.operation))
        else:  # OperationKey
            if (
                x._depth != y._depth
                or len(x.inputs) != len(y.inputs)
                or x.role != y.role
                or x.operation != y.operation
            ):
                return False
            stack.extend(zip(x.inputs, y.inputs, strict=True))
    return True


# --------------------------------------------------------------------------- refs


@dataclass(frozen=True, slots=True)
class Local:
    """Reference to value ``id`` of the graph being built."""

    id: int


@dataclass(frozen=True, slots=True)
class External:
    """Reference to a value of another graph, by its structural key."""

    key: ValueKey


PrimitiveValue = Local | External


# --------------------------------------------------------------------------- graph


@dataclass(frozen=True, slots=True)
class ValueNode:
    """A value of a graph: its key and its producer ``(op_index, slot)`` (None for inputs)."""

    key: ValueKey
    producer: tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class OperationNode:
    """An operation of a graph: inputs are refs, outputs are local value ids."""

    operation: Any
    inputs: tuple[PrimitiveValue, ...]
    outputs: tuple[int, ...]
    role: Role


@dataclass(frozen=True)
class Graph:
    """An immutable graph of operations.

    ``values[i]`` is the value with local id ``i``; ``inputs`` and ``outputs`` are local
    ids; ``parents`` are graphs whose values this graph references with ``External``.
    """

    values: tuple[ValueNode, ...]
    operations: tuple[OperationNode, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    parents: tuple[Graph, ...] = ()
    _index: dict[ValueKey, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for local_id, node in enumerate(self.values):
            self._index.setdefault(node.key, local_id)

    def local_id(self, key: ValueKey) -> int | None:
        """Local id of the value named ``key`` in this graph, or None."""
        return self._index.get(key)

    def key_of(self, ref: PrimitiveValue) -> ValueKey:
        """The structural key of a reference used by this graph."""
        return self.values[ref.id].key if isinstance(ref, Local) else ref.key

    def input_keys(self) -> list[ValueKey]:
        return [self.values[i].key for i in self.inputs]

    def output_keys(self) -> list[ValueKey]:
        return [self.values[i].key for i in self.outputs]


def _arity(operation: Any, attribute: str) -> int | None:
    count = getattr(operation, attribute, None)
    return count if isinstance(count, int) else None


class GraphBuilder:
    """Builds a ``Graph`` one input and one operation at a time.

    >>> b = GraphBuilder()
    >>> x = b.add_input("x")
    >>> (y,) = b.add_operation(Exp(), [x], Primary())     # doctest: +SKIP
    >>> b.set_outputs([y]); graph = b.build()             # doctest: +SKIP

    ``add_operation`` takes refs (``Local``/``External``) or plain ints (local ids).
    The operation's arity is checked against its ``input_count`` when it has one.
    """

    def __init__(self) -> None:
        self._values: list[ValueNode] = []
        self._operations: list[OperationNode] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._parents: list[Graph] = []
        #: each operation key structurally met before is that key object (hash-consing):
        #: a value recomputed from the same inputs (a backward's residuals, in a fused
        #: program) has its predecessor's key, so comparing the two stops at once instead
        #: of walking their whole equal history (quadratic in a chain's length).
        self._operation_keys: dict[OperationKey, OperationKey] = {}

    def add_input(self, key: Hashable) -> int:
        """Add an input named by the raw key ``key`` (its value key is ``Input(key)``)."""
        local_id = len(self._values)
        self._values.append(ValueNode(Input(key), None))
        self._inputs.append(local_id)
        return local_id

    def add_operation(
        self, operation: Any, inputs: Sequence[PrimitiveValue | int], role: Role
    ) -> list[int]:
        """Append ``operation`` applied to ``inputs``; returns the local ids of its outputs."""
        expected = _arity(operation, "input_count")
        if expected is not None and len(inputs) != expected:
            raise ValueError(
                f"{operation!r} takes {expected} inputs, got {len(inputs)} (argument 'inputs')"
            )
        if isinstance(role, Linearized) and len(role.active_mask) != len(inputs):
            raise ValueError(
                f"role {role!r} has {len(role.active_mask)} mask entries for "
                f"{len(inputs)} inputs of {operation!r}"
            )
        refs = tuple(self._ref(value) for value in inputs)
        key = OperationKey(operation, tuple(self._key_of(r) for r in refs), role)
        key = self._operation_keys.setdefault(key, key)
        output_count = _arity(operation, "output_count")
        if output_count is None:
            output_count = 1
        if output_count < 1:
            raise ValueError(f"{operation!r}: output_count must be >= 1, got {output_count}")
        op_index = len(self._operations)
        outputs = []
        for slot in range(output_count):
            outputs.append(len(self._values))
            self._values.append(ValueNode(Derived(key, slot), (op_index, slot)))
        self._operations.append(OperationNode(operation, refs, tuple(outputs), role))
        return outputs

    # `PrimitiveBuilder` interface, so rules can build against a plain GraphBuilder.
    add_primitive = add_operation

    def set_outputs(self, ids: Iterable[int]) -> None:
        ids = list(ids)
        for local_id in ids:
            self._check_id(local_id, "ids")
        self._outputs = ids

    def add_parent(self, graph: Graph) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(f"add_parent expects a Graph, got {type(graph).__name__}")
        self._parents.append(graph)

    def global_key(self, local_id: int) -> ValueKey:
        self._check_id(local_id, "local_id")
        return self._values[local_id].key

    def build(self) -> Graph:
        return Graph(
            tuple(self._values),
            tuple(self._operations),
            tuple(self._inputs),
            tuple(self._outputs),
            tuple(self._parents),
        )

    def _check_id(self, local_id: int, argument: str) -> None:
        if not isinstance(local_id, int) or not 0 <= local_id < len(self._values):
            raise ValueError(
                f"{argument}: {local_id!r} is not a value id of this builder "
                f"(0..{len(self._values) - 1})"
            )

    def _ref(self, value: PrimitiveValue | int) -> PrimitiveValue:
        if isinstance(value, bool):
            raise TypeError(f"inputs: expected a value id or ref, got {value!r}")
        if isinstance(value, int):
            self._check_id(value, "inputs")
            return Local(value)
        if isinstance(value, Local):
            self._check_id(value.id, "inputs")
            return value
        if isinstance(value, External):
            return value
        raise TypeError(f"inputs: expected an int, Local or External, got {value!r}")

    def _key_of(self, ref: PrimitiveValue) -> ValueKey:
        return self._values[ref.id].key if isinstance(ref, Local) else ref.key


# --------------------------------------------------------------------------- resolve


@dataclass(frozen=True, slots=True)
class InputDef:
    """``key`` is an input of one of the resolved graphs."""

    key: ValueKey


@dataclass(frozen=True, slots=True)
class ProducedDef:
    """``key`` is output ``output_slot`` of ``operation`` applied to ``input_keys``."""

    operation: Any
    input_keys: tuple[ValueKey, ...]
    role: Role
    output_slot: int


class ResolvedView:
    """Definitions of every value of a set of graphs and their parents."""

    def __init__(
        self,
        definitions: dict[ValueKey, InputDef | ProducedDef],
        graphs: list[Graph],
        roots: list[Graph],
    ) -> None:
        self._definitions = definitions
        self.graphs = graphs  # every graph, parents first
        self.roots = roots  # the graphs given to `resolve`

    def resolve_value(self, key: ValueKey) -> InputDef | ProducedDef | None:
        return self._definitions.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._definitions

    def compute(
        self,
        wanted: Iterable[ValueKey],
        values: MutableMapping[ValueKey, T],
        apply: Callable[[ProducedDef, list[T]], Sequence[T]],
        missing: Callable[[ValueKey], Exception],
    ) -> None:
        """Put a value for every ``wanted`` key into ``values``: the operations that
        define the keys absent from ``values`` are applied, dependencies first and
        without recursion, with ``apply(definition, input values) -> output values``
        (which evaluates ``definition.operation``, emits an instruction or adds a graph
        node). Values present are kept (an operation's other outputs too). A key absent
        from ``values`` that no operation produces raises ``missing(key)``."""
        stack: list[tuple[ValueKey, bool]] = [(k, False) for k in wanted]
        while stack:
            key, ready = stack.pop()
            if key in values:
                continue
            definition = self._definitions.get(key)
            if not isinstance(definition, ProducedDef):
                raise missing(key)
            if ready:
                outputs = apply(definition, [values[k] for k in definition.input_keys])
                op_key = key.operation  # type: ignore[union-attr]  # ProducedDef => Derived
                for slot, value in enumerate(outputs):
                    values.setdefault(Derived(op_key, slot), value)
                continue
            stack.append((key, True))
            stack.extend((k, False) for k in definition.input_keys if k not in values)


def post_order(roots: Sequence[T], children: Callable[[T], Sequence[T]]) -> list[T]:
    """Every node reachable from ``roots``, each after all the nodes it reaches.

    Depth first from ``roots[0]`` on, children in their order, nodes told apart by
    identity; iterative, so 5000-deep chains do not hit Python's recursion limit.
    """
    ordered: list[T] = []
    visited: set[int] = set()
    stack: list[tuple[T, bool]] = [(root, False) for root in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            ordered.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children(node)))
    return ordered


def resolve(graphs: Graph | Iterable[Graph]) -> ResolvedView:
    """Index the definitions of ``graphs``; parents are walked first, first definition wins."""
    roots = [graphs] if isinstance(graphs, Graph) else list(graphs)
    ordered = post_order(roots, lambda graph: graph.parents)
    definitions: dict[ValueKey, InputDef | ProducedDef] = {}
    for graph in ordered:
        for node in graph.values:
            if node.key in definitions:
                continue
            if node.producer is None:
                definitions[node.key] = InputDef(node.key)
            else:
                op = graph.operations[node.producer[0]]
                definitions[node.key] = ProducedDef(
                    op.operation,
                    tuple(graph.key_of(r) for r in op.inputs),
                    op.role,
                    node.producer[1],
                )
    return ResolvedView(definitions, ordered, roots)


#: Structures of the graphs ``eager.RecordedGraph.from_graph`` made (traces, fused programs,
#: segments), interned: equal structures are one object, so the executors' caches keyed
#: by one (``graph_runs``, ``graph_fast``, ``node_graphs``) find it by identity rather
#: than by comparing two deep keys on every call (a second ``@tc.function`` of one
#: function paid ~2.5 ms per call for it). Bounded: past it, a structure is only slower.
_INTERNED: OrderedDict[Any, Any] = OrderedDict()
_INTERNED_LIMIT = 4096
_INTERNED_LOCK = forksafe.Lock()


def interned(structure: Any) -> Any:
    """The one structure equal to ``structure`` (itself, the first time)."""
    with _INTERNED_LOCK:
        found = _INTERNED.get(structure)
        if found is None:
            found = _INTERNED[structure] = structure
            if len(_INTERNED) > _INTERNED_LIMIT:
                _INTERNED.popitem(last=False)
        else:
            _INTERNED.move_to_end(structure)
    return found

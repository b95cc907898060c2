"""Batching rules: how each primitive runs on values that carry one more axis.

``vmap`` (``tidu_compile.batching``) traces a function once on the shapes of one example
and writes every primitive it applies into ONE batched graph, as JAX's batching
interpreter does (``jax/_src/interpreters/batching.py``): each value carries its batch
dimension (an axis index, or ``None`` for a value that is the same for every example),
and the op's ``batch_rule`` emits the batched op(s) and says where the batch axis of
each result is::

    op.batch_rule(b, inputs, dims) -> (outputs, out_dims)

    Exp:        x: (B, n) at 0                 ->  exp(x): (B, n) at 0
    ReduceSum:  x: (n, B) at 1, axes=(0,)      ->  transpose, reduce_sum axes=(1,): (B,) at 0
    DotGeneral: x: (B, m, k) at 0, w: (k, n)   ->  dot_general ... : (B, m, n) at 0

``b`` is a ``Batcher``: it adds ops to the batched graph (checking their types) and
knows every value's type and the batch size. A rule is called only when some input is
batched. Families get one rule on their base class (``Elementwise``, ``Reduction``,
``AlongAxis``); an op of no family writes its own or names one of the generic rules:

* ``batch_elementwise``: the op maps equal shapes elementwise (all inputs one shape);
* ``batch_by_moving_axis``: the op already accepts leading batch axes: every input's
  batch axis moved to the front, the batch size put in front of its shape fields;
* ``batch_sequentially``: any op, one example at a time (slice, apply, concatenate):
  correct for every op, a loop of ``B`` ops in the graph, for ops with no better rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile.ad import Name
from tidu_compile.graph import Graph, GraphBuilder, Local, Primary
from tidu_compile.ops.base import OP_TABLE, TensorOp, TensorType, type_of
from tidu_compile.ops.ir_fields import shape_fields

__all__ = [
    "BatchRuleResult",
    "all_materialized",
    "batch_graph",
    "batch_op",
    "Batcher",
    "batch_by_moving_axis",
    "batch_elementwise",
    "batch_sequentially",
    "has_batch_rule",
    "materialized",
    "moved",
]

#: ``(output ids, their batch dimensions)``.
BatchRuleResult = tuple[list[int], list[int | None]]


class Batcher:
    """The batched graph being built: ops added with their types checked, a batch size.

    ``add(op, ids)`` appends ``op`` (its ``infer_types`` raises on a rule that built a
    wrong shape); ``constant(array)`` adds an input holding ``array`` (an ``iota`` a
    rule needs); ``type_of(id)`` is a value's type in the batched graph.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.builder = GraphBuilder()
        self.types: list[TensorType] = []
        #: The inputs of the graph in order: what each holds (``vmap`` fills them).
        self.input_data: list[Any] = []
        #: ``(id, from, to)`` -> the id of that value with its batch axis moved (``None``
        #: from: broadcast), so a value shared by several ops is moved once.
        self.moves: dict[tuple[int, int | None, int], int] = {}

    def add_input(self, key: Any, t: TensorType, data: Any) -> int:
        local_id = self.builder.add_input(key)
        self._set_type(local_id, t)
        self.input_data.append(data)
        return local_id

    def constant(self, array: np.ndarray) -> int:
        """A graph input holding ``array`` (passed at every call, never baked in)."""
        return self.add_input(Name(f"in{len(self.input_data)}"), type_of(array), array)

    def add(self, op: TensorOp, inputs: Sequence[int]) -> list[int]:
        types = op.infer_types(*(self.types[i] for i in inputs))
        ids = self.builder.add_operation(op, list(inputs), Primary())
        for local_id, t in zip(ids, types, strict=True):
            self._set_type(local_id, t)
        return ids

    def add1(self, op: TensorOp, inputs: Sequence[int]) -> int:
        return self.add(op, inputs)[0]

    def type_of(self, local_id: int) -> TensorType:
        return self.types[local_id]

    def _set_type(self, local_id: int, t: TensorType) -> None:
        self.types.extend([t] * (local_id + 1 - len(self.types)))
        self.types[local_id] = t


def batch_op(
    b: Batcher, op: TensorOp, inputs: Sequence[int], dims: Sequence[int | None]
) -> BatchRuleResult:
    """One step of the interpreter: ``op`` unchanged when no input is batched, else its
    ``batch_rule``."""
    if all(d is None for d in dims):
        outputs = b.add(op, inputs)
        return outputs, [None] * len(outputs)
    return op.batch_rule(b, list(inputs), list(dims))


def batch_graph(
    b: Batcher, graph: Graph, inputs: Sequence[tuple[int, int | None]]
) -> list[tuple[int, int | None]]:
    """``graph`` (a graph of table ops on one example) batched into ``b``: ``inputs``
    gives each graph input's ``(id, batch axis)`` in ``b``; the outputs' likewise."""
    values = dict(zip(graph.inputs, inputs, strict=True))
    for node in graph.operations:
        if not all(isinstance(ref, Local) for ref in node.inputs):
            raise ValueError(f"batch_graph: {node.operation!r} reads a value of another graph")
        operands = [values[ref.id] for ref in node.inputs]  # type: ignore[union-attr]
        ids, dims = batch_op(b, node.operation, [i for i, _ in operands], [d for _, d in operands])
        values.update(zip(node.outputs, zip(ids, dims, strict=True), strict=True))
    return [values[i] for i in graph.outputs]


def has_batch_rule(op: type[TensorOp]) -> bool:
    """Whether ``op`` (a class of the op table) defines a batching rule."""
    return op.batch_rule is not TensorOp.batch_rule  # type: ignore[comparison-overlap]


# ------------------------------------------------------------------ moving the batch axis


def _table_op(mnemonic: str) -> Any:
    """An op class of the table by name (the families' modules import this one)."""
    return OP_TABLE[mnemonic]


def moved(b: Batcher, x: int, dim: int, to: int = 0) -> int:
    """``x`` with its batch axis ``dim`` moved to position ``to`` (a transpose)."""
    if dim == to:
        return x
    found = b.moves.get((x, dim, to))
    if found is not None:
        return found
    axes = [a for a in range(b.type_of(x).ndim) if a != dim]
    axes.insert(to, dim)
    b.moves[x, dim, to] = b.add1(_table_op("transpose")(tuple(axes)), [x])
    return b.moves[x, dim, to]


def materialized(b: Batcher, x: int, dim: int | None) -> int:
    """``x`` with its batch axis first; an unbatched ``x`` broadcast to ``(B, ...)``."""
    if dim is not None:
        return moved(b, x, dim)
    found = b.moves.get((x, None, 0))
    if found is not None:
        return found
    shape = b.type_of(x).shape
    dimensions = tuple(range(1, len(shape) + 1))
    broadcast = _table_op("broadcast_in_dim")((b.size, *shape), dimensions, shape)
    b.moves[x, None, 0] = b.add1(broadcast, [x])
    return b.moves[x, None, 0]


def all_materialized(b: Batcher, inputs: Sequence[int], dims: Sequence[int | None]) -> list[int]:
    return [materialized(b, x, d) for x, d in zip(inputs, dims, strict=True)]


# ------------------------------------------------------------------ generic rules


def batch_elementwise(
    op: TensorOp, b: Batcher, inputs: list[int], dims: list[int | None]
) -> BatchRuleResult:
    """An op mapping inputs of one shape elementwise: batched where they all are batched
    at one axis, else with every input's batch axis first (unbatched ones broadcast)."""
    batched = set(dims)
    if len(batched) == 1 and None not in batched:
        (dim,) = batched
        outputs = b.add(op, inputs)
        return outputs, [dim] * len(outputs)
    outputs = b.add(op, all_materialized(b, inputs, dims))
    return outputs, [0] * len(outputs)


def batch_by_moving_axis(
    op: TensorOp, b: Batcher, inputs: list[int], dims: list[int | None]
) -> BatchRuleResult:
    """For an op that takes leading batch axes as they are: every input's batch axis
    moved to the front, the op applied with the batch size put in front of its shape
    fields (those declared ``shape_of_result()``/``shape_of_operand()``). Its other
    parameters are kept: an axis parameter must count from the end (or be absent)."""
    shapes = {name: (b.size, *getattr(op, name)) for name in shape_fields(type(op))}
    batched = dataclasses.replace(op, **shapes) if shapes else op  # type: ignore[type-var]
    outputs = b.add(batched, all_materialized(b, inputs, dims))
    return outputs, [0] * len(outputs)


def batch_sequentially(
    op: TensorOp, b: Batcher, inputs: list[int], dims: list[int | None]
) -> BatchRuleResult:
    """Any op, one example at a time: each batched input sliced at example ``i``,
    ``op`` applied, the ``B`` results joined along a new first axis. A loop of ``B``
    ops in the graph: the fallback for an op with no vectorized rule."""
    Slice, Reshape, Concatenate = map(_table_op, ("slice", "reshape", "concatenate"))
    fronted = [x if d is None else moved(b, x, d) for x, d in zip(inputs, dims, strict=True)]
    per_example: list[list[int]] = []
    for i in range(b.size):
        sliced = []
        for x, d in zip(fronted, dims, strict=True):
            if d is None:
                sliced.append(x)
                continue
            shape = b.type_of(x).shape
            one = b.add1(Slice((i,) + (0,) * (len(shape) - 1), (1,) * len(shape),
                               (1, *shape[1:]), shape), [x])  # fmt: skip
            sliced.append(b.add1(Reshape(shape[1:], (1, *shape[1:])), [one]))
        per_example.append(b.add(op, sliced))
    outputs = []
    for slot in range(len(per_example[0]) if per_example else 0):
        rows = []
        for results in per_example:
            shape = b.type_of(results[slot]).shape
            rows.append(b.add1(Reshape((1, *shape), shape), [results[slot]]))
        shapes = tuple(b.type_of(r).shape for r in rows)
        outputs.append(rows[0] if len(rows) == 1 else b.add1(Concatenate(0, shapes), rows))
    return outputs, [0] * len(outputs)

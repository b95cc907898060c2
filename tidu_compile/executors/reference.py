"""``ReferenceExecutor``: the numpy interpreter, and the oracle the compiler is tested against.

* ``execute_forward`` evaluates, on demand, the residual (``Primary``) values that the
  linear ops of a linearized node consume, from the node's saved data.
* ``run_transposed_linear`` runs ``linear_transpose_with_builder`` against an
  ``EvaluatingBuilder``: every primitive a transpose rule adds is evaluated at once, so
  no transposed graph is ever materialized.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tidu_compile.ad import (
    LinearizedGraph,
    PrimitiveBuilder,
    PrimitiveGraph,
    linear_transpose_with_builder,
)
from tidu_compile.eager import BackwardExecutor
from tidu_compile.evaluation import evaluate_keys, evaluate_primitive
from tidu_compile.graph import (
    External,
    Graph,
    Input,
    Linearized,
    Local,
    PrimitiveValue,
    Role,
    ValueKey,
    resolve,
)

__all__ = ["EvaluatingBuilder", "ReferenceExecutor", "cotangent_count_error", "residual_keys"]


class EvaluatingBuilder(PrimitiveBuilder):
    """A ``PrimitiveBuilder`` that evaluates each primitive immediately.

    Ids index ``self.values``; ``External(key)`` refs are looked up in ``external``.
    """

    def __init__(self, external: Mapping[ValueKey, Any]) -> None:
        self.external = external
        self.values: list[Any] = []

    def add_value(self, value: Any) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def add_primitive(
        self, op: Any, inputs: Sequence[PrimitiveValue | int], role: Role
    ) -> list[int]:
        return [self.add_value(v) for v in evaluate_primitive(op, [self._get(r) for r in inputs])]

    def _get(self, ref: PrimitiveValue | int) -> Any:
        if isinstance(ref, External):
            try:
                return self.external[ref.key]
            except KeyError:
                raise KeyError(
                    f"transpose needs the value {ref.key!r}, which execute_forward did not provide"
                ) from None
        return self.values[ref.id if isinstance(ref, Local) else ref]


def residual_keys(graph: Graph) -> list[ValueKey]:
    """Keys of the non-linear inputs of the linear ops of ``graph``: what transpose reads."""
    keys: dict[ValueKey, None] = {}
    for node in graph.operations:
        if isinstance(node.role, Linearized):
            for ref, is_linear in zip(node.inputs, node.role.active_mask, strict=True):
                if not is_linear:
                    keys.setdefault(graph.key_of(ref))
    return list(keys)


def _check_cotangent(cotangent: Any, primal: Any, key: Any) -> None:
    """A cotangent has its primal's shape and dtype (when both are typed values).

    Catches seeds of the wrong type that a transpose rule passes through unchanged
    (``Add``'s, for one), which would otherwise come out as silently wrong gradients.
    """
    shape, dtype = getattr(primal, "shape", None), getattr(primal, "dtype", None)
    got_shape, got_dtype = getattr(cotangent, "shape", None), getattr(cotangent, "dtype", None)
    if shape is None or dtype is None or cotangent is None:
        return
    if got_shape is None or got_dtype is None:
        raise TypeError(
            f"cotangent_out: the cotangent of input {key!r} came out as a "
            f"{type(cotangent).__name__}, expected an array of shape {tuple(shape)}"
        )
    if tuple(got_shape) != tuple(shape) or np.dtype(got_dtype).name != np.dtype(dtype).name:
        raise ValueError(
            f"cotangent_out: the cotangent of input {key!r} came out as {tuple(got_shape)} "
            f"{np.dtype(got_dtype).name}, but the input is {tuple(shape)} {np.dtype(dtype).name} "
            "(a cotangent given to this node has the wrong shape or dtype)"
        )


def cotangent_count_error(linear: LinearizedGraph, cotangent_out: Sequence[Any]) -> ValueError:
    """The error for ``cotangent_out`` not holding one cotangent per tangent output."""
    return ValueError(
        f"cotangent_out: expected {len(linear.tangent_outputs)} cotangents, "
        f"got {len(cotangent_out)}"
    )


class ReferenceExecutor(BackwardExecutor):
    """Runs every backward node with numpy, op by op."""

    def execute_forward(
        self, graph: PrimitiveGraph, initial_data: Mapping[ValueKey, Any]
    ) -> dict[ValueKey, Any]:
        data = dict(initial_data)
        return evaluate_keys(resolve(graph.graph), residual_keys(graph.graph), data)

    def run_transposed_linear(
        self,
        linear: LinearizedGraph,
        cotangent_out: Sequence[Any],
        external_data: Mapping[ValueKey, Any],
        ctx: Any,
    ) -> list[Any]:
        if len(cotangent_out) != len(linear.tangent_outputs):
            raise cotangent_count_error(linear, cotangent_out)
        for index, (ct, t) in enumerate(zip(cotangent_out, linear.tangent_outputs, strict=True)):
            if ct is None and t is not None:
                raise TypeError(f"cotangent_out[{index}]: expected a cotangent, got None")
        builder = EvaluatingBuilder(external_data)
        seeds = [
            builder.add_value(ct)
            for ct, t in zip(cotangent_out, linear.tangent_outputs, strict=True)
            if t is not None
        ]
        results = linear_transpose_with_builder(linear, builder, seeds, ctx)
        cotangents = [None if r is None else builder.values[r] for r in results]
        for (key, _), cotangent in zip(linear.tangent_inputs, cotangents, strict=True):
            _check_cotangent(cotangent, external_data.get(Input(key)), key)
        return cotangents

    def add_operands(self, a: Any, b: Any) -> Any:
        # np.asarray: np.add of two 0-d arrays is a numpy scalar, not an array.
        return np.asarray(np.add(a, b)) if isinstance(a, np.ndarray) else a + b

"""Evaluating graphs on concrete values: the one way to run a graph of any order.

``evaluate_graph(graph, inputs)`` gives a graph's output values; ``evaluate_keys``
evaluates chosen values on demand (what ``ReferenceExecutor.execute_forward`` uses for
residuals); ``evaluate_primitive`` runs one op, checking its type rule first when the op
has one. Ops are run with their ``evaluate(*values)``: numpy arrays for the standard
ops, anything for a user's own primitive set (floats, in tidu's examples).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from tidu_compile.ad import LinearizedGraph, PrimitiveGraph
from tidu_compile.graph import Derived, Graph, Input, ResolvedView, ValueKey, resolve

__all__ = ["evaluate_graph", "evaluate_keys", "evaluate_primitive"]


def evaluate_primitive(op: Any, values: Sequence[Any]) -> list[Any]:
    """Evaluate ``op`` on concrete values; checks them first when the op can
    (``check_values``: the standard ops type-check numpy arrays with their type rule)."""
    check = getattr(op, "check_values", None)
    if check is not None:
        check(*values)
    evaluate = getattr(op, "evaluate", None)
    if evaluate is None:
        raise TypeError(f"{op!r} has no evaluate(); the reference executor cannot run it")
    results = list(evaluate(*values))
    expected = getattr(op, "output_count", 1)
    if len(results) != expected:
        raise ValueError(f"{op!r}.evaluate returned {len(results)} values, expected {expected}")
    return results


def evaluate_keys(
    view: ResolvedView,
    wanted: Sequence[ValueKey],
    data: dict[ValueKey, Any],
    given: str = "saved value",
) -> dict[ValueKey, Any]:
    """Evaluate ``wanted`` keys into ``data`` from the definitions in ``view``; a key that
    is neither in ``data`` nor computed from it is a ``KeyError`` ("no <given> for ...")."""

    def missing(key: ValueKey) -> KeyError:
        return KeyError(f"no {given} for {key!r}, and it is not computed from the others given")

    view.compute(wanted, data, lambda d, values: evaluate_primitive(d.operation, values), missing)
    return data


def evaluate_graph(
    graph: Graph | LinearizedGraph | PrimitiveGraph, inputs: Mapping[Hashable, Any]
) -> list[Any]:
    """The values of ``graph``'s outputs for the concrete ``inputs``: the one way to run a
    graph of any order (a primal graph, a linearized one, a linearization of that, ...).

    ``inputs`` maps raw input keys (or their value keys ``Input(k)``) to values: the
    graph's own inputs and, for values it reads from its parents (``External``), the
    parents' inputs. Every op on the way is evaluated with its ``evaluate(*values)``,
    whatever its role, so a twice-linearized graph runs from the primal and first-order
    tangent inputs. For ``y = x**3`` linearized twice (tangent keys ``x'1``, ``x'2``)::

        evaluate_graph(second, {x: 2.0, x'1: 1.0, x'2: 1.0})   # [12.0] = 6 x

    Returns one value per ``graph.outputs``; for a ``LinearizedGraph``, one per
    ``tangent_outputs`` (None where a tangent output is structurally zero). A value that
    no input determines raises ``KeyError`` naming it.
    """
    linear = graph if isinstance(graph, LinearizedGraph) else None
    plain = graph.graph if isinstance(graph, LinearizedGraph | PrimitiveGraph) else graph
    if not isinstance(plain, Graph):
        raise TypeError(f"graph: expected a Graph, LinearizedGraph or PrimitiveGraph, got "
                        f"{type(graph).__name__}")  # fmt: skip
    if not isinstance(inputs, Mapping):
        raise TypeError(f"inputs: expected a mapping of input keys to values, got "
                        f"{type(inputs).__name__}")  # fmt: skip
    data = {k if isinstance(k, Input | Derived) else Input(k): v for k, v in inputs.items()}
    if linear is not None:
        wanted = [None if t is None else plain.values[t].key for t in linear.tangent_outputs]
    else:
        wanted = [plain.values[o].key for o in plain.outputs]
    present = [k for k in wanted if k is not None]
    evaluate_keys(resolve(plain), present, data, given="value given")
    return [None if k is None else data[k] for k in wanted]

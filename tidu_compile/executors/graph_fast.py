"""``CompiledExecutor.run_graph``'s hot path: the last bound plan of a graph structure,
called through its generated fast call (``compiler.fast_path``) before any lookup.

A ``@tc.function`` step, a fused ``value_and_grad`` or a ``vmap`` program calls
``run_graph`` with inputs of the same types call after call. The general path computes
every input's ``TensorType`` to find the plan by ``(structure, types)``, then runs it
with argument checks: ~1.5 us per input. Here the structure alone finds the plan that
ran last, and its fast call checks every input's exact layout (shape, strides, dtype)
against the plan's, so it runs only inputs that plan is right for; any other input makes
it return None and the general path decides (and, once it has run a plan, makes that
the structure's last one)::

    fast = calls.last(graph.structure)      # None: not seen, or its plan has fallbacks
    results = fast(inputs, {}) if fast else None     # None: another layout
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from tidu_compile.compiler.fast_path import build_fast_call
from tidu_compile.compiler.plan import BoundPlan

__all__ = ["GraphFastCalls"]

FastCall = Callable[[Sequence[Any], Mapping[Hashable, Any]], list[Any] | None]
_NO_SAVED: Mapping[Hashable, Any] = {}


class GraphFastCalls:
    """Fast calls of ``run_graph``'s bound plans: by plan key, and the last per structure."""

    def __init__(self) -> None:
        self._by_key: dict[Hashable, FastCall] = {}
        self._last: dict[Hashable, FastCall] = {}

    def run(self, structure: Hashable, inputs: Sequence[Any]) -> list[Any] | None:
        """The results of the structure's last plan for ``inputs``, or None when there is
        none or the inputs' layouts are not exactly its own."""
        fast = self._last.get(structure)
        return None if fast is None else fast(inputs, _NO_SAVED)

    def remember(self, structure: Hashable, key: Hashable, bound: BoundPlan) -> None:
        """``bound`` (the plan of ``key``, without fallbacks) ran last for ``structure``."""
        fast = self._by_key.get(key)
        if fast is None:
            sources = [(i, None) for i in range(bound.plan.arg_count)]
            fast = self._by_key[key] = build_fast_call(bound, sources).function
        self._last[structure] = fast

    def clear(self) -> None:
        self._by_key.clear()
        self._last.clear()

"""The raw keys of the eager tape: ``EagerKey`` (the n-th recorded value, an ``int``),
``TangentKey`` (its tangent in nested forward passes) and the ``KeySource`` that hands
them out; and ``interned``, one object per graph structure."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from tidu_compile import forksafe

__all__ = ["CountingKeySource", "EagerKey", "KeySource", "TangentKey", "interned"]


class EagerKey(int):
    """A raw key handed out by ``CountingKeySource``: the n-th key, an ``int`` (made,
    hashed and compared as one: the tape makes one per recorded op); tangents add a
    pass id (``TangentKey``)."""

    __slots__ = ()

    passes: tuple[int, ...] = ()

    @property
    def index(self) -> int:
        return int(self)

    def tangent_of(self, pass_id: int) -> TangentKey:
        return TangentKey(int(self), (pass_id,))

    def __repr__(self) -> str:
        return f"EagerKey({int(self)})"


@dataclass(frozen=True, slots=True)
class TangentKey:
    """The tangent of ``EagerKey(index)`` in the passes ``passes`` (innermost last)."""

    index: int
    passes: tuple[int, ...]

    def tangent_of(self, pass_id: int) -> TangentKey:
        return TangentKey(self.index, self.passes + (pass_id,))


class KeySource(ABC):
    """Hands out raw keys never used before."""

    @abstractmethod
    def fresh_input_key(self) -> Hashable: ...


class CountingKeySource(KeySource):
    """``EagerKey(0)``, ``EagerKey(1)``, ...; thread-safe (``itertools.count`` is atomic)."""

    def __init__(self) -> None:
        self._counter = itertools.count()

    def fresh_input_key(self) -> EagerKey:
        return EagerKey(next(self._counter))


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

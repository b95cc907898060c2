"""The raw keys of the eager tape: ``EagerKey`` (the n-th recorded value, an ``int``),
``TangentKey`` (its tangent in nested forward passes) and the ``KeySource`` that hands
them out; and ``interned``, one object per graph structure."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass

__all__ = ["CountingKeySource", "EagerKey", "KeySource", "TangentKey"]


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

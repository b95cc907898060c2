"""Compiled representatives of shape classes, in memory and on disk.

The first program of a shape class (``compiler.generic``) to compile becomes its
representative: its artifact (plan + object code), its binding, and the positions of
the binding its code fixes: an extent is *fixed* when the kernels spell it out
(``Artifact.baked``: a loop bound, an inner extent) or a library call carries it in a
field other than a shape. Any other program of the class whose binding agrees on the
fixed positions runs the representative's native code with an instantiated plan
(``compiler.baked``); one that disagrees is compiled for itself and becomes another
representative of the class. For the MLP's nodes the batch size is free everywhere
(chunked kernels loop over rows ``[lo, hi)`` given at run time), so batch sizes 256,
200, 128, 64 and 33 share one compile per node.

On disk a class's representatives (a tuple, at most ``PER_CLASS``) are stored under
``generic_digest`` (the abstract text plus the compilation environment, as for concrete
programs), beside the concrete artifacts.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass

from tidu_compile.compiler.cache import cache_key
from tidu_compile.compiler.generic import Abstraction, other_field_integers
from tidu_compile.compiler.plan import KernelStep, LibraryStep

__all__ = [
    "CLASS_PREFIX", "PER_CLASS", "GenericStore", "Representative", "generic_digest",
    "representative",
]

#: Disk keys of shape classes start with it (``class-<sha256>.tidu``).
CLASS_PREFIX = "class-"

#: Representatives kept per class before the oldest goes (specialisations are rare).
PER_CLASS = 8


@dataclass(frozen=True)
class Representative:
    """A compiled program of a class: ``artifact`` (a ``native.Artifact``) compiled for
    ``binding``; a program of the class may reuse it iff its binding agrees at ``fixed``."""

    digest: str  # generic_digest of the class
    artifact: object
    binding: tuple[int, ...]
    fixed: frozenset[int]

    def serves(self, binding: tuple[int, ...]) -> bool:
        return len(binding) == len(self.binding) and all(
            binding[i] == self.binding[i] for i in self.fixed
        )


def generic_digest(code: str, environment: str, abstraction: Abstraction) -> str:
    """The disk key of a class: never equal to a concrete program's (``generic`` tag)."""
    return CLASS_PREFIX + cache_key("generic", code, environment, abstraction.text)


def representative(digest: str, artifact: object, abstraction: Abstraction) -> Representative:
    """The representative made of ``artifact``, compiled for ``abstraction``'s program.

    Fixed: every extent in ``artifact.baked``, in a library call's non-shape fields, or
    everything when a buffer's extent is none of the binding's (the plan could not be
    remapped).
    """
    binding = abstraction.binding
    plan = artifact.plan  # type: ignore[attr-defined]
    known = set(binding) | {0, 1}
    extents = [s.extent for s in plan.steps if isinstance(s, KernelStep)]
    every = frozenset(range(len(binding)))
    if (
        artifact.baked is None  # type: ignore[attr-defined]
        or any(d not in known for t in plan.types for d in t.shape)
        or not known.issuperset(extents)
    ):
        return Representative(digest, artifact, binding, every)
    spelled = set(artifact.baked)  # type: ignore[attr-defined]
    for step in plan.steps:
        if isinstance(step, LibraryStep):
            spelled |= other_field_integers(step.op)
    fixed = every if -1 in spelled else frozenset(
        i for i, extent in enumerate(binding) if extent in spelled
    )
    return Representative(digest, artifact, binding, fixed)


class GenericStore:
    """Representatives by class text, in memory: an LRU of classes bounded by
    ``max_classes`` and by ``max_bytes`` of object code (None: no byte bound), as the
    executor's plan cache is; evicted classes come back from disk."""

    def __init__(self, max_classes: int = 1024, max_bytes: int | None = None) -> None:
        self.max_classes = max_classes
        self.max_bytes = max_bytes
        self.total_bytes = 0
        self._classes: OrderedDict[str, list[Representative]] = OrderedDict()

    def find(self, abstraction: Abstraction) -> Representative | None:
        """A representative whose code serves ``abstraction``'s binding, else None."""
        reps = self._classes.get(abstraction.text)
        for candidate in reps or ():
            if candidate.serves(abstraction.binding):
                with contextlib.suppress(KeyError):  # another thread evicted it meanwhile
                    self._classes.move_to_end(abstraction.text)
                return candidate
        return None

    def add(self, abstraction: Abstraction, rep: Representative) -> None:
        reps = self._classes.setdefault(abstraction.text, [])
        reps.append(rep)
        self.total_bytes += _size(rep)
        for old in reps[:-PER_CLASS]:
            self.total_bytes -= _size(old)
        del reps[:-PER_CLASS]
        self._classes.move_to_end(abstraction.text)
        while len(self._classes) > 1 and (
            len(self._classes) > self.max_classes
            or (self.max_bytes is not None and self.total_bytes > self.max_bytes)
        ):
            _, evicted = self._classes.popitem(last=False)
            self.total_bytes -= sum(_size(r) for r in evicted)

    def __len__(self) -> int:
        return sum(len(reps) for reps in self._classes.values())


def _size(rep: Representative) -> int:
    return len(getattr(rep.artifact, "object_code", None) or b"") + 512

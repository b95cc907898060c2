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

from dataclasses import dataclass

from tidu_compile.compiler.cache import cache_key
from tidu_compile.compiler.generic import Abstraction, other_field_integers
from tidu_compile.compiler.plan import KernelStep, LibraryStep

__all__ = ["PER_CLASS", "GenericStore", "Representative", "generic_digest", "representative"]

#: Representatives kept per class before the oldest goes (specialisations are rare).
PER_CLASS = 8


@dataclass(frozen=True)
class Representative:
    """A compiled program of a class: ``artifact`` (a ``pipeline.Artifact``) compiled for
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
    return cache_key("generic", code, environment, abstraction.text)


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
    if (
        artifact.baked is None  # type: ignore[attr-defined]
        or any(d not in known for t in plan.types for d in t.shape)
        or not known.issuperset(extents)
    ):
        return Representative(digest, artifact, binding, frozenset(range(len(binding))))
    spelled = set(artifact.baked)  # type: ignore[attr-defined]
    for step in plan.steps:
        if isinstance(step, LibraryStep):
            spelled |= other_field_integers(step.op)
    if -1 in spelled:
        return Representative(digest, artifact, binding, frozenset(range(len(binding))))
    fixed = frozenset(i for i, extent in enumerate(binding) if extent in spelled)
    return Representative(digest, artifact, binding, fixed)


class GenericStore:
    """Representatives by class text, in memory (bounded by ``max_classes``)."""

    def __init__(self, max_classes: int = 4096) -> None:
        self.max_classes = max_classes
        self._classes: dict[str, list[Representative]] = {}

    def find(self, abstraction: Abstraction) -> Representative | None:
        """A representative whose code serves ``abstraction``'s binding, else None."""
        for candidate in self._classes.get(abstraction.text, ()):
            if candidate.serves(abstraction.binding):
                return candidate
        return None

    def add(self, abstraction: Abstraction, rep: Representative) -> None:
        if len(self._classes) >= self.max_classes:
            self._classes.clear()  # bounded; representatives come back from disk
        reps = self._classes.setdefault(abstraction.text, [])
        reps.append(rep)
        del reps[:-PER_CLASS]

    def __len__(self) -> int:
        return sum(len(reps) for reps in self._classes.values())

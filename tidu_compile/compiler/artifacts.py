"""Where a program's compiled artifact comes from: its shape class, the disk, a compile.

``Artifacts.load(program)`` finds native code without compiling, in this order:

1. a representative of the program's shape class that serves its binding, in memory
   (``compiler.store``), its plan instantiated for the program (``compiler.baked``):
   counted in ``stats.generic_hits``;
2. on disk: the class's representatives, then the program's own artifact: counted
   in ``stats.disk_hits``.

``compile(program)`` compiles in this process; ``adopt(program, artifact)`` takes an
artifact compiled elsewhere (a background worker, ``compiler.background``). Both make
it a representative of its class, in memory and on disk, and count
``stats.compiles``. Every result is ``(artifact, bound plan)``.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

from tidu_compile.compiler import native
from tidu_compile.compiler.baked import NotInstantiable, instantiate
from tidu_compile.compiler.cache import DiskCache
from tidu_compile.compiler.generic import Abstraction, abstract
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.compiler.program import NodeProgram
from tidu_compile.compiler.store import (
    PER_CLASS,
    GenericStore,
    Representative,
    generic_digest,
    representative,
)

__all__ = ["Artifacts", "Keys", "fits"]


@dataclass(frozen=True)
class Keys:
    """A program's disk key (``digest``) and shape class (``abstraction``)."""

    digest: str
    abstraction: Abstraction

    @staticmethod
    def of(program: NodeProgram) -> Keys:
        return Keys(native.program_digest(program), abstract(program))

    @functools.cached_property
    def generic(self) -> str:
        return generic_digest(
            native.code_fingerprint(), native.environment_fingerprint(), self.abstraction
        )


def fits(artifact: Any, digest: str, program: NodeProgram) -> bool:
    """A disk artifact made for ``program``: its plan takes the program's argument types."""
    plan = getattr(artifact, "plan", None)
    return (
        native.artifact_matches(artifact, digest)
        and plan is not None
        and getattr(plan, "arg_count", None) == program.arg_count
        and tuple(plan.types[: program.arg_count]) == program.types[: program.arg_count]
    )


class Artifacts:
    """The artifacts of one executor: ``disk`` (or None), its ``stats``, and its shape
    classes' representatives in memory (bounded like its plans)."""

    def __init__(
        self, disk: DiskCache | None, stats: Any, max_classes: int, max_bytes: int | None
    ) -> None:
        self.disk = disk
        self.stats = stats
        self.generic = GenericStore(max_classes, max_bytes)

    def load(self, program: NodeProgram, keys: Keys) -> tuple[Any, BoundPlan] | None:
        """``program``'s artifact and bound plan without compiling, else None."""
        reused = self._reuse(program, keys)
        if reused is not None:
            return reused
        if self.disk is None:
            return None
        start = time.perf_counter()
        artifact = self.disk.get(keys.digest)
        if artifact is None or not fits(artifact, keys.digest, program):
            return None
        try:
            bound = native.bind(artifact)
        except Exception:  # noqa: BLE001 - a damaged entry is a miss: compile it again
            return None
        self.stats.disk_hits += 1
        self.stats.disk_seconds += time.perf_counter() - start
        self.generic.add(keys.abstraction, representative(keys.generic, artifact,
                                                           keys.abstraction))  # fmt: skip
        return artifact, bound

    def compile(self, program: NodeProgram, keys: Keys) -> tuple[Any, BoundPlan]:
        """Compile ``program`` here, store it, and bind it."""
        from tidu_compile.compiler import pipeline  # the compiler itself: xDSL (~0.4 s)

        start = time.perf_counter()
        artifact = pipeline.compile_program(program, keys.digest)
        self.stats.compile_seconds += time.perf_counter() - start
        if self.disk is not None:
            self.disk.put(keys.digest, artifact)
        self._count_compile(artifact)
        return self._keep(keys, artifact)

    def adopt(self, keys: Keys, artifact: Any, compiled: bool) -> tuple[Any, BoundPlan]:
        """Keep and bind an artifact made for ``keys`` elsewhere (a background worker,
        which stored it on disk already): ``compiled``, or found on the worker's disk;
        counted as such."""
        if compiled:
            self.stats.compile_seconds += sum(artifact.stage_seconds.values())
            self._count_compile(artifact)
        else:
            self.stats.disk_hits += 1
        return self._keep(keys, artifact)

    def _count_compile(self, artifact: Any) -> None:
        self.stats.compiles += 1
        for stage, seconds in artifact.stage_seconds.items():
            self.stats.stage_seconds[stage] = self.stats.stage_seconds.get(stage, 0.0) + seconds

    def _keep(self, keys: Keys, artifact: Any) -> tuple[Any, BoundPlan]:
        """Make ``artifact`` a representative of its class (in memory, on disk); bind it."""
        rep = representative(keys.generic, artifact, keys.abstraction)
        self.generic.add(keys.abstraction, rep)
        if self.disk is not None and len(rep.fixed) < len(rep.binding):
            self.disk.put(rep.digest, (*self._stored(rep.digest)[1 - PER_CLASS :], rep))
        return artifact, native.bind(artifact)

    def _stored(self, key: str) -> tuple[Representative, ...]:
        """The representatives the disk cache holds under the class digest ``key``."""
        stored = self.disk.get(key) if self.disk is not None else None
        if not isinstance(stored, tuple):
            return ()
        return tuple(r for r in stored if isinstance(r, Representative) and r.digest == key)

    def _reuse(self, program: NodeProgram, keys: Keys) -> tuple[Any, BoundPlan] | None:
        """``program``'s artifact and bound plan made of a representative of its shape
        class (in memory, else on disk) that serves its binding, else None."""
        start = time.perf_counter()
        binding = keys.abstraction.binding
        rep = self.generic.find(keys.abstraction)
        from_disk = False
        if rep is None and self.disk is not None and binding:
            for stored in self._stored(keys.generic):
                if stored.serves(binding):
                    rep, from_disk = stored, True
                    break
        if rep is None:
            return None
        source: Any = rep.artifact
        try:
            plan = instantiate(source.plan, rep.binding, binding)
            if plan.types[: program.arg_count] != program.types[: program.arg_count]:
                raise NotInstantiable("argument types differ")
            artifact = native.Artifact(keys.digest, plan, source.object_code, source.symbols,
                                         {}, source.baked)  # fmt: skip
            bound = native.bind(artifact)
        except Exception:  # noqa: BLE001 - not instantiable, or a damaged entry: compile
            return None
        if from_disk:
            self.generic.add(keys.abstraction, rep)
            self.stats.disk_hits += 1
            self.stats.disk_seconds += time.perf_counter() - start
        else:
            self.stats.generic_hits += 1
        return artifact, bound

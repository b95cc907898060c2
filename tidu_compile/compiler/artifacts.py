"""Where a program's compiled artifact comes from: memory, the disk, or the compiler.

``Artifacts.load(program)`` finds the program's own artifact without compiling: in
memory (another node with the same program; ``stats.memory_hits``), else on disk
(``stats.disk_hits``). ``compile(program)`` lowers it here and takes its object code
from ``objects`` when its kernels were compiled before for another program (the next
batch size: ``stats.generic_hits``), else from LLVM (``stats.compiles``).
``adopt(keys, artifact, source)`` takes an artifact a background worker made
(``compiler.background``). Every result is ``(artifact, bound plan)``.

Sharing code across programs is sound by construction: object code is keyed by the
canonical text of the kernels it was compiled from (``compiler.kernel_code``), so a
program gets another's code only when its own kernels, lowered for its own shapes, are
the same text. Nothing about what the code depends on is inferred.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from tidu_compile.compiler import native
from tidu_compile.compiler.cache import DiskCache, MemoryCache
from tidu_compile.compiler.generic import Abstraction, abstract
from tidu_compile.compiler.objects import ObjectStore
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.compiler.ssa_program import NodeProgram

__all__ = ["Artifacts", "Keys", "Source", "fits"]

#: How an artifact was made: LLVM ran for it (``compiled``), its object code was made
#: for another program with the same kernels (``reused``), or it was read from disk.
Source = Literal["compiled", "reused", "disk"]


@dataclass(frozen=True)
class Keys:
    """A program's disk key (``digest``) and shape class (``abstraction``: which
    programs in flight a background compile groups, ``executors.tiered``)."""

    digest: str
    abstraction: Abstraction

    @staticmethod
    def of(program: NodeProgram) -> Keys:
        return Keys(native.program_digest(program), abstract(program))


def fits(artifact: Any, digest: str, program: NodeProgram) -> bool:
    """A disk artifact made for ``program``: its plan takes the program's argument types."""
    plan = getattr(artifact, "plan", None)
    return (
        native.artifact_matches(artifact, digest)
        and plan is not None
        and getattr(plan, "arg_count", None) == program.arg_count
        and tuple(plan.types[: program.arg_count]) == program.types[: program.arg_count]
    )


def _size(artifact: Any) -> int:
    return len(getattr(artifact, "object_code", None) or b"") + 512


class Artifacts:
    """The artifacts of one executor: ``disk`` (or None), its ``stats``, its programs'
    artifacts in memory (bounded like its plans) and the object code it knows."""

    def __init__(
        self, disk: DiskCache | None, stats: Any, max_entries: int, max_bytes: int | None
    ) -> None:
        self.disk = disk
        self.stats = stats
        self.programs = MemoryCache(max_entries, max_bytes=max_bytes, size_of=_size)
        self.objects = ObjectStore(disk, max_bytes if max_bytes is not None else 1 << 62)

    def load(self, program: NodeProgram, keys: Keys) -> tuple[Any, BoundPlan] | None:
        """``program``'s own artifact and bound plan without compiling, else None."""
        artifact = self.programs.get(keys.digest)
        if artifact is not None:
            self.stats.memory_hits += 1
            return artifact, native.bind(artifact)
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
        self._keep(artifact)
        return artifact, bound

    def compile(
        self, program: NodeProgram, keys: Keys, codegen: bool = True
    ) -> tuple[Any, BoundPlan]:
        """Lower ``program`` here, with its object code reused or compiled; store it and
        bind it. ``codegen=False``: ``native.CodegenRefused`` rather than run LLVM."""
        from tidu_compile.compiler import pipeline  # the compiler itself: xDSL (~0.4 s)

        start = time.perf_counter()
        artifact, generated = pipeline.compile_program(program, keys.digest, self.objects,
                                                       codegen)  # fmt: skip
        self.stats.compile_seconds += time.perf_counter() - start
        if self.disk is not None:
            self.disk.put(keys.digest, artifact)
        self._count(artifact, "compiled" if generated else "reused")
        return self._keep(artifact), native.bind(artifact)

    def adopt(self, keys: Keys, artifact: Any, source: Source) -> tuple[Any, BoundPlan]:
        """Keep and bind an artifact made for ``keys`` by a background worker (which
        stored it on disk already), counted by its ``source``."""
        if source == "disk":
            self.stats.disk_hits += 1
        else:
            self.stats.compile_seconds += sum(artifact.stage_seconds.values())
            self._count(artifact, source)
        return self._keep(artifact), native.bind(artifact)

    def known_objects(self, artifacts: list[Any]) -> tuple[tuple[str, bytes], ...]:
        """``(kernels digest, object code)`` of ``artifacts``: what a worker compiling a
        program of their shape class may reuse (``compiler.background``)."""
        return tuple(
            (a.kernels, a.object_code) for a in artifacts
            if getattr(a, "kernels", None) and a.object_code
        )  # fmt: skip

    def _count(self, artifact: Any, source: Source) -> None:
        if source == "reused":
            self.stats.generic_hits += 1
        else:
            self.stats.compiles += 1
        for stage, seconds in artifact.stage_seconds.items():
            self.stats.stage_seconds[stage] = self.stats.stage_seconds.get(stage, 0.0) + seconds

    def _keep(self, artifact: Any) -> Any:
        """Remember ``artifact`` (and its object code) in memory."""
        self.programs.put(artifact.digest, artifact)
        if artifact.kernels and artifact.object_code:
            self.objects.put(artifact.kernels, artifact.object_code, to_disk=False)
        return artifact

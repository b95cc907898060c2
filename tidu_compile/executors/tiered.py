"""The programs one executor handed to background workers, until it collects them.

``submit(program, keys)`` hands a program to a worker (``compiler.background``), once
per program and process generation; the node or graph it belongs to runs on the
reference path meanwhile. ``Submitted.ready()`` says when ``collect`` can make the
artifact and bound plan of it without waiting: adopted from the worker, or, when the
worker failed (or the pool broke, or the process was forked since), found or compiled
here, which reports a real compile error as the executor always does.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from tidu_compile.compiler import background
from tidu_compile.compiler.artifacts import Artifacts, Keys
from tidu_compile.compiler.cache import DiskCache
from tidu_compile.compiler.plan import BoundPlan

__all__ = ["Submitted", "Tiered"]


@dataclass(frozen=True, eq=False)
class Submitted:
    """A program a background worker compiles."""

    future: futures.Future
    generation: int  # ``background.generation()`` at submission
    name: str  # its key in ``Tiered.in_flight``
    program: Any
    keys: Keys | None  # None: the worker computes them (a cold process)

    def ready(self) -> bool:
        """Done, or never to be done (submitted before this process was forked)."""
        return self.future.done() or self.generation != background.generation()


class Tiered:
    """An executor's background compiles: ``artifacts`` keeps what comes back;
    ``compile_here(program, keys)`` is the fallback."""

    def __init__(
        self,
        artifacts: Artifacts,
        compile_here: Callable[[Any, Keys], tuple[Any, BoundPlan]],
        disk: DiskCache | None,
    ) -> None:
        self.artifacts = artifacts
        self.compile_here = compile_here
        self.disk = disk
        #: Programs in flight, by digest (or text, unkeyed): (future, generation).
        self.in_flight: dict[str, tuple[futures.Future, int]] = {}

    def submit(self, program: Any, keys: Keys | None) -> Submitted:
        """Hand ``program`` to a worker (once per program and process generation)."""
        disk = self.disk
        cache_dir = str(disk.directory) if disk is not None and disk.enabled else None
        generation = background.generation()
        name = keys.digest if keys is not None else str(program)
        future, submitted = self.in_flight.get(name, (None, -1))
        if future is None or submitted != generation:
            future = background.submit(program, None if keys is None else keys.digest, cache_dir)
            self.in_flight[name] = (future, generation)
        return Submitted(future, generation, name, program, keys)

    def collect(self, submitted: Submitted) -> tuple[Any, BoundPlan]:
        """The artifact and bound plan of a ready ``submitted``."""
        self.in_flight.pop(submitted.name, None)
        background.await_environment()
        program = submitted.program
        keys = submitted.keys or Keys.of(program)
        future = submitted.future
        stale = submitted.generation != background.generation()
        done = None if stale or future.exception() else future.result()
        if done is not None:
            return self.artifacts.adopt(keys, *done)
        return self.artifacts.load(program, keys) or self.compile_here(program, keys)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every program in flight is compiled (True) or ``timeout`` passes."""
        pending = [future for future, _ in self.in_flight.values()]
        return not futures.wait(pending, timeout=timeout).not_done

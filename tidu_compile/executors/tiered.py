"""The programs one executor handed to background workers, until it collects them.

``submit(program, keys)`` hands a program to a worker (``compiler.background``), once
per program and process generation; the node or graph it belongs to runs on the
reference path meanwhile. A program of a shape class already in flight (the next batch
size, before the first one's code is back) follows those programs instead of being
compiled too: when they are done, it reuses their code if that serves its binding
(``compiler.store``), else it is submitted itself. ``Submitted.ready()`` says when
``collect`` can make the artifact and bound plan of it without waiting: adopted from the
worker, or, when the worker failed (or the pool broke, or the process was forked
since), found or compiled here, which reports a real compile error as always.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from tidu_compile.compiler import background
from tidu_compile.compiler.artifacts import Artifacts, Keys
from tidu_compile.compiler.cache import DiskCache
from tidu_compile.compiler.generic import abstract
from tidu_compile.compiler.plan import BoundPlan

__all__ = ["Submitted", "Tiered"]

#: Adopted artifacts kept for their own nodes (bounded).
_COLLECTED = 256


@dataclass(frozen=True, eq=False)
class Submitted:
    """A program a background worker compiles."""

    future: futures.Future
    generation: int  # ``background.generation()`` at submission
    name: str  # its key in ``Tiered.in_flight``
    program: Any
    keys: Keys | None  # None: the worker computes them (a cold process)
    #: The programs of its shape class that workers compile: this one waits for them
    #: and reuses their code if it serves (it is not submitted itself until then).
    leaders: tuple[Submitted, ...] = ()

    def ready(self) -> bool:
        """Done, or never to be done (submitted before this process was forked)."""
        if self.leaders:
            return all(leader.ready() for leader in self.leaders)
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
        #: Per shape class (abstract text), its programs that workers compile.
        self.classes: dict[str, list[Submitted]] = {}
        #: Adopted artifacts and bound plans by name, for the leaders' own nodes.
        self.collected: dict[str, tuple[Any, BoundPlan]] = {}
        #: Programs waiting for their shape class's leaders (``start_followers``).
        self.followers: list[Submitted] = []

    def submit(self, program: Any, keys: Keys | None) -> Submitted:
        """Hand ``program`` to a worker (once per program and process generation), or
        let it wait for the programs of its shape class in flight."""
        generation = background.generation()
        name = keys.digest if keys is not None else str(program)
        shape_class = (keys.abstraction if keys is not None else abstract(program)).text
        leaders = tuple(leader for leader in self.classes.get(shape_class, ())
                        if leader.generation == generation and leader.name != name)  # fmt: skip
        if leaders:
            follower = Submitted(leaders[0].future, generation, name, program, keys, leaders)
            self.followers.append(follower)
            return follower
        disk = self.disk
        cache_dir = str(disk.directory) if disk is not None and disk.enabled else None
        future, submitted = self.in_flight.get(name, (None, -1))
        if future is None or submitted != generation:
            future = background.submit(program, None if keys is None else keys.digest, cache_dir)
            self.in_flight[name] = (future, generation)
        result = Submitted(future, generation, name, program, keys)
        self.classes.setdefault(shape_class, []).append(result)
        return result

    def collect(self, submitted: Submitted) -> tuple[Any, BoundPlan] | Submitted:
        """The artifact and bound plan of a ready ``submitted``; for a follower whose
        leader's code does not serve it, its own submission."""
        if not submitted.leaders:
            return self._adopt(submitted)
        for leader in submitted.leaders:  # into the executor's shape classes
            self._adopt(leader)
        keys = submitted.keys or Keys.of(submitted.program)
        found = self.artifacts.load(submitted.program, keys)
        # Not served: follow the class's programs in flight now (compiled for other
        # bindings meanwhile), else be compiled itself.
        return found if found is not None else self.submit(submitted.program, keys)

    def _adopt(self, submitted: Submitted) -> tuple[Any, BoundPlan]:
        """``submitted``'s artifact and bound plan, adopted once (a leader is adopted by
        its first follower or by itself, whichever comes first)."""
        got = self.collected.get(submitted.name)
        if got is not None:
            return got
        self.in_flight.pop(submitted.name, None)
        background.await_environment()
        program = submitted.program
        keys = submitted.keys or Keys.of(program)
        in_class = self.classes.get(keys.abstraction.text, [])
        if submitted in in_class:
            in_class.remove(submitted)
            if not in_class:
                del self.classes[keys.abstraction.text]
        future = submitted.future
        stale = submitted.generation != background.generation()
        done = None if stale or future.exception() else future.result()
        if done is not None:
            got = self.artifacts.adopt(keys, *done)
        else:
            got = self.artifacts.load(program, keys) or self.compile_here(program, keys)
        if len(self.collected) >= _COLLECTED:
            self.collected.clear()  # bounded: a leader's own node may never come back
        self.collected[submitted.name] = got
        return got

    def wait(self, timeout: float | None = None, lock: Any = None) -> bool:
        """Wait until every program in flight is compiled, followers included (True), or
        ``timeout`` passes (False). A follower whose leaders' code does not serve it is
        submitted as soon as they are done (``start_followers``, under ``lock``: the
        executor's), so it is waited for too."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pending = [future for future, _ in self.in_flight.values()]
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if futures.wait(pending, timeout=left).not_done:
                return False
            if lock is None:
                return True
            with lock:
                if not self.start_followers():
                    return True

    def start_followers(self) -> bool:
        """Submit each follower whose leaders are done and whose code does not serve it
        (it would otherwise start compiling only at its node's next call); True when one
        was submitted."""
        started = False
        for follower in [f for f in self.followers if f.ready()]:
            self.followers.remove(follower)
            if follower.generation != background.generation():
                continue  # a forked child's stale follower: collected at its next call
            for leader in follower.leaders:
                self._adopt(leader)
            keys = follower.keys or Keys.of(follower.program)
            if self.artifacts.load(follower.program, keys) is None:
                started = not self.submit(follower.program, keys).ready() or started
        return started

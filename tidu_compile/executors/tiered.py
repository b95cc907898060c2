"""The programs one executor handed to background workers, until it collects them.

``submit(program, keys)`` hands a program to a worker (``compiler.background``), once
per program; the node or graph it belongs to runs on the reference path meanwhile. A
program of a shape class already in flight (the next batch size, before the first
one's code is back) follows those programs instead of being compiled at the same time:
when they are done, it is submitted itself with their object code, which the worker
reuses if its own kernels are the same (``compiler.objects``). ``Submitted.ready()``
says when ``collect`` can make the artifact and bound plan of it without waiting:
adopted from the worker, or, when the worker failed, found or compiled here, which
reports a real compile error as always. A program whose compile killed two workers
(``background.WorkerDied``) is not compiled here: ``collect`` raises that error, naming
the program, for its first node (``CompiledExecutor`` warns and runs the node on the
reference path) and ``UnsupportedNode`` for its other nodes (the same, quietly).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from tidu_compile.compiler import background
from tidu_compile.compiler.artifacts import Artifacts, Keys
from tidu_compile.compiler.generic import abstract
from tidu_compile.compiler.plan import BoundPlan
from tidu_compile.compiler.program import UnsupportedNode

__all__ = ["Submitted", "Tiered"]

#: Adopted artifacts kept for their own nodes (bounded).
_COLLECTED = 256


@dataclass(frozen=True, eq=False)
class Submitted:
    """A program a background worker compiles."""

    future: futures.Future
    name: str  # its key in ``Tiered.in_flight``
    program: Any
    keys: Keys | None  # None: the worker computes them (a cold process)
    shape_class: str  # its abstract text: its key in ``Tiered.classes``
    #: The programs of its shape class that workers compile: this one waits for them,
    #: then is submitted with their object code (``Tiered.collect``).
    leaders: tuple[Submitted, ...] = ()

    def ready(self) -> bool:
        """Compiled (or failed) by its worker, leaders included."""
        if self.leaders:
            return all(leader.ready() for leader in self.leaders)
        return background.done(self.future)


class Tiered:
    """An executor's background compiles: ``artifacts`` keeps what comes back (and the
    disk cache workers write to); ``compile_here(program, keys)`` is the fallback."""

    def __init__(
        self, artifacts: Artifacts, compile_here: Callable[[Any, Keys], tuple[Any, BoundPlan]]
    ) -> None:
        self.artifacts = artifacts
        self.compile_here = compile_here
        #: Programs in flight, by digest (or text, unkeyed).
        self.in_flight: dict[str, futures.Future] = {}
        #: Per shape class (abstract text), its programs that workers compile.
        self.classes: dict[str, list[Submitted]] = {}
        #: Artifacts and bound plans by name, adopted or loaded for a follower, until
        #: their own node collects them (bounded).
        self.collected: dict[str, tuple[Any, BoundPlan]] = {}
        #: Programs waiting for their shape class's leaders (``start_followers``).
        self.followers: list[Submitted] = []
        #: Programs whose compile killed two workers, whose first node was told so.
        self.failed: set[str] = set()

    def submit(
        self, program: Any, keys: Keys | None, known: tuple[tuple[str, bytes], ...] = ()
    ) -> Submitted:
        """Hand ``program`` to a worker (once per program), with the object code ``known``
        it may reuse, or let it wait for the programs of its shape class in flight."""
        name = keys.digest if keys is not None else str(program)
        shape_class = (keys.abstraction if keys is not None else abstract(program)).text
        own = self._submitted(shape_class, name)
        if own is not None:
            return own  # submitted already (another node of the same program)
        in_class = self.classes.get(shape_class)
        if in_class:
            follower = Submitted(in_class[0].future, name, program, keys, shape_class,
                                 tuple(in_class))  # fmt: skip
            self.followers.append(follower)
            return follower
        disk = self.artifacts.disk
        cache_dir = str(disk.directory) if disk is not None and disk.enabled else None
        future = self.in_flight.get(name)
        if future is None:
            digest = None if keys is None else keys.digest
            future = background.submit(program, digest, cache_dir, known)
            self.in_flight[name] = future
        result = Submitted(future, name, program, keys, shape_class)
        self.classes.setdefault(shape_class, []).append(result)
        return result

    def _submitted(self, shape_class: str, name: str) -> Submitted | None:
        """The submission of program ``name`` in flight, if any."""
        return next((s for s in self.classes.get(shape_class, ()) if s.name == name), None)

    def collect(self, submitted: Submitted) -> tuple[Any, BoundPlan] | Submitted:
        """The artifact and bound plan of a ready ``submitted``; for a follower not
        found among its leaders' results, its own submission."""
        got = self.collected.get(submitted.name)
        if got is not None:
            return got
        if not submitted.leaders:
            return self._own(submitted)
        if submitted in self.followers:
            self.followers.remove(submitted)
        for leader in submitted.leaders:  # into the executor's shape classes
            self._adopt(leader)
        keys = submitted.keys or Keys.of(submitted.program)
        # A follower submitted without keys is named by its program's text; its own
        # submission (``start_followers``, below) by its digest: look for both.
        for name in dict.fromkeys((submitted.name, keys.digest)):
            own = self._submitted(submitted.shape_class, name)
            if own is not None:  # submitted itself meanwhile (``start_followers``)
                return self._own(own) if own.ready() else own
            got = self.collected.get(name)
            if got is not None:
                return got
        found = self.artifacts.load(submitted.program, keys)
        if found is None:
            # Follow the class's programs in flight now (submitted meanwhile), else be
            # compiled itself, reusing the leaders' object code where its kernels agree.
            done = [self.collected[s.name][0] for s in submitted.leaders
                    if s.name in self.collected]  # fmt: skip
            return self.submit(submitted.program, keys, self.artifacts.known_objects(done))
        self._keep(submitted.name, found)
        return found

    def _adopt(self, submitted: Submitted) -> tuple[Any, BoundPlan] | None:
        """``submitted``'s artifact and bound plan, adopted once (a leader is adopted by
        its first follower or by itself, whichever comes first); None when its compile
        killed two workers (``_killed``)."""
        in_class = self.classes.get(submitted.shape_class, [])
        if submitted in in_class:
            in_class.remove(submitted)
            if not in_class:
                del self.classes[submitted.shape_class]
        got = self.collected.get(submitted.name)
        if got is not None:
            return got
        self.in_flight.pop(submitted.name, None)
        background.await_environment()
        program = submitted.program
        keys = submitted.keys or Keys.of(program)
        future = submitted.future
        error = future.exception()
        if isinstance(error, background.WorkerDied):
            return None
        done = None if error else future.result()
        if done is not None:
            got = self.artifacts.adopt(keys, *done)
        else:
            got = self.artifacts.load(program, keys) or self.compile_here(program, keys)
        self._keep(submitted.name, got)
        return got

    def _own(self, submitted: Submitted) -> tuple[Any, BoundPlan]:
        """``_adopt`` for its own node, which gets the error of a program whose
        compile killed two workers (``_killed``)."""
        got = self._adopt(submitted)
        if got is None:
            raise self._killed(submitted)
        return got

    def _killed(self, submitted: Submitted) -> Exception:
        """The error for a node of a program whose compile killed two workers: the
        worker's, naming the program, for its first node; then ``UnsupportedNode``."""
        first_line = str(submitted.program).split("\n", 1)[0].removesuffix(" {")
        ops = sorted({type(instr.op).__name__ for instr in submitted.program.instrs})
        message = (f"{first_line} of {len(submitted.program.instrs)} ops "
                   f"({', '.join(ops)}): {submitted.future.exception()}")  # fmt: skip
        if submitted.name in self.failed:
            return UnsupportedNode(message)
        self.failed.add(submitted.name)
        return background.WorkerDied(message)

    def _keep(self, name: str, got: tuple[Any, BoundPlan]) -> None:
        if len(self.collected) >= _COLLECTED:
            self.collected.clear()  # bounded: a program's own node may never come back
        self.collected[name] = got

    def wait(self, timeout: float | None = None, lock: Any = None) -> bool:
        """Wait until every program in flight is compiled, followers included (True), or
        ``timeout`` passes (False). A follower whose leaders' code does not serve it is
        submitted as soon as they are done (``start_followers``, under ``lock``: the
        executor's), so it is waited for too."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pending = list(self.in_flight.values())
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not background.wait(pending, left):
                return False
            if lock is None:
                return True
            with lock:
                if not self.start_followers():
                    return True

    def start_followers(self) -> bool:
        """Collect each follower whose leaders are done (``collect``: served by their
        code, or submitted itself; it would otherwise wait for its node's next call);
        True when one was submitted."""
        started = False
        for follower in [f for f in self.followers if f.ready()]:
            got = self.collect(follower)
            started = started or (isinstance(got, Submitted) and not got.ready())
        return started

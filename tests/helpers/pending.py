"""A ``CompiledExecutor`` whose background compiles never finish.

Every node (and ``run_graph`` graph) it meets stays pending, so it always runs its
program by numpy (``compiler.interpret``), as a node does while a worker compiles it.
No worker process is started: the executor's ``Tiered`` hands out futures that never
complete instead of submitting anything.
"""

from __future__ import annotations

from concurrent import futures
from typing import Any

from tidu_compile.compiler.artifacts import Keys
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.executors.tiered import Submitted, Tiered

__all__ = ["never_compiling_executor"]


class _NeverAnswered(Tiered):
    def submit(
        self, program: Any, keys: Keys | None, known: tuple[tuple[str, bytes], ...] = ()
    ) -> Submitted:
        name = keys.digest if keys is not None else str(program)
        return Submitted(futures.Future(), name, program, keys, shape_class=name)


def never_compiling_executor(capture: bool = False) -> CompiledExecutor:
    """A background ``CompiledExecutor`` (no disk cache) whose programs stay pending."""
    executor = CompiledExecutor(False, background=False, capture=capture)
    executor.background = True  # made without ``prewarm``: no workers
    executor.tiered = _NeverAnswered(executor.artifacts, executor._compile_here)  # noqa: SLF001
    return executor

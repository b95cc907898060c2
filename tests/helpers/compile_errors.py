"""A pytest plugin: a test during which any ``CompiledExecutor`` failed to compile fails.

A node whose compilation fails runs on the reference path with a warning and the error
in ``stats.errors`` (the README's contract), so a broken lowering would otherwise pass
every compiled-vs-reference test. This plugin journals every error appended to any
``ExecutorStats.errors`` list, whichever executor owns it (a session fixture, a
module-level one, the process default, one made and dropped inside the test), and fails
the test in its call phase, naming the errors:

    FAILED tests/x.py::test_y - Failed: 1 backward node(s) failed to compile ...

So a new test that uses the compiled executor gets the check without asking for it, and
one failure is one failed test, not a cascade of teardown errors. A test that provokes
compile failures on purpose says so with ``@pytest.mark.compile_errors_expected``.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterable
from typing import Any, SupportsIndex

import pytest

from tidu_compile.executors.compiled import ExecutorStats

MARKER = "compile_errors_expected"

#: Compile errors of the running test, in order (cleared when each test starts).
JOURNAL: list[str] = []


class JournaledErrors(list):  # type: ignore[type-arg]
    """``stats.errors``: a plain list that also copies each new error to ``JOURNAL``."""

    def append(self, message: Any) -> None:
        JOURNAL.append(str(message))
        super().append(message)

    def extend(self, messages: Iterable[Any]) -> None:
        for message in messages:
            self.append(message)

    def insert(self, index: SupportsIndex, message: Any) -> None:
        JOURNAL.append(str(message))
        super().insert(index, message)


def _journal_errors_of_every_stats_object() -> None:
    """Make every ``ExecutorStats`` made from now on keep a ``JournaledErrors`` list."""
    init = ExecutorStats.__init__
    if getattr(init, "journaled", False):
        return

    @functools.wraps(init)
    def journaled_init(self: ExecutorStats, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.errors = JournaledErrors(self.errors)

    journaled_init.journaled = True  # type: ignore[attr-defined]
    ExecutorStats.__init__ = journaled_init  # type: ignore[method-assign]


class CompileErrorsFailTheTest:
    """The plugin object (registered by ``tests/conftest.py``)."""

    def __init__(self) -> None:
        _journal_errors_of_every_stats_object()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        JOURNAL.clear()  # fixtures' compiles count for the test that uses them
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        result = yield  # a test that already failed keeps its own failure
        errors = list(JOURNAL)
        if errors and item.get_closest_marker(MARKER) is None:
            shown = "\n  ".join(errors[:5])
            more = f"\n  ... and {len(errors) - 5} more" if len(errors) > 5 else ""
            pytest.fail(
                f"{len(errors)} backward node(s) failed to compile and ran on the reference "
                f"executor instead (stats.errors); mark the test @pytest.mark.{MARKER} if "
                f"that is what it tests:\n  {shown}{more}",
                pytrace=False,
            )
        return result

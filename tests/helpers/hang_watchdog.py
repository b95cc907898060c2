"""A pytest plugin: the backstop of pytest-timeout for hangs outside Python.

pytest-timeout's ``signal`` method (our default, see ``pyproject.toml``) fails a test
that runs past its timeout and lets the session go on, but only when the main thread
returns to the interpreter: a native kernel spinning inside a ctypes call never does,
and the session would hang. This plugin arms a watchdog thread with every timeout
pytest-timeout sets (same value, same per-test ``@pytest.mark.timeout`` override); if
the test is still running ``grace`` seconds after its timeout, the watchdog prints the
test's name and every thread's stack to the real stderr and ends the process with exit
status 1. A hang costs the rest of the run, but it is a loud failure, never a wait.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from typing import Any

import pytest

#: Seconds past a test's timeout before the process is ended (the signal method's turn).
GRACE_SECONDS = 30.0


class HangWatchdog:
    """One daemon thread that watches the running test's deadline."""

    def __init__(self, config: pytest.Config, grace: float = GRACE_SECONDS) -> None:
        self.config = config
        self.grace = grace
        self._deadline: float | None = None
        self._item: pytest.Item | None = None
        self._timeout = 0.0
        self._changed = threading.Condition()
        threading.Thread(target=self._watch, name="tidu-hang-watchdog", daemon=True).start()

    # pytest-timeout's hooks (firstresult: returning None lets its own timer be set too)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> None:
        timeout = float(settings.timeout or 0)
        with self._changed:
            self._item, self._timeout = item, timeout
            self._deadline = time.monotonic() + timeout + self.grace if timeout > 0 else None
            self._changed.notify()

    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> None:
        with self._changed:
            self._item, self._deadline = None, None
            self._changed.notify()

    def _watch(self) -> None:
        with self._changed:
            while True:
                if self._deadline is None:
                    self._changed.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                self._abort()

    def _abort(self) -> None:
        capture = self.config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            capture.suspend_global_capture(in_=True)  # write to the real terminal
        name = self._item.nodeid if self._item is not None else "?"
        sys.stderr.write(
            f"\n{'+' * 30} Hang {'+' * 30}\n{name}: still running {self.grace:.0f} s after "
            f"its {self._timeout:.0f} s timeout, outside the interpreter (a native call?); "
            "the stacks of every thread follow, then the run ends with status 1\n"
        )
        sys.stderr.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(1)

"""Shared fixtures for the backend tests: an xDSL context and an IR parser."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser


def make_context() -> Context:
    """A context with every xDSL dialect registered (loaded lazily on use)."""
    ctx = Context(allow_unregistered=False)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


@pytest.fixture(scope="session")
def ctx() -> Context:
    return make_context()


@pytest.fixture(scope="session")
def parse(ctx: Context) -> Callable[[str], ModuleOp]:
    """Parse MLIR text into a fresh module."""

    def _parse(text: str) -> ModuleOp:
        return Parser(ctx, text).parse_module()

    return _parse

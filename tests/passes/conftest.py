"""Fixtures for the tidu pass tests: a context with every xDSL dialect and tidu."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tidu_pass_support import make_context, parse_module
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp


@pytest.fixture(scope="session")
def ctx() -> Context:
    return make_context()


@pytest.fixture(scope="session")
def parse(ctx: Context) -> Callable[[str], ModuleOp]:
    """Parse IR text into a fresh module."""
    return lambda text: parse_module(ctx, text)

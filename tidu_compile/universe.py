"""The ``xdsl.universe`` entry point: the tidu dialect and passes in the stock ``xdsl-opt``."""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.universe import Universe

from tidu_compile.passes import get_all_passes


def _tidu_dialect() -> Dialect:
    from tidu_compile.dialects.tidu import Tidu

    return Tidu


TIDU_UNIVERSE = Universe(all_dialects={"tidu": _tidu_dialect}, all_passes=get_all_passes())

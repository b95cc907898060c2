"""``tidu_compile.scipy``: scipy's names for the differentiable functions tidu_compile
has, module by module (``linalg``, ``special``, ``stats``), as ``tidu_compile.numpy``
is numpy's."""

from tidu_compile.scipy import linalg, special, stats

__all__ = ["linalg", "special", "stats"]

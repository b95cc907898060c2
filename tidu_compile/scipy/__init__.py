"""``tidu_compile.scipy``: scipy's names for the differentiable functions tidu_compile
has, module by module (``linalg``)."""

from tidu_compile.scipy import linalg

__all__ = ["linalg"]

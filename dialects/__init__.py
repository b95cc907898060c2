"""tidu_compile.dialects"""

from . import _xdsl_compat  # noqa: F401 - a linear-time lexer regex (see the module)

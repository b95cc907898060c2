"""tidu_compile.dialects"""

from . import xdsl_compat  # noqa: F401 - a linear-time lexer regex (see the module)

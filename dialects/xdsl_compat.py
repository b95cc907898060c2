"""Work around an xDSL lexer bug that can hang any parse (applied on import).

xDSL 0.74's ``MLIRLexer`` matches string literals with
``"(?:[^"\\\\\\n\\v\\f]+|\\\\(...))*"``: a ``+`` nested in a ``*``. On a string that is
never closed on its line, the regex engine tries every way to split the line into runs
(exponential backtracking), so ``tidu-compile opt`` on a file with a stray ``"`` hung.
The replacement matches the same language one character at a time (linear).
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

_VULNERABLE = r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
_LINEAR = r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'


def patch_string_literal_regex() -> bool:
    """Replace the vulnerable pattern if this xDSL has it; True when patched."""
    current = getattr(MLIRLexer, "_unescaped_characters_regex", None)
    if current is None or current.pattern != _VULNERABLE:
        return False  # a fixed or different xDSL: leave it alone
    MLIRLexer._unescaped_characters_regex = re.compile(_LINEAR)  # noqa: SLF001
    return True


patch_string_literal_regex()

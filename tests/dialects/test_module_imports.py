"""The op set and the dialect import each other at module level only.

No module of ``tidu_compile/ops`` or ``dialects/`` imports one of this package inside a
function: such an import is how an import circle hides (``ops.base`` used to import
``Add`` lazily, ``tidu_canonicalize`` the dialect module). The piece both sides need
moves down instead (``TensorOp.add`` looks ``Add`` up in the table by name; the op
registry is ``tidu_table``, below the canonicalization patterns).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted([*(ROOT / "tidu_compile" / "ops").glob("*.py"), *(ROOT / "dialects").glob("*.py")])


def _ours(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").startswith("tidu_compile")
    return any(alias.name.startswith("tidu_compile") for alias in node.names)


def _function_local_imports(path: Path) -> list[int]:
    """The lines of the imports of this package inside a function of ``path``."""
    lines = []
    for function in ast.walk(ast.parse(path.read_text())):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            lines += [node.lineno for node in ast.walk(function)
                      if isinstance(node, ast.Import | ast.ImportFrom) and _ours(node)]  # fmt: skip
    return lines


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_module_imports_the_package_inside_a_function(path: Path) -> None:
    lines = _function_local_imports(path)
    assert not lines, (
        f"{path.parent.name}/{path.name} imports this package inside a function (lines "
        f"{lines}): import at the top; if that makes a circle, move the shared piece down"
    )

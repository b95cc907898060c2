"""Project-level promises: the README example runs as written, packaging lists every package."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_examples_run(tmp_path: Path) -> None:
    """Every ```python block of the README runs as written (the first prints stats)."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(blocks) >= 2, "README has no python examples"
    env = {"TIDU_COMPILE_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    for index, block in enumerate(blocks):
        script = tmp_path / f"example{index}.py"
        script.write_text(block)
        result = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
        )
        assert result.returncode == 0, f"README example {index}:\n{result.stderr}"
        if index == 0:
            assert "compiles=" in result.stdout


def test_every_package_folder_is_installed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    found = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *relative.parts]))
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"


def test_no_source_file_is_too_long() -> None:
    too_long = [
        f"{path.relative_to(ROOT)} ({count})"
        for folder in ("tidu_compile", "dialects", "passes", "tools")
        for path in (ROOT / folder).rglob("*.py")
        if (count := len(path.read_text().splitlines())) > 650
    ]
    assert not too_long, f"split these files by responsibility: {too_long}"


def _tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "tidu_compile", "dialects", "passes", "tools", "tests"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    result = subprocess.run(
        [_tool("mypy"), "tidu_compile", "dialects", "passes", "tools"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_function_list_is_current() -> None:
    from tidu_compile.tools import function_list

    readme = (ROOT / "README.md").read_text()
    assert function_list.render() in readme, (
        "README's function list is stale: run python -m tidu_compile.tools.function_list"
    )

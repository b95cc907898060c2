"""The layering of the package as a test: imports point down only, and no import circle.

Every module of the package (``tidu_compile``, ``dialects``, ``passes`` and ``tools``,
under their installed names) is read, and every ``import`` in it is an edge, the ones
inside functions included (a function-local import is a dependency too; it only runs
later). ``LAYERS`` is the one place the allowed direction is written: a module may
import modules of its own group and of the groups in the layers below its own, nothing
beside or above. The README's "Layout" section shows the same chain, checked against it.

Three checks:

* direction: no edge points up or sideways (``LAYERS``);
* no import circle among the package's modules, module-level or function-local;
* what every process imports stays light: the modules ``import tidu_compile`` and the
  compiled executor load (their module-level imports, transitively) import neither xDSL
  nor llvmlite at module level; only compiling (``compiler.pipeline``, imported lazily)
  and loading native code (``compiler.native.bind``) need them.

Importing a submodule makes Python import its parent packages first; that is no edge
(``from tidu_compile.frontend import tensor`` is an edge to ``frontend.tensor`` only,
``from tidu_compile.frontend import FUNCTIONS`` one to the package ``frontend``).
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tidu_compile"

#: The layers, bottom up; each holds groups (a module or subpackage of ``tidu_compile``,
#: ``""`` being the package's own ``__init__``: its public names). A module imports its
#: own group and the groups of lower layers only; groups of one layer are independent.
LAYERS: tuple[tuple[str, ...], ...] = (
    # locks renewed after fork, array memory, version, the tape's raw keys, GC pacing
    ("forksafe", "ownership", "version", "eager_keys", "collections_pause"),
    ("graph",),  # keys, graphs, builder, resolve (pure Python)
    ("ad", "printing"),  # rules and transforms; text and dot of graphs
    ("evaluation", "recorded_graph"),  # running a graph on values; a graph as recorded
    ("eager",),  # the tape, backward, BackwardExecutor
    ("node_graphs",),  # a tape node's JVP and VJP as graphs
    ("ops",),  # the standard primitives and THE op table
    ("frontend",),  # Tensor and the numpy-style functions, @tc.function
    ("dialects",),  # the tidu xDSL dialect
    ("passes",),  # xDSL passes
    ("backend",),  # the llvm dialect to object code, the JIT
    ("compiler",),  # backward programs, stage table, pipeline, plans, caches
    ("executors", "universe"),  # reference and compiled executors; the xdsl-opt plugin
    # value_and_grad of a @tc.function; tidu_compile.numpy and .scipy; vmap
    ("composite_grad", "numpy", "scipy", "batching"),
    ("batched_transforms",),  # vmap of func's transforms (their batching rules)
    # function transforms (torch.func's names); torch.autograd's names; torch.optim's
    ("func", "autograd", "optim"),
    ("",),  # the public names of tidu_compile
    ("tools",),  # the tidu-compile CLI, demo, examples, bench
)

#: Edges the checks let through, each with why (the test fails on an entry nothing needs).
ALLOWED: dict[tuple[str, str], str] = {}

#: Where each importable folder lives (pyproject's package-dir).
PACKAGE_DIRS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "setuptools"
]["package-dir"]

#: What the light modules must not import at module level.
HEAVY = ("xdsl", "llvmlite")
#: What every process that runs a backward pass imports.
LIGHT_ROOTS = (PACKAGE, f"{PACKAGE}.executors.compiled")


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    local: bool  # inside a function

    def __str__(self) -> str:
        where = "a function-local import" if self.local else "import"
        return f"{self.importer} -> {self.imported} ({where}, line {self.line})"


def _modules() -> dict[str, Path]:
    """Every module of the package by its installed dotted name."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if not (path.parent / "__init__.py").exists():
                continue  # not a package (tools/examples data, scripts)
            name = ".".join([package, *parts])
            found.setdefault(name, path)
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, int, bool]]:
    """``(dotted target, line, inside a function)`` for every import statement."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST, local: bool) -> Iterator[tuple[str, int, bool]]:
        for child in ast.iter_child_nodes(node):
            inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno, inner
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                for alias in child.names:
                    target = f"{module}.{alias.name}"  # a submodule, or a name in ``module``
                    yield (target if target in MODULES else module), child.lineno, inner
            yield from visit(child, inner)

    yield from visit(ast.parse(path.read_text(), str(path)), False)


def _owning_module(target: str) -> str | None:
    """The package module ``target`` is (or is in), or None for a third-party import."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _edges() -> list[Edge]:
    edges: dict[Edge, None] = {}  # one per statement and module imported, in order
    for name, path in MODULES.items():
        for target, line, local in _imports(name, path):
            module = _owning_module(target)
            if module is not None and module != name:
                edges[Edge(name, module, line, local)] = None
    return list(edges)


EDGES = _edges()


def _short(module: str) -> str:
    """``tidu_compile.ops.base`` -> ``ops.base``; the package itself -> ``""``."""
    return module.removeprefix(PACKAGE).removeprefix(".")


def _key(edge: Edge) -> tuple[str, str]:
    return _short(edge.importer), _short(edge.imported)


def _group(module: str) -> str:
    """The ``LAYERS`` group ``module`` belongs to (its longest listed prefix)."""
    short = _short(module)
    groups = [g for layer in LAYERS for g in layer
              if g and (short == g or short.startswith(f"{g}."))]  # fmt: skip
    if not groups:
        if short == "":
            return ""
        raise AssertionError(f"{module} is in no layer: place it in LAYERS ({__file__})")
    return max(groups, key=len)


LAYER_OF = {group: index for index, layer in enumerate(LAYERS) for group in layer}


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        assert _group(module) in LAYER_OF


def upward_imports(allowed: set[tuple[str, str]]) -> list[str]:
    """The edges that point up or sideways in ``LAYERS``."""
    wrong = []
    for edge in EDGES:
        importer, imported = _group(edge.importer), _group(edge.imported)
        if importer == imported or _key(edge) in allowed:
            continue
        if LAYER_OF[imported] >= LAYER_OF[importer]:
            side = "beside" if LAYER_OF[imported] == LAYER_OF[importer] else "above"
            wrong.append(f"{edge}: {imported or PACKAGE!r} is {side} {importer or PACKAGE!r}")
    return wrong


def _components(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    successors: dict[str, list[str]] = {m: [] for m in MODULES}
    for edge in edges:
        successors[edge.importer].append(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in successors:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(successors[start]))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def import_circles(allowed: set[tuple[str, str]]) -> list[str]:
    """Each import circle, with the edges inside it."""
    edges = [e for e in EDGES if _key(e) not in allowed]
    described = []
    for circle in _components(edges):
        inside = [str(e) for e in edges if e.importer in circle and e.imported in circle]
        described.append(" <-> ".join(_short(m) for m in circle) + ":\n  " + "\n  ".join(inside))
    return described


def heavy_imports(allowed: set[tuple[str, str]]) -> list[str]:
    """The module-level imports of xDSL or llvmlite in the module-level import closure
    of ``LIGHT_ROOTS``."""
    seen: set[str] = set()
    todo = list(LIGHT_ROOTS)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(e.imported for e in EDGES if e.importer == module
                        and not e.local and _key(e) not in allowed)  # fmt: skip
    return [
        f"{module} imports {target} (line {line})"
        for module in sorted(seen)
        for target, line, local in _imports(module, MODULES[module])
        if not local and target.split(".")[0] in HEAVY
    ]


def test_imports_point_down_only() -> None:
    wrong = upward_imports(set(ALLOWED))
    assert not wrong, "imports that do not point down (see LAYERS):\n" + "\n".join(wrong)


def test_no_import_circle() -> None:
    circles = import_circles(set(ALLOWED))
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_every_process_imports_no_code_generator() -> None:
    heavy = heavy_imports(set(ALLOWED))
    assert not heavy, (
        f"modules that {' and '.join(LIGHT_ROOTS)} load import a code generator at module "
        "level:\n" + "\n".join(heavy)
    )


def _readme_layers() -> tuple[tuple[str, ...], ...]:
    """The chain of layers in the README's "Layout" section, as ``LAYERS`` spells it."""
    text = (ROOT / "README.md").read_text()
    start = text.index("\n```\n", text.index("Imports point down only"))
    chain = text[start + 5 : text.index("\n```", start + 5)]
    return tuple(
        tuple("" if g.strip().startswith(PACKAGE) else g.strip() for g in layer.split(","))
        for layer in " ".join(chain.split()).split("<-")
    )


def test_the_readme_shows_these_layers() -> None:
    assert _readme_layers() == LAYERS, "README.md's layer chain differs from LAYERS"


@pytest.mark.parametrize("allowance", sorted(ALLOWED), ids=" -> ".join)
def test_every_allowance_is_still_needed(allowance: tuple[str, str]) -> None:
    others = set(ALLOWED) - {allowance}
    assert upward_imports(others) or import_circles(others) or heavy_imports(others), (
        f"ALLOWED lets {allowance} through, which the checks pass without: remove it"
    )

"""A compiled node's artifact, its disk key, and loading it: no compiler needed.

What a process needs to find and run native code without importing the compiler
(xDSL, ~0.4 s): a background executor builds programs and their keys here, hands the
compiling to a worker (``compiler.background``) and binds what comes back. The disk
key of a program (``program_digest``) is its text plus everything the generated code
depends on: the project's version, xDSL's version, a digest of the code generator's own
source (``compiler``, ``backend``, ``dialects``, ``passes``: an edit or an upgrade
never loads a stale kernel) and the target (llvmlite version, triple, CPU name and
features).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from tidu_compile import forksafe, version
from tidu_compile.compiler.cache import cache_key
from tidu_compile.compiler.plan import BoundPlan, Plan
from tidu_compile.compiler.ssa_program import NodeProgram

__all__ = [
    "CODE_PACKAGES",
    "COMPILE_LOCK",
    "Artifact",
    "CodegenRefused",
    "artifact_matches",
    "bind",
    "code_fingerprint",
    "environment_fingerprint",
    "installed_version",
    "learn_environment",
    "program_digest",
]

#: The packages whose source generates code: their text is part of every cache key.
CODE_PACKAGES = (
    "tidu_compile.compiler", "tidu_compile.backend", "tidu_compile.dialects",
    "tidu_compile.passes",
)  # fmt: skip


@dataclass(frozen=True)
class Artifact:
    """What compiling one node produces, and what the disk cache stores."""

    digest: str
    plan: Plan
    object_code: bytes | None
    symbols: tuple[str, ...]
    stage_seconds: dict[str, float] = field(default_factory=dict)
    #: The key of the object code: the digest of the kernels' canonical text
    #: (``compiler.kernel_code``; None: no kernels).
    kernels: str | None = None


class CodegenRefused(RuntimeError):
    """A compile needed LLVM where the caller allowed only reusing object code."""


_environment: list[str] = []  # the fingerprint, once known


def environment_fingerprint() -> str:
    """llvmlite version, target triple, CPU name and features: what object code depends on."""
    if not _environment:
        from tidu_compile.backend.target import host_target

        _environment.append(host_target().key)
    return _environment[0]


def learn_environment(fingerprint: str) -> None:
    """Take the fingerprint a worker process of this machine computed (a background
    executor's caller then needs no llvmlite before its first native call)."""
    if not _environment:
        _environment.append(fingerprint)


@functools.cache
def code_fingerprint() -> str:
    """The project's version, xDSL's version and a digest of the code generator's source
    (~50 files, ~3 ms once per process)."""
    source = hashlib.sha256()
    for package in CODE_PACKAGES:
        spec = importlib.util.find_spec(package)  # its files, without importing it
        for directory in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(directory).glob("*.py")):
                source.update(f"{package}.{path.stem}\0".encode())
                source.update(path.read_bytes())
    versions = f"tidu_compile-{version.__version__}|xdsl-{installed_version('xdsl')}"
    return f"{versions}|{source.hexdigest()}"


def installed_version(name: str) -> str:
    """An installed package's version, read off its ``<name>-<version>.dist-info``
    directory beside it; else from ``importlib.metadata`` (whose import alone costs
    ~0.1 s, which a fresh process's first backward pass would pay)."""
    spec = importlib.util.find_spec(name)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for info in (Path(locations[0]).parent.glob(f"{name}-*.dist-info") if locations else ()):
        return info.name.removeprefix(f"{name}-").removesuffix(".dist-info")
    from importlib.metadata import version

    return version(name)


def program_digest(program: NodeProgram) -> str:
    """The cache key of a program in this environment."""
    return cache_key(code_fingerprint(), environment_fingerprint(), str(program))


def artifact_matches(artifact: object, digest: str) -> bool:
    """True when a cached object is an ``Artifact`` made for ``digest``."""
    return isinstance(artifact, Artifact) and artifact.digest == digest


COMPILE_LOCK = forksafe.Lock()
"""Held while a thread compiles (``compiler.pipeline``: xDSL contexts and passes are not
shared across threads) or loads object code into the engine (``bind``)."""


def bind(artifact: Artifact) -> BoundPlan:
    """Load the artifact's object code (once per process) and bind its plan."""
    if artifact.object_code is None:
        return artifact.plan.bind({})
    from tidu_compile.backend.engine import get_engine

    engine = get_engine()
    with COMPILE_LOCK:
        if all(engine.is_loaded(s) for s in artifact.symbols):
            addresses = {s: engine.address_of(s) for s in artifact.symbols}
        else:
            addresses = engine.load(artifact.object_code, artifact.symbols)
    return artifact.plan.bind(addresses)

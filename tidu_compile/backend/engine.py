"""One long-lived MCJIT engine per process, into which object code is loaded.

``load(object_code, ["w1"])`` returns ``{"w1": address}``. Before handing the
object to MCJIT it checks, under the engine lock, that

  * no global symbol of the object is already loaded (MCJIT would silently pick
    one of two same-named functions): :class:`DuplicateSymbolError`;
  * every undefined external symbol resolves, to an object loaded earlier or to
    the process (libm, libmvec, scipy's LAPACK bound by ``lapack_symbols``):
    :class:`UnresolvedSymbolError` (MCJIT
    would finalize and then jump to address 0 at call time);
  * every requested symbol is defined by the object.

Choosing unique symbol names is the caller's job. Objects stay loaded for the
life of the process. The engine owns its own target machine (MCJIT takes
ownership), separate from the one used for compilation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol

import llvmlite.binding as llvm

from tidu_compile import forksafe

from .elf import read_elf_symbols
from .lapack_symbols import bind_lapack_symbols
from .target import new_target_machine, vector_math_abi


class _SymbolsError(Exception):
    """An object cannot be loaded because of ``symbols``; ``problem`` says why."""

    problem: ClassVar[str]

    def __init__(self, symbols: Iterable[str]) -> None:
        self.symbols = tuple(symbols)
        listed = ", ".join(repr(s) for s in self.symbols)
        super().__init__(f"cannot load object: {self.problem} {listed}")


class UnresolvedSymbolError(_SymbolsError, LookupError):
    """An object needs external symbols that neither the process nor the engine has."""

    problem = "unresolved external symbol(s)"


class DuplicateSymbolError(_SymbolsError, ValueError):
    """An object defines a symbol that an already loaded object defines."""

    problem = "symbol(s) already loaded in the JIT engine:"


class HasObjectCode(Protocol):
    @property
    def object_code(self) -> bytes: ...


class JitEngine:
    """A thread-safe MCJIT engine that only ever grows."""

    def __init__(self) -> None:
        self._lock = forksafe.Lock()
        self._engine: llvm.ExecutionEngine | None = None
        self._defined: set[str] = set()

    def _ensure_engine(self) -> llvm.ExecutionEngine:
        if self._engine is None:
            # Creating MCJIT also makes the process' own symbols searchable.
            self._engine = llvm.create_mcjit_compiler(
                llvm.parse_assembly(""), new_target_machine()
            )
        return self._engine

    def load(
        self, object_code: bytes | HasObjectCode, symbol_names: Iterable[str]
    ) -> dict[str, int]:
        """Load an ELF object and return the addresses of ``symbol_names``."""
        data = object_code if isinstance(object_code, bytes) else object_code.object_code
        wanted = list(symbol_names)
        defined, undefined = read_elf_symbols(data)
        not_defined = [name for name in wanted if name not in defined]
        if not_defined:
            raise KeyError(f"symbol(s) not defined by the object: {', '.join(not_defined)}")
        if any(name.startswith("_ZGV") for name in undefined):
            vector_math_abi()  # loads libmvec.so.1 into the process
        bind_lapack_symbols(undefined)  # scipy's routines, by this process's addresses
        with self._lock:
            engine = self._ensure_engine()
            duplicates = sorted(set(defined) & self._defined)
            if duplicates:
                raise DuplicateSymbolError(duplicates)
            missing = [
                name
                for name in undefined
                if name not in self._defined and not llvm.address_of_symbol(name)
            ]
            if missing:
                raise UnresolvedSymbolError(missing)
            engine.add_object_file(llvm.ObjectFileRef.from_data(data))
            engine.finalize_object()
            self._defined.update(defined)
            addresses = {name: engine.get_function_address(name) for name in wanted}
        if not all(addresses.values()):
            broken = [name for name, address in addresses.items() if not address]
            raise UnresolvedSymbolError(broken)
        return addresses

    def address_of(self, name: str) -> int:
        """The address of a symbol loaded earlier; ``KeyError`` if there is none."""
        with self._lock:
            if name not in self._defined or self._engine is None:
                raise KeyError(f"symbol {name!r} is not loaded in the JIT engine")
            return self._engine.get_function_address(name)

    def is_loaded(self, name: str) -> bool:
        """Whether an object defining ``name`` was loaded."""
        with self._lock:
            return name in self._defined


_ENGINE: JitEngine | None = None
_ENGINE_LOCK = forksafe.Lock()


def get_engine() -> JitEngine:
    """The process-wide engine, created on first use."""
    global _ENGINE
    with _ENGINE_LOCK:
        if _ENGINE is None:
            _ENGINE = JitEngine()
        return _ENGINE


def _hold_llvm() -> None:
    """Before ``fork``: wait until no thread loads object code or is inside LLVM (the
    llvmlite FFI lock, held for one C call at a time), so the child's LLVM state and
    the engine's symbol table are whole (see ``tidu_compile.forksafe``)."""
    engine = _ENGINE
    if engine is not None:
        engine._lock.acquire()  # noqa: SLF001 - this module's engine
    llvm.ffi.lib._lock._lock.acquire()  # noqa: SLF001 - llvmlite's own FFI lock


def _release_llvm() -> None:
    llvm.ffi.lib._lock._lock.release()  # noqa: SLF001
    engine = _ENGINE
    if engine is not None:
        engine._lock.release()  # noqa: SLF001


forksafe.hold_across_fork(_hold_llvm, _release_llvm)


def load(object_code: bytes | HasObjectCode, symbol_names: Iterable[str]) -> dict[str, int]:
    """Load object code into the process-wide engine; see :meth:`JitEngine.load`."""
    return get_engine().load(object_code, symbol_names)

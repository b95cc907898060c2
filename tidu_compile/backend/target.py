"""The host target: LLVM initialisation, the target machine, vector-math support.

Everything is created once per process on first use, under ``TARGET_LOCK``;
LLVM work that touches the shared target machine (O3, codegen) should hold the
same lock, as ``TargetMachine`` is not documented as thread-safe.

``vector_math_abi()`` says which glibc ``libmvec`` variants the host can use:
``_ZGVeN8v_exp`` (AVX-512, 8 x f64) or ``_ZGVdN4v_exp`` (AVX2, 4 x f64), or
``None`` where the CPU lacks both or ``libmvec.so.1`` does not load.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache

import llvmlite
import llvmlite.binding as llvm

TARGET_LOCK = threading.RLock()
"""Guards the one-time initialisation and every use of the shared target machine."""

_state: dict[str, object] = {}


@dataclass(frozen=True)
class HostTarget:
    """What the object code is built for; ``key`` identifies it in a disk cache."""

    triple: str
    cpu: str
    features: str
    data_layout: str

    @property
    def key(self) -> str:
        return f"{self.triple}|{self.cpu}|{self.features}|llvmlite-{llvmlite.__version__}"


@dataclass(frozen=True)
class VectorMathABI:
    """A glibc vector-function ABI: ISA letter and lanes per f64/f32 vector."""

    isa: str  # "e" = AVX-512, "d" = AVX2 (x86-64 vector function ABI letters)
    lanes_f64: int
    lanes_f32: int


def _init_llvm() -> None:
    if "init" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _state["init"] = True


def _new_target_machine() -> llvm.TargetMachine:
    _init_llvm()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        jit=True,
    )


def host_target_machine() -> llvm.TargetMachine:
    """The process-wide host ``TargetMachine`` (opt level 3, JIT code model)."""
    with TARGET_LOCK:
        tm = _state.get("tm")
        if tm is None:
            tm = _new_target_machine()
            _state["tm"] = tm
        assert isinstance(tm, llvm.TargetMachine)
        return tm


def new_target_machine() -> llvm.TargetMachine:
    """A fresh host ``TargetMachine``, for an engine that takes ownership of it."""
    with TARGET_LOCK:
        return _new_target_machine()


def host_target() -> HostTarget:
    """Triple, CPU, feature string and data layout of the host."""
    with TARGET_LOCK:
        cached = _state.get("host")
        if cached is None:
            tm = host_target_machine()
            cached = HostTarget(
                triple=llvm.get_process_triple(),
                cpu=llvm.get_host_cpu_name(),
                features=llvm.get_host_cpu_features().flatten(),
                data_layout=str(tm.target_data),
            )
            _state["host"] = cached
        assert isinstance(cached, HostTarget)
        return cached


@cache
def vector_math_abi() -> VectorMathABI | None:
    """The widest libmvec variant usable here, loading ``libmvec.so.1`` once."""
    _init_llvm()
    features = llvm.get_host_cpu_features()
    if not llvm.get_process_triple().startswith("x86_64"):
        return None
    if features.get("avx512f", False):
        abi = VectorMathABI("e", 8, 16)
    elif features.get("avx2", False) and features.get("fma", False):
        abi = VectorMathABI("d", 4, 8)
    else:
        return None
    try:
        llvm.load_library_permanently("libmvec.so.1")
    except RuntimeError:
        return None
    probe = f"_ZGV{abi.isa}N{abi.lanes_f64}v_exp"
    return abi if llvm.address_of_symbol(probe) else None

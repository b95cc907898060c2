"""The host target: LLVM initialisation, the target machine, code tuning, vector math.

Everything is created once per process on first use, under ``TARGET_LOCK``;
LLVM work that touches the shared target machine (O3, codegen) should hold the
same lock, as ``TargetMachine`` is not documented as thread-safe.

``host_target()`` describes what object code is built for: triple, CPU name, feature
string, and the ``KernelTuning`` derived from the features (the vector width LLVM is
told to prefer, the interleave count of heavy loops). Its ``key`` goes into every
disk-cache key, so code tuned for one CPU is never loaded on another.

``vector_math_abi()`` says which glibc ``libmvec`` variants the host can use:
``_ZGVeN8v_exp`` (AVX-512, 8 x f64) or ``_ZGVdN4v_exp`` (AVX2, 4 x f64), or
``None`` where the CPU lacks both or ``libmvec.so.1`` does not load.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import llvmlite
import llvmlite.binding as llvm

from tidu_compile import forksafe

TARGET_LOCK = forksafe.RLock()
"""Guards the one-time initialisation and every use of the shared target machine."""

_state: dict[str, object] = {}


HEAVY_LOOP_INTERLEAVE = 4
"""Interleave count forced on heavy loops (see ``backend.kernel_hints``) with 16 vector
registers (AVX2, SSE2, and hosts LLVM tunes itself); ``AVX512_HEAVY_LOOP_INTERLEAVE``
with AVX-512's 32.

A loop body with expanded math is one long dependency chain per vector (exp then tanh
in W1: ~200 cycles of latency for ~110 instructions), so one chain at a time leaves
most of the FP pipes idle; LLVM interleaves only small loops on its own. Measured on
an AMD EPYC (znver3, AVX2, 16 vector registers), one thread, ns per element (interleave
1 / 2 / 4 / 8): W1 f64 backward 7.1 / 5.4 / 4.4 / 4.9, W1 f32 2.7 / 2.3 / 1.9 / 2.0,
tanh f64 2.6 / 2.3 / 2.0 / 1.9, exp f64 1.6 / 1.4 / 1.3 / 1.7; sin, cos and log (already
throughput-bound) move within the noise (+-10%)."""

AVX512_HEAVY_LOOP_INTERLEAVE = 8
"""The heavy-loop interleave count with 32 vector registers. Measured on an AMD EPYC
(znver5, AVX-512), one thread, ns per element (interleave 1 / 2 / 4 / 8 / 16): W1 f64
backward 2.53 / 1.86 / 1.46-1.52 / 1.20-1.24 / 1.32, W1 f32 0.92 / 0.73 / 0.60-0.62 /
0.46-0.49 / 0.57, tanh f64 0.93 / 0.77 / 0.74 / 0.54-0.55 / 0.61, W4 f64 0.67 / 0.60 /
0.52 / 0.50-0.51 / 0.55 (``tidu-compile bench --kernels``)."""


@dataclass(frozen=True)
class KernelTuning:
    """Per-host code-generation choices that are not in LLVM's CPU model.

    ``vector_bits``: the ``"prefer-vector-width"`` function attribute (512 on AVX-512
    hosts: LLVM otherwise prefers 256-bit vectors on server Intel CPUs; 256 with AVX,
    128 with SSE2; None elsewhere, LLVM's default). ``interleave``: the interleave count
    of heavy loops (``AVX512_HEAVY_LOOP_INTERLEAVE`` with AVX-512, else
    ``HEAVY_LOOP_INTERLEAVE``).
    """

    vector_bits: int | None
    interleave: int

    @property
    def key(self) -> str:
        return f"vw{self.vector_bits}-ic{self.interleave}"

    def lanes(self, element_bits: int) -> int:
        """Elements per vector register of the preferred width (1 without SIMD)."""
        return max(1, (self.vector_bits or element_bits) // element_bits)


def tuning_for(triple: str, features: dict[str, bool]) -> KernelTuning:
    """The ``KernelTuning`` of a host with these LLVM target features."""
    if not triple.startswith(("x86_64", "i686", "i386")):
        return KernelTuning(None, HEAVY_LOOP_INTERLEAVE)
    if features.get("avx512f", False):
        return KernelTuning(512, AVX512_HEAVY_LOOP_INTERLEAVE)
    return KernelTuning(256 if features.get("avx", False) else 128, HEAVY_LOOP_INTERLEAVE)


@dataclass(frozen=True)
class HostTarget:
    """What the object code is built for; ``key`` identifies it in a disk cache."""

    triple: str
    cpu: str
    features: str
    data_layout: str
    tuning: KernelTuning

    @property
    def key(self) -> str:
        return (
            f"{self.triple}|{self.cpu}|{self.features}|{self.tuning.key}"
            f"|llvmlite-{llvmlite.__version__}"
        )


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
    """Triple, CPU, feature string, data layout and kernel tuning of the host."""
    with TARGET_LOCK:
        cached = _state.get("host")
        if cached is None:
            tm = host_target_machine()
            triple = llvm.get_process_triple()
            features = llvm.get_host_cpu_features()
            cached = HostTarget(
                triple=triple,
                cpu=llvm.get_host_cpu_name(),
                features=features.flatten(),
                data_layout=str(tm.target_data),
                tuning=tuning_for(triple, dict(features)),
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

"""Route transcendental calls through glibc's vector math library (libmvec).

LLVM turns ``llvm.exp.f64`` into one scalar libm call per element, which keeps
loops scalar. Marking the call site with the vector-function ABI attribute::

    %e = call double @llvm.exp.f64(double %x) #900
    declare <8 x double> @_ZGVeN8v_exp(<8 x double>)
    @llvm.compiler.used = appending global [1 x ptr] [ptr @_ZGVeN8v_exp], section "llvm.metadata"
    attributes #900 = { "vector-function-abi-variant"="_ZGV_LLVM_N8v_llvm.exp.f64(_ZGVeN8v_exp)" }

lets the O3 loop vectorizer call ``_ZGVeN8v_exp`` on 8 lanes at once. The
rewrite works on the textual IR from llvmlite (``ir.Module`` cannot carry
string attributes); tail iterations still call scalar libm.
"""

from __future__ import annotations

import re

from .target import VectorMathABI

# Scalar function -> (libmvec f64 name, number of vector args). The f32 variants
# add an "f" (expf) and use the f32 lane count.
_FUNCTIONS: dict[str, tuple[str, int]] = {
    "exp": ("exp", 1),
    "exp2": ("exp2", 1),
    "expm1": ("expm1", 1),
    "log": ("log", 1),
    "log2": ("log2", 1),
    "log10": ("log10", 1),
    "log1p": ("log1p", 1),
    "sin": ("sin", 1),
    "cos": ("cos", 1),
    "tan": ("tan", 1),
    "sinh": ("sinh", 1),
    "cosh": ("cosh", 1),
    "tanh": ("tanh", 1),
    "asin": ("asin", 1),
    "acos": ("acos", 1),
    "atan": ("atan", 1),
    "asinh": ("asinh", 1),
    "acosh": ("acosh", 1),
    "atanh": ("atanh", 1),
    "cbrt": ("cbrt", 1),
    "erf": ("erf", 1),
    "pow": ("pow", 2),
    "atan2": ("atan2", 2),
}

_TYPES = {"double": ("f64", ""), "float": ("f32", "f")}

# `call [fast-math flags] double @"llvm.exp.f64"(` or `@expm1(`; llvmlite quotes names.
_CALL = re.compile(r'\bcall (?:[a-z]+ )*?(double|float) @"?([A-Za-z_][\w.]*)"?\(')

_FIRST_GROUP = 900


def _classify(callee: str, ir_type: str) -> tuple[str, str, int] | None:
    """``(scalar name as LLVM knows it, libmvec base name, arity)`` or None."""
    suffix, libm_suffix = _TYPES[ir_type]
    if callee.startswith("llvm."):
        parts = callee.split(".")
        base = parts[1]
        scalar = f"llvm.{base}.{suffix}"  # llvmlite may omit the overload suffix
        if len(parts) > 3 or (len(parts) == 3 and parts[2] != suffix):
            return None
    else:
        base = callee[: -len(libm_suffix)] if libm_suffix else callee
        if libm_suffix and not callee.endswith(libm_suffix):
            return None
        scalar = callee
    entry = _FUNCTIONS.get(base)
    if entry is None:
        return None
    return scalar, entry[0] + libm_suffix, entry[1]


def _variants(abi: VectorMathABI, ir_type: str) -> list[tuple[str, int]]:
    """(ISA letter, lanes) pairs to offer: the widest, plus AVX2 on AVX-512."""
    f64 = ir_type == "double"
    out = [(abi.isa, abi.lanes_f64 if f64 else abi.lanes_f32)]
    if abi.isa == "e":
        out.append(("d", 4 if f64 else 8))
    return out


def add_vector_variants(ir_text: str, abi: VectorMathABI) -> tuple[str, list[str]]:
    """Annotate vectorizable math calls in ``ir_text``.

    Returns the new text and the names of the libmvec functions it declared
    (empty, and the text unchanged, when no call qualifies).
    """
    groups: dict[str, int] = {}  # scalar name -> attribute group number
    group_text: list[str] = []
    declared: dict[str, str] = {}  # vector function -> declaration

    def annotate(line: str) -> str:
        match = _CALL.search(line)
        if match is None:
            return line
        ir_type, callee = match.group(1), match.group(2)
        found = _classify(callee, ir_type)
        if found is None:
            return line
        scalar, vec_base, arity = found
        if scalar not in groups:
            names = []
            for isa, lanes in _variants(abi, ir_type):
                vec_name = f"_ZGV{isa}N{lanes}{'v' * arity}_{vec_base}"
                vec_type = f"<{lanes} x {ir_type}>"
                params = ", ".join([vec_type] * arity)
                declared[vec_name] = f"declare {vec_type} @{vec_name}({params})"
                names.append(f"_ZGV_LLVM_N{lanes}{'v' * arity}_{scalar}({vec_name})")
            groups[scalar] = _FIRST_GROUP + len(groups)
            group_text.append(
                f'attributes #{groups[scalar]} = {{ "vector-function-abi-variant"='
                f'"{",".join(names)}" }}'
            )
        return f"{line} #{groups[scalar]}"

    lines = [annotate(line) if "call " in line else line for line in ir_text.splitlines()]
    if not groups:
        return ir_text, []
    lines += ["", *declared.values(), *group_text]
    keep_used(lines, list(declared))
    return "\n".join(lines) + "\n", list(declared)


_USED = re.compile(
    r'^@llvm\.compiler\.used = appending global \[\d+ x ptr\] \[(?P<entries>.*)\], '
    r'section "llvm\.metadata"$'
)


def keep_used(lines: list[str], names: list[str]) -> None:
    """Keep the functions ``names`` through O3 until the vectorizer calls them: add them to
    the module's ``@llvm.compiler.used`` (made, or extended: a module has one)."""
    entries = [f'ptr @"{name}"' for name in names]
    for index, line in enumerate(lines):
        match = _USED.match(line)
        if match:
            entries = match.group("entries").split(", ") + entries
            lines[index] = _used_line(entries)
            return
    lines.append(_used_line(entries))


def _used_line(entries: list[str]) -> str:
    return (f'@llvm.compiler.used = appending global [{len(entries)} x ptr] '
            f'[{", ".join(entries)}], section "llvm.metadata"')  # fmt: skip

"""Vector variants of the outlined math functions, called instead of inlined copies.

``expand-math-polynomials{outline=true}`` leaves one ``@tidu_math_<fn>_<type>`` per
function and type, straight-line scalar code. Inlined at every call site (``alwaysinline``)
a kernel of 50 ``tanh`` calls carries 50 copies of the polynomial, and LLVM's O3 and code
generation cost grows with them (a 100-op ``@tc.function`` chain: 2.8 s of its 3.7 s).
Past ``INLINED_MATH_CALLS`` call sites in a module, each function instead gets its
vector variant, the same instructions on ``<N x T>``::

    define internal double @"tidu_math_tanh_f64"(double %".1") noinline
      %".7" = fcmp ogt double %".6", 0x4034000000000000
    define internal <8 x double> @"tidu_math_tanh_f64_v8"(<8 x double> %".1")
      %".7" = fcmp ogt <8 x double> %".6", splat (double 0x4034000000000000)

and its call sites say so (``"vector-function-abi-variant"``), so the loop vectorizer
calls the variant once per 8 elements: one copy of each polynomial per module. Scalar
remainder iterations call the scalar function. A function whose body is not one block of
the instructions below keeps ``alwaysinline``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .trig_guard import guard_lines, guarded_function, poly_name, vector_guard_lines
from .vecmath import keep_used

__all__ = ["INLINED_MATH_CALLS", "MathFunction", "add_math_variants", "math_functions"]

_FIRST_GROUP = 960  # attribute groups #960...: vecmath's are #900..., kernel_hints' #980

#: Up to this many math call sites in a module every call is inlined (a small kernel runs
#: its math without a call); past it, the functions with a vector variant are called.
INLINED_MATH_CALLS = 8

_SCALARS = ("double", "float", "i1", "i8", "i16", "i32", "i64")
_BITS = {"double": 64, "float": 32}
_DEFINE = re.compile(
    r'^define internal (?P<ret>double|float) @"(?P<name>[\w.]+)"\((?P<params>[^)]*)\)'
    r"(?P<attrs>[^{]*)$"
)
_BINARY = frozenset((
    "fadd", "fsub", "fmul", "fdiv", "frem", "add", "sub", "mul", "sdiv", "udiv", "srem", "urem",
    "and", "or", "xor", "shl", "lshr", "ashr",
))
_FLAGS = frozenset((
    "contract", "reassoc", "nnan", "ninf", "nsz", "arcp", "afn", "fast", "nuw", "nsw", "exact",
    "disjoint",
))
_PREDICATES = frozenset((
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
    "une", "uno", "true", "eq", "ne", "sgt", "sge", "slt", "sle",
))
_CASTS = frozenset((
    "bitcast", "sitofp", "uitofp", "fptosi", "fptoui", "zext", "sext", "trunc", "fpext",
    "fptrunc",
))
_INSTRUCTION = re.compile(r"^(?P<lhs>%\"[^\"]+\"|%[\w.]+) = (?P<rest>.*)$")
_CALL = re.compile(r'^call (?:ccc )?(?P<type>\w+) @"?(?P<callee>[\w.]+)"?\((?P<args>.*)\)$')
_OVERLOAD = re.compile(r"\.(f64|f32|i64|i32|i16|i8|i1)\b")


class MathFunction:
    """One outlined math function of a module's text: where its definition is."""

    def __init__(self, name: str, ir_type: str, arity: int, first: int, last: int) -> None:
        self.name = name
        self.ir_type = ir_type
        self.arity = arity
        self.first = first  # the ``define`` line
        self.last = last  # the closing ``}``

    def variant(self, lanes: int) -> str:
        return f"{self.name}_v{lanes}"


def math_functions(lines: list[str], prefix: str) -> list[MathFunction]:
    """The definitions of functions named ``prefix...`` in ``lines``."""
    found = []
    for index, line in enumerate(lines):
        match = _DEFINE.match(line)
        if match and match.group("name").startswith(prefix):
            last = next(i for i in range(index, len(lines)) if lines[i] == "}")
            arity = len(match.group("params").split(","))
            found.append(MathFunction(match.group("name"), match.group("ret"), arity, index, last))
    return found


class _NotVectorizable(Exception):
    """An instruction the type substitution cannot widen."""


def _widen_type(ir_type: str, lanes: int) -> str:
    if ir_type not in _SCALARS:
        raise _NotVectorizable(ir_type)
    return f"<{lanes} x {ir_type}>"


def _widen_operand(ir_type: str, operand: str, lanes: int) -> str:
    """An operand of scalar type ``ir_type``: a value keeps its name, a constant splats."""
    operand = operand.strip()
    if operand.startswith("%"):
        return operand
    return f"splat ({ir_type} {operand})"


def _typed(text: str, lanes: int) -> str:
    """``double %".3"`` or ``i64 1023`` widened."""
    ir_type, _, operand = text.strip().partition(" ")
    return f"{_widen_type(ir_type, lanes)} {_widen_operand(ir_type, operand, lanes)}"


def _widen_instruction(rest: str, lanes: int, declare: Callable[[str], None]) -> str:
    words = rest.split()
    opcode = words[0]
    if opcode in _BINARY or opcode in ("fcmp", "icmp", "fneg", "freeze"):
        head = [opcode]
        index = 1
        while words[index] in _FLAGS or words[index] in _PREDICATES:
            head.append(words[index])
            index += 1
        ir_type = words[index]
        operands = " ".join(words[index + 1:]).split(",")
        widened = ", ".join(_widen_operand(ir_type, o, lanes) for o in operands)
        return f"{' '.join(head)} {_widen_type(ir_type, lanes)} {widened}"
    if opcode in _CASTS:
        source, _, target = " ".join(words[1:]).rpartition(" to ")
        return f"{opcode} {_typed(source, lanes)} to {_widen_type(target.strip(), lanes)}"
    if opcode == "select":
        return "select " + ", ".join(_typed(o, lanes) for o in " ".join(words[1:]).split(","))
    if opcode == "call":
        match = _CALL.match(rest)
        if match is None or not match.group("callee").startswith("llvm."):
            raise _NotVectorizable(rest)
        callee = _OVERLOAD.sub(lambda m: f".v{lanes}{m.group(1)}", match.group("callee"))
        typed = [a.strip().partition(" ") for a in match.group("args").split(",")]
        types = [_widen_type(t, lanes) for t, _, _ in typed]
        args = [f"{wide} {_widen_operand(t, v, lanes)}"
                for wide, (t, _, v) in zip(types, typed, strict=True)]  # fmt: skip
        result = _widen_type(match.group("type"), lanes)
        declare(f'declare {result} @"{callee}"({", ".join(types)})')
        return f'call {result} @"{callee}"({", ".join(args)})'
    raise _NotVectorizable(opcode)


def _vector_variant(
    lines: list[str], function: MathFunction, lanes: int, declare: Callable[[str], None],
    name: str,
) -> list[str]:
    """The text of ``function``'s variant on ``lanes`` lanes, named ``name``
    (``_NotVectorizable`` when its body is not one block of widenable instructions)."""
    header = _DEFINE.match(lines[function.first])
    assert header is not None
    vector = _widen_type(function.ir_type, lanes)
    params = ", ".join(_typed(p, lanes) for p in header.group("params").split(","))
    out = [f'define internal {vector} @"{name}"({params})', "{"]
    body = lines[function.first + 2:function.last]
    if sum(1 for line in body if line.endswith(":")) > 1:
        raise _NotVectorizable("branches")
    for line in body:
        stripped = line.strip()
        if stripped.endswith(":"):
            out.append(line)
        elif stripped.startswith("ret "):
            out.append(f"  ret {_typed(stripped[4:], lanes)}")
        else:
            match = _INSTRUCTION.match(stripped)
            if match is None:
                raise _NotVectorizable(stripped)
            widened = _widen_instruction(match.group("rest"), lanes, declare)
            out.append(f"  {match.group('lhs')} = {widened}")
    out.append("}")
    return out


_DECLARED = re.compile(r'^declare [^@]*@"?(?P<name>[\w.]+)"?\(')


def add_math_variants(
    ir_text: str, prefix: str, lanes_of: Callable[[int], int]
) -> tuple[str, list[str]]:
    """``ir_text`` with vector variants for its math functions named ``prefix...`` when
    it calls them more than ``INLINED_MATH_CALLS`` times, else every one ``alwaysinline``;
    sin and cos always through their guard (``backend.trig_guard``: libm's value past the
    polynomial's range) and its variant. Returns the text and the names of the variants
    made. ``lanes_of(bits)``: lanes per vector of an element of ``bits`` bits (1: no
    variants)."""
    lines = ir_text.splitlines()
    functions = math_functions(lines, prefix)
    calls = sum(line.count(f'@"{prefix}') for line in lines) - len(functions)
    variants: dict[str, str] = {}  # scalar name -> its vector variant's name
    added: list[str] = []
    known = {m.group("name") for m in map(_DECLARED.match, lines) if m}

    def declare(line: str) -> None:
        match = _DECLARED.match(line)
        assert match is not None
        if match.group("name") not in known:
            known.add(match.group("name"))
            added.append(line)

    for function in functions:
        guarded = guarded_function(function.name, prefix)
        lanes = lanes_of(_BITS[function.ir_type])
        if lanes < 2 or not (guarded or calls > INLINED_MATH_CALLS):
            continue
        pending: list[str] = []
        variant = function.variant(lanes)
        name = f"{poly_name(function.name)}_v{lanes}" if guarded else variant
        try:
            text = _vector_variant(lines, function, lanes, pending.append, name)
        except _NotVectorizable:
            continue
        added.extend(text)
        if guarded:
            guard, needs = vector_guard_lines(function.name, variant, name, function.ir_type,
                                              lanes)  # fmt: skip
            added.extend(guard)
            pending += needs
        for line in pending:
            declare(line)
        variants[function.name] = variant
    for function in functions:
        guarded = guarded_function(function.name, prefix)
        keyword = "noinline" if function.name in variants else "alwaysinline"
        if guarded is None:
            lines[function.first] += f" {keyword}"
            continue
        renamed = f'@"{poly_name(function.name)}"('
        lines[function.first] = lines[function.first].replace(f'@"{function.name}"(', renamed)
        lines[function.first] += " alwaysinline"
        guard, needs = guard_lines(function.name, guarded, function.ir_type, keyword)
        added.extend(guard)
        for line in needs:
            declare(line)
    groups: dict[str, int] = {}
    for index, line in enumerate(lines):
        for name in variants:
            if f'call ccc double @"{name}"(' in line or f'call ccc float @"{name}"(' in line:
                group = groups.setdefault(name, _FIRST_GROUP + len(groups))
                lines[index] = f"{line} #{group}"
    trailer = ["", *added]
    if variants:
        keep_used(trailer, list(variants.values()))
    for function in functions:
        if function.name in groups:
            lanes = lanes_of(_BITS[function.ir_type])
            vs = "v" * function.arity
            trailer.append(
                f'attributes #{groups[function.name]} = {{ "vector-function-abi-variant"='
                f'"_ZGV_LLVM_N{lanes}{vs}_{function.name}({variants[function.name]})" }}'
            )
    return "\n".join(lines + trailer) + "\n", list(variants.values())

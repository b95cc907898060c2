"""sin and cos past the polynomials' range: libm's value, not NaN.

``expand-math-polynomials`` reduces ``x`` by ``round(x 2/pi)``, exact only while
``|x| <= trig_limit`` (f64 1.5*2^51, f32 1.5*2^22: ``passes.math_polynomials``); past it
(and for inf and NaN) the outlined ``@tidu_math_sin_f64`` returns NaN. Here the outlined
function is renamed ``..._poly`` and called through a guard of the original name, which
hands the other arguments to LLVM's ``llvm.sin``/``llvm.cos`` (libm)::

    define internal double @"tidu_math_sin_f64"(double %x) noinline {
    entry:
      %a = call double @"llvm.fabs.f64"(double %x)
      %ok = fcmp ole double %a, 0x4318000000000000
      br i1 %ok, label %fast, label %slow
    fast:
      %p = call double @"tidu_math_sin_f64_poly"(double %x)
      ret double %p
    slow:
      %s = call double @"llvm.sin.f64"(double %x)
      ret double %s
    }

Its vector variant runs the widened polynomial and takes the slow path, lane by lane
through the scalar guard, only when some lane is out of range (one ``reduce.and`` and a
branch per vector), so a loop stays vectorized and pays for libm only on such lanes::

    define internal <8 x double> @"tidu_math_sin_f64_v8"(<8 x double> %x) {
    entry:
      %p = call <8 x double> @"tidu_math_sin_f64_poly_v8"(<8 x double> %x)
      ...
      %all = call i1 @"llvm.vector.reduce.and.v8i1"(<8 x i1> %ok)
      br i1 %all, label %done, label %slow
    slow:
      %x0 = extractelement <8 x double> %x, i32 0
      %s0 = call double @"tidu_math_sin_f64"(double %x0)
      %r0 = insertelement <8 x double> %p, double %s0, i32 0
      ...
"""

from __future__ import annotations

import re
import struct

from tidu_compile.passes.math_polynomials import F32, F64

__all__ = ["GUARDED", "guard_lines", "guarded_function", "poly_name", "vector_guard_lines"]

#: Outlined functions NaN past ``trig_limit``, and the LLVM intrinsic giving libm's value.
GUARDED = {"sin": "llvm.sin", "cos": "llvm.cos"}
_LIMITS = {"double": F64.trig_limit, "float": F32.trig_limit}
_SUFFIX = {"double": "f64", "float": "f32"}


def guarded_function(name: str, prefix: str) -> str | None:
    """``sin`` or ``cos`` when ``name`` is an outlined function that needs the guard."""
    match = re.fullmatch(re.escape(prefix) + r"(\w+)_f(?:64|32)", name)
    return match.group(1) if match and match.group(1) in GUARDED else None


def poly_name(name: str) -> str:
    """What the outlined polynomial is renamed to."""
    return f"{name}_poly"


def _constant(value: float) -> str:
    """A float constant as LLVM writes it: the hex of its double bits."""
    return "0x" + struct.pack(">d", value).hex().upper()


def guard_lines(
    name: str, function: str, ir_type: str, keyword: str
) -> tuple[list[str], list[str]]:
    """The scalar guard named ``name`` (``keyword``: ``noinline`` or ``alwaysinline``),
    and the declarations it needs."""
    suffix, limit = _SUFFIX[ir_type], _constant(_LIMITS[ir_type])
    intrinsic = f"{GUARDED[function]}.{suffix}"
    lines = [
        f'define internal {ir_type} @"{name}"({ir_type} %x) {keyword}',
        "{",
        "entry:",
        f'  %a = call {ir_type} @"llvm.fabs.{suffix}"({ir_type} %x)',
        f"  %ok = fcmp ole {ir_type} %a, {limit}",
        "  br i1 %ok, label %fast, label %slow",
        "fast:",
        f'  %p = call {ir_type} @"{poly_name(name)}"({ir_type} %x)',
        f"  ret {ir_type} %p",
        "slow:",
        f'  %s = call {ir_type} @"{intrinsic}"({ir_type} %x)',
        f"  ret {ir_type} %s",
        "}",
    ]
    declares = [f'declare {ir_type} @"llvm.fabs.{suffix}"({ir_type})',
                f'declare {ir_type} @"{intrinsic}"({ir_type})']  # fmt: skip
    return lines, declares


def vector_guard_lines(name: str, variant: str, poly_variant: str, ir_type: str,
                       lanes: int) -> tuple[list[str], list[str]]:  # fmt: skip
    """The vector variant ``variant`` of the guard ``name`` on ``lanes`` lanes, calling
    ``poly_variant``, and the declarations it needs."""
    suffix, limit = _SUFFIX[ir_type], _constant(_LIMITS[ir_type])
    vector = f"<{lanes} x {ir_type}>"
    lines = [
        f'define internal {vector} @"{variant}"({vector} %x)',
        "{",
        "entry:",
        f'  %p = call {vector} @"{poly_variant}"({vector} %x)',
        f'  %a = call {vector} @"llvm.fabs.v{lanes}{suffix}"({vector} %x)',
        f"  %ok = fcmp ole {vector} %a, splat ({ir_type} {limit})",
        f'  %all = call i1 @"llvm.vector.reduce.and.v{lanes}i1"(<{lanes} x i1> %ok)',
        "  br i1 %all, label %done, label %slow",
        "slow:",
    ]
    previous = "%p"
    for lane in range(lanes):
        lines += [
            f"  %x{lane} = extractelement {vector} %x, i32 {lane}",
            f'  %s{lane} = call {ir_type} @"{name}"({ir_type} %x{lane})',
            f"  %r{lane} = insertelement {vector} {previous}, {ir_type} %s{lane}, i32 {lane}",
        ]
        previous = f"%r{lane}"
    lines += [
        "  br label %done",
        "done:",
        f"  %r = phi {vector} [ %p, %entry ], [ {previous}, %slow ]",
        f"  ret {vector} %r",
        "}",
    ]
    declares = [f'declare {vector} @"llvm.fabs.v{lanes}{suffix}"({vector})',
                f'declare i1 @"llvm.vector.reduce.and.v{lanes}i1"(<{lanes} x i1>)']  # fmt: skip
    return lines, declares

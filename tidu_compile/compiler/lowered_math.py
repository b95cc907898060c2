"""The outlined math functions of the ``llvm`` stage, lowered once per process.

``expand-math-polynomials{outline=true}`` gives every kernel module the math functions
its kernels call as ``func.func private @tidu_math_<function>_<type>``
(``tidu_math_tanh_f64``: ~80 ops), and each node using one lowered that same body
again: half of the ``llvm`` stage of a small node (a 4-op tanh chain, znver4).
``lower_reusing_math`` lowers such a function the first time it meets it and reuses the
result after::

    func.func private @tidu_math_tanh_f64(%x: f64) -> f64 { ...80 ops... }
    ==> (met before, structurally equal)  func.func private @tidu_math_tanh_f64(f64) -> f64
    ==> (the stage's passes)              llvm.func @tidu_math_tanh_f64(f64) -> f64
    ==> (swapped)                         a clone of the llvm.func lowered the first time

The key is the pass spec and the whole function: a body is reused only for a function
structurally equal (ops, attributes, types, names) to the one it was lowered from, by
the same passes. The kernels' calls lower alike either way (``func.call`` ->
``llvm.call`` needs only the callee's name and types), so the module is the one
lowering everything gives (``tests/backend/test_lowered_math.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Region
from xdsl.rewriter import Rewriter

from tidu_compile import forksafe
from tidu_compile.passes.expand_math_polynomials import MATH_FUNCTION_PREFIX

__all__ = ["lower_reusing_math"]

_LOCK = forksafe.Lock()
_LOWERED: dict[tuple[str, str], list[tuple[func.FuncOp, llvm.FuncOp]]] = {}
"""(pass spec, symbol) -> (the function as met, its lowered clone), a few per key."""
_PER_KEY = 4


def _math_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks
            and op.sym_name.data.startswith(MATH_FUNCTION_PREFIX)]  # fmt: skip


def _known(spec: str, function: func.FuncOp) -> llvm.FuncOp | None:
    for seen, lowered in _LOWERED.get((spec, function.sym_name.data), ()):
        if seen.is_structurally_equivalent(function):
            return lowered
    return None


def _declaration(function: func.FuncOp) -> func.FuncOp:
    """``function`` without its body: what the kernels' calls need of it."""
    return func.FuncOp(function.sym_name.data, function.function_type, Region(),
                       StringAttr("private"))  # fmt: skip


def lower_reusing_math(module: ModuleOp, spec: str, lower: Callable[[ModuleOp], object]) -> bool:
    """``lower(module)`` (the ``llvm`` stage's passes, ``spec``), in place, with each math
    function met before under ``spec`` lowered as a declaration and swapped for the
    ``llvm.func`` lowered then; the others are remembered after ``lower``. Whether a
    function was reused (the caller verifies the module again)."""
    with _LOCK:
        reused: dict[str, llvm.FuncOp] = {}
        fresh: dict[str, func.FuncOp] = {}
        for function in _math_functions(module):
            name = function.sym_name.data
            if (lowered := _known(spec, function)) is not None:
                reused[name] = lowered
                Rewriter.replace_op(function, _declaration(function))
            else:
                fresh[name] = function.clone()
    lower(module)
    with _LOCK:
        for op in list(module.ops):
            if not isinstance(op, llvm.FuncOp):
                continue
            name = op.sym_name.data
            if name in reused:
                Rewriter.replace_op(op, reused[name].clone())
            elif name in fresh:
                entries = _LOWERED.setdefault((spec, name), [])
                if len(entries) < _PER_KEY:
                    entries.append((fresh[name], op.clone()))
    return bool(reused)

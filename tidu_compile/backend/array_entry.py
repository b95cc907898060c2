"""Kernel entry points that take numpy array *objects* instead of data pointers.

Reading ``arr.ctypes.data`` costs ~0.8 us per array, more than the whole kernel on small
arrays. Every kernel ``@k(ptr, ...)`` therefore gets a twin ``@k.arrays(ptr, ...)`` whose
arguments are the addresses of the ``PyArrayObject``s (``id(arr)`` in CPython); it loads
each data pointer from the object and calls ``@k``::

    define void @"k.arrays"(ptr %a, ptr %b) {
      %pa = getelementptr inbounds i8, ptr %a, i64 16   ; PyArrayObject_fields.data
      %da = load ptr, ptr %pa
      ...
      call void @"k"(ptr %da, ptr %db) noinline
    }

The call is ``noinline``: both entries are kept (the plan calls ``@k`` where the
twins cannot be used), and inlined, every kernel's loop nest was optimized and emitted
twice (half of the O3 and machine-code time of a GRU segment's 26 small kernels).

``data`` is the first field after ``PyObject_HEAD`` in numpy's public struct; the
runtime checks the offset once (``backend.array_abi``, which holds the constants the
caller needs without llvmlite) and uses the twins only when the running interpreter
agrees, else it falls back to ``arr.ctypes.data``.
"""

from __future__ import annotations

from llvmlite import ir

from .array_abi import ARRAY_DATA_OFFSET, ENTRY_SUFFIX

__all__ = ["add_array_entry_points"]


def add_array_entry_points(module: ir.Module) -> list[str]:
    """Add a ``.arrays`` twin to every external function taking pointers.

    Pointer arguments become array objects; other arguments (a chunk's ``lo, hi``) pass
    through unchanged.
    """
    pointer = ir.PointerType()
    offset = ir.Constant(ir.IntType(64), ARRAY_DATA_OFFSET)
    added = []
    for function in list(module.functions):
        if function.is_declaration or function.linkage == "internal":
            continue
        if not any(isinstance(arg.type, ir.PointerType) for arg in function.args):
            continue
        twin = ir.Function(module, function.function_type, name=function.name + ENTRY_SUFFIX)
        builder = ir.IRBuilder(twin.append_basic_block("entry"))
        data = [
            builder.load(
                builder.gep(arg, [offset], source_etype=ir.IntType(8), inbounds=True), typ=pointer
            )
            if isinstance(arg.type, ir.PointerType)
            else arg
            for arg in twin.args
        ]
        builder.call(function, data, attrs=("noinline",))
        builder.ret_void()
        added.append(twin.name)
    return added

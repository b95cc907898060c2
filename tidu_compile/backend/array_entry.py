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

import re

from .array_abi import ARRAY_DATA_OFFSET, ENTRY_SUFFIX

__all__ = ["add_array_entry_points"]

_DEFINE = re.compile(r'^define (?P<result>\S+) @"(?P<name>[^"]+)"\((?P<params>[^)]*)\)',
                     re.MULTILINE)  # fmt: skip


def add_array_entry_points(ir_text: str) -> str:
    """``ir_text`` with a ``.arrays`` twin of every external function taking pointers.

    Pointer arguments become array objects; other arguments (a chunk's ``lo, hi``) pass
    through unchanged. Internal functions (``define internal``) get none.
    """
    twins: list[str] = []
    for match in _DEFINE.finditer(ir_text):
        types = [p.split()[0] for p in match.group("params").split(",") if p.strip()]
        if "ptr" not in types:
            continue
        name, result = match.group("name"), match.group("result")
        parameters = ", ".join(f'{t} %".{i}"' for i, t in enumerate(types, 1))
        lines = [f'define void @"{name}{ENTRY_SUFFIX}"({parameters})', "{", "entry:"]
        counter, arguments = len(types) + 1, []
        for i, typ in enumerate(types, 1):
            if typ != "ptr":
                arguments.append(f'{typ} %".{i}"')
                continue
            field, data = counter + 1, counter + 2
            counter = data
            address = f'getelementptr inbounds i8, ptr %".{i}", i64 {ARRAY_DATA_OFFSET}'
            lines += [f'  %".{field}" = {address}', f'  %".{data}" = load ptr, ptr %".{field}"']
            arguments.append(f'ptr %".{data}"')
        call = f'call {result} @"{name}"({", ".join(arguments)}) noinline'
        lines += [f'  %".{counter + 1}" = {call}' if result != "void" else f"  {call}",
                  "  ret void", "}"]  # fmt: skip
        twins.append("\n".join(lines))
    if not twins:
        return ir_text
    return ir_text.rstrip("\n") + "\n\n" + "\n\n".join(twins) + "\n"

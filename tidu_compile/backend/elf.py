"""Read the symbol table of an ELF64 little-endian relocatable object.

llvmlite's ``ObjectFileRef`` lists sections but not symbols, and MCJIT does not
report an unresolved external until the call jumps to address 0. Reading
``.symtab`` directly (about 30 lines) gives both lists up front::

    defined, undefined = read_elf_symbols(obj)   # ("w1",), ("exp", "tanh")
"""

from __future__ import annotations

import struct

_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_SHT_SYMTAB = 2
_SHN_UNDEF = 0
_STB_GLOBAL, _STB_WEAK = 1, 2


def _c_string(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode()


def read_elf_symbols(data: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(defined global symbols, undefined symbols)`` of an ELF64 LE object.

    Raises ``ValueError`` for anything else (other formats are not supported).
    """
    if len(data) < _HEADER.size or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not an ELF64 little-endian object; only those can be loaded")
    fields = _HEADER.unpack_from(data)
    sh_offset, sh_entsize, sh_count = fields[6], fields[11], fields[12]
    sections = [
        _SECTION.unpack_from(data, sh_offset + i * sh_entsize) for i in range(sh_count)
    ]
    defined: list[str] = []
    undefined: list[str] = []
    for section in sections:
        if section[1] != _SHT_SYMTAB:
            continue
        offset, size, link, entsize = section[4], section[5], section[6], section[9]
        strtab_offset = sections[link][4]
        for pos in range(offset + entsize, offset + size, entsize):  # entry 0 is null
            name_off, info, _other, shndx, _value, _size = _SYMBOL.unpack_from(data, pos)
            if name_off == 0 or info >> 4 not in (_STB_GLOBAL, _STB_WEAK):
                continue
            name = _c_string(data, strtab_offset + name_off)
            (undefined if shndx == _SHN_UNDEF else defined).append(name)
    return tuple(defined), tuple(undefined)

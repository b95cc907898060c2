"""The bodies of the LAPACK kernels of ``tidu-lower-linalg``: loops, pointers, calls.

A kernel function works on raw pointers (``ptr_xdsl``) to its row-major buffers. Its
last buffers are two workspaces: ``%iws`` (i32: word 0 the status, then the integer
and character arguments LAPACK takes by pointer, then pivots) and ``%fws`` (the
element type: scalars such as ``alpha``, copies of matrices). One routine call per
matrix of the batch, each on the matrix's address::

    %a = ptr_xdsl.to_ptr %in0 : memref<4x4xf64> -> !ptr_xdsl.ptr
    scf.for %b = %c0 to %c1 step %c1 {
      ...copy, then
      func.call @tidu_lapack_lp64_dpotrf(%uplo, %n, %l, %n, %info) : (...) -> ()
    }

The routines are scipy's ``cython_lapack``/``cython_blas`` (Fortran argument order,
everything by pointer, C ``int``: LP64). Row-major matrices are column-major
transposes: a row-major ``A`` is LAPACK's ``Aᵀ``. A complex element is a pair of
reals in memory (``re, im``; the buffers of complex tensors are pairs, as the other
kernels'): ``%fws`` holds the parts, element indices count pairs, and ``move`` copies
every part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod

from xdsl.dialects import arith, func, ptr, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    ComplexType,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

__all__ = [
    "I32", "INDEX", "LAPACK_SYMBOL_PREFIX", "Buffers", "Emitter", "LapackKernel",
    "declare_routine", "matrices", "routine", "routine_symbol",
]  # fmt: skip

LAPACK_SYMBOL_PREFIX = "tidu_lapack_lp64_"
"""The prefix of the external symbols of LAPACK/BLAS routines: ``tidu_lapack_lp64_dpotrf``
(the ABI, C ``int`` arguments, is in the name and so in every kernel's text and key;
``backend.lapack_symbols`` binds the names to scipy's routines when code is loaded)."""

I32 = IntegerType(32)
INDEX = IndexType()


def routine_symbol(routine: str, element: Attribute) -> str:
    """The external symbol of ``routine`` (``potrf``) for ``element`` (``dpotrf``; the
    prefix ``s``, ``d``, ``c`` or ``z`` for f32, f64, complex<f32>, complex<f64>)."""
    is_complex = isinstance(element, ComplexType)
    single = isinstance(element.element_type if is_complex else element, Float32Type)  # type: ignore[attr-defined]
    prefix = ("c" if single else "z") if is_complex else ("s" if single else "d")
    return f"{LAPACK_SYMBOL_PREFIX}{prefix}{routine}"


def declare_routine(module: ModuleOp, symbol: str, arity: int) -> None:
    """Add ``func.func private @symbol(!ptr_xdsl.ptr x arity)`` to ``module`` once."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == symbol:
            return
    declaration = func.FuncOp.external(symbol, [ptr.PtrType()] * arity, [])
    module.body.block.add_op(declaration)


class Emitter:
    """Appends ops to ``block``: constants, index arithmetic, element loads and stores
    through pointers, ``scf.for`` loops. ``value_type`` is the matrices' element type,
    ``element`` its (real) part type: ``load``, ``store`` and ``real`` are of real
    elements (or of a complex element's real part), ``move`` of whole elements."""

    def __init__(self, block: Block, value_type: AnyFloat | ComplexType,
                 constants: dict[tuple[int | float, Attribute], SSAValue] | None = None,
                 entry: Block | None = None) -> None:  # fmt: skip
        self.block = block
        self.value_type = value_type
        is_complex = isinstance(value_type, ComplexType)
        self.element: AnyFloat = value_type.element_type if is_complex else value_type  # type: ignore[union-attr,assignment]
        self.parts = 2 if is_complex else 1
        self.part_bytes = 4 if isinstance(self.element, Float32Type) else 8
        self.item_bytes = self.parts * self.part_bytes
        #: Constants made once, at the top of the function's entry block (shared by
        #: the emitters of nested loops: the entry dominates them).
        self.constants = {} if constants is None else constants
        self.entry = block if entry is None else entry

    def constant(self, key: tuple[int | float, Attribute], make: Callable[[], Operation]
                 ) -> SSAValue:  # fmt: skip
        """The constant ``key`` (value, type), made by ``make`` once per function."""
        if key not in self.constants:
            op = make()
            first = self.entry.first_op
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)
            self.constants[key] = op.results[0]
        return self.constants[key]

    def add(self, op: Operation) -> SSAValue:
        """Append ``op`` (one result) and return its result."""
        self.block.add_op(op)
        return op.results[0]

    def emit(self, op: Operation) -> None:
        self.block.add_op(op)

    def index(self, value: int) -> SSAValue:
        return self.constant((value, INDEX), lambda: arith.ConstantOp(IntegerAttr(value, INDEX)))

    def i32(self, value: int) -> SSAValue:
        return self.constant((value, I32), lambda: arith.ConstantOp(IntegerAttr(value, I32)))

    def real(self, value: float) -> SSAValue:
        element = self.element
        return self.constant((float(value), element),
                             lambda: arith.ConstantOp(FloatAttr(value, element)))  # fmt: skip

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.MuliOp(a, b))

    def plus(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.AddiOp(a, b))

    def pointer(self, buffer: SSAValue) -> SSAValue:
        return self.add(ptr.ToPtrOp(buffer))

    def offset(self, base: SSAValue, element_index: SSAValue, item_bytes: int) -> SSAValue:
        """``base`` advanced by ``element_index`` items of ``item_bytes`` bytes."""
        return self.add(ptr.PtrAddOp(base, self.mul(element_index, self.index(item_bytes))))

    def word(self, words: SSAValue, slot: int) -> SSAValue:
        """The address of i32 word ``slot`` of the integer workspace (``words``, a
        pointer of the entry block), made once, right after ``words``."""
        key = (-1 - slot, words.type)
        if key not in self.constants:
            op = ptr.PtrAddOp(words, self.index(4 * slot))
            self.entry.insert_op_after(op, words.owner)  # type: ignore[arg-type]
            self.constants[key] = op.result
        return self.constants[key]

    def element_at(self, base: SSAValue, element_index: SSAValue) -> SSAValue:
        return self.offset(base, element_index, self.item_bytes)

    def load(self, base: SSAValue, element_index: SSAValue) -> SSAValue:
        return self.add(ptr.LoadOp(self.element_at(base, element_index), self.element))

    def store(self, value: SSAValue, base: SSAValue, element_index: SSAValue) -> None:
        self.emit(ptr.StoreOp(self.element_at(base, element_index), value))

    def move(self, source: SSAValue, source_index: SSAValue, target: SSAValue,
             target_index: SSAValue, keep: SSAValue | None = None) -> None:  # fmt: skip
        """``target[target_index] = source[source_index]``, every part (``keep``: an
        i1, where false the element stored is 0)."""
        read, write = self.element_at(source, source_index), self.element_at(target, target_index)
        for part in range(self.parts):
            if part:  # the imaginary part, after the real one
                step = self.index(part * self.part_bytes)
                read, write = (self.add(ptr.PtrAddOp(a, step)) for a in (read, write))
            value = self.add(ptr.LoadOp(read, self.element))
            if keep is not None:
                value = self.add(arith.SelectOp(keep, value, self.real(0.0)))
            self.emit(ptr.StoreOp(write, value))

    def load_word(self, words: SSAValue, slot: int) -> SSAValue:
        return self.add(ptr.LoadOp(self.word(words, slot), I32))

    def load_word_at(self, words: SSAValue, slot: int, index: SSAValue) -> SSAValue:
        """Word ``slot + index`` (an array of words, such as pivots, from ``slot``)."""
        return self.add(ptr.LoadOp(self.offset(self.word(words, slot), index, 4), I32))

    def store_word(self, value: SSAValue | int, words: SSAValue, slot: int) -> None:
        stored = self.i32(value) if isinstance(value, int) else value
        self.emit(ptr.StoreOp(self.word(words, slot), stored))

    def store_words(self, words: SSAValue, values: dict[int, int | str]) -> None:
        """Store integer (or one-character: its code, LAPACK reads the first byte of a
        little-endian word) arguments in their slots."""
        for slot, value in values.items():
            self.store_word(ord(value) if isinstance(value, str) else value, words, slot)

    def call(self, symbol: str, arguments: list[SSAValue]) -> None:
        self.emit(func.CallOp(symbol, arguments, []))

    def keep_first_status(self, words: SSAValue, info_slot: int) -> None:
        """``status = status if status != 0 else info``: the first failure of a batch."""
        status, info = self.load_word(words, 0), self.load_word(words, info_slot)
        unset = self.add(arith.CmpiOp(status, self.i32(0), "eq"))
        self.store_word(self.add(arith.SelectOp(unset, info, status)), words, 0)

    def loop(self, lo: SSAValue | int, hi: SSAValue | int,
             body: Callable[[Emitter, SSAValue], None]) -> None:  # fmt: skip
        """``scf.for %i = lo to hi step 1 { body(emitter, %i) }``."""
        lower = self.index(lo) if isinstance(lo, int) else lo
        upper = self.index(hi) if isinstance(hi, int) else hi
        inner = Block(arg_types=[INDEX])
        nested = Emitter(inner, self.value_type, self.constants, self.entry)
        body(nested, inner.args[0])
        inner.add_op(scf.YieldOp())
        self.emit(scf.ForOp(lower, upper, self.index(1), [], inner))

    def each(self, count: int, body: Callable[[Emitter, SSAValue], None]) -> None:
        """``body`` for ``0 <= i < count``: a loop, or the body alone when ``count`` is 1
        (one matrix, no batch)."""
        if count == 1:
            body(self, self.index(0))
        else:
            self.loop(0, count, body)

    def copy(self, source: SSAValue, target: SSAValue, base: SSAValue, count: int) -> None:
        """``target[base + e] = source[base + e]`` for ``e < count``."""
        self.copy_to(source, base, target, base, count)

    def copy_to(self, source: SSAValue, source_base: SSAValue, target: SSAValue,
                target_base: SSAValue, count: int) -> None:  # fmt: skip
        """``target[target_base + e] = source[source_base + e]`` for ``e < count``."""

        def body(e: Emitter, i: SSAValue) -> None:
            e.move(source, e.plus(source_base, i), target, e.plus(target_base, i))

        self.loop(0, count, body)

    def transpose(self, rows: SSAValue, base: SSAValue, columns: SSAValue, n: int, k: int,
                  to_columns: bool) -> None:  # fmt: skip
        """Between the row-major ``n x k`` matrix at ``rows + base`` and the column-major
        one at ``columns``: ``columns[i + j n] = rows[base + i k + j]`` (``to_columns``)
        or back."""

        def row(e: Emitter, i: SSAValue) -> None:
            def element(e: Emitter, j: SSAValue) -> None:
                row_major = e.plus(base, e.plus(e.mul(i, e.index(k)), j))
                column_major = e.plus(i, e.mul(j, e.index(n)))
                if to_columns:
                    e.move(rows, row_major, columns, column_major)
                else:
                    e.move(columns, column_major, rows, row_major)

            e.loop(0, k, element)

        self.loop(0, n, row)


@dataclass(frozen=True)
class Buffers:
    """The kernel's pointers: operands, results, the i32 words, the element workspace."""

    inputs: list[SSAValue]
    outputs: list[SSAValue]
    words: SSAValue
    scratch: SSAValue


@dataclass(frozen=True)
class LapackKernel:
    """How one op's kernel is made: its workspace sizes and its body."""

    words: int  # i32 words of %iws (word 0: the status)
    scratch: int  # elements of %fws
    body: Callable[[Emitter, Buffers, ModuleOp], None]


def matrices(shape: tuple[int, ...]) -> int:
    """The matrices of a batch of ``shape`` (its leading extents' product)."""
    return prod(shape[:-2])


def routine(module: ModuleOp, e: Emitter, routine: str, arity: int) -> str:
    """The symbol of ``routine`` for ``e``'s element type, declared in ``module``."""
    symbol = routine_symbol(routine, e.value_type)
    declare_routine(module, symbol, arity)
    return symbol

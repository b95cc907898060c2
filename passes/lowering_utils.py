"""Helpers shared by the ``convert-*-to-llvm`` passes.

Small and dialect-agnostic: fastmath flag translation, intrinsic name mangling
(``f64``, ``v8f64``, ``i32``), the leftover check every conversion pass ends with,
in-place retyping for the one-walk type conversions, ``TableRewrite``, the pattern
of the table-driven one-op-for-one-op conversions, and ``rewrite_each_op``, the one-walk
driver those conversions run on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    FunctionType,
    IndexType,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.dialects.utils.fast_math import FastMathAttrBase, FastMathFlag
from xdsl.ir import Attribute, Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from .errors import LoweringError


@functools.lru_cache(maxsize=256)
def llvm_fastmath(
    flags: FastMathAttrBase | None, *, contract: bool = False
) -> llvm.FastMathAttr:
    """The ``#llvm.fastmath`` equivalent of an ``#arith.fastmath`` attribute.

    With ``contract=True`` the ``contract`` flag is added, which lets LLVM fuse
    ``a * b + c`` into an FMA and nothing else. (Cached: attributes are immutable, and
    every float op of a kernel asks for one of a few.)
    """
    chosen: set[FastMathFlag] = set(flags.data) if flags is not None else set()
    if contract:
        chosen.add(FastMathFlag.ALLOW_CONTRACT)
    if not chosen:
        return llvm.FastMathAttr(None)
    return llvm.FastMathAttr(sorted(chosen, key=list(FastMathFlag).index))


def element_type(typ: Attribute) -> Attribute:
    """The element type of a vector, else the type itself."""
    return typ.element_type if isinstance(typ, VectorType) else typ


def intrinsic_suffix(typ: Attribute) -> str:
    """LLVM's overload suffix for a type: ``f64``, ``f32``, ``i64``, ``v8f64``.

    Raises ``TypeError`` for types LLVM intrinsics are not overloaded on.
    """
    if isinstance(typ, VectorType):
        if typ.get_num_dims() != 1:
            raise TypeError(f"no intrinsic suffix for multi-dimensional {typ}")
        return f"v{typ.get_shape()[0]}{intrinsic_suffix(typ.element_type)}"
    if isinstance(typ, AnyFloat):
        return f"f{typ.bitwidth}"
    if isinstance(typ, IntegerType):
        return f"i{typ.width.data}"
    raise TypeError(f"no intrinsic suffix for type {typ}")


def same_width_int(typ: Attribute) -> Attribute:
    """The integer type (or vector of it) with the bit width of a float type."""
    elem = element_type(typ)
    assert isinstance(elem, AnyFloat), f"expected a float type, got {elem}"
    as_int = IntegerType(elem.bitwidth)
    if isinstance(typ, VectorType):
        return VectorType(as_int, typ.get_shape())
    return as_int


def has_index_type(op: Operation) -> bool:
    """Whether any operand or result of ``op`` is (a vector of) ``index``."""
    return any(
        isinstance(element_type(v.type), IndexType) for v in (*op.operands, *op.results)
    )


def check_no_leftover(module: ModuleOp, prefixes: tuple[str, ...], pass_name: str) -> None:
    """Raise :class:`LoweringError` for the first op whose name starts with a prefix.

    Every conversion pass calls this last, so an op its patterns did not match
    is reported by name instead of surfacing later as an obscure backend error.
    """
    for op in module.walk():
        if op.name.startswith(prefixes):
            raise LoweringError(pass_name, op.name, "no conversion rule matched")


TypeMap = Callable[[Attribute], Attribute]
"""Maps a type to its replacement, returning the same object when unchanged."""


def map_types_in_attr(attr: Attribute, convert: TypeMap) -> Attribute:
    """Apply ``convert`` to a type, or inside function types and arrays.

    Returns ``attr`` itself when nothing changed, so callers can test with ``is``.
    """
    match attr:
        case FunctionType():
            inputs = [convert(t) for t in attr.inputs]
            outputs = [convert(t) for t in attr.outputs]
            if inputs == list(attr.inputs) and outputs == list(attr.outputs):
                return attr
            return FunctionType.from_lists(inputs, outputs)
        case llvm.LLVMFunctionType():
            inputs = [convert(t) for t in attr.inputs]
            output = convert(attr.output)
            if inputs == list(attr.inputs) and output is attr.output:
                return attr
            return llvm.LLVMFunctionType(inputs, output, attr.is_variadic)
        case ArrayAttr():
            items = [map_types_in_attr(a, convert) for a in attr.data]
            if all(a is b for a, b in zip(items, attr.data, strict=True)):
                return attr
            return ArrayAttr(items)
        case _:
            return convert(attr)


def retype_in_place(
    op: Operation, convert: TypeMap, convert_attr: Callable[[Attribute], Attribute]
) -> None:
    """Retype ``op``'s results, properties and nested block arguments in place.

    Values keep their uses (``Rewriter.replace_value_with_new_type``), so one
    walk over a module converts it without rebuilding ops.
    """
    for result in op.results:
        new_type = convert(result.type)
        if new_type is not result.type:
            Rewriter.replace_value_with_new_type(result, new_type)
    for name, value in list(op.properties.items()):
        new_value = convert_attr(value)
        if new_value is not value:
            op.properties[name] = new_value
    for region in op.regions:
        for block in region.blocks:
            for arg in block.args:
                new_type = convert(arg.type)
                if new_type is not arg.type:
                    Rewriter.replace_value_with_new_type(arg, new_type)


class TableRewrite(RewritePattern):
    """Replace each op whose type has a row in ``table`` by the op the row builds.

    ``TableRewrite({cf.BranchOp: _br, ...})``: one builder per source op type, as
    xDSL's table-driven conversions do; ops without a row are left to other patterns
    (and to the pass's leftover check).
    """

    def __init__(self, table: Mapping[type[Operation], Callable[[Operation], Operation]]) -> None:
        self.table = table

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        build = self.table.get(type(op))
        if build is not None:
            rewriter.replace(op, build(op))


def rewrite_each_op(module: ModuleOp, pattern: RewritePattern) -> None:
    """Offer every op of ``module`` to ``pattern`` once, in walk order, in place.

    What ``PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(module)``
    does for a pattern that only replaces or erases the op it matched, without its
    worklist and listeners (the kernels of a 100-op trace, znver4: ``convert-cf-to-llvm``
    -25%, ``convert-math-to-llvm`` and ``convert-ptradd-to-gep`` -17%,
    ``convert-arith-to-llvm`` -5%: its time is building the new ops). The ops a pattern
    inserts are not offered again, as in the walker. An error from the pattern is
    reported on the op, as the walker reports it (``Operation.emit_error``).
    """
    ops = [op for op in module.walk() if op is not module]
    rewriter = PatternRewriter(InsertPoint.at_start(module.body.block))
    for op in ops:
        rewriter.has_done_action = False
        rewriter._current_operation = op  # what the walker's reset does, without its warning
        rewriter.insertion_point = InsertPoint.before(op)
        rewriter.name_hint = None
        try:
            pattern.match_and_rewrite(op, rewriter)
        except Exception as error:
            op.emit_error(f"Error while applying pattern: {error}", underlying_error=error)

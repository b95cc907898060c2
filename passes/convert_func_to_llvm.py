"""``convert-func-to-llvm``: ``func.func``/``return``/``call`` to the ``llvm`` dialect.

Preconditions: signatures already LLVM-compatible, i.e. run after
``convert-memref-to-ptr{lower_func=true}``, ``convert-ptr-to-llvm`` and
``convert-index-to-i64`` (``llvm.func`` refuses memref, ptr_xdsl and index
types); at most one result per function.

Option ``noalias`` (default ``True``): every ``!llvm.ptr`` argument of a function
with a body gets ``llvm.noalias``, which removes LLVM's runtime alias checks and
lets loops vectorize cheaply. It is a promise by the caller that the buffers
do not overlap; turn it off for kernels that update a buffer in place through
two arguments. Existing ``arg_attrs`` are kept.

Visibility: a ``private`` function with a body becomes ``internal`` linkage,
everything else ``external``.

Before::

    func.func @k(%p: !llvm.ptr, %n: i64) -> f64 {
      %r = func.call @g(%n) : (i64) -> f64
      func.return %r : f64
    }

After::

    llvm.func @k(%p: !llvm.ptr {llvm.noalias}, %n: i64) -> f64 {
      %r = llvm.call @g(%n) : (i64) -> f64
      llvm.return %r : f64
    }
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, UnitAttr
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import Rewriter

from .errors import LoweringError
from .lowering_utils import TableRewrite, check_no_leftover


def _single_result_type(op: Operation, types: tuple[Attribute, ...] | list[Attribute]) -> (
    Attribute | None
):
    if len(types) > 1:
        raise LoweringError(
            ConvertFuncToLLVMPass.name, op.name, "more than one result is not supported"
        )
    return types[0] if types else None


def _return(op: Operation) -> Operation:
    assert isinstance(op, func.ReturnOp)
    _single_result_type(op, list(op.arguments.types))
    return llvm.ReturnOp(op.arguments[0] if op.arguments else None)


def _call(op: Operation) -> Operation:
    assert isinstance(op, func.CallOp)
    result = _single_result_type(op, list(op.res.types))
    return llvm.CallOp(op.callee, *op.arguments, return_type=result)


_BODY_OPS: dict[type[Operation], Callable[[Operation], Operation]] = {
    func.ReturnOp: _return,
    func.CallOp: _call,
}
"""``func.return`` -> ``llvm.return``, ``func.call`` -> ``llvm.call``."""


class FuncToLLVM(RewritePattern):
    """``func.func`` -> ``llvm.func``, the body region moved over unchanged."""

    def __init__(self, noalias: bool) -> None:
        self.noalias = noalias

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, func.FuncOp):
            return
        inputs = list(op.function_type.inputs)
        for i, typ in enumerate(inputs):
            if not llvm.is_compatible_type(typ):
                raise LoweringError(
                    ConvertFuncToLLVMPass.name, f"func.func @{op.sym_name.data}",
                    f"argument #{i} has non-LLVM type {typ}",
                )
        output = _single_result_type(op, list(op.function_type.outputs))
        if output is not None and not llvm.is_compatible_type(output):
            raise LoweringError(
                ConvertFuncToLLVMPass.name,
                f"func.func @{op.sym_name.data}", f"result has non-LLVM type {output}"
            )
        has_body = bool(op.body.blocks)
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        linkage = "internal" if private and has_body else "external"
        arg_attrs = self._arg_attrs(op, inputs, has_body)
        new_func = llvm.FuncOp(
            op.sym_name,
            llvm.LLVMFunctionType(inputs, output),
            linkage=llvm.LinkageAttr(linkage),
            body=Rewriter.move_region_contents_to_new_regions(op.body),
            other_props={"arg_attrs": arg_attrs},
        )
        rewriter.replace(op, new_func)

    def _arg_attrs(
        self, op: func.FuncOp, inputs: list[Attribute], has_body: bool
    ) -> ArrayAttr[DictionaryAttr] | None:
        old = list(op.arg_attrs.data) if op.arg_attrs is not None else None
        dicts: list[dict[str, Attribute]] = [
            dict(old[i].data) if old is not None else {} for i in range(len(inputs))
        ]
        if self.noalias and has_body:
            for typ, attrs in zip(inputs, dicts, strict=True):
                if isinstance(typ, llvm.LLVMPointerType):
                    attrs["llvm.noalias"] = UnitAttr()
        if not any(dicts):
            return None
        return ArrayAttr([DictionaryAttr(d) for d in dicts])


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ModulePass):
    """Lower ``func`` ops to ``llvm``; a leftover ``func`` op is an error."""

    name = "convert-func-to-llvm"

    noalias: bool = True
    """Mark every pointer argument of a defined function ``llvm.noalias``."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [TableRewrite(_BODY_OPS), FuncToLLVM(self.noalias)], dce_enabled=False
            ),
            walk_regions_first=True,
            apply_recursively=False,
        ).rewrite_module(op)
        check_no_leftover(op, ("func.",), self.name)

"""Canonicalization patterns of the `tidu` dialect, applied by xDSL's `canonicalize`.

Ops opt in with the `TiduCanonicalization` trait (`tidu_base`), which looks up
`PATTERNS` by op class (the dialect module `tidu` attaches them to the trait: the op
modules are below this one).
Every pattern is rooted at the op it rewrites; it replaces that op's result by an
existing value or by new ops (one, or two for `pow(x, -1)`), and leaves the ops it no
longer uses to `canonicalize`'s dead-code elimination. `cse` and `dce` need nothing from
here: every tidu op is `Pure`.

| root                | rewrite                                                        |
|---------------------|----------------------------------------------------------------|
| add                 | `x + full_like(_, 0)` (or a splat constant 0) -> `x`           |
| mul                 | `x * full_like(_, 1)` (or a splat constant 1) -> `x`           |
| scale               | `scale(x, 1)` -> `x`; `scale(scale(x, b), a)` -> `scale(x, a*b)` |
| shift               | `shift(x, 0)` -> `x`                                           |
| pow                 | `pow(x, 1)` -> `x`; exponent 2 -> `x * x`, 0.5 -> `sqrt(x)`,   |
|                     | -1 -> `full_like(x, 1) / x`                                    |
| neg                 | `neg(neg(x))` -> `x`                                           |
| conj                | `conj(x)` on a real type -> `x`; `conj(conj(x))` -> `x`        |
| broadcast_in_dim    | same type -> operand; of a broadcast_in_dim -> one broadcast   |
| reshape             | same type -> operand; of a reshape -> one reshape              |
| transpose           | a no-op -> operand; of a transpose -> one transpose            |
| dot_general         | of a transpose -> of its operand, the dimension numbers mapped |
|                     | (when the free dimensions keep their order)                    |
|                     | real, no batch dimensions, every contracted one of extent 1    |
|                     | (an outer product) -> `broadcast(lhs) * broadcast(rhs)`, each  |
|                     | reshaped to its free dimensions first (so it fuses)            |

Before:

    %z = tidu.full_like %x, 0.000000e+00 : tensor<4xf64>
    %a = tidu.add %x, %z : tensor<4xf64>
    %n = tidu.neg %a : tensor<4xf64>
    %m = tidu.neg %n : tensor<4xf64>
    func.return %m : tensor<4xf64>

After `canonicalize`:

    func.return %x : tensor<4xf64>

`x + 0 -> x` differs from IEEE arithmetic for `x = -0.0` only (`-0.0 + 0.0 = +0.0`);
`pow(x, 0.5) -> sqrt(x)` differs from C's `pow` for `x = -0.0` (`sqrt` gives -0.0, `pow`
+0.0) and `x = -inf` (NaN against +inf) only, and is what the loop lowering of `pow`
emits anyway.
A transpose is a no-op when its type does not change and the dimensions of size
other than 1 keep their order (a transpose of a square matrix is not a no-op).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from tidu_compile import ops

from .tidu_base import array_values, element_type, is_real_element
from .tidu_constant import ConstantOp
from .tidu_elementwise import (
    AddOp,
    BinaryElementwiseOperation,
    ConjOp,
    FullLikeOp,
    MulOp,
    NegOp,
    PowOp,
    ScaleOp,
    ShiftOp,
    UnaryElementwiseOperation,
)
from .tidu_shape import BroadcastInDimOp, DotGeneralOp, ReshapeOp, TransposeOp
from .tidu_table import op_class  # sqrt and div are generated from the op table


def splat_value(value: SSAValue) -> complex | None:
    """The literal every element of `value` has, if a full_like or constant makes it."""
    owner = value.owner
    if isinstance(owner, FullLikeOp | ConstantOp):
        return owner.value
    return None


def _replace_by_value(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    rewriter.replace(op, (), (value,))


class DropIdentityOperand(RewritePattern):
    """`x + full_like(_, 0)` -> `x` (identity 0), `x * full_like(_, 1)` -> `x` (identity
    1); the splat on either side, a splat constant too."""

    def __init__(self, identity: int) -> None:
        self.identity = identity

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, AddOp | MulOp):
            return
        for kept, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if splat_value(other) == self.identity and kept.type == op.result.type:
                _replace_by_value(op, kept, rewriter)
                return


class ScaleOneOrScale(RewritePattern):
    """`scale(x, 1)` -> `x`; `scale(scale(x, b), a)` -> `scale(x, a * b)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ScaleOp, rewriter: PatternRewriter, /) -> None:
        if op.value == 1:
            _replace_by_value(op, op.operand, rewriter)
            return
        inner = op.operand.owner
        # A fold onto itself (a cycle, in IR that defines values after their use) would
        # never end: check_ssa_order rejects such IR; this keeps the pattern safe anyway.
        if isinstance(inner, ScaleOp) and inner is not op and inner.operand.owner is not op:
            a, b = op.value, inner.value
            product = a.real * b.real if a.imag == 0 and b.imag == 0 else a * b
            rewriter.replace(op, ScaleOp(inner.operand, product))


class ShiftZero(RewritePattern):
    """`shift(x, 0)` -> `x`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ShiftOp, rewriter: PatternRewriter, /) -> None:
        if op.parameter == 0:
            _replace_by_value(op, op.operand, rewriter)


class FoldPow(RewritePattern):
    """`pow(x, 1)` -> `x`; `pow(x, 2)` -> `x * x`; `pow(x, 0.5)` -> `sqrt(x)`;
    `pow(x, -1)` -> `full_like(x, 1) / x`.

    The JVP of `x ** 2` is `2 * pow(x, 1) * dx`: the fold leaves `2 * x * dx`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PowOp, rewriter: PatternRewriter, /) -> None:
        x, exponent = op.operand, op.parameter
        if exponent == 1:
            _replace_by_value(op, x, rewriter)
        elif exponent == 2:
            rewriter.replace(op, MulOp(x, x))
        elif exponent == 0.5:
            sqrt = cast(type[UnaryElementwiseOperation], op_class(ops.Sqrt))
            rewriter.replace(op, sqrt(x))
        elif exponent == -1:
            one = FullLikeOp(x, 1.0)
            one.result.name_hint = "one"
            div = cast(type[BinaryElementwiseOperation], op_class(ops.Div))
            rewriter.replace(op, [one, div(one, x)])


class NegNeg(RewritePattern):
    """`neg(neg(x))` -> `x`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: NegOp, rewriter: PatternRewriter, /) -> None:
        inner = op.operand.owner
        if isinstance(inner, NegOp):
            _replace_by_value(op, inner.operand, rewriter)


class ConjRealOrConj(RewritePattern):
    """`conj(x)` -> `x` for a real (or i1) x; `conj(conj(x))` -> `x`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConjOp, rewriter: PatternRewriter, /) -> None:
        inner = op.operand.owner
        if is_real_element(element_type(op.operand.type)):
            _replace_by_value(op, op.operand, rewriter)
        elif isinstance(inner, ConjOp):
            _replace_by_value(op, inner.operand, rewriter)


class DropSameType(RewritePattern):
    """A broadcast or reshape to its operand's type -> the operand."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, BroadcastInDimOp | ReshapeOp) and op.operand.type == op.result.type:
            _replace_by_value(op, op.operand, rewriter)


class FoldBroadcast(RewritePattern):
    """A broadcast of a broadcast -> one broadcast.

    Operand dimension i of the inner broadcast lands in result dimension
    `outer[inner[i]]`; a composition of strictly increasing maps is strictly increasing.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastInDimOp, rewriter: PatternRewriter, /) -> None:
        inner = op.operand.owner
        if isinstance(inner, BroadcastInDimOp):
            outer_dims = array_values(op.broadcast_dimensions)
            dims = [outer_dims[d] for d in array_values(inner.broadcast_dimensions)]
            shape = _shape(op.result.type)
            rewriter.replace(op, BroadcastInDimOp(inner.operand, dims, shape))


class FoldReshape(RewritePattern):
    """A reshape of a reshape -> one reshape (or the operand, back to its type)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter, /) -> None:
        inner = op.operand.owner
        if isinstance(inner, ReshapeOp):
            if inner.operand.type == op.result.type:
                _replace_by_value(op, inner.operand, rewriter)
            else:
                rewriter.replace(op, ReshapeOp(inner.operand, _shape(op.result.type)))


def is_noop_permutation(shape: Sequence[int], permutation: Sequence[int]) -> bool:
    """Whether transposing `shape` by `permutation` keeps the row-major element order."""
    moved = [p for p in permutation if shape[p] != 1]
    return moved == sorted(moved)


class FoldTranspose(RewritePattern):
    """A no-op transpose -> its operand; a transpose of a transpose -> one transpose.

    `y = transpose(x, p)` has `y.dim[i] = x.dim[p[i]]`, so `transpose(y, q)` is
    `transpose(x, [p[q[j]] for j])`, which may itself be a no-op.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        source, permutation = op.operand, array_values(op.permutation)
        inner = source.owner
        if isinstance(inner, TransposeOp):
            inner_permutation = array_values(inner.permutation)
            source = inner.operand
            permutation = tuple(inner_permutation[q] for q in permutation)
        if source.type == op.result.type and is_noop_permutation(_shape(source.type), permutation):
            _replace_by_value(op, source, rewriter)
        elif source is not op.operand:
            rewriter.replace(op, TransposeOp(source, permutation))


class FoldTransposedOperand(RewritePattern):
    """A contraction of a transpose -> of the transpose's operand: `t = transpose(a, p)`
    has `t.dim[d] = a.dim[p[d]]`, so contracting (batching) `t`'s `d` is contracting
    `a`'s `p[d]`; exact when `p` keeps the free dimensions in order (they give the
    result's dimensions in increasing order): a matrix's transpose always does."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DotGeneralOp, rewriter: PatternRewriter, /) -> None:
        numbers: list[list[tuple[int, ...]]] = [
            [array_values(op.lhs_contracting), array_values(op.lhs_batch)],
            [array_values(op.rhs_contracting), array_values(op.rhs_batch)],
        ]
        operands = [op.lhs, op.rhs]
        for side, value in enumerate(operands):
            inner = value.owner
            if not isinstance(inner, TransposeOp):
                continue
            permutation = array_values(inner.permutation)
            used = {*numbers[side][0], *numbers[side][1]}
            free = [permutation[d] for d in range(len(permutation)) if d not in used]
            if free != sorted(free):
                continue
            operands[side] = inner.operand
            numbers[side] = [tuple(permutation[d] for d in dims) for dims in numbers[side]]
        if operands != [op.lhs, op.rhs]:
            (lc, lb), (rc, rb) = numbers
            rewriter.replace(op, DotGeneralOp(operands[0], operands[1], lc, rc, lb, rb))


class OuterProduct(RewritePattern):
    """A real contraction with no batch dimensions whose contracted dimensions all have
    extent 1 -> the product of the two operands broadcast to the result (lhs free
    dimensions first, then rhs's: `dot_general`'s order); each operand is reshaped to
    its free dimensions when it has contracted ones. An elementwise product fuses with
    its neighbours; BLAS would make a `k = 1` product a pass of its own."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DotGeneralOp, rewriter: PatternRewriter, /) -> None:
        if array_values(op.lhs_batch) or not is_real_element(element_type(op.result.type)):
            return
        sides = ((op.lhs, array_values(op.lhs_contracting)),
                 (op.rhs, array_values(op.rhs_contracting)))  # fmt: skip
        if any(_shape(value.type)[d] != 1 for value, dims in sides for d in dims):
            return
        shape, start = _shape(op.result.type), 0
        new_ops: list[Operation] = []
        factors: list[SSAValue] = []
        for value, dims in sides:
            free = tuple(s for d, s in enumerate(_shape(value.type)) if d not in dims)
            if dims:
                new_ops.append(ReshapeOp(value, free))
                value = new_ops[-1].results[0]
            new_ops.append(BroadcastInDimOp(value, range(start, start + len(free)), shape))
            factors.append(new_ops[-1].results[0])
            start += len(free)
        rewriter.replace(op, [*new_ops, MulOp(*factors)])


def _shape(type_: object) -> tuple[int, ...]:
    assert isinstance(type_, TensorType)
    return type_.get_shape()


PATTERNS: dict[type[Operation], tuple[RewritePattern, ...]] = {
    AddOp: (DropIdentityOperand(0),),
    MulOp: (DropIdentityOperand(1),),
    ScaleOp: (ScaleOneOrScale(),),
    ShiftOp: (ShiftZero(),),
    PowOp: (FoldPow(),),
    NegOp: (NegNeg(),),
    ConjOp: (ConjRealOrConj(),),
    BroadcastInDimOp: (DropSameType(), FoldBroadcast()),
    ReshapeOp: (DropSameType(), FoldReshape()),
    TransposeOp: (FoldTranspose(),),
    DotGeneralOp: (FoldTransposedOperand(), OuterProduct()),
}
"""Op class -> its canonicalization patterns (what `TiduCanonicalization` returns)."""


__all__ = [
    "PATTERNS",
    "ConjRealOrConj",
    "DropIdentityOperand",
    "DropSameType",
    "FoldBroadcast",
    "FoldPow",
    "FoldReshape",
    "FoldTranspose",
    "FoldTransposedOperand",
    "NegNeg",
    "OuterProduct",
    "ScaleOneOrScale",
    "ShiftZero",
    "is_noop_permutation",
    "splat_value",
]

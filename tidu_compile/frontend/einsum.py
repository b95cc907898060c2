"""``einsum``: any subscripts numpy accepts, as slices, gathers, reductions, products and
``DotGeneral`` contractions (no Python loop over elements).

1. Parse: one label per dimension (``...`` becomes labels for its dimensions, aligned
   from the right and broadcast between operands); the output is the ``->`` part, or
   (implicit mode) the labels seen once, sorted, after the ``...`` dimensions.
2. Per operand: a repeated label is a diagonal (a ``Gather`` at ``(i, i)``); a label
   no other operand and not the output has is summed (``ReduceSum``).
3. Pairs of operands, in the order of numpy's ``einsum_path`` (greedy): labels in both
   and needed later are batch dimensions, labels in both and not needed are contracted.
   With a contracted label the pair is one ``DotGeneral`` (one BLAS call, batched where
   there are batch labels), unless it is a row-wise dot (``ij,ij->i``), which is a
   product and a sum (one fused kernel); without one it is a broadcast product.
4. The last operand: labels not in the output summed, then one ``Transpose``.

    einsum('bij,bjk->bik', a, b)   ->  DotGeneral(batch 0 x 0, contracting 2 x 1)
    einsum('ii->', a)              ->  Gather (the diagonal) + ReduceSum

numpy's second form, operands and sublists of integer labels interleaved
(``einsum(a, [0, 1], b, [1, 2], [0, 2])``), is read as the subscripts ``ab,bc->ac``.

The contraction order is always ``einsum_path``'s greedy one: ``optimize`` takes
numpy's values (``True``, ``False``, ``None``, ``"greedy"``, ``"optimal"``, or a path
``["einsum_path", (0, 1), ...]`` that contracts the operands) so that numpy's calls
run, and changes nothing (an order changes a result only by rounding); any other value
is a ``TypeError`` naming it, a path that does not fit the operands a ``ValueError``.
"""

from __future__ import annotations

import operator
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.gather import gather
from tidu_compile.frontend.products import promoted
from tidu_compile.frontend.promotion import broadcast_to
from tidu_compile.frontend.shapes import reshape, transpose
from tidu_compile.frontend.tensor import Tensor, apply1

__all__ = ["einsum"]

Labels = list[str]

#: numpy's names of a path search (``optimize=``); the order here is always greedy.
_PATH_NAMES = ("greedy", "optimal")
_ELLIPSIS_LABELS = "".join(chr(0x3B1 + i) for i in range(24))  # greek: never a subscript


def _parse(subscripts: str, shapes: Sequence[tuple[int, ...]]) -> tuple[list[Labels], Labels]:
    """Per operand its labels (one per dimension), and the output's labels."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum: {len(terms)} operand subscripts for {len(shapes)} operands"
        )
    allowed = set(string.ascii_letters) | {"."}
    for term in (*terms, output):
        if set(term) - allowed or term.replace("...", "").count(".") or term.count("...") > 1:
            raise ValueError(f"einsum: invalid subscript {term!r} in {subscripts!r}")
    ellipsis_rank = 0
    for term, shape in zip(terms, shapes, strict=True):
        letters = len(term.replace("...", ""))
        if "..." in term:
            ellipsis_rank = max(ellipsis_rank, len(shape) - letters)
        if letters > len(shape) or ("..." not in term and letters != len(shape)):
            raise ValueError(
                f"einsum: subscript {term!r} does not fit an operand of shape {shape}"
            )
    broadcast = list(_ELLIPSIS_LABELS[:ellipsis_rank])
    labels = []
    for term, shape in zip(terms, shapes, strict=True):
        before, _, after = term.partition("...")
        rank = len(shape) - len(before) - len(after) if "..." in term else 0
        labels.append([*before, *broadcast[ellipsis_rank - rank :], *after])
    if arrow:
        if "..." not in output and ellipsis_rank:
            raise ValueError("einsum: output subscripts must include '...' for broadcast dims")
        before, _, after = output.partition("...")
        out = [*before, *(broadcast if "..." in output else []), *after]
        seen = {label for ls in labels for label in ls}
        for label in out:
            if label not in seen:
                raise ValueError(f"einsum: output subscript {label!r} is in no operand")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscript repeated in {output!r}")
    else:
        counts: dict[str, int] = {}
        for ls in labels:
            for label in ls:
                counts[label] = counts.get(label, 0) + 1
        out = broadcast + sorted(k for k, c in counts.items() if c == 1 and k not in broadcast)
    return labels, out


def _sizes(tensors: Sequence[Tensor], labels: Sequence[Labels]) -> dict[str, int]:
    """Each label's size (1 broadcasts only for ``...`` dimensions)."""
    sizes: dict[str, int] = {}
    for t, ls in zip(tensors, labels, strict=True):
        for label, size in zip(ls, t.shape, strict=True):
            known = sizes.get(label)
            if known is None or known == 1 and label in _ELLIPSIS_LABELS:
                sizes[label] = size
            elif size != known and not (size == 1 and label in _ELLIPSIS_LABELS):
                raise ValueError(
                    f"einsum: subscript {label!r} has size {size} and {known} in two operands"
                )
    return sizes


def _diagonals(t: Tensor, labels: Labels) -> tuple[Tensor, Labels]:
    """Repeated labels of one operand reduced to one dimension (its diagonal)."""
    while len(set(labels)) != len(labels):
        label = next(k for k in labels if labels.count(k) > 1)
        where = [d for d, k in enumerate(labels) if k == label]
        rest = [d for d in range(t.ndim) if d not in where]
        t = transpose(t, [*rest, *where])
        steps = np.arange(t.shape[-1])
        t = gather(t, len(rest), [steps] * len(where))
        labels = [labels[d] for d in rest] + [label]
    return t, labels


def _sum_out(t: Tensor, labels: Labels, keep: set[str]) -> tuple[Tensor, Labels]:
    """Sum the dimensions whose labels are not in ``keep`` (for bools, numpy's logical
    sum: an or, ``ReduceMax``)."""
    axes = tuple(d for d, k in enumerate(labels) if k not in keep)
    if not axes:
        return t, labels
    reduce = ops.ReduceMax if t.dtype == np.bool_ else ops.ReduceSum
    total = apply1(reduce(axes, t.shape), t)
    return total, [k for k in labels if k in keep]


def _arrange(t: Tensor, labels: Labels, order: Labels, sizes: dict[str, int]) -> Tensor:
    """``t`` with its dimensions in ``order`` (labels it lacks as size-1 dimensions),
    broadcast over the ``...`` dimensions of size 1."""
    present = [k for k in order if k in labels]
    t = transpose(t, [labels.index(k) for k in present])
    t = reshape(t, tuple(t.shape[present.index(k)] if k in present else 1 for k in order))
    target = tuple(sizes[k] if k in present else 1 for k in order)
    return broadcast_to(t, target) if target != t.shape else t


def _pair(
    a: Tensor, la: Labels, b: Tensor, lb: Labels, needed: set[str], sizes: dict[str, int]
) -> tuple[Tensor, Labels]:
    """Contract two operands, keeping the ``needed`` labels."""
    batch = [k for k in la if k in lb and k in needed]
    summed = [k for k in la if k in lb and k not in needed]
    free_a = [k for k in la if k not in lb]
    free_b = [k for k in lb if k not in la]
    out = batch + free_a + free_b
    if summed and (free_a or free_b or not batch):  # a BLAS contraction
        a = _arrange(a, la, batch + free_a + summed, sizes)
        b = _arrange(b, lb, batch + summed + free_b, sizes)
        nb, na, ns = len(batch), len(free_a), len(summed)
        op = ops.DotGeneral(tuple(range(nb + na, nb + na + ns)), tuple(range(nb, nb + ns)),
                            tuple(range(nb)), tuple(range(nb)), a.shape, b.shape)  # fmt: skip
        return apply1(op, a, b), out
    order = out + summed  # a broadcast product (then a sum): one fused kernel
    product = _arrange(a, la, order, sizes) * _arrange(b, lb, order, sizes)
    return _sum_out(product, order, set(out))


def _is(value: Any, *names: str) -> bool:
    return isinstance(value, str) and value in names


def _check_optimize(optimize: Any, operand_count: int) -> None:
    """``TypeError`` unless ``optimize`` is one of numpy's values, ``ValueError`` for an
    explicit path that does not contract ``operand_count`` operands to one (as numpy's
    ``einsum_path`` checks it); the order itself is always the greedy one."""
    if optimize is None or isinstance(optimize, bool) or _is(optimize, *_PATH_NAMES):
        return
    if not (isinstance(optimize, list | tuple) and optimize and _is(optimize[0], "einsum_path")):
        raise TypeError(
            "einsum: optimize must be a bool, None, 'greedy', 'optimal' or an einsum_path "
            f"path ['einsum_path', (i, j), ...], got {optimize!r}"
        )
    remaining = operand_count
    for step in optimize[1:]:
        if not (isinstance(step, tuple) and step
                and all(isinstance(i, int) and 0 <= i < remaining for i in step)
                and len(set(step)) == len(step)):  # fmt: skip
            raise ValueError(f"einsum: optimize: {step!r} is not a contraction of "
                             f"{remaining} operands")  # fmt: skip
        remaining -= len(step) - 1
    if remaining != 1:
        raise ValueError(f"einsum: optimize: the path leaves {remaining} operands")


def einsum(subscripts: str, *operands: Any, optimize: Any = True) -> Tensor:
    """Einstein summation over ``operands`` (see the module docstring; ``optimize`` is
    checked and does not change the contraction order)."""
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists(subscripts, *operands)
    _check_optimize(optimize, len(operands))
    tensors = promoted(*operands) if operands else []
    labels, out = _parse(subscripts, [t.shape for t in tensors])
    sizes = _sizes(tensors, labels)
    work: list[tuple[Tensor, Labels]] = []
    for i, (t, ls) in enumerate(zip(tensors, labels, strict=True)):
        t, ls = _diagonals(t, ls)
        others = {k for j, other in enumerate(labels) if j != i for k in other}
        work.append(_sum_out(t, ls, others | set(out)))
    if len(work) > 2:
        dummies = [np.broadcast_to(np.empty((), np.float64), t.shape) for t, _ in work]
        letters = _ascii([k for _, ls in work for k in ls])
        spec = ",".join("".join(letters[k] for k in ls) for _, ls in work)
        path = np.einsum_path(spec, *dummies, optimize="greedy")[0][1:]
    else:
        path = [(0, 1)] if len(work) == 2 else []
    for step in path:
        pair = sorted(step, reverse=True)
        taken = [work.pop(p) for p in pair]
        if len(taken) == 1:
            work.append(taken[0])
            continue
        (b, lb), (a, la) = taken
        needed = set(out) | {k for _, ls in work for k in ls}
        work.append(_pair(a, la, b, lb, needed, sizes))
    (result, ls) = work[0]
    result, ls = _sum_out(result, ls, set(out))
    return _arrange(result, ls, out, sizes) if ls != out else result


def _from_sublists(*arguments: Any) -> tuple[str, tuple[Any, ...]]:
    """numpy's second form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, as subscripts and
    operands: integer labels 0..51 as letters, ``Ellipsis`` as ``...``."""

    def letters(sublist: Any) -> str:
        try:
            return "".join("..." if k is Ellipsis else string.ascii_letters[operator.index(k)]
                           for k in sublist)  # fmt: skip
        except (TypeError, IndexError):
            raise TypeError(f"einsum: a sublist holds integers in [0, 52) and Ellipsis, got "
                            f"{sublist!r}") from None  # fmt: skip

    output = arguments[-1] if len(arguments) % 2 else None  # an output sublist at the end
    pairs = arguments[: len(arguments) - len(arguments) % 2]
    operands, sublists = pairs[0::2], pairs[1::2]
    spec = ",".join(letters(s) for s in sublists)
    return (spec if output is None else f"{spec}->{letters(output)}"), tuple(operands)


def _ascii(labels: Labels) -> dict[str, str]:
    """Each label as a letter ``einsum_path`` accepts (``...`` labels as unused ones)."""
    mapping = {k: k for k in labels if k in string.ascii_letters}
    spare = iter(c for c in string.ascii_letters if c not in mapping)
    for k in labels:
        if k not in mapping:
            mapping[k] = next(spare)
    return mapping

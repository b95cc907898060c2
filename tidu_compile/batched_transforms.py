"""``vmap`` of the transforms of ``tidu_compile.func``: their batching rules.

The examples of a batch are independent, so a per-example derivative is a derivative of
the batched function (``vmap(f)``, one batched tape node) with a seed per example:

* ``vmap(grad(f), in_axes=(None, 0, 0))(w, X, Y)``: ``w`` broadcast to ``W`` of shape
  ``(B,) + w.shape`` (one copy per example), ``out, vjp_fn = vjp(vmap(f), W, ...)``,
  and ``vjp_fn(ones(B))`` is every example's gradient at once::

      grad_b = d f(W_b, X_b, Y_b) / d W_b = d (sum_b' f(W_b', X_b', Y_b')) / d W_b

  one batched forward node and its VJP node, both compiled (``value_and_grad`` gives
  ``out`` too);
* ``vmap(jacrev(f))``: one VJP of ``vmap(f)`` per output element ``k`` (seed: ``e_k``
  for every example), as jacrev is a vmap of vjp; ``vmap(jacfwd(f))``: one JVP per input
  element; ``vmap(hessian(f))`` is ``vmap(jacfwd(jacrev(f)))``, both rules in turn.

``func`` hands its ``vjp`` and ``jvp`` in (this module sits below it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tidu_compile.batching import Axes, axes_of_leaves, batch_size, flatten, rebuild, vmap
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.tensor import Tensor

__all__ = ["batched_jacobian", "batched_value_and_grad"]

Tree = Any


def _numbers(argnums: int | Sequence[int], count: int) -> tuple[int, ...]:
    numbers = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in numbers:
        if not -count <= n < count:
            raise ValueError(f"vmap: argnums {n} is out of range for {count} arguments")
    return tuple(n % count for n in numbers)


def _batch_first(leaf: Any, axis: int | None, size: int) -> Tensor:
    """``leaf`` with its batch axis first: moved there, or (unmapped) broadcast to
    ``(size, ...)`` (recorded for a tensor an outer transform tracks)."""
    tensor = leaf if isinstance(leaf, Tensor) else Tensor(np.array(leaf, dtype=float))
    if axis is None:
        return FUNCTIONS["broadcast_to"](tensor, (size, *tensor.shape))  # type: ignore[no-any-return]
    return FUNCTIONS["moveaxis"](tensor, axis, 0)  # type: ignore[no-any-return]


def _batched(
    f: Callable[..., Any], args: tuple[Any, ...], numbers: tuple[int, ...],
    in_axes: Axes, axis_size: int | None,
) -> tuple[int, list[Tree], Callable[..., Any]]:  # fmt: skip
    """The batch size, the differentiated arguments batch-first, and ``vmap(f)`` as a
    function of those alone (the other arguments mapped as ``in_axes`` says)."""
    per_argument = list(in_axes) if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
    if len(per_argument) != len(args):
        raise ValueError(f"vmap: in_axes has {len(per_argument)} entries for {len(args)} "
                         "arguments")  # fmt: skip
    size = batch_size(args, tuple(per_argument), axis_size)
    differentiated = []
    for n in numbers:
        axes = axes_of_leaves(per_argument[n], args[n], "in_axes")
        firsts = [_batch_first(leaf, a, size) for leaf, a in zip(flatten(args[n]), axes,
                                                                   strict=True)]  # fmt: skip
        differentiated.append(rebuild(args[n], firsts))
        per_argument[n] = 0

    def batched_f(*diff: Any) -> Any:
        call = list(args)
        for n, value in zip(numbers, diff, strict=True):
            call[n] = value
        return vmap(f, tuple(per_argument), 0, size)(*call)

    return size, differentiated, batched_f


def _at_out_axes(result: Tree, out_axes: Axes) -> Tree:
    """``result`` (every leaf batch-first) with each leaf's batch axis at ``out_axes``."""
    leaves = flatten(result)
    axes = axes_of_leaves(out_axes, result, "out_axes")
    if any(a is None for a in axes):
        raise ValueError("vmap: out_axes None for a per-example derivative (give its axis)")
    return rebuild(result, [leaf if a == 0 else FUNCTIONS["moveaxis"](leaf, 0, a)
                            for leaf, a in zip(leaves, axes, strict=True)])  # fmt: skip


def batched_value_and_grad(
    vjp: Callable[..., Any], f: Callable[..., Any], argnums: int | Sequence[int],
    in_axes: Axes, out_axes: Axes, axis_size: int | None, value: bool = True,
) -> Callable[..., Any]:  # fmt: skip
    """``vmap(value_and_grad(f, argnums))`` (``value=False``: ``vmap(grad(...))``)."""

    def batched(*args: Any) -> Any:
        numbers = _numbers(argnums, len(args))
        size, differentiated, batched_f = _batched(f, args, numbers, in_axes, axis_size)
        out, vjp_fn = vjp(batched_f, *differentiated)
        if not isinstance(out, Tensor) or out.shape != (size,) or out.dtype.kind != "f":
            got = getattr(out, "shape", type(out).__name__)
            raise ValueError(f"vmap(grad(f)): f must return a real scalar per example, got "
                             f"{got} for the batch")  # fmt: skip
        gradients = vjp_fn(Tensor(np.ones(size, dtype=out.dtype)))
        gradient = gradients[0] if isinstance(argnums, int) else tuple(gradients)
        return _at_out_axes((out, gradient) if value else gradient, out_axes)

    return batched


def _stacked(columns: list[Tensor], shape: tuple[int, ...], axis: int) -> Tensor:
    """``columns`` (each ``(B, ...)``) stacked along ``axis`` and reshaped to ``shape``."""
    return FUNCTIONS["reshape"](FUNCTIONS["stack"](columns, axis=axis), shape)  # type: ignore[no-any-return]


def _units(size: int, shape: tuple[int, ...], dtype: np.dtype) -> list[Tensor]:
    """For each element ``k`` of ``shape``, ``e_k`` for every example: ``(size,) + shape``."""
    count = math.prod(shape)
    return [Tensor(np.broadcast_to(np.eye(1, count, k, dtype=dtype).reshape(shape),
                                   (size, *shape)).copy()) for k in range(count)]  # fmt: skip


def batched_jacobian(
    vjp: Callable[..., Any], jvp: Callable[..., Any], f: Callable[..., Any],
    argnums: int | Sequence[int], in_axes: Axes, out_axes: Axes, axis_size: int | None,
    forward: bool,
) -> Callable[..., Any]:  # fmt: skip
    """``vmap(jacrev(f, argnums))``, or ``vmap(jacfwd(...))`` when ``forward``: each
    example's Jacobian blocks, arranged as ``jacrev`` arranges them."""

    def batched(*args: Any) -> Any:
        numbers = _numbers(argnums, len(args))
        size, differentiated, batched_f = _batched(f, args, numbers, in_axes, axis_size)
        xs = [flatten(d) for d in differentiated]
        if forward:
            out = batched_f(*differentiated)
            outs = flatten(out)
            columns: dict[tuple[int, int, int], list[Tensor]] = {}  # (arg, leaf, output)
            for k, leaves in enumerate(xs):
                for j, x in enumerate(leaves):
                    for unit in _units(size, x.shape[1:], x.dtype):
                        tangents = [rebuild(d, [unit if (i, m) == (k, j) else
                                                Tensor(np.zeros(v.shape, v.dtype))
                                                for m, v in enumerate(flatten(d))])
                                    for i, d in enumerate(differentiated)]  # fmt: skip
                        pushed = flatten(jvp(batched_f, tuple(differentiated), tuple(tangents))[1])
                        for o, t in enumerate(pushed):
                            columns.setdefault((k, j, o), []).append(t)
            block = lambda k, j, o: _stacked(  # noqa: E731
                columns[k, j, o], (size, *outs[o].shape[1:], *xs[k][j].shape[1:]), -1)
        else:
            out, vjp_fn = vjp(batched_f, *differentiated)
            outs = flatten(out)
            rows: dict[tuple[int, int, int], list[Tensor]] = {}
            for o, leaf in enumerate(outs):
                for unit in _units(size, leaf.shape[1:], leaf.dtype):
                    seeds = [unit if m == o else Tensor(np.zeros(v.shape, v.dtype))
                             for m, v in enumerate(outs)]  # fmt: skip
                    for k, ct in enumerate(vjp_fn(rebuild(out, seeds))):
                        for j, c in enumerate(flatten(ct)):
                            rows.setdefault((k, j, o), []).append(c)
            block = lambda k, j, o: _stacked(  # noqa: E731
                rows[k, j, o], (size, *outs[o].shape[1:], *xs[k][j].shape[1:]), 1)
        jacobians = tuple(
            rebuild(out, [rebuild(differentiated[k], [block(k, j, o) for j in range(len(xs[k]))])
                          for o in range(len(outs))])
            for k in range(len(numbers))
        )  # fmt: skip
        return _at_out_axes(jacobians[0] if isinstance(argnums, int) else jacobians, out_axes)

    return batched

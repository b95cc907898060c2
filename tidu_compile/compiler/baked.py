"""A compiled plan instantiated for another binding of its shape class.

A representative's plan was read off the code compiled for one binding of the class's
extents (``compiler.generic``). For another binding whose fixed extents agree
(``compiler.store``), the same native kernels serve: only the plan's numbers change.
``instantiate`` maps every extent ``d`` of the representative's binding to the new
binding's value and rewrites

* the buffer types (shapes);
* each kernel step's row count ``extent``, its ``domain_size`` (``extent`` x the fixed
  inner extents) and ``work`` (proportional to the domain);
* the shape fields of library calls (``DotGeneral(lhs_shape=...)``, ``Reshape``, ...),
  checked against the ops' own type rules.

For ``x @ w`` at batch 256 instantiated for batch 33 (``s0``: 256 -> 33)::

    KernelStep(extent=256, domain_size=2560)  ->  KernelStep(extent=33, domain_size=330)
    LibraryStep(DotGeneral(lhs_shape=(256, 64), ...))  ->  DotGeneral(lhs_shape=(33, 64))

Anything it cannot map (an extent outside the binding, a step whose types do not
check) raises ``NotInstantiable``: the program is then compiled for itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tidu_compile.compiler.generic import map_shape_fields
from tidu_compile.compiler.plan import KernelStep, LibraryStep, Plan
from tidu_compile.ops.base import TensorType

__all__ = ["NotInstantiable", "extent_map", "instantiate"]


class NotInstantiable(ValueError):
    """The plan cannot serve the new binding (then the program is compiled)."""


def extent_map(old: Sequence[int], new: Sequence[int]) -> Callable[[int], int]:
    """``d -> new value`` for the extents of binding ``old``; 0 and 1 map to themselves."""
    mapping = dict(zip(old, new, strict=True))

    def dim(extent: int) -> int:
        if extent in (0, 1):
            return extent
        try:
            return mapping[extent]
        except KeyError:
            raise NotInstantiable(f"extent {extent} is not one of the class's") from None

    return dim


def instantiate(plan: Plan, old: Sequence[int], new: Sequence[int]) -> Plan:
    """``plan`` (compiled for binding ``old``) for binding ``new``."""
    if tuple(old) == tuple(new):
        return plan
    dim = extent_map(old, new)
    types = tuple(TensorType(tuple(dim(d) for d in t.shape), t.dtype) for t in plan.types)
    steps: list[KernelStep | LibraryStep] = []
    for step in plan.steps:
        if isinstance(step, KernelStep):
            steps.append(_kernel_step(step, dim))
            continue
        op = map_shape_fields(step.op, dim)
        infer = getattr(op, "infer_types", None)
        expected = tuple(types[o] for o in step.outputs)
        try:
            ok = infer is not None and tuple(infer(*[types[i] for i in step.inputs])) == expected
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise NotInstantiable(f"library call {op!r} does not type-check for {new}")
        steps.append(LibraryStep(op, step.inputs, step.outputs, step.fallback))
    return Plan(plan.arg_count, types, tuple(steps), plan.results)


def _kernel_step(step: KernelStep, dim: Callable[[int], int]) -> KernelStep:
    if not step.extent:  # a kernel on a whole domain: its extents are all fixed
        return step
    extent = dim(step.extent)
    domain_size = step.domain_size // step.extent * extent
    work = step.work * domain_size // step.domain_size if step.domain_size else step.work
    return KernelStep(step.symbol, step.inputs, step.outputs, extent, domain_size,
                      step.partial_outputs, work, step.partial_combiners)  # fmt: skip

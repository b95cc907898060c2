"""The per-node hot path of a compiled plan, as straight-line Python generated per plan.

Every backward call of a compiled node does the same few things: gather its arguments
(cotangent seeds and saved values), check that they have the plan's exact layouts, then
run the steps: allocate each kernel's outputs and call it, or call numpy (contractions,
layout changes) between kernels. Written as loops over per-plan tables this costs about
2 us per node; generated as straight-line code, with the tables' entries bound as
constants, it costs about 1 us (W2's chain of 1000 scalar nodes: 3.3 -> 2.3 ms). For
the node ``x * a`` with 0-d f64 values, ``FastCall.source`` reads (``L0`` is the
layout ``((), (), float64)``, ``K1`` the saved key of ``x``, ``Ab3`` the allocator
of buffer 3)::

    def fast_call(seeds, saved):
        a0 = seeds[0]
        if type(a0) is not ndarray or (a0.shape, a0.strides, a0.dtype) != L0 or (a0.base ...
            return None
        a1 = saved.get(K1)
        if type(a1) is not ndarray or (a1.shape, a1.strides, a1.dtype) != L1 or (a1.base ...
            return None
        a2 = saved.get(K2)
        if type(a2) is not ndarray or (a2.shape, a2.strides, a2.dtype) != L2 or (a2.base ...
            return None
        b3 = Ab3(Sb3, Db3)
        b4 = Ab4(Sb4, Db4)
        RUN0(ptr(a0), ptr(a1), ptr(a2), ptr(b3), ptr(b4))
        return [b4, b3]

A contraction is ``b2, = LIB0(a1, a0)`` (``plan.library_values``: numpy's BLAS into a
recycled output); a kernel worth threads is ``CHUNKS0([...], [...])``
(``parallel.ChunkedKernel``: on all threads or one, whichever has been faster); a
chunked kernel run whole gets its row range ``0, N``; a LAPACK kernel's status is
``check_status(b5, E2)`` right after its call (``plan.check_status``).

``fast_call`` returns None when any argument differs from the plan's layout (the executor
then takes its general path, which finds or compiles the right plan), so it never hands
native code an unchecked buffer. Arrays that own their memory were allocated aligned;
only views need the (slower) alignment flag.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from tidu_compile.compiler import native_plan, parallel
from tidu_compile.compiler.plan import BoundPlan, check_status, library_values, native_copy
from tidu_compile.ops import Reshape

__all__ = ["FastCall", "build_fast_call"]


@dataclass(frozen=True)
class FastCall:
    """``function(seeds, saved) -> results | None`` and its generated ``source``."""

    function: Callable[[Sequence[Any], Mapping[Hashable, Any]], list[Any] | None]
    source: str


def build_fast_call(
    bound: BoundPlan,
    arg_sources: Sequence[tuple[int, Hashable | None]],
    unread: Sequence[tuple[Hashable, tuple[int, ...], np.dtype]] = (),
) -> FastCall:
    """The fast call of ``bound``.

    ``arg_sources`` gives each plan argument as ``(i, None)`` (seed ``i``) or
    ``(-1, key)`` (the saved value ``key``); ``unread`` lists saved inputs the plan does
    not read but whose ``(key, shape, dtype)`` must still match.
    """
    constants: dict[str, Any] = {"ndarray": np.ndarray, "ptr": bound.to_argument,
                                 "check_status": check_status}  # fmt: skip
    lines = ["def fast_call(seeds, saved):"]
    for index, ((seed, key), layout) in enumerate(zip(arg_sources, bound.arg_layouts, strict=True)):
        value = f"a{index}"
        if key is None:
            lines.append(f"    {value} = seeds[{seed}]")
        else:
            constants[f"K{index}"] = key
            lines.append(f"    {value} = saved.get(K{index})")
        constants[f"L{index}"] = layout
        lines.append(
            f"    if type({value}) is not ndarray or ({value}.shape, {value}.strides, "
            f"{value}.dtype) != L{index} or ({value}.base is not None and not "
            f"{value}.flags.aligned):"
        )
        lines.append("        return None")
    for index, (key, shape, dtype) in enumerate(unread):
        value = f"u{index}"
        constants[f"U{index}"] = key
        constants[f"UL{index}"] = (shape, dtype)
        lines.append(f"    {value} = saved.get(U{index})")
        lines.append(
            f"    if type({value}) is not ndarray or ({value}.shape, {value}.dtype) != UL{index}:"
        )
        lines.append("        return None")
    lines += _promotion_lines(bound, len(arg_sources), constants)
    names = [f"a{i}" for i in range(len(arg_sources))]
    names += [f"b{i}" for i in range(len(arg_sources), len(bound.plan.types))]
    for index, array in bound.constants.items():  # kernels' %params: bound once
        names[index] = f"C{index}"
        constants[f"C{index}"] = array
    for number, step in enumerate(bound.steps):
        lines += _step_lines(number, step, names, constants, bound)
    results = ["None" if r is None else names[r] for r in bound.plan.results]
    lines.append(f"    return [{', '.join(results)}]")
    source = "\n".join(lines) + "\n"
    namespace = dict(constants)
    exec(compile(source, "<tidu_compile fast_call>", "exec"), namespace)  # noqa: S102
    return FastCall(namespace["fast_call"], source)


def _promotion_lines(bound: BoundPlan, arg_count: int, constants: dict[str, Any]) -> list[str]:
    """For a plan a driver may run (``native_plan.may_promote``): once its checked
    arguments are at hand, the driver's call when it exists, else a count of the calls,
    which compiles the driver on the ``PROMOTE_AFTER``-th::

        if NATIVE[0] is not None:
            return NATIVE[0](a0, a1, a2)
        if CALLS() == PROMOTE_AFTER:
            PROMOTE()
    """
    if not native_plan.may_promote(bound):
        return []
    native: list[Any] = [None]
    constants.update({"NATIVE": native, "CALLS": itertools.count(1).__next__,
                      "PROMOTE_AFTER": native_plan.PROMOTE_AFTER,
                      "PROMOTE": partial(native_plan.promote, bound, native)})  # fmt: skip
    arguments = ", ".join(f"a{i}" for i in range(arg_count))
    return ["    if NATIVE[0] is not None:", f"        return NATIVE[0]({arguments})",
            "    if CALLS() == PROMOTE_AFTER:", "        PROMOTE()"]  # fmt: skip


def _step_lines(
    number: int, step: Any, names: list[str], constants: dict[str, Any], bound: BoundPlan
) -> list[str]:
    """The lines of one step; its runner and output specs become constants."""
    inputs = [names[i] for i in step.inputs]
    outputs = [names[o] for o in step.outputs]
    if step.kernel is None:
        inline = (_contraction_lines(number, step, inputs, outputs, constants, bound)
                  or _reshape_lines(step, inputs, outputs, constants, bound))  # fmt: skip
        if inline:
            return inline
        # another library call (numpy): the checked helper does it all
        constants[f"LIB{number}"] = partial(library_values, step.runner, step.specs)
        return [f"    {', '.join(outputs)}, = LIB{number}({', '.join(inputs)})"]
    lines = []
    for output, (shape, dtype, allocate) in zip(outputs, step.specs, strict=True):
        constants.update({f"A{output}": allocate, f"S{output}": shape, f"D{output}": dtype})
        lines.append(f"    {output} = A{output}(S{output}, D{output})")
    kernel = step.kernel
    constants[f"RUN{number}"] = step.runner
    if kernel.extent and kernel.work >= parallel.PARALLEL_WORK:  # worth threads
        constants[f"CHUNKS{number}"] = bound.chunked[kernel.symbol]
        lines.append(f"    CHUNKS{number}([{', '.join(inputs)}], [{', '.join(outputs)}])")
        return lines
    pointers = [f"ptr({name})" for name in inputs + outputs]
    if kernel.extent:
        pointers += ["0", str(kernel.extent)]  # the whole row range
    lines.append(f"    RUN{number}({', '.join(pointers)})")
    if kernel.status_error:  # a LAPACK kernel: its info word, checked
        constants[f"E{number}"] = kernel.status_error
        lines.append(f"    check_status({outputs[kernel.status_output]}, E{number})")
    return lines


def _contraction_lines(
    number: int, step: Any, inputs: list[str], outputs: list[str], constants: dict[str, Any],
    bound: BoundPlan,
) -> list[str]:  # fmt: skip
    """A ``DotGeneral`` of one dtype inline: its operands viewed as ``DotGeneral.evaluate_into``
    views them (``matmul_views``), numpy's matmul into the allocated output::

        b7 = A7(S7, D7)
        MM3(a1.reshape(LV3), b5.transpose(RO3).reshape(RV3), out=b7.reshape(OV3))

    (``library_values`` costs three Python calls more per contraction; a GRU step has
    200.) Empty for any other step, or mixed dtypes: those take ``library_values``."""
    views = getattr(step.runner, "matmul_views", None)
    (output,) = outputs if len(outputs) == 1 else (None,)
    dtypes = {bound.dtype_of(i) for i in (*step.inputs, *step.outputs)}
    if views is None or output is None or len(dtypes) != 1 or len(inputs) != 2:
        return []
    shape, dtype, allocate = step.specs[0]
    constants.update({f"A{output}": allocate, f"S{output}": shape, f"D{output}": dtype,
                      f"MM{number}": np.multiply if views.outer else np.matmul,
                      f"LV{number}": views.lhs_view, f"RV{number}": views.rhs_view,
                      f"OV{number}": views.out_view, f"LO{number}": views.lhs_order,
                      f"RO{number}": views.rhs_order})  # fmt: skip
    lhs, rhs = inputs
    if views.lhs_order is not None:
        lhs = f"{lhs}.transpose(LO{number})"
    if views.rhs_order is not None:
        rhs = f"{rhs}.transpose(RO{number})"
    return [f"    {output} = A{output}(S{output}, D{output})",
            f"    MM{number}({lhs}.reshape(LV{number}), {rhs}.reshape(RV{number}), "
            f"out={output}.reshape(OV{number}))"]  # fmt: skip


def _reshape_lines(
    step: Any, inputs: list[str], outputs: list[str], constants: dict[str, Any],
    bound: BoundPlan,
) -> list[str]:  # fmt: skip
    """A ``Reshape`` inline: a view of its operand, copied only if not C-contiguous
    (``library_values``' rule; the plan's buffers are, so it is a view)::

        b6 = a2.reshape(S6)
        if not b6.flags.c_contiguous:
            b6 = COPY(b6, D6)
    """
    if not isinstance(step.runner, Reshape) or len(outputs) != 1:
        return []
    (output,), (source,) = outputs, inputs
    shape, dtype, _ = step.specs[0]
    if bound.dtype_of(step.inputs[0]) != dtype:
        return []
    constants.update({f"S{output}": shape, f"D{output}": dtype, "COPY": native_copy})
    return [f"    {output} = {source}.reshape(S{output})",
            f"    if not {output}.flags.c_contiguous:",
            f"        {output} = COPY({output}, D{output})"]  # fmt: skip

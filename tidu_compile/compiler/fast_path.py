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

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from tidu_compile.compiler import parallel
from tidu_compile.compiler.plan import BoundPlan, check_status, library_values

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


def _step_lines(
    number: int, step: Any, names: list[str], constants: dict[str, Any], bound: BoundPlan
) -> list[str]:
    """The lines of one step; its runner and output specs become constants."""
    inputs = [names[i] for i in step.inputs]
    outputs = [names[o] for o in step.outputs]
    if step.kernel is None:  # a library call (numpy): the checked helper does it all
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

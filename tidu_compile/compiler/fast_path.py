"""The per-node hot path of a compiled plan, as straight-line Python generated per plan.

Every backward call of a compiled node does the same few things: gather its arguments
(cotangent seeds and saved values), check that they have the plan's exact layouts, allocate
the outputs and call the kernel. Written as loops over per-plan tables this costs about
2 us per node; generated as straight-line code, with the tables' entries bound as
constants, it costs about 1 us (W2's chain of 1000 scalar nodes: 3.3 -> 2.3 ms). For
the node ``x * a`` with 0-d f64 values, ``FastCall.source`` reads (``L0`` is the
layout ``((), (), float64)``, ``K1`` the saved key of ``x``, ``A0`` the allocator)::

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
        o0 = A0(S0, D0)
        o1 = A1(S1, D1)
        RUN(ptr(a0), ptr(a1), ptr(a2), ptr(o0), ptr(o1))
        return [o1, o0]

``fast_call`` returns None when any argument differs from the plan's layout (the executor
then takes its general path, which finds or compiles the right plan), so it never hands
native code an unchecked buffer. Arrays that own their memory were allocated aligned;
only views need the (slower) alignment flag.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile.compiler.plan import BoundPlan

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
) -> FastCall | None:
    """The fast call of a plan with at most one (unthreaded) kernel, else None.

    ``arg_sources`` gives each plan argument as ``(i, None)`` (seed ``i``) or
    ``(-1, key)`` (the saved value ``key``); ``unread`` lists saved inputs the plan does
    not read but whose ``(key, shape, dtype)`` must still match.
    """
    single = bound.single_step()
    if single is None:
        return None
    constants: dict[str, Any] = {"ndarray": np.ndarray, "ptr": bound.to_argument}
    lines = ["def fast_call(seeds, saved):"]
    for index, ((seed, key), layout) in enumerate(
        zip(arg_sources, bound.arg_layouts, strict=True)
    ):
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
        constants[f"U{index}"] = key
        constants[f"UL{index}"] = (shape, dtype)
        lines.append(f"    u{index} = saved.get(U{index})")
        unread_value = f"u{index}"
        lines.append(
            f"    if type({unread_value}) is not ndarray or "
            f"({unread_value}.shape, {unread_value}.dtype) != UL{index}:"
        )
        lines.append("        return None")
    buffers = [f"a{i}" for i in range(len(arg_sources))]
    if single.runner is not None:
        for index, (shape, dtype, allocate) in enumerate(single.output_specs):
            constants.update({f"A{index}": allocate, f"S{index}": shape, f"D{index}": dtype})
            lines.append(f"    o{index} = A{index}(S{index}, D{index})")
            buffers.append(f"o{index}")
        constants["RUN"] = single.runner
        pointers = [f"ptr({buffers[i]})" for i in single.inputs]
        pointers += [f"ptr(o{i})" for i in range(len(single.output_specs))]
        pointers += [str(row) for row in single.rows]
        lines.append(f"    RUN({', '.join(pointers)})")
    results = ["None" if r is None else buffers[r] for r in single.results]
    lines.append(f"    return [{', '.join(results)}]")
    source = "\n".join(lines) + "\n"
    namespace = dict(constants)
    exec(compile(source, "<tidu_compile fast_call>", "exec"), namespace)  # noqa: S102
    return FastCall(namespace["fast_call"], source)

"""The caller's type errors, caught before compiling a node for a new signature.

A seed of the wrong shape or dtype, or saved data that does not type-check, must be
the caller's ``ValueError``/``TypeError`` naming the value, not a failed compile (nor a
silently wrong result). ``type_problem`` runs once per new signature of a node.
"""

from __future__ import annotations

from typing import Any

from tidu_compile.compiler.program import UnsupportedNode, infer_output_types
from tidu_compile.ops.base import TensorType

__all__ = ["type_problem"]


def type_problem(
    entry: Any,
    seed_types: tuple[TensorType, ...],
    saved_types: tuple[TensorType | None, ...],
) -> Exception | None:
    """An error naming the first cotangent or saved value whose type is wrong, else None.

    Checked once per new signature, before compiling: a seed of the wrong shape or dtype
    must be the caller's error, not a failed compile (nor a silently wrong result).
    """
    recorded = entry.recorded
    inputs = saved_types[: len(recorded.input_keys)]
    if any(t is None for t in inputs):
        return None  # compiling reports the missing values the program needs
    try:
        outputs = infer_output_types(recorded, inputs)  # type: ignore[arg-type]
    except UnsupportedNode:
        return None
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        return kind(f"saved data of {recorded!r} does not type-check: {error}")
    for slot, (saved, expected) in enumerate(
        zip(saved_types[len(inputs) : len(inputs) + len(outputs)], outputs, strict=True)
    ):
        if saved is not None and saved != expected:
            return ValueError(f"saved data: output {slot} of {recorded!r} is {saved}, "
                              f"expected {expected}")  # fmt: skip
    active_slots: tuple[int, ...] = entry.key[1]  # type: ignore[index]
    slots = [s for s, t in zip(active_slots, entry.linear.tangent_outputs, strict=True)
             if t is not None]  # fmt: skip
    for index, (slot, got) in enumerate(zip(slots, seed_types, strict=True)):
        expected = outputs[slot]
        if got != expected:
            mismatch = ValueError if got.shape != expected.shape else TypeError
            return mismatch(
                f"cotangent_out[{index}]: the cotangent of output {slot} of {recorded!r} "
                f"is {got}, expected {expected}"
            )
    return None

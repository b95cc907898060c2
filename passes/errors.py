"""Errors raised by the lowering passes.

A lowering pass that meets an op it cannot convert, or an op it should have
converted but did not, raises :class:`LoweringError` naming the op and the pass,
never silently leaving an illegal op behind::

    LoweringError: convert-arith-to-llvm: cannot lower 'arith.floordivsi': no rule
"""

from __future__ import annotations

from xdsl.utils.exceptions import PassFailedException


class LoweringError(PassFailedException, ValueError):
    """An op could not be lowered by a pass.

    ``pass_name`` and ``op_name`` are kept as attributes so callers (a CLI, a
    test) can inspect them without parsing the message. A ``PassFailedException``
    (xDSL's pass diagnostic): ``xdsl-opt --verify-diagnostics`` prints its message.
    """

    def __init__(self, pass_name: str, op_name: str, reason: str = "no rule") -> None:
        self.pass_name = pass_name
        self.op_name = op_name
        self.reason = reason
        super().__init__(f"{pass_name}: cannot lower '{op_name}': {reason}")


class IllegalIRError(ValueError):
    """IR that should be fully lowered still holds illegal ops or types.

    ``counts`` maps each offending op name (or ``"index-typed value"``) to how
    often it occurs.
    """

    def __init__(self, stage: str, counts: dict[str, int]) -> None:
        self.stage = stage
        self.counts = dict(counts)
        listed = ", ".join(f"{name} x{n}" for name, n in sorted(counts.items()))
        super().__init__(f"{stage}: IR is not legal LLVM dialect; left over: {listed}")

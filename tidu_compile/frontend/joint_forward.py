"""The joint forward: a ``@tc.function`` call recording a scalar loss computes its gradient
with it, in one program.

``loss = f(params); loss.backward()`` on the tape's general path runs two programs: the
traced forward (the loss and what the tape keeps), then, in ``backward``, the node's
backward program, which reads the inputs again and recomputes the forward's elementwise
values. The loss's cotangent is a scalar ``c`` and the node's backward is linear in it:
the input cotangents are ``c * g`` for the gradient ``g`` at ``c = 1``. So when the
current executor asks for it (``joint_forward``: a ``CompiledExecutor``), the call runs
``func.value_and_grad``'s fused program (``joint_program``: ``compiler.fused_grad``)::

    inputs x, y                      (x requires grad, y does not)
    forward ops      -> loss
    backward at c=1  -> gx
    outputs (loss, gx)

records the node with its inputs and output as saved values, and attaches
``JointGradients`` (``Trace.precomputed``): ``backward`` on the same executor hands it
``c`` and gets ``c * gx`` (``gx`` itself when ``c == 1``) without linearizing the node.
It hands them out once. The general path through the node (a second backward with
``retain_graph=True``, a backward on another executor such as ``tc.grad(loss,
executor=...)`` or the dump's recording one, a backward that records its work:
``create_graph=True``, ``func`` transforms) first asks it to ``fill`` the values the
general path's forward would have kept (contraction results, integer results): the
trace's forward program computes them then, from the saved inputs (whose versions the
tape checks first), on the executor of the call.

Every recording call of such a trace is joint, the first (tracing) one too: it compiles
one program, as ``func.value_and_grad``'s first call does, and every call's values come
from that one program (``frontend.composite_forward``'s rule). A loss evaluated without
``backward`` computes its gradient anyway: evaluate under ``tc.no_grad()`` (the
function then runs eagerly, recording nothing). Not joint: several outputs, a complex
or non-scalar output, an index computed from float data (the forward then replays with
numpy), or an executor without ``joint_forward`` (the ``ReferenceExecutor``: the oracle
of the tests keeps the general path).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tidu_compile.collections_pause import fewer_collections
from tidu_compile.eager import BackwardExecutor, RecordedGraph, Trace
from tidu_compile.frontend.composite_forward import UNBUILT, ForwardPlan
from tidu_compile.frontend.state import get_default_executor
from tidu_compile.frontend.tensor import Tensor
from tidu_compile.graph import ValueKey
from tidu_compile.ops import type_of

__all__ = ["JointGradients", "JointState", "record_jointly"]

#: ``record(values by local id)``: the call's output tensors, recorded with none of the
#: values the general path keeps.
Record = Callable[[list[Any]], list[Tensor]]


@dataclass
class JointState:
    """A trace's joint program (``compiler.fused_grad.FusedGrad``): ``UNBUILT`` until its
    first recording call on an executor with ``joint_forward``, None when it has none."""

    program: Any = UNBUILT


class JointGradients:
    """``Trace.precomputed`` of a node recorded by ``record_jointly``: the gradients at
    cotangent 1 by input position (None: no gradient), handed out once, to the executor
    that computed them; and how to ``fill`` in the values the general path keeps."""

    __slots__ = ("executor", "gradients", "_plan", "_data", "_kept")

    def __init__(self, gradients: list[Any], executor: BackwardExecutor, plan: ForwardPlan,
                 data: list[Any], kept: Sequence[tuple[ValueKey, int]]) -> None:  # fmt: skip
        self.gradients: list[Any] | None = gradients
        self.executor = executor
        self._plan, self._data, self._kept = plan, data, kept

    def cotangents(self, cts: Sequence[Any], executor: BackwardExecutor) -> list[Any] | None:
        """``c * g`` for each gradient ``g`` and the one output cotangent ``c``; None
        (``backward`` runs the transposed map) for another executor or once handed out."""
        if executor is not self.executor or len(cts) != 1:
            return None
        gradients, self.gradients = self.gradients, None
        if gradients is None:
            return None
        (ct,) = cts
        if np.ndim(ct) == 0 and ct == 1:
            return gradients
        return [None if g is None else np.asarray(g * ct, dtype=g.dtype) for g in gradients]

    def fill(self, node: Trace) -> None:
        """Add the values the general path keeps to ``node.saved_values`` (once), computed
        by the trace's forward program on the call's executor from the call's inputs."""
        if self._kept:
            values = self._plan.run(self.executor, self._data)
            node.saved_values.update({key: values[i] for key, i in self._kept})
            self._kept = ()


def record_jointly(
    recorded: RecordedGraph,
    plan: ForwardPlan | None,
    state: JointState,
    inputs: Sequence[Tensor],
    data: list[Any],
    kept: Sequence[tuple[ValueKey, int]],
    record: Record,
) -> list[Tensor] | None:
    """The output tensors of a recording call (``inputs``: its argument tensors;
    ``data``: their arrays, then the trace's constants) of the trace of ``recorded``,
    recorded by ``record`` with the joint program's loss; ``kept``: the ``(key, local
    id)`` pairs the general path keeps, for ``JointGradients.fill``; ``state``: the
    trace's. None: not joint (the caller takes the general path)."""
    executor = get_default_executor()
    program = state.program
    if (
        program is None or plan is None or not plan.checkable
        or not getattr(executor, "joint_forward", False)
    ):  # fmt: skip
        return None
    if program is UNBUILT:
        needed = tuple(t._requires_grad for t in inputs)
        needed += (False,) * (len(data) - len(needed))
        with fewer_collections():  # a first call: the graphs are many young objects
            program = state.program = executor.joint_program(
                recorded, tuple(type_of(x) for x in data), needed
            )
        if program is None:
            return None
    values = plan.check_indices(data)  # numpy's IndexError first
    results = executor.run_graph(program.recorded, data)
    values[recorded.graph.outputs[0]] = np.asarray(results[0])
    gradients: list[Any] = [None] * len(data)
    for position, gradient in zip(program.with_gradient, results[1:], strict=True):
        gradients[position] = np.asarray(gradient)
    outputs = record(values)
    trace = outputs[0]._trace
    if trace is not None:
        trace.precomputed = JointGradients(gradients, executor, plan, data, kept)
    stats = getattr(executor, "stats", None)
    if stats is not None:
        stats.joint_runs += 1
    return outputs

"""Ties in the op table (``op_cases.tie_twins``, ``ties.py``), on both executors.

* Every selection (maximum, minimum, fmax, fmin, reduce_max and reduce_min over each
  axis, ...) shares a result's cotangent equally among its ``k`` tied candidates (JAX's
  ``1/k``), computed by the reference executor and by native code;
* every index op (argmax, argmin, argsort) names numpy's tied element (the first; the
  stable order), evaluated and compiled as a forward program;
* the tied twins cover every such op class and every case of it that can tie.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from helpers import random_array
from op_cases import CASES, Case
from ties import can_tie, has_ties, is_index_op, is_selection, shared_gradient

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.eager import RecordedGraph
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend.tensor import apply_op
from tidu_compile.ops import type_of

TIE_CASES = [c for c in CASES if c.ties]
EXECUTORS = ("reference", "compiled")


def _rng(case: Case, salt: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(case.id.encode()), salt])


def _tie_sensitive(case: Case) -> bool:
    return is_selection(case.op) or is_index_op(case.op, case.inputs(_rng(case, 0)))


def test_every_selection_and_index_op_has_tie_cases() -> None:
    untied = [c for c in CASES if not c.ties and len(c.args) <= 2
              and all(a.dtype in ops.FLOAT_DTYPES for a in c.args)]  # fmt: skip
    sensitive = [c for c in untied if _tie_sensitive(c)]
    found = {type(c.op) for c in sensitive}
    assert found >= {ops.Maximum, ops.Minimum, ops.Fmax, ops.Fmin, ops.ReduceMax, ops.ReduceMin,
                     ops.Argmax, ops.Argmin, ops.Argsort}  # fmt: skip
    assert not found & {ops.Add, ops.ReduceSum, ops.ReduceProd, ops.Mod, ops.Gather}
    twins = {(c.name.removesuffix("_ties"), c.op, c.args) for c in TIE_CASES}
    for case in sensitive:
        if can_tie(case.op, [a.shape for a in case.args]):
            assert (case.name, case.op, case.args) in twins, f"{case.id}: no tied twin"
    assert len(twins) == len(TIE_CASES)
    for name in ("ReduceMax", "ReduceMin"):  # every single axis of a 3-d operand, both
        for shape in ((2, 3, 4), (3, 3, 3)):  # at distinct and at equal extents
            axes = {c.op.axes for c in TIE_CASES  # type: ignore[attr-defined]
                    if type(c.op).__name__ == name and c.args[0].shape == shape}  # fmt: skip
            assert axes >= {(0,), (1,), (2,)}, (name, shape, axes)


@pytest.mark.parametrize("case", TIE_CASES, ids=lambda c: c.id)
def test_tied_inputs_have_ties(case: Case) -> None:
    assert has_ties(case.op, case.inputs(_rng(case, 1)))


def _executor(name: str, request: pytest.FixtureRequest) -> tc.BackwardExecutor:
    if name == "compiled":
        executor = request.getfixturevalue("compiled")
        assert isinstance(executor, CompiledExecutor)
        return executor
    return tc.ReferenceExecutor()


SELECTION_PARAMS = [pytest.param(c, e, id=f"{c.id}-{e}") for c in TIE_CASES
                    if c.differentiable for e in EXECUTORS]  # fmt: skip


@pytest.mark.parametrize("case, executor_name", SELECTION_PARAMS)
def test_tied_candidates_share_the_cotangent(
    case: Case, executor_name: str, request: pytest.FixtureRequest
) -> None:
    executor = _executor(executor_name, request)
    rng = _rng(case, 2)
    xs = case.inputs(rng)
    assert has_ties(case.op, xs), case.id
    (out_type,) = case.op.infer_types(*(type_of(x) for x in xs))
    w = random_array(rng, out_type.shape, out_type.dtype)
    tensors = [tc.tensor(x, requires_grad=True) for x in xs]
    (out,) = apply_op(case.op, tensors)
    np.testing.assert_array_equal(out.numpy(), case.op.evaluate(*xs)[0])
    fallbacks = executor.stats.fallbacks if isinstance(executor, CompiledExecutor) else 0
    grads = tc.grad(tc.sum(out * w), tensors, executor=executor)
    if isinstance(executor, CompiledExecutor):
        assert executor.stats.fallbacks == fallbacks, f"{case.id}: ran on the reference path"
    tol = 1e-6 if out_type.dtype == "float32" else 1e-15
    wants = shared_gradient(case.op, xs, w)
    for i, (x, g, want) in enumerate(zip(xs, grads, wants, strict=True)):
        assert g is not None and g.dtype == x.dtype and g.shape == x.shape, (case.id, i)
        np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=f"{case.id}: input {i}")


INDEX_CASES = [c for c in TIE_CASES if not c.differentiable]


@pytest.mark.parametrize("case", INDEX_CASES, ids=lambda c: c.id)
def test_index_ops_name_numpys_tied_element(case: Case, compiled: CompiledExecutor) -> None:
    """``evaluate`` is numpy's call (``test_op_autodiff``'s value test checks it against
    numpy for the tied twins too); native code must name the same elements."""
    xs = case.inputs(_rng(case, 3))
    assert has_ties(case.op, xs), case.id
    (want,) = case.op.evaluate(*xs)
    recorded = RecordedGraph.from_primitive(case.op, ["x"])
    fallbacks = compiled.stats.fallbacks
    (got,) = compiled.run_graph(recorded, xs)
    assert compiled.stats.fallbacks == fallbacks, f"{case.id}: ran on the reference path"
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_array_equal(got, want, err_msg=case.id)

"""Table-driven AD checks of every standard op (cf. JAX's ``lax_autodiff_test``).

For each case of ``op_cases.CASES`` (distinct extents, and square or repeated ones):

* the type rule agrees with ``evaluate`` (shapes and dtypes);
* adjoint (dot-product) test: ``Re<J v, u> == Re<v, J^T u>`` where ``J v`` is the
  linearized graph evaluated on random tangents and ``J^T u`` comes from the executor's
  ``run_transposed_linear``;
* ``tidu_compile.grad`` of ``L = Re(sum(conj(w) * op(x...)))`` matches central finite
  differences (computed in double precision); at ties, JAX's shared gradient instead
  (``test_op_ties.py``).

The last two run on the reference executor, and for the cases with equal extents on
the compiled one too (whose every backward node must run a compiled plan): a wrong JVP
or transpose rule is shared by both executors, so comparing them with each other
(``tests/compiler``) cannot find it; only these mathematical checks can. The
cotangents ``u`` and weights ``w`` are random, never uniform: a uniform cotangent
cannot tell which axis a transpose broadcasts along.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from helpers import (
    adjoint_tolerance,
    assert_grad_close,
    central_difference_grad,
    grad_tolerance,
    random_array,
    real_inner,
    widen_dtype,
)
from helpers.pending import never_compiling_executor
from op_cases import (
    CASES,
    DIFFERENTIABLE_CASES,
    NON_DIFFERENTIABLE_CASES,
    Case,
    has_equal_extents,
    params,
    wide_op,
)

import tidu_compile as tc
from tidu_compile import (
    Linearized,
    Local,
    Name,
    PrimitiveGraph,
    RecordedGraph,
    ReferenceExecutor,
    linearize,
    ops,
    resolve,
)
from tidu_compile.ad import fresh_pass_id
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.executors.reference import EvaluatingBuilder
from tidu_compile.frontend.tensor import apply_op
from tidu_compile.graph import External
from tidu_compile.ops import type_of


def _rng(case: Case, salt: int = 0) -> np.random.Generator:
    """A generator seeded from the case id (stable across processes)."""
    return np.random.default_rng([zlib.crc32(case.id.encode()), salt])


def _evaluate(op: Any, xs: list[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(y) for y in op.evaluate(*xs)]


EXECUTORS = ("reference", "compiled", "pending")
#: Pending nodes run their programs by numpy (``compiler.interpret``): this module's one.
_PENDING = never_compiling_executor()


def _executors_for(case: Case) -> tuple[str, ...]:
    """Every case on the reference executor; on the compiled one, and pending (its
    program by numpy, as while a worker compiles it), too where two extents are equal
    (the compiled executor meets every case in ``tests/compiler`` against the
    reference, which catches its own bugs; these catch the ones it shares)."""
    return EXECUTORS if has_equal_extents(case) else EXECUTORS[:1]


def _executor(name: str, request: pytest.FixtureRequest) -> tc.BackwardExecutor:
    """The reference executor, the session's compiled one (``tests/conftest.py``), or
    one whose programs stay pending (``helpers.pending``)."""
    if name == "compiled":
        executor = request.getfixturevalue("compiled")
        assert isinstance(executor, CompiledExecutor)
        return executor
    if name == "pending":
        return _PENDING
    return ReferenceExecutor()


class _NodeCounter(ReferenceExecutor):
    """A reference executor that counts the backward nodes it runs."""

    nodes = 0

    def run_transposed_linear(self, linear, cotangent_out, external_data, ctx):  # type: ignore[no-untyped-def]
        self.nodes += 1
        return super().run_transposed_linear(linear, cotangent_out, external_data, ctx)


@contextmanager
def _runs_natively(executor: tc.BackwardExecutor, nodes: int, what: str) -> Iterator[None]:
    """For a compiled executor: each of the block's ``nodes`` backward nodes ran a
    compiled plan (compiled now, a cache hit, or native code of its shape class), or the
    block ran the tape's captured whole-backward program; none went to the reference path."""
    if not isinstance(executor, CompiledExecutor) or executor is _PENDING:
        yield
        return
    stats = executor.stats

    def native_runs() -> int:
        return stats.compiles + stats.memory_hits + stats.disk_hits + stats.generic_hits

    before, captured, fallbacks = native_runs(), stats.captured_runs, stats.fallbacks
    yield
    if stats.captured_runs > captured:  # the tape as one captured program (a structure
        # the session's executor met before: executors.capture), native as a whole
        assert stats.fallbacks == fallbacks, f"{what}: the captured program fell back"
        return
    runs = native_runs() - before
    assert runs == nodes, f"{what}: {runs} compiled runs for {nodes} backward nodes"


# --------------------------------------------------------------------------- jvp / vjp


def _linearize(
    case: Case, xs: list[np.ndarray], slots: list[int], executor: CompiledExecutor | None = None
) -> tuple[RecordedGraph, Any, Any, dict[Any, np.ndarray]]:
    """Linearize the one-op recorded graph (with ``executor``'s own linearization when
    given: a compiled executor runs only the linear graphs it made); returns (graph,
    linear, residual data of the reference executor, saved data)."""
    graph = RecordedGraph.from_primitive(case.op, [Name(f"x{i}") for i in range(len(xs))])
    if executor is None:
        linear = graph.linearize(slots)
    else:
        linear = executor.linearize_recorded_graph(graph, slots, None)
    ys = _evaluate(case.op, xs)
    saved = dict(zip(graph.input_value_keys, xs, strict=True))
    saved.update(zip(graph.output_keys, ys, strict=True))
    residuals = ReferenceExecutor().execute_forward(PrimitiveGraph(linear.graph), saved)
    return graph, linear, residuals, saved


def _jvp(linear, residuals, tangents: list[np.ndarray | None]) -> list[np.ndarray | None]:
    """Evaluate the linear (JVP) graph on ``tangents`` with an ``EvaluatingBuilder``.

    Residual (``Primary``) ops are not re-evaluated here: their values must come from
    ``execute_forward``, exactly as for the transpose.
    """
    graph = linear.graph
    builder = EvaluatingBuilder(residuals)
    local_to_builder: dict[int, int] = {}
    for (_, local_id), v in zip(linear.tangent_inputs, tangents, strict=True):
        if v is not None:
            local_to_builder[local_id] = builder.add_value(v)

    def ref(r):
        if isinstance(r, Local):
            if r.id in local_to_builder:
                return local_to_builder[r.id]
            return External(graph.values[r.id].key)
        return r

    for node in graph.operations:
        if not isinstance(node.role, Linearized):
            continue
        ids = builder.add_primitive(node.operation, [ref(r) for r in node.inputs], node.role)
        local_to_builder.update(zip(node.outputs, ids, strict=True))
    return [
        None if t is None else builder.values[local_to_builder[t]] for t in linear.tangent_outputs
    ]


def _slot_choices(case: Case) -> list[list[int]]:
    """All output slots, and each alone but those whose derivative is zero everywhere
    (``locally_constant_outputs``: slogdet's sign), which alone test nothing."""
    n = case.op.output_count
    every = [list(range(n))]
    if n > 1:
        constant = getattr(case.op, "locally_constant_outputs", ())
        every += [[s] for s in range(n) if s not in constant]
    return every


ADJOINT_PARAMS = [
    pytest.param(c, slots, executor, id=f"{c.id}-slots{''.join(map(str, slots))}-{executor}")
    for c in CASES
    for slots in _slot_choices(c)
    for executor in _executors_for(c)
    if not c.exact and (executor == "reference" or c.differentiable)
]


def test_type_rule_matches_evaluate_for_every_case() -> None:
    for case in CASES:
        xs = case.inputs(_rng(case))
        expected = case.op.infer_types(*(type_of(x) for x in xs))
        ys = _evaluate(case.op, xs)
        assert len(ys) == case.op.output_count == len(expected), case.id
        for y, t in zip(ys, expected, strict=True):
            assert type_of(y) == t, f"{case.id}: evaluate gave {type_of(y)}, type rule {t}"


@pytest.mark.parametrize("case, slots, executor_name", ADJOINT_PARAMS)
def test_adjoint(
    case: Case, slots: list[int], executor_name: str, request: pytest.FixtureRequest
) -> None:
    executor = _executor(executor_name, request)
    rng = _rng(case, 1)
    xs = case.inputs(rng)
    compiled = isinstance(executor, CompiledExecutor)
    _, linear, residuals, saved = _linearize(case, xs, slots, executor if compiled else None)
    assert len(linear.tangent_inputs) == len(xs)
    assert len(linear.tangent_outputs) == len(slots)

    out_types = case.op.infer_types(*(type_of(x) for x in xs))
    v = [random_array(rng, x.shape, x.dtype) if x.dtype.kind in "fc" else None for x in xs]
    jv = _jvp(linear, residuals, v)

    if not case.differentiable:
        assert all(t is None for t in jv), f"{case.id}: non-differentiable op has a tangent"
        return
    assert all(t is not None for t in jv), f"{case.id}: missing tangent output"
    u = [random_array(rng, out_types[s].shape, out_types[s].dtype) for s in slots]
    for s, t in zip(slots, jv, strict=True):
        assert type_of(t) == out_types[s], f"{case.id}: tangent of slot {s} has {type_of(t)}"

    data = executor.execute_forward(PrimitiveGraph(linear.graph), saved)
    runs = _PENDING.stats.background_runs
    with _runs_natively(executor, 1, case.id):
        ct = executor.run_transposed_linear(linear, u, data, None)
    if executor is _PENDING:  # its program ran by numpy, not the reference path
        assert _PENDING.stats.background_runs == runs + 1, f"{case.id}: not run pending"
    assert len(ct) == len(xs)
    for x, c, vi in zip(xs, ct, v, strict=True):
        if vi is None:
            assert c is None, f"{case.id}: cotangent for a non-differentiable input"
        else:
            assert c is not None, f"{case.id}: missing cotangent"
            assert type_of(c) == type_of(x), f"{case.id}: cotangent {type_of(c)} for {type_of(x)}"

    lhs = sum(real_inner(a, b) for a, b in zip(jv, u, strict=True))
    rhs = sum(real_inner(a, b) for a, b in zip(v, ct, strict=True) if a is not None)
    scale = sum(np.linalg.norm(a) * np.linalg.norm(b) for a, b in zip(jv, u, strict=True))
    scale += sum(np.linalg.norm(a) * np.linalg.norm(b) for a, b in zip(v, ct, strict=True)
                 if a is not None)  # fmt: skip
    tol = adjoint_tolerance(*(x.dtype for x in xs), *(t.dtype for t in out_types))
    assert scale > 0, f"{case.id}: degenerate test (all zero)"
    assert abs(lhs - rhs) <= tol * scale, f"{case.id}: <Jv,u>={lhs!r} != <v,J^T u>={rhs!r}"


PARTIAL_PARAMS = [
    pytest.param(c, i, id=f"{c.id}-wrt{i}")
    for c in DIFFERENTIABLE_CASES
    if sum(a.differentiable for a in c.args) >= 2
    and all(a.dtype in ("float64", "complex128", "bool") for a in c.args)
    for i, a in enumerate(c.args)
    if a.differentiable
]


@pytest.mark.parametrize("case, index", PARTIAL_PARAMS)
def test_adjoint_with_one_active_input(case: Case, index: int) -> None:
    """Linearize with respect to one input only: the JVP rules see ``None`` tangents."""
    rng = _rng(case, 4)
    xs = case.inputs(rng)
    names = [Name(f"x{i}") for i in range(len(xs))]
    graph = RecordedGraph.from_primitive(case.op, names)
    linear = linearize(resolve(graph.graph), graph.output_keys, [names[index]], fresh_pass_id())
    assert [k for k, _ in linear.tangent_inputs] == [names[index]]
    saved = dict(zip(graph.input_value_keys, xs, strict=True))
    saved.update(zip(graph.output_keys, _evaluate(case.op, xs), strict=True))
    residuals = ReferenceExecutor().execute_forward(PrimitiveGraph(linear.graph), saved)

    v = random_array(rng, xs[index].shape, xs[index].dtype)
    jv = _jvp(linear, residuals, [v])
    types = case.op.infer_types(*map(type_of, xs))
    u = [None if t is None else random_array(rng, s.shape, s.dtype)
         for t, s in zip(jv, types, strict=True)]  # fmt: skip
    (ct,) = ReferenceExecutor().run_transposed_linear(
        linear, [c for c in u if c is not None], residuals, None
    ) if all(c is not None for c in u) else ReferenceExecutor().run_transposed_linear(
        linear, u, residuals, None
    )
    lhs = sum(real_inner(a, b) for a, b in zip(jv, u, strict=True) if a is not None)
    rhs = real_inner(v, ct)
    scale = sum(np.linalg.norm(a) * np.linalg.norm(b) for a, b in zip(jv, u, strict=True)
                if a is not None) + np.linalg.norm(v) * np.linalg.norm(ct)  # fmt: skip
    assert abs(lhs - rhs) <= 1e-10 * scale, f"{case.id}: {lhs!r} != {rhs!r}"

    # The one-input JVP is the full JVP with the other tangents set to zero.
    _, full, full_residuals, _ = _linearize(case, xs, list(range(len(types))))
    zeros = [np.zeros_like(x) if x.dtype.kind in "fc" else None for x in xs]
    zeros[index] = v
    expected = _jvp(full, full_residuals, zeros)
    for got, want in zip(jv, expected, strict=True):
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- grad vs FD


def _loss_slots(case: Case) -> list[list[int]]:
    return _slot_choices(case)


GRAD_PARAMS = [  # ties: JAX's shared gradient, not the differences' (``test_op_ties.py``)
    pytest.param(c, slots, executor, id=f"{c.id}-slots{''.join(map(str, slots))}-{executor}")
    for c in DIFFERENTIABLE_CASES
    if not c.ties
    for slots in _loss_slots(c)
    for executor in _executors_for(c)
]


@pytest.mark.parametrize("case, slots, executor_name", GRAD_PARAMS)
def test_grad_matches_finite_differences(
    case: Case, slots: list[int], executor_name: str, request: pytest.FixtureRequest
) -> None:
    executor = _executor(executor_name, request)
    rng = _rng(case, 2)
    xs = case.inputs(rng)
    out_types = case.op.infer_types(*(type_of(x) for x in xs))
    ws = {s: random_array(rng, out_types[s].shape, out_types[s].dtype) for s in slots}

    tensors = [tc.tensor(x, requires_grad=x.dtype.kind in "fc") for x in xs]
    outs = apply_op(case.op, tensors)
    loss = None
    for s in slots:
        term = tc.real(tc.sum(np.conj(ws[s]) * outs[s]))
        loss = term if loss is None else loss + term
    assert loss.shape == ()
    counter = _NodeCounter()
    tc.grad(loss, tensors, executor=counter)
    with _runs_natively(executor, counter.nodes, case.id):
        grads = tc.grad(loss, tensors, executor=executor)

    wide = wide_op(case.op)
    wide_ws = {s: w.astype(widen_dtype(w.dtype)) for s, w in ws.items()}

    def numpy_loss(values: list[np.ndarray]) -> float:
        ys = _evaluate(wide, values)
        return float(sum(np.sum(np.conj(wide_ws[s]) * ys[s]).real for s in slots))

    wide_xs = [x.astype(widen_dtype(x.dtype)) for x in xs]
    expected_loss = numpy_loss(wide_xs)
    tol = grad_tolerance(*(x.dtype for x in xs), *(t.dtype for t in out_types))
    assert np.isclose(float(loss.item()), expected_loss, rtol=tol, atol=tol)
    for i, (x, g) in enumerate(zip(xs, grads, strict=True)):
        if x.dtype.kind not in "fc":
            assert g is None, f"{case.id}: gradient for the non-differentiable input {i}"
            continue
        assert g is not None, f"{case.id}: no gradient for input {i}"
        assert g.dtype == x.dtype, f"{case.id}: grad dtype {g.dtype} for input {x.dtype}"
        fd = central_difference_grad(numpy_loss, wide_xs, i)
        assert_grad_close(g, fd, tol, f"{case.id}: input {i}")


@pytest.mark.parametrize("case", params(NON_DIFFERENTIABLE_CASES))
def test_non_differentiable_op_records_no_gradient(case: Case) -> None:
    xs = case.inputs(_rng(case, 3))
    tensors = [tc.tensor(x, requires_grad=x.dtype.kind in "fc") for x in xs]
    (out,) = apply_op(case.op, tensors)
    np.testing.assert_array_equal(out.numpy(), _evaluate(case.op, xs)[0])
    assert out.requires_grad is False
    with pytest.raises(ValueError, match="does not require gradients"):
        tc.grad(out, tensors, seed=np.ones(out.shape, out.dtype), executor=ReferenceExecutor())


# --------------------------------------------------------------------------- pinned details


def test_maximum_ties_share_the_tangent() -> None:
    x = tc.tensor([1.0, 2.0, -3.0], requires_grad=True)
    y = tc.tensor([1.0, 0.0, -3.0], requires_grad=True)
    gx, gy = tc.grad(tc.sum(tc.maximum(x, y)), [x, y], executor=ReferenceExecutor())
    np.testing.assert_array_equal(gx, [0.5, 1.0, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.0, 0.5])


def test_abs_squared_gradient_is_two_z() -> None:
    z = random_array(np.random.default_rng(0), (2, 3), "complex128")
    zt = tc.tensor(z, requires_grad=True)
    loss = tc.sum(tc.real(tc.multiply(zt, tc.conj(zt))))
    (g,) = tc.grad(loss, [zt], executor=ReferenceExecutor())
    np.testing.assert_allclose(g, 2 * z, rtol=1e-12)


def test_jvp_of_a_holomorphic_op_is_complex_linear() -> None:
    """``J(i v) == i J(v)`` for exp: the tangent map of a holomorphic op is C-linear."""
    case = next(c for c in CASES if c.name == "exp" and c.args[0].dtype == "complex128")
    rng = np.random.default_rng(5)
    xs = case.inputs(rng)
    _, linear, residuals, _ = _linearize(case, xs, [0])
    v = random_array(rng, xs[0].shape, "complex128")
    (jv,) = _jvp(linear, residuals, [v])
    (jiv,) = _jvp(linear, residuals, [1j * v])
    np.testing.assert_allclose(jiv, 1j * jv, rtol=1e-12)
    np.testing.assert_allclose(jv, np.exp(xs[0]) * v, rtol=1e-12)


def test_sincos_single_slot_linearization_has_one_tangent_output() -> None:
    x = np.linspace(-1.0, 1.0, 4)
    graph = RecordedGraph.from_primitive(ops.SinCos(), [Name("x")])
    for slot, derivative in ((0, np.cos(x)), (1, -np.sin(x))):
        linear = graph.linearize([slot])
        assert len(linear.tangent_outputs) == 1
        saved = {graph.input_value_keys[0]: x}
        saved.update(zip(graph.output_keys, ops.SinCos().evaluate(x), strict=True))
        residuals = ReferenceExecutor().execute_forward(PrimitiveGraph(linear.graph), saved)
        v = np.arange(1.0, 5.0)
        (jv,) = _jvp(linear, residuals, [v])
        np.testing.assert_allclose(jv, derivative * v, rtol=1e-14)
        (ct,) = ReferenceExecutor().run_transposed_linear(linear, [v], residuals, None)
        np.testing.assert_allclose(ct, derivative * v, rtol=1e-14)


def test_case_table_covers_every_op_class() -> None:
    covered = {type(c.op).__name__ for c in CASES}
    missing = {cls.__name__ for cls in ops.ALL_OPS} - covered - {"Constant"}
    assert not missing, f"op classes without a table row: {sorted(missing)}"
    dtypes = {(type(c.op).__name__, a.dtype) for c in CASES for a in c.args}
    for name in ("Add", "Exp", "Pow", "DotGeneral", "ReduceSum", "ReduceProd", "BroadcastInDim",
                 "SinCos"):  # fmt: skip
        for dtype in ("float32", "float64", "complex64", "complex128"):
            assert (name, dtype) in dtypes, (name, dtype)


def test_every_op_class_has_rows_with_equal_extents() -> None:
    """Every op meets a square or repeated shape; axis-sensitive ops in several dtypes."""
    covered = {type(c.op).__name__ for c in CASES if has_equal_extents(c)}
    missing = {type(c.op).__name__ for c in CASES} - covered
    assert not missing, f"op classes without a row with equal extents: {sorted(missing)}"
    dtypes = {(type(c.op).__name__, a.dtype) for c in CASES if has_equal_extents(c)
              for a in c.args}  # fmt: skip
    for name in ("ReduceSum", "BroadcastInDim"):
        for dtype in ("float32", "float64", "complex64", "complex128"):
            assert (name, dtype) in dtypes, (name, dtype)
    for name in ("Transpose", "DotGeneral", "Reshape", "Div"):
        for dtype in ("float64", "complex128"):
            assert (name, dtype) in dtypes, (name, dtype)


@pytest.mark.parametrize("executor_name", EXECUTORS)
@pytest.mark.parametrize("axis", [0, 1])
def test_sum_of_a_square_matrix_broadcasts_its_cotangent_along_the_summed_axis(
    axis: int, executor_name: str, request: pytest.FixtureRequest
) -> None:
    """``d/dA sum_j w_j * sum(A, axis)_j``: ``w`` along the kept axis, repeated along
    ``axis``. With a 3x3 ``A`` both axes fit the shape, so only the values tell."""
    a = tc.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    w = np.array([1.0, 10.0, 100.0])
    executor = _executor(executor_name, request)
    (g,) = tc.grad(tc.sum(tc.sum(a, axis=axis) * w), [a], executor=executor)
    expected = np.tile(w, (3, 1)) if axis == 0 else np.tile(w[:, None], (1, 3))
    np.testing.assert_array_equal(g, expected)


# --------------------------------------------------------------------------- values

_REFERENCE_VALUES: dict[str, Any] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "select": np.where, "compare_eq": np.equal, "compare_lt": np.less,
    "compare_ge": np.greater_equal, "compare_ne": np.not_equal,
    "neg": np.negative, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "sqrt": np.sqrt, "pow2": np.square, "pow3": lambda x: x * x * x,
    "pow0.5": np.sqrt, "pow-1": np.reciprocal, "pow1.5": lambda x: x * np.sqrt(x),
    "pow-2.5": lambda x: 1 / (x * x * np.sqrt(x)), "scale": lambda x: 2.5 * x,
    "scale_complex": lambda x: (0.5 - 1.5j) * x, "shift": lambda x: x + 0.75,
    "conj": np.conj, "full_like": lambda x: np.full_like(x, 3.0), "real": np.real,
    "imag": np.imag, "to_complex_re": lambda x: x + 0j, "to_complex_im": lambda x: 1j * x,
    "matmul": np.matmul, "matmul_lhs_t": lambda a, b: a.T @ b, "batched_matmul": np.matmul,
    "matmul_rhs_t": lambda a, b: a @ b.T,
    "inner": np.inner, "outer": np.outer, "matvec": np.matmul, "vecmat": np.matmul,
    "two_contracting": lambda a, b: np.tensordot(a, b, axes=([1, 2], [1, 0])),
    "batch_not_leading": lambda a, b: np.einsum("ibk,kjb->bij", a, b),
    "two_batch_swapped": lambda a, b: np.einsum("abk,bak->ab", a, b),
}  # fmt: skip


def _reference_value(case: Case, xs: list[np.ndarray]) -> list[np.ndarray]:
    """The case's values by its row of ``_REFERENCE_VALUES``, else its op's ``oracle``
    (a structural op's, in its block), else an elementwise op's numpy function."""
    op = case.op
    if case.name in _REFERENCE_VALUES:
        return [_REFERENCE_VALUES[case.name](*xs)]
    if type(op).oracle is not ops.TensorOp.oracle:
        return list(op.oracle(*xs))
    if isinstance(op, ops.Elementwise):  # a table op is its numpy function (dtype kept)
        return [type(op).numpy_fn(*xs).astype(xs[0].dtype)]
    raise AssertionError(f"no reference value for {case.id}: write {type(op).__name__}.oracle")


def test_evaluate_matches_numpy_for_every_case() -> None:
    for case in CASES:
        xs = case.inputs(_rng(case, 5))
        low = any(x.dtype.name in ("float32", "complex64") for x in xs)
        for got, expected in zip(_evaluate(case.op, xs), _reference_value(case, xs), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-5 if low else 1e-13, atol=1e-6,
                                       err_msg=case.id)  # fmt: skip

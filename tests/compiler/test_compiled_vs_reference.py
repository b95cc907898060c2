"""The compiled executor against the numpy reference: every op, every dtype, random programs.

Tolerances: 1e-12 relative (f64/c128) and 1e-5 (f32/c64), relative to the gradient's
largest magnitude. A node that fails to compile (and so runs on the reference) fails its
test through ``tests/helpers/compile_errors.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import DIFFERENTIABLE_CASES, Case, params
from tidu_compile.tools.examples import EXAMPLES

import tidu_compile as tc
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.frontend.tensor import apply_op

REFERENCE = tc.ReferenceExecutor()


def tolerance(dtype: np.dtype) -> float:
    return 1e-5 if dtype in (np.float32, np.complex64) else 1e-12


def assert_same_gradients(
    compiled: list[np.ndarray | None], reference: list[np.ndarray | None], what: str
) -> None:
    for i, (c, r) in enumerate(zip(compiled, reference, strict=True)):
        assert (c is None) == (r is None), f"{what}: input {i} presence differs"
        if c is None or r is None:
            continue
        assert c.dtype == r.dtype and c.shape == r.shape, f"{what}: input {i} type differs"
        scale = max(float(np.max(np.abs(r), initial=0.0)), 1e-300)
        error = float(np.max(np.abs(c - r), initial=0.0)) / scale
        assert error <= tolerance(r.dtype), f"{what}: input {i} relative error {error:.3g}"


def weighted_loss(outputs: list[tc.Tensor], rng: np.random.Generator) -> tc.Tensor:
    """sum_i Re(sum(w_i * out_i)) with random constant weights."""
    total: tc.Tensor | None = None
    for out in outputs:
        w = rng.standard_normal(out.shape).astype(out.dtype)
        term = tc.sum(tc.real(out * w))
        total = term if total is None else total + term
    assert total is not None
    return total


@pytest.mark.parametrize("case", params(DIFFERENTIABLE_CASES))
def test_every_op_matches_reference(case: Case, compiled: CompiledExecutor) -> None:
    rng = np.random.default_rng(7)
    inputs = [
        tc.tensor(a, requires_grad=a.dtype.kind in "fc") for a in case.inputs(rng)
    ]
    loss = weighted_loss(apply_op(case.op, inputs), rng)
    grads = [t for t in inputs if t.requires_grad]
    assert_same_gradients(
        tc.grad(loss, grads, executor=compiled),
        tc.grad(loss, grads, executor=REFERENCE),
        case.id,
    )


#: The scan examples compile four programs each (~5 s cold): they are checked against
#: their unrolled programs and central differences in tests/frontend/test_loop_examples.py.
LOOP_EXAMPLES = ("gru_language_model", "neural_ode")


@pytest.mark.parametrize("name", sorted(set(EXAMPLES) - set(LOOP_EXAMPLES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_examples_match_reference(name: str, dtype: type, compiled: CompiledExecutor) -> None:
    example = EXAMPLES[name]
    inputs = [tc.tensor(a, requires_grad=True)
              for a in example.make_inputs(np.random.default_rng(3), dtype)]  # fmt: skip
    loss = example.function(*inputs)
    assert_same_gradients(
        tc.grad(loss, inputs, executor=compiled), tc.grad(loss, inputs, executor=REFERENCE), name
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_match_reference(seed: int, compiled: CompiledExecutor) -> None:
    from random_programs import make_program

    dtype = np.float32 if seed % 4 == 3 else np.float64
    program = make_program(seed, dtype)
    inputs = [tc.tensor(a, requires_grad=True) for a in program.input_arrays]
    loss = program.function(*inputs)
    assert_same_gradients(
        tc.grad(loss, inputs, executor=compiled),
        tc.grad(loss, inputs, executor=REFERENCE),
        f"random program {seed}",
    )

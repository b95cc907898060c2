"""The expanded kernels vectorize with no calls left, and the compile path uses the pass."""

from __future__ import annotations

import re

import numpy as np
import pytest
from mathpoly_support import DTYPES, OPS, lowered_kernel, optimized_ir
from tidu_compile.tools.dump import backward_nodes, stage_text

import tidu_compile as tc
from tidu_compile.compiler.stages import RunOptions, walk
from tidu_compile.executors.compiled import CompiledExecutor

CASES = [(op, dtype) for dtype in DTYPES for op in OPS]
VECTOR = {"f64": re.compile(r"<(\d+) x double>"), "f32": re.compile(r"<(\d+) x float>")}


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_vector_loop_without_calls(op: str, dtype: str) -> None:
    ir = optimized_ir(op, dtype)
    # <8 x double> / <16 x float> on AVX-512 hosts, narrower elsewhere.
    lanes = [int(n) for n in VECTOR[dtype].findall(ir)]
    assert lanes and max(lanes) >= 2, "the loop was not vectorized"
    called = set(re.findall(r'\bcall [^@]*@"?([\w.]+)"?\(', ir))
    declared = set(re.findall(r'^declare [^@]*@"?([\w.]+)"?\(', ir, re.MULTILINE))
    defined = set(re.findall(r'^define [^@]*@"?([\w.]+)"?\(', ir, re.MULTILINE))
    # Only LLVM intrinsics (fma, fabs, noalias scopes) and the module's own entry
    # points (wrappers calling the kernel): no libm, no libmvec.
    external = (called | declared) - defined
    assert all(name.startswith("llvm.") for name in external), external
    assert not any(f".{op}." in name for name in called | declared)
    assert "fptosi" not in ir


def test_exp_object_needs_no_external_symbol() -> None:
    for dtype in DTYPES:
        obj = walk(lowered_kernel("exp", dtype, f"mathpoly_obj_exp_{dtype}"), "llvm", "codegen",
                   RunOptions(vector_math=True if dtype == "f64" else None))
        assert obj.undefined == ()
        assert not obj.vector_math  # no libmvec variant was needed


@tc.function
def _transcendental_loss(x: tc.Tensor, y: tc.Tensor) -> tc.Tensor:
    """One composite node: its backward kernel recomputes exp, log, tanh, sin, cos."""
    inner = tc.tanh(x * y + tc.exp(-x)) * tc.sin(y) + tc.log(y) * tc.cos(x)
    return tc.sum(inner)


def test_compile_path_expands_math() -> None:
    rng = np.random.default_rng(0)
    x = tc.tensor(rng.uniform(-2, 2, 1003), requires_grad=True)
    y = tc.tensor(rng.uniform(0.1, 3, 1003), requires_grad=True)
    loss = _transcendental_loss(x, y)
    loops = "\n".join(stage_text(node, "loops") for node in backward_nodes(loss))
    assert "math.fma" in loops
    assert not re.search(r"math\.(exp|log|tanh|sin|cos) .* : f64$", loops, re.MULTILINE)
    executor = CompiledExecutor(False)
    got = tc.grad(loss, [x, y], executor=executor)
    want = tc.grad(loss, [x, y], executor=tc.ReferenceExecutor())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
    assert executor.stats.errors == []

"""Object code is keyed by the canonical text of the kernels it is compiled from
(``compiler.kernel_code``): programs share it exactly when their kernels, each lowered
for its own shapes, are the same text.

The kernel texts show why the stale-kernel bugs of issue 25 cannot come back (a slice's
border is in the text); their reproductions are in ``test_stale_kernels.py``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tidu_compile.passes.tidu_lower_to_loops import KERNEL_ATTR
from tidu_compile.tools.dump import backward_nodes

import tidu_compile as tc
from tidu_compile.backend.jit import SCALAR_LOOPS_ATTR, SCALAR_LOOPS_NOTE
from tidu_compile.compiler import pipeline
from tidu_compile.compiler.kernel_code import SCALAR_LOOP_ELEMENTS, kernel_code
from tidu_compile.compiler.native import program_digest
from tidu_compile.compiler.objects import kernel_symbol
from tidu_compile.compiler.ssa_program import NodeProgram
from tidu_compile.compiler.stages import walk
from tidu_compile.executors.compiled import CompiledExecutor


def loops_module(program: NodeProgram) -> Any:
    """``program`` at the ``loops`` stage, as the executor lowers it."""
    return walk(program, "program", "loops")


def node_programs(loss: tc.Tensor) -> list[NodeProgram]:
    return [node.program() for node in backward_nodes(loss)]


def tanh_programs(rows: int) -> list[NodeProgram]:
    x = tc.tensor(np.ones((rows, 5)), requires_grad=True)
    return node_programs(tc.sum(tc.tanh(x) * 2.0))


def test_kernel_text_has_dynamic_leading_extents_and_positional_names() -> None:
    (_, tanh) = tanh_programs(256)[:2]
    code = kernel_code(loops_module(tanh))
    assert "memref<?x5xf64>" in code.text and "256" not in code.text
    assert "func.func @k0(" in code.text
    (symbol,) = code.symbols.values()
    assert symbol == f"tk{code.digest[:24]}_0" == kernel_symbol(code.digest, 0)
    assert [f.sym_name.data for f in code.module.ops] == [symbol]  # what LLVM compiles


def test_taking_the_kernels_gives_the_text_of_copying_them() -> None:
    """The executor's compile moves the kernel functions out of the ``loops`` module it
    drops (``take=True``); the code is what copying them gives."""
    (_, tanh) = tanh_programs(64)[:2]
    copied, taken_from = kernel_code(loops_module(tanh)), loops_module(tanh)
    taken = kernel_code(taken_from, take=True)
    assert taken.text == copied.text and taken.digest == copied.digest
    assert not any(KERNEL_ATTR in op.attributes for op in taken_from.ops)
    assert len(list(taken.module.ops)) == len(list(copied.module.ops))


def test_programs_differing_in_the_batch_size_share_kernels() -> None:
    big, small = (tanh_programs(rows) for rows in (256, 40))  # 1,280 and 200 elements
    for a, b in zip(big, small, strict=True):
        assert program_digest(a) != program_digest(b)  # two programs ...
        ca, cb = kernel_code(loops_module(a)), kernel_code(loops_module(b))
        assert ca.text == cb.text and ca.digest == cb.digest  # ... one object code


@pytest.mark.parametrize(("rows", "scalar"), [(2, True), (38, True), (39, False), (256, False)])
def test_small_kernels_are_a_size_class_with_scalar_loops(rows: int, scalar: bool) -> None:
    """Up to ``SCALAR_LOOP_ELEMENTS`` (192: 38 rows of 5) the module carries
    ``tidu.scalar_loops`` (in its text, so in its key), its LLVM IR says so, and O3
    leaves its loops scalar; past it, the loops are vectorized."""
    assert SCALAR_LOOP_ELEMENTS == 192
    (_, tanh) = tanh_programs(rows)[:2]
    code = kernel_code(loops_module(tanh))
    assert (SCALAR_LOOPS_ATTR in code.text) is scalar
    ir = walk(code, "kernels", "llvm-ir")
    assert ir.vectorize_loops is not scalar
    assert str(ir).startswith(SCALAR_LOOPS_NOTE) is scalar
    optimized = str(walk(ir, "llvm-ir", "opt-ir"))
    assert ("llvm.loop.isvectorized" not in optimized) is scalar  # the loop vectorizer's mark


def test_the_size_classes_do_not_share_kernels() -> None:
    small, large = (tanh_programs(rows) for rows in (38, 39))
    (_, a), (_, b) = small[:2], large[:2]
    assert kernel_code(loops_module(a)).digest != kernel_code(loops_module(b)).digest


def slice_backward(stop: int) -> NodeProgram:
    x = tc.tensor(np.arange(4.0), requires_grad=True)
    (program,) = [p for p in node_programs(tc.sum(x[1:stop])) if len(p.arg_sources) == 1
                  and p.types[0].shape != ()]  # fmt: skip
    return program


def test_a_border_the_lowering_bakes_in_is_in_the_text() -> None:
    """``x[1:]`` and ``x[1:-1]`` of 4 elements: one shape class (``s0`` rows into
    ``s1``), but the second's backward also fills the element past the slice."""
    whole, inner = (kernel_code(loops_module(slice_backward(stop))) for stop in (4, -1))
    assert whole.digest != inner.digest
    assert inner.text.count("tidu.fill") > whole.text.count("tidu.fill")


def test_a_scale_factor_is_a_parameter_not_text() -> None:
    def mean_backward(rows: int) -> tuple[str, tuple[float, ...]]:
        x = tc.tensor(np.ones((rows, 3)), requires_grad=True)
        programs = node_programs(tc.mean(tc.exp(x)))
        (scale,) = [p for p in programs if "Scale" in str(p)]
        module = loops_module(scale)
        plan = pipeline.build_plan(module, scale)
        return kernel_code(module).text, plan.constants[0][1]

    (text_a, params_a), (text_b, params_b) = mean_backward(8), mean_backward(5)
    assert text_a == text_b and "%params" in text_a
    assert params_a == (1 / 24,) and params_b == (1 / 15,)


def random_seed_grad(y: tc.Tensor, x: tc.Tensor, executor: Any, rng: np.random.Generator) -> Any:
    seed = rng.standard_normal(y.shape)
    (got,) = tc.grad(y, [x], seed=seed, executor=executor)
    (expected,) = tc.grad(y, [x], seed=seed, executor=tc.ReferenceExecutor())
    return got, expected


def test_slice_stops_in_sequence_through_one_executor() -> None:
    """``x[1:]`` then ``x[1:-1]``: the last element's gradient was never written."""
    executor = CompiledExecutor(False, background=False)
    rng = np.random.default_rng(1)
    for key in [slice(1, None), slice(1, -1), slice(None, None, 2), slice(1, None, 2),
                slice(None, None, -1), slice(-2, None, -1)]:  # fmt: skip
        x = tc.tensor(np.arange(4.0), requires_grad=True)
        got, expected = random_seed_grad(x[key] * 1.5, x, executor, rng)
        np.testing.assert_array_equal(got, expected, err_msg=f"x[{key}]")


def test_the_kernel_text_never_asks_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lowering to ``loops`` and the canonical text read nothing of the CPU, so which
    programs share object code (and how many compile) is the same on every CPU of the
    machine kind; only the digest adds the host (as every disk key does)."""
    from tidu_compile.backend import target
    from tidu_compile.compiler import native

    (_, tanh) = tanh_programs(64)[:2]
    here = kernel_code(loops_module(tanh))

    def refuse() -> None:
        raise AssertionError("the lowering asked for the host target")

    monkeypatch.setattr(target, "host_target", refuse)
    monkeypatch.setattr(target, "host_target_machine", refuse)
    monkeypatch.setattr(native, "environment_fingerprint", lambda: "another CPU")
    elsewhere = kernel_code(loops_module(tanh))
    assert elsewhere.text == here.text and elsewhere.digest != here.digest


def test_nan_payloads_never_share_code() -> None:
    """A program's text keys its artifact: a NaN parameter prints its bits there, so two
    traces that differ only in a payload get code of their own (both payloads survive)."""
    import struct

    def nan(payload: int) -> float:
        return float(struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | payload))[0])

    executor = CompiledExecutor(False, background=False)
    with tc.use_executor(executor):
        f = tc.function(lambda x, s: x * s)
        x = tc.tensor(np.ones(2), requires_grad=True)
        for payload in (1, 2, 1):
            bits = f(x, nan(payload)).numpy().view(np.uint64)
            assert (bits == 0x7FF8000000000000 | payload).all(), hex(bits[0])
    assert executor.stats.fallbacks == 0


def test_one_executor_serves_each_size_class_its_own_code() -> None:
    """Batches on both sides of the bound, in turn, through one executor: each class
    compiles once, and every gradient is the reference executor's."""
    executor = CompiledExecutor(False, background=False, capture=False)  # node by node
    compiles = []
    for rows in (38, 39, 20, 300, 38):
        x = np.linspace(-1.0, 1.0, rows * 5).reshape(rows, 5)
        xt = tc.tensor(x, requires_grad=True)
        (got,) = tc.grad(tc.sum(tc.tanh(xt) * 2.0), [xt], executor=executor)
        xr = tc.tensor(x, requires_grad=True)
        (want,) = tc.grad(tc.sum(tc.tanh(xr) * 2.0), [xr], executor=tc.ReferenceExecutor())
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
        compiles.append(executor.stats.compiles)
    assert executor.stats.fallbacks == 0
    # the small class at 38 rows, the large at 39, nothing new at 20, 300 and 38 again
    assert compiles[0] < compiles[1] == compiles[2] == compiles[3] == compiles[4]

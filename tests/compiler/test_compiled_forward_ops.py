"""Every op of the op table as a forward program (``CompiledExecutor.run_graph``, what a
``@tc.function`` forward runs): numpy's values, and no fallback except the complex
functions the README lists as numpy library calls."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES, Case

from tidu_compile.eager import RecordedGraph
from tidu_compile.executors.compiled import CompiledExecutor

#: Complex forms that run as numpy library calls (README, "Compiled accuracy").
COMPLEX_LIBRARY_CALLS = {
    "Log", "Log1p", "Log2", "Log10", "Exp2", "Expm1", "Sqrt", "Sin", "Cos", "SinCos", "Tan",
    "Tanh", "Arcsin", "Arccos", "Arctan", "Arcsinh", "Arccosh", "Arctanh", "Power",
}  # fmt: skip

#: Integer forms that run as numpy library calls (README, dtypes).
INTEGER_LIBRARY_CALLS = {"Power"}


def _one_per_signature() -> list[Case]:
    chosen: dict[tuple[str, tuple[str, ...]], Case] = {}
    for case in CASES:
        chosen.setdefault((type(case.op).__name__, tuple(a.dtype for a in case.args)), case)
    return list(chosen.values())


@pytest.mark.parametrize("case", _one_per_signature(), ids=lambda c: c.id)
def test_forward_program_of_every_op(case: Case, compiled: CompiledExecutor) -> None:
    arrays = case.inputs(np.random.default_rng(0))
    recorded = RecordedGraph.from_primitive(case.op, [f"a{i}" for i in range(len(arrays))])
    fallbacks = compiled.stats.fallbacks
    got = compiled.run_graph(recorded, arrays)
    want = case.op.evaluate(*arrays)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        single = w.dtype in (np.float32, np.complex64)
        np.testing.assert_allclose(g, w, rtol=1e-5 if single else 1e-12,
                                   atol=1e-6 if single else 1e-13)  # fmt: skip
    is_complex = any(np.dtype(a.dtype).kind == "c" for a in case.args)
    library_call = is_complex and type(case.op).__name__ in COMPLEX_LIBRARY_CALLS
    library_call |= case.exact and type(case.op).__name__ in INTEGER_LIBRARY_CALLS
    assert compiled.stats.fallbacks - fallbacks == (1 if library_call else 0)

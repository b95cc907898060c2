"""``tidu-compile bench --small``: each small training step checked against the per-op
reference before it is timed (no speed assertions; one program, to stay cheap)."""

from __future__ import annotations

import numpy as np
from tidu_compile.tools.bench import small_steps


def test_small_step_rows_are_checked_and_timed() -> None:
    document = small_steps.run(names=("gmm",), rounds=2)
    (program,) = document["programs"]
    names = [row["name"] for row in program["rows"]]
    assert names[:2] == ["tidu value_and_grad", "tidu @tc.function + grad"]
    assert all(row["relative_error"] < 1e-10 and row["seconds"] > 0 for row in program["rows"])
    assert "gmm training step" in small_steps.format_small(document)


def test_the_programs_are_written_once_for_both_frameworks() -> None:
    """Each loss, given numpy as the array module, is the one tidu computes."""
    import tidu_compile as tc

    for name, program in small_steps.PROGRAMS.items():
        params, data = small_steps._inputs(name, np.random.default_rng(1))
        with tc.use_executor(tc.ReferenceExecutor()):
            got = program(tc, {k: tc.tensor(v) for k, v in params.items()}, data).numpy()
        np.testing.assert_allclose(got, program(np, params, data), rtol=1e-12)

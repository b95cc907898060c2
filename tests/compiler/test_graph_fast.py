"""``run_graph``'s fast call (``executors.graph_fast``): the last plan of a structure
serves exactly the inputs it was made for, and no other.

One graph structure, ``tanh(a) * b + a``, runs with inputs whose extents, dtypes and
layouts change between calls (the fast call of the previous plan must turn each change
down, the general path finds the right plan); every result is checked against numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tidu_compile import ops
from tidu_compile.ad import Name
from tidu_compile.eager import RecordedGraph
from tidu_compile.executors.compiled import CompiledExecutor
from tidu_compile.graph import GraphBuilder, Primary


def _graph() -> RecordedGraph:
    b = GraphBuilder()
    a, c = b.add_input(Name("a")), b.add_input(Name("b"))
    (t,) = b.add_operation(ops.Tanh(), [a], Primary())
    (m,) = b.add_operation(ops.Mul(), [t, c], Primary())
    (s,) = b.add_operation(ops.Add(), [m, a], Primary())
    b.set_outputs([s])
    return RecordedGraph.from_graph(b.build())


def test_the_last_plan_serves_only_its_own_layouts(tmp_path: Path) -> None:
    executor = CompiledExecutor(tmp_path, background=False)
    graph = _graph()
    rng = np.random.default_rng(3)
    wide = rng.normal(size=(2, 10))
    calls = [
        (rng.normal(size=5), rng.normal(size=5)),
        (rng.normal(size=5), rng.normal(size=5)),  # the fast call
        (rng.normal(size=7), rng.normal(size=7)),  # another extent
        (rng.normal(size=7).astype(np.float32), rng.normal(size=7).astype(np.float32)),
        (wide[0, ::2], wide[1, ::2]),  # strided views of 5: copied by the general path
        (rng.normal(size=5), rng.normal(size=5)),
    ]
    hits = []
    for a, b in calls:
        before = executor.stats.memory_hits
        (got,) = executor.run_graph(graph, [a, b])
        hits.append(executor.stats.memory_hits - before)
        assert got.dtype == a.dtype and got.shape == a.shape
        np.testing.assert_allclose(got, np.tanh(a) * b + a, rtol=1e-6 if a.dtype == np.float32
                                   else 1e-14)  # fmt: skip
    assert hits[1] == 1  # served by the fast call of the first plan
    assert executor.stats.fallbacks == 0

"""Run fuzzed sequences in a fresh interpreter, on a disk cache shared with others.

``test_fuzz_sequences`` starts this script several times on one cache directory: the
first process compiles and fills the cache, the later ones load what it holds (their
own programs, and shape classes made for others) and must still match the reference::

    python sequence_worker.py CACHE_DIR forward|reverse MODE:SEED [MODE:SEED ...]

Each ``MODE:SEED`` is one sequence (``fuzz_sequences.make_sequence(SEED)``) run through
its own ``CompiledExecutor(CACHE_DIR, background=False)``, its variants in order or in
reverse order. Prints one JSON object: the findings, the sequences run, and the summed
executor counters. ``TIDU_COMPILE_DEBUG_FILL`` comes from the environment.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from fuzz_sequences import make_sequence  # noqa: E402
from sequence_check import MODES, check  # noqa: E402

from tidu_compile.compiler import buffers  # noqa: E402
from tidu_compile.executors.compiled import CompiledExecutor  # noqa: E402

COUNTERS = ("compiles", "memory_hits", "disk_hits", "generic_hits", "fallbacks")


def main(argv: list[str]) -> dict:
    cache, order, items = argv[0], argv[1], argv[2:]
    if order not in ("forward", "reverse"):
        raise SystemExit(f"order: forward or reverse, got {order!r}")
    failures: list[str] = []
    totals = dict.fromkeys(COUNTERS, 0)
    for item in items:
        mode, seed = item.split(":")
        if mode not in MODES:
            raise SystemExit(f"mode: one of {MODES}, got {mode!r}")
        sequence = make_sequence(int(seed))
        executor = CompiledExecutor(cache, background=False)
        indices = list(range(len(sequence.variants)))
        label = f" process {order}"
        failures += check(sequence, mode, executor, {},
                          indices[::-1] if order == "reverse" else indices, label)  # fmt: skip
        for name in COUNTERS:
            totals[name] += getattr(executor.stats, name)
    return {"failures": failures, "sequences": len(items), "stats": totals,
            "debug_fill": buffers.DEBUG_FILL}  # fmt: skip


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        print(json.dumps(main(sys.argv[1:])))

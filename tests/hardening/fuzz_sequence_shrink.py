"""Shrinking a failing fuzzed sequence to a small one that still fails.

``shrink(sequence, mode)`` greedily drops variants (down to two), drops steps, and
lowers extents, keeping each change after which a fresh executor still gets some
variant wrong (``sequence_check.check``; with ``replay``, also a second executor on
the same disk cache that runs the variants in reverse order). Run by hand::

    .venv/bin/python tests/hardening/fuzz_sequence_shrink.py SEED MODE [--replay]

prints the sequence of ``SEED`` shrunk, with its findings, for a regression test.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import warnings
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (_HERE, _HERE.parent):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import numpy as np  # noqa: E402
from fuzz_sequences import Sequence, Step, Template, Variant, make_sequence  # noqa: E402
from sequence_check import check  # noqa: E402

import tidu_compile as tc  # noqa: E402
from tidu_compile.compiler import buffers  # noqa: E402
from tidu_compile.executors.compiled import CompiledExecutor  # noqa: E402

__all__ = ["findings", "shrink"]


def findings(sequence: Sequence, mode: str, replay: bool = False) -> list[str]:
    """What goes wrong running ``sequence`` on a fresh executor and cache (and, with
    ``replay``, again in reverse order on a second executor over the same cache)."""
    with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        references: dict = {}
        executor = CompiledExecutor(cache, background=False)
        found = check(sequence.fresh(), mode, executor, references)
        if replay:
            again = CompiledExecutor(cache, background=False)
            order = reversed(range(len(sequence.variants)))
            found += check(sequence.fresh(), mode, again, references, order, " replay")
    return found


def _redrawn(template: Template, variant: Variant, dims: dict[str, int] | None = None) -> Variant:
    """``variant`` on ``template`` (extents ``dims``), its parameters kept where they fit."""
    changed = dataclasses.replace(variant, dims=tuple(sorted((dims or dict(variant.dims)).items())))
    inputs = [tc.tensor(a) for a in changed.arrays(template)]
    params = template.draw(inputs, np.random.default_rng(variant.data_seed), variant.params)
    return dataclasses.replace(changed, params=params)


def _without_step(sequence: Sequence, index: int) -> Sequence:
    template = sequence.template
    removed = len(template.inputs) + index  # the pool position of the step's value
    replacement = template.steps[index].a

    def moved(position: int) -> int:
        position %= removed + 1 + len(template.steps)
        if position == removed:
            return replacement
        return position - 1 if position > removed else position

    steps = tuple(
        Step(s.kind, moved(s.a), moved(s.b)) if i > index else s
        for i, s in enumerate(template.steps)
        if i != index
    )
    smaller = dataclasses.replace(template, steps=steps)
    variants = []
    for v in sequence.variants:
        kept = dataclasses.replace(v, params=v.params[:index] + v.params[index + 1 :])
        variants.append(_redrawn(smaller, kept))
    return Sequence(sequence.seed, smaller, variants)


def _candidates(sequence: Sequence) -> list[Sequence]:
    """Smaller sequences to try, the most promising first."""
    out = []
    variants = sequence.variants
    if len(variants) > 2:
        out += [Sequence(sequence.seed, sequence.template, variants[:i] + variants[i + 1 :])
                for i in range(len(variants))]  # fmt: skip
    if len(sequence.template.steps) > 1:
        out += [_without_step(sequence, i) for i in range(len(sequence.template.steps))]
    for i, v in enumerate(variants):
        for name, value in v.dims:
            if value > 1:
                dims = dict(v.dims) | {name: value - 1}
                smaller = _redrawn(sequence.template, v, dims)
                out.append(Sequence(sequence.seed, sequence.template,
                                    [*variants[:i], smaller, *variants[i + 1 :]]))  # fmt: skip
    return out


def shrink(sequence: Sequence, mode: str, replay: bool = False, budget: int = 200) -> Sequence:
    """A smaller sequence that still fails like ``sequence`` does (greedy; at most
    ``budget`` runs)."""
    runs = 0
    improved = True
    while improved and runs < budget:
        improved = False
        for candidate in _candidates(sequence):
            runs += 1
            if findings(candidate, mode, replay):
                sequence, improved = candidate, True
                break
            if runs >= budget:
                break
    return sequence


def main(argv: list[str]) -> None:
    seed, mode = int(argv[0]), argv[1]
    replay = "--replay" in argv
    buffers.DEBUG_FILL = True
    sequence = make_sequence(seed)
    if not findings(sequence, mode, replay):
        print(f"seed {seed} ({mode}) does not fail")
        return
    small = shrink(sequence, mode, replay)
    print(small.describe())
    print("\n".join(findings(small, mode, replay)))


if __name__ == "__main__":
    main(sys.argv[1:])

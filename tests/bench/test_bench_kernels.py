"""``tidu-compile bench --kernels`` runs and prints every field (no speed assertions)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest
from tidu_compile.passes.expand_math_polynomials import EXPANSIONS
from tidu_compile.tools.bench import main as bench_main
from tidu_compile.tools.bench.kernels import format_kernels, math_functions

from tidu_compile.backend.target import host_target


@pytest.fixture(scope="module")
def kernels_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("kernels") / "kernels.json"
    args = argparse.Namespace(kernels=True, quick=True, json=str(out))
    with pytest.MonkeyPatch.context() as patch:
        printed: list[str] = []
        patch.setattr("sys.stdout.write", printed.append)
        assert bench_main.command(args) == 0
    return "".join(printed), json.loads(Path(out).read_text())


def test_math_functions_follow_the_expansion_table() -> None:
    assert math_functions() == [op.name.removeprefix("math.") for op in EXPANSIONS]
    assert {"exp", "log", "tanh", "sin", "cos"} <= set(math_functions())


def test_every_kernel_has_a_row(kernels_run: tuple[str, dict[str, Any]]) -> None:
    _, document = kernels_run
    names = [(row["name"], row["dtype"]) for row in document["rows"]]
    expected = [(f, d) for d in ("f64", "f32") for f in math_functions()]
    expected += [("W1 backward", "f64"), ("W1 backward", "f32"), ("W4 backward", "f64")]
    assert names == expected
    for row in document["rows"]:
        ns = row["ns_per_element"]
        for column in ("one_thread", "all_threads", "floor"):
            assert ns[column] > 0, (row["name"], column)
        assert ns["numpy"] is None or ns["numpy"] > 0
        assert row["bytes_per_element"] >= (8 if row["dtype"] == "f32" else 16)
        assert row["bandwidth_gb_per_s"] > 0


def test_header_names_the_cpu_and_vector_width(kernels_run: tuple[str, dict[str, Any]]) -> None:
    printed, document = kernels_run
    host = host_target()
    machine = document["machine"]
    assert machine["llvm_cpu"] == host.cpu
    assert machine["vector_bits"] == host.tuning.vector_bits
    assert machine["interleave"] == host.tuning.interleave
    assert machine["cpu"]
    assert printed == format_kernels(document) + "\n"
    assert f"cpu: {machine['cpu']} (LLVM: {host.cpu})" in printed
    assert f"{host.tuning.vector_bits}-bit vectors ({host.tuning.lanes(64)} x f64" in printed
    assert f"interleaved x{host.tuning.interleave}" in printed
    header = next(line for line in printed.splitlines() if line.startswith("kernel"))
    for column in ("dtype", "1 thread", f"{machine['threads']} threads", "numpy", "floor"):
        assert column in header
    row_start = re.compile(r"(\w+|W\d backward) +f(32|64) ")
    rows = [line for line in printed.splitlines() if row_start.match(line)]
    assert len(rows) == len(document["rows"])
    for line in rows:  # numbers (or "-" for a missing numpy ufunc) in every column
        cells = re.split(r"\s{2,}", line.strip())[2:]
        assert all(re.fullmatch(r"-|\d+(\.\d+)?", cell) for cell in cells), line

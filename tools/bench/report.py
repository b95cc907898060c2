"""The benchmark's output: the result document (``--json``) and the table printed on stdout.

The table is built from the same JSON-ready document the ``--json`` option writes, so a
saved result can be printed again with ``format_report(json.load(f))``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BACKWARD_TITLE",
    "PEER_COLUMNS",
    "STEP_TITLE",
    "format_ratio",
    "format_report",
    "format_time",
    "format_timing",
    "json_safe",
    "machine_info",
    "ratio",
    "cpu_model",
    "finish",
    "timing_table",
]

#: The columns compared with tidu, in table order.
PEER_COLUMNS = ("numpy", "torch", "jax")

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def _unit(seconds: float) -> tuple[float, str]:
    for scale, name in _UNITS:
        if abs(seconds) >= scale:
            return scale, name
    return _UNITS[-1]


def format_time(seconds: float | None) -> str:
    """``0.0123`` -> ``"12.3 ms"`` (three significant digits); None -> ``"-"``."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    scale, name = _unit(seconds)
    return f"{seconds / scale:.3g} {name}"


def format_timing(timing: Mapping[str, Any] | None) -> str:
    """``{"median", "min", "max"}`` -> ``"12.3 ms [11.9-14.0]"`` (min-max in the median's unit)."""
    if not timing:
        return "-"
    scale, name = _unit(timing["median"])
    lo, hi = timing["min"] / scale, timing["max"] / scale
    return f"{timing['median'] / scale:.3g} {name} [{lo:.3g}-{hi:.3g}]"


def ratio(tidu: Mapping[str, Any] | None, peer: Mapping[str, Any] | None) -> float | None:
    """tidu's median over the peer's (below 1: tidu is faster); None if either is missing."""
    if not tidu or not peer or not peer.get("median"):
        return None
    return float(tidu["median"]) / float(peer["median"])


def format_ratio(value: float | None) -> str:
    """``0.251`` -> ``"0.25"``; None -> ``"-"``."""
    if value is None:
        return "-"
    return f"{value:.2f}" if value >= 0.01 else f"{value:.1e}"


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats as strings (``"inf"``, ``"nan"``): strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


# ------------------------------------------------------------------ machine


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _llvm_cpu() -> str | None:
    """The CPU name LLVM gives the host and the vector width tidu's kernels prefer."""
    try:
        from tidu_compile.backend.target import host_target

        host = host_target()
    except Exception:  # noqa: BLE001 - the report must not fail on a broken LLVM
        return None
    return f"{host.cpu}, {host.tuning.vector_bits}-bit vectors"


def machine_info(peer_infos: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """CPU model, cores, and the versions of Python, numpy, llvmlite, torch and jax."""
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "llvm_cpu": _llvm_cpu(),
        "cores": os.cpu_count(),
        "platform": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
        "numpy": version("numpy"),
        "llvmlite": version("llvmlite"),
        "tidu_compile": version("tidu_compile"),
        "torch": version("torch"),
        "jax": version("jax"),
        "env": {k: v for k, v in sorted(os.environ.items())
                if k.startswith(("OPENBLAS_", "OMP_", "MKL_"))},  # fmt: skip
    }
    torch_info = (peer_infos or {}).get("torch") or {}
    if "threads" in torch_info:
        info["torch_threads"] = torch_info["threads"]
    return info


def _machine_line(machine: Mapping[str, Any]) -> str:
    llvm_cpu = f" (LLVM: {machine['llvm_cpu']})" if machine.get("llvm_cpu") else ""
    parts = [f"{machine.get('cpu')}{llvm_cpu}, {machine.get('cores')} cores",
             str(machine.get("platform")),
             f"Python {machine.get('python')}", f"numpy {machine.get('numpy')}",
             f"llvmlite {machine.get('llvmlite')}"]  # fmt: skip
    torch_version = machine.get("torch")
    if torch_version:
        threads = machine.get("torch_threads")
        parts.append(f"torch {torch_version}" + (f" ({threads} threads)" if threads else ""))
    else:
        parts.append("torch not installed")
    parts.append(f"jax {machine['jax']}" if machine.get("jax") else "jax not installed")
    load = machine.get("load_average") or {}
    if load.get("start") is not None:
        parts.append(f"load average {load['start']} -> {load.get('end')}")
    env = machine.get("env") or {}
    if env:
        parts.append(" ".join(f"{k}={v}" for k, v in env.items()))
    return "machine: " + " | ".join(parts)


# ------------------------------------------------------------------ table


def _peer_cell(
    row: Mapping[str, Any], peer: str, peers: Mapping[str, Any], field: str = "timing"
) -> str:
    if peer == "numpy":
        return format_timing(row.get("numpy_step" if field == "step_timing" else "numpy"))
    entry = row.get(peer)
    if entry is None:
        status = (peers.get(peer) or {}).get("status", "-")
        return {"not installed": "n/a (not installed)", "disabled": "-"}.get(status, status)
    if "error" in entry:
        return "error"
    cell = format_timing(entry.get(field))
    return cell if entry.get("grad_ok", True) else cell + " GRAD?"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows if len(r) > i) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        if len(r) == 2 and len(rows[0]) > 2:  # a note spanning the row
            lines.append(f"{r[0]:<{widths[0]}}  {r[1]}")
        else:
            lines.append("  ".join(f"{c:<{w}}" for c, w in zip(r, widths, strict=False)).rstrip())
    return lines


def _compile_lines(document: Mapping[str, Any]) -> list[str]:
    header = ["workload", "nodes", "cold", "warm-disk", "s/node", "disk/node", "jax jit",
              "cold stages"]  # fmt: skip
    rows: list[list[str]] = [header]
    for row in document["workloads"]:
        comp = row.get("compile") or {}
        if not comp:
            continue
        stages = comp.get("stage_seconds") or {}
        stage_text = " ".join(f"{k} {format_time(v)}" for k, v in stages.items())
        warm = comp.get("warm_disk") or {}
        warm_text = "error" if "error" in warm else format_time(comp.get("warm_disk_seconds"))
        jax = row.get("jax") or {}
        rows.append([
            row["workload"], str(comp.get("compiles", "-")), format_time(comp.get("cold_seconds")),
            warm_text, format_time(comp.get("per_node_seconds")),
            format_time(comp.get("disk_load_per_node_seconds")),
            format_time(jax.get("compile_seconds")), stage_text,
        ])  # fmt: skip
    warmup = document.get("process_warmup_seconds")
    title = (
        "compile (tidu: cold = first grad - warm median, fresh executor and empty cache dir; "
        "warm-disk = same in a fresh process on that cache dir (it includes the first "
        "call's fresh memory); s/node = compile_seconds / compiles; disk/node = that "
        "process's time loading each node's artifact from disk; one-time process warm-up "
        f"{format_time(warmup)} not included)"
    )
    return [title, *(_table(rows) if len(rows) > 1 else ["(nothing compiled)"])]


BACKWARD_TITLE = (
    "backward, like for like (each side starts from what its forward saved): tidu's "
    "tc.grad of the recorded loss; numpy: the gradient by hand (W1, W4 recompute exp and "
    "tanh from the inputs as tidu does); torch: autograd.grad on its saved graph; jax: a "
    "jitted vjp_fn holding jax's residuals"
)

STEP_TITLE = (
    "full step, forward + backward: tidu records the forward (a @tc.function forward "
    "runs its trace as one compiled program) then tc.grad; numpy: loss and gradients by hand "
    "(W1-W4), each intermediate once; torch: forward + autograd.grad; jax: "
    "jax.jit(jax.value_and_grad)"
)

STEP_PEERS = ("numpy", "torch", "jax")


def _step_lines(document: Mapping[str, Any]) -> list[str]:
    peers = document.get("peers") or {}
    header = ["workload", "tidu median [min-max]", *STEP_PEERS, *(f"tidu/{p}" for p in STEP_PEERS)]
    rows: list[list[str]] = [header]
    for row in document["workloads"]:
        if not row.get("tidu_step"):
            continue
        ratios = row.get("step_ratios") or {}
        rows.append([row["workload"], format_timing(row["tidu_step"]),
                     *(_peer_cell(row, p, peers, "step_timing") for p in STEP_PEERS),
                     *(format_ratio(ratios.get(p)) for p in STEP_PEERS)])  # fmt: skip
    return [STEP_TITLE, *(_table(rows) if len(rows) > 1 else ["(no full-step timings)"])]


def format_report(document: Mapping[str, Any]) -> str:
    """The table, the compile section, failures and the machine line, as printed on stdout."""
    peers = document.get("peers") or {}
    header = ["workload", "tidu median [min-max]", *PEER_COLUMNS,
              *(f"tidu/{p}" for p in PEER_COLUMNS)]  # fmt: skip
    rows: list[list[str]] = [header]
    for row in document["workloads"]:
        status = row.get("status", "ok")
        if status == "n/a":
            rows.append([row["workload"], row.get("note") or "n/a"])
            continue
        tidu = format_timing(row.get("tidu")) if status != "error" else "ERROR"
        if status == "FAIL":
            tidu = "FAIL " + tidu
        ratios = row.get("ratios") or {}
        rows.append([row["workload"], tidu, *(_peer_cell(row, p, peers) for p in PEER_COLUMNS),
                     *(format_ratio(ratios.get(p)) for p in PEER_COLUMNS)])  # fmt: skip
    lines = [
        "tidu-compile bench: median time [min-max] over runs; ratio = tidu median / peer "
        "median (< 1: tidu faster)",
        "",
        BACKWARD_TITLE,
        *_table(rows),
        "",
        *_step_lines(document),
        "",
        *_compile_lines(document),
    ]
    notes = [f"  {p}: {(peers.get(p) or {}).get('error')}" for p in ("torch", "jax")
             if (peers.get(p) or {}).get("error")]  # fmt: skip
    for row in document["workloads"]:
        for peer in ("torch", "jax"):
            entry = row.get(peer) or {}
            if "error" in entry:
                notes.append(f"  {row['workload']} {peer}: {entry['error']}")
            elif entry and not entry.get("grad_ok", True):
                notes.append(f"  {row['workload']} {peer}: gradient differs from numpy "
                             f"{entry.get('grad_errors')}")  # fmt: skip
        fallbacks = (row.get("compile") or {}).get("fallbacks")
        if fallbacks:
            notes.append(f"  {row['workload']} tidu: {fallbacks} node runs fell back to the "
                         "reference executor")  # fmt: skip
    if notes:
        lines += ["", "notes:", *notes]
    failures = document.get("failures") or []
    if failures:
        lines += ["", "!!! GRADIENT CHECK FAILED !!!", *(f"  FAIL {f}" for f in failures)]
    lines += ["", _machine_line(document.get("machine") or {})]
    return "\n".join(lines)


def timing_table(
    title: str, rows: Sequence[Mapping[str, Any]], baselines: Sequence[tuple[str, str]],
    width: int,
) -> str:  # fmt: skip
    """``title``, then one line per row (``{"name", "seconds", "relative_error"}``): the
    median in ms, its ratio to each baseline (``(column label, row name)``; ``-`` when
    that row is absent) and the relative error."""
    by_name = {row["name"]: row for row in rows}
    header = f"{'':{width}}{'median':>12}" + "".join(f"{'/' + label:>10}" for label, _ in baselines)
    lines = [title, header + f"{'rel. error':>12}"]
    for row in rows:
        seconds = row["seconds"]
        ratios = "".join(
            f"{seconds / by_name[name]['seconds']:>10.2f}" if name in by_name else f"{'-':>10}"
            for _, name in baselines
        )
        lines.append(f"{row['name']:{width}}{seconds * 1e3:>9.2f} ms{ratios}"
                     f"{row['relative_error']:>12.1e}")  # fmt: skip
    return "\n".join(lines)


def tidu_failures(rows: Sequence[Mapping[str, Any]], name: str,
                  cell: str = "tidu") -> list[str]:  # fmt: skip
    """The rows whose ``cell`` failed: an error, a gradient off the reference's, or a
    program that fell back to the reference path; each named by ``name`` formatted with
    the row (``"{ops} ops"``)."""
    failures = []
    for row in rows:
        ours, what = row[cell], name.format(**row)
        if "error" in ours:
            failures.append(f"{what}: {ours['error']}")
        elif ours["relative_error"] > 1e-10 or ours["fallbacks"]:
            failures.append(f"{what}: gradient off the reference's or a fallback")
    return failures


def finish(document: Mapping[str, Any], json_path: str | None, table: str,
           failures: Sequence[str]) -> int:  # fmt: skip
    """The end of a bench command: write ``document`` to ``json_path`` (if given), print
    ``table``, one ``FAIL`` line per failure on stderr; the exit status (1 on failure)."""
    if json_path:
        Path(json_path).write_text(json.dumps(json_safe(document), indent=2) + "\n")
    sys.stdout.write(table + "\n")
    for failure in failures:
        print(f"tidu-compile bench: FAIL {failure}", file=sys.stderr)
    return 1 if failures else 0


"""Random tidu programs: fused, lowered, JIT-compiled and run == numpy on the original IR.

Each program is a random DAG over a (4, 6) domain with row (6,), column (4,) and 0-d
values: elementwise ops, compare/select, broadcasts, reductions and a dot_general that
can cut chains (and would close cycles if fused carelessly). The result of
``run_node`` on the lowered module must match ``run_reference`` on the source IR.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from tidu_pass_support import (
    compile_kernels,
    parse_module,
    run_node,
    run_pipeline,
    run_reference,
)
from xdsl.context import Context

SHAPES = {"m": (4, 6), "r": (6,), "c": (4,), "s": (), "w": (6, 6)}
ARGS = [("x0", "m"), ("x1", "m"), ("v", "r"), ("u", "c"), ("g", "s"), ("w", "w")]
BROADCASTS = {("r", "m"): "[1]", ("c", "m"): "[0]", ("s", "m"): "[]", ("s", "r"): "[]",
              ("s", "c"): "[]"}
REDUCTIONS = {("m", "r"): "[0]", ("m", "c"): "[1]", ("m", "s"): "[0, 1]",
              ("r", "s"): "[0]", ("c", "s"): "[0]"}


REAL_UNARY = ["tanh %{a}", "sin %{a}", "neg %{a}", "scale %{a}, 5.000000e-01",
              "shift %{a}, 2.500000e-01", "cos %{a}", "pow %{a}, 2.000000e+00"]
COMPLEX_UNARY = ["neg %{a}", "conj %{a}", "scale %{a}, (5.000000e-01, 5.000000e-01)",
                 "shift %{a}, 2.500000e-01"]


def random_program(seed: int, length: int = 14, element: str = "f64") -> str:
    """A random @node on ``element`` (f64 or complex<f64>) tensors."""
    rng = random.Random(seed)
    is_complex = element.startswith("complex")

    def _type(kind: str) -> str:
        dims = "x".join(str(d) for d in SHAPES[kind])
        return f"tensor<{dims}x{element}>" if dims else f"tensor<{element}>"

    pool = [(name, kind) for name, kind in ARGS if kind != "w"]
    lines: list[str] = []
    counter = 0

    def new(kind: str, text: str) -> str:
        nonlocal counter
        name = f"v{counter}"
        counter += 1
        lines.append(f"  %{name} = {text}")
        pool.append((name, kind))
        return name

    while counter < length:
        choice = rng.choice(["unary", "unary", "binary", "binary", "broadcast", "reduce",
                             "dot", "select"])
        a, kind = rng.choice(pool)
        t = _type(kind)
        if choice == "unary":
            op = rng.choice(COMPLEX_UNARY if is_complex else REAL_UNARY)
            new(kind, f"tidu.{op.format(a=a)} : {t}")
            if rng.random() < 0.3 and is_complex:  # i * imag(x): complex -> real -> complex
                imag = new(kind + "?", f"tidu.imag %{pool[-1][0]} : {t}")
                pool.pop()
                new(kind, f"tidu.to_complex %{imag} imaginary : {t.replace(element, 'f64')}")
            elif rng.random() < 0.3:
                tanh = new(kind, f"tidu.tanh %{pool[-1][0]} : {t}")
                new(kind, f"tidu.exp %{tanh} : {t}")
        elif choice == "binary":
            b = rng.choice([n for n, k in pool if k == kind])
            op = rng.choice(["add", "sub", "mul"] if is_complex else ["add", "sub", "mul",
                                                                     "maximum"])
            new(kind, f"tidu.{op} %{a}, %{b} : {t}")
        elif choice == "select":
            b = rng.choice([n for n, k in pool if k == kind])
            direction = "ne" if is_complex else "lt"
            mask = new(kind + "?", f"tidu.compare {direction}, %{a}, %{b} : {t}")
            pool.pop()  # masks are not operands of arithmetic
            new(kind, f"tidu.select %{mask}, %{a}, %{b} : {t}")
        elif choice == "broadcast":
            targets = [dst for src, dst in BROADCASTS if src == kind]
            if targets:
                dst = rng.choice(targets)
                dims = BROADCASTS[(kind, dst)]
                new(dst, f"tidu.broadcast_in_dim %{a}, dims = {dims} : {t} -> {_type(dst)}")
        elif choice == "reduce":
            targets = [dst for src, dst in REDUCTIONS if src == kind]
            if targets:
                dst = rng.choice(targets)
                axes = REDUCTIONS[(kind, dst)]
                new(dst, f"tidu.reduce_sum %{a}, axes = {axes} : {t} -> {_type(dst)}")
        elif choice == "dot" and kind == "m":
            new("m", f"tidu.dot_general %{a}, %w, batch = [] x [], contracting = [1] x [0] "
                     f": {t}, {_type('w')} -> {t}")
    made = [(n, k) for n, k in pool[len(ARGS) - 1:]]
    outputs = [made[-1]] + rng.sample(made[:-1], k=min(2, len(made) - 1))
    args = ", ".join(f"%{n}: {_type(k)}" for n, k in ARGS)
    results = ", ".join(_type(k) for _, k in outputs)
    body = "\n".join(lines)
    returned = ", ".join(f"%{n}" for n, _ in outputs)
    return (f"func.func @node({args}) -> ({results}) {{\n{body}\n"
            f"  func.return {returned} : {results}\n}}\n")


@pytest.mark.parametrize(
    ("element", "fuse"),
    [("f64", ""), ("complex<f64>", ""), ("complex<f64>", "{complex_kernels=true}")],
)
@pytest.mark.parametrize("length", [14, 30])
@pytest.mark.parametrize("seed", range(8))
def test_random_program(ctx: Context, seed: int, length: int, element: str, fuse: str) -> None:
    text = random_program(seed, length, element)
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=SHAPES[kind]) for _, kind in ARGS]
    if element != "f64":
        args = [a + 1j * rng.normal(size=a.shape) for a in args]
    expected = run_reference(parse_module(ctx, text), args)
    module = run_pipeline(
        ctx, parse_module(ctx, text),
        f"canonicalize,cse,dce,tidu-fuse-elementwise{fuse},tidu-lower-to-loops",
    )
    actual = run_node(module, compile_kernels(module), args)
    for got, want in zip(actual, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=text)

"""``simplify_program``: repeated instructions computed once, ``Conj`` of a real value
dropped, nothing merged that the digest tells apart, the arguments kept."""

from __future__ import annotations

from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.compiler.simplify import simplify_program
from tidu_compile.compiler.ssa_program import ArgSource, Instr, NodeProgram
from tidu_compile.ops.base import TensorType

F64 = TensorType((4,), "float64")
C128 = TensorType((4,), "complex128")


def program(instrs: list[tuple[Any, tuple[int, ...]]], arg_types: list[TensorType],
            results: tuple[int | None, ...]) -> NodeProgram:  # fmt: skip
    """A program of one-output ``instrs`` (op, inputs) over ``arg_types`` arguments."""
    types = list(arg_types)
    built = []
    for op, inputs in instrs:
        (out,) = op.infer_types(*(types[i] for i in inputs))
        built.append(Instr(op, inputs, (len(types),)))
        types.append(out)
    sources = tuple(ArgSource("saved", i) for i in range(len(arg_types)))
    return NodeProgram(sources, tuple(types), tuple(built), results)


def evaluate(p: NodeProgram, args: list[np.ndarray]) -> list[np.ndarray | None]:
    values: dict[int, Any] = dict(enumerate(args))
    for instr in p.instrs:
        outs = instr.op.evaluate(*(values[i] for i in instr.inputs))
        values.update(zip(instr.outputs, outs, strict=True))
    return [None if r is None else values[r] for r in p.results]


def constant(value: float) -> ops.Constant:
    return ops.Constant(value, (4,), "float64")


def test_repeated_constants_and_ops_are_computed_once() -> None:
    original = program([(constant(0.1), ()), (constant(0.1), ()), (ops.Mul(), (0, 1)),
                        (ops.Mul(), (0, 1)), (ops.Add(), (2, 4)), (ops.Add(), (5, 3))],
                       [F64, F64], (6, 7))  # fmt: skip
    simple = simplify_program(original)
    assert [type(i.op).__name__ for i in simple.instrs] == ["Constant", "Mul", "Add", "Add"]
    (c,), (m,) = simple.instrs[0].outputs, simple.instrs[1].outputs
    assert [i.inputs for i in simple.instrs[2:]] == [(c, m), (m, c)]
    args = [np.linspace(-1, 1, 4), np.full(4, 0.9)]
    for got, want in zip(evaluate(simple, args), evaluate(original, args), strict=True):
        np.testing.assert_array_equal(got, want)  # type: ignore[arg-type]


def test_signed_zeros_stay_two_constants() -> None:
    """``Constant(0.0)`` and ``Constant(-0.0)`` print apart (Python's floats call them
    equal): the digest tells them apart, and merging them would make a stale answer
    (``x / c``: inf vs -inf)."""
    original = program([(constant(0.0), ()), (constant(-0.0), ()), (ops.Div(), (0, 1)),
                        (ops.Div(), (0, 2))], [F64], (3, 4))  # fmt: skip
    simple = simplify_program(original)
    assert simple is original
    with np.errstate(divide="ignore"):
        inf, minus_inf = evaluate(simple, [np.ones(4)])
    assert np.all(inf == np.inf) and np.all(minus_inf == -np.inf)  # type: ignore[operator]
    same = program([(constant(-0.0), ()), (constant(-0.0), ()), (ops.Div(), (0, 1)),
                    (ops.Div(), (0, 2))], [F64], (3, 4))  # fmt: skip
    assert len(simplify_program(same).instrs) == 2  # one -0.0, one division


def test_conj_of_a_real_value_is_its_operand_and_of_a_complex_one_stays() -> None:
    real = simplify_program(program([(ops.Conj(), (0,)), (ops.Mul(), (1, 2))], [F64, F64],
                                    (3,)))  # fmt: skip
    assert [type(i.op) for i in real.instrs] == [ops.Mul] and real.instrs[0].inputs == (1, 0)
    complex_ = program([(ops.Conj(), (0,)), (ops.Mul(), (1, 2))], [C128, C128], (3,))
    assert simplify_program(complex_) is complex_


def test_the_arguments_stay_and_a_result_may_become_one() -> None:
    """A result that was a real ``Conj`` of an argument is that argument; an argument
    nothing reads any longer is still an argument (the caller passes every one)."""
    original = program([(ops.Conj(), (1,)), (ops.Exp(), (0,)), (ops.Exp(), (0,))],
                       [F64, F64], (2, None, 4))  # fmt: skip
    simple = simplify_program(original)
    assert simple.arg_sources == original.arg_sources
    assert simple.results == (1, None, 2) and len(simple.instrs) == 1
    args = [np.linspace(-1, 1, 4), np.arange(4.0)]
    for got, want in zip(evaluate(simple, args), evaluate(original, args), strict=True):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_array_equal(got, want)  # type: ignore[arg-type]


def test_programs_differing_in_a_zero_s_sign_through_one_executor() -> None:
    """Two ``@tc.function``s whose fused programs differ only in the sign of a repeated
    zero constant (merged in one, kept apart in the other), through one executor in
    sequence: each gradient is the reference's (``arctan2(+-0, -1)`` is ``+-pi``)."""
    import tidu_compile as tc
    from tidu_compile import func
    from tidu_compile.executors.compiled import CompiledExecutor

    def make(c1: float, c2: float) -> Any:
        @tc.function
        def loss(w: tc.Tensor) -> tc.Tensor:
            one = tc.ones_like(w)
            return tc.sum(w * tc.arctan2(one * c1, -one) + w * tc.arctan2(one * c2, -one))

        return loss

    executor = CompiledExecutor(False, background=False)
    w = np.linspace(0.5, 1.5, 8)
    for c1, c2, expected in [(0.0, 0.0, 2 * np.pi), (0.0, -0.0, 0.0), (-0.0, -0.0, -2 * np.pi)]:
        with tc.use_executor(executor):
            _, got = func.value_and_grad(make(c1, c2))(w)
        with tc.use_executor(tc.ReferenceExecutor()):
            _, want = func.value_and_grad(make(c1, c2))(w)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        np.testing.assert_allclose(np.asarray(got), expected, atol=1e-15)
    assert executor.stats.fallbacks == 0 and executor.stats.compiles >= 3


class _Shown:
    """An op that prints only its name, as the custom-call ops do."""

    input_count = 1

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __repr__(self) -> str:
        return "Shown()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Shown) and other.scale == self.scale

    def __hash__(self) -> int:
        return hash(self.scale)

    def infer_types(self, x: TensorType) -> tuple[TensorType, ...]:
        return (x,)

    def evaluate(self, x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (x * self.scale,)


def test_ops_printing_alike_but_unequal_stay_two() -> None:
    apart = program([(_Shown(2.0), (0,)), (_Shown(3.0), (0,))], [F64], (1, 2))
    assert simplify_program(apart) is apart
    merged = simplify_program(program([(_Shown(2.0), (0,)), (_Shown(2.0), (0,))], [F64], (1, 2)))
    assert len(merged.instrs) == 1 and merged.results == (1, 1)

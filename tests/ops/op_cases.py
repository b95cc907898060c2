"""The op table shared by the op tests (in the style of JAX's ``lax_autodiff_test``).

One ``Case`` per (op instance, input shapes/dtypes, input generator). ``CASES`` covers
every standard op in every dtype it supports, at shapes with all-distinct extents
(``2x3x4``) and again at square or repeated ones (``3x3``, ``2x2x2``; the
``EQUAL_EXTENT_*`` tables; see ``has_equal_extents``), and every case of a selection or
index op (max, fmin, reduce_max over each axis, argmax, argsort...) again with ties
(``tie_twins``: inputs from a few levels; the ops found by probing, ``ties.py``).

The cases of the parameterless elementwise ops derive from the op table (``domain``,
``allowed_dtypes``), and so do those of the structural families: every op along an axis
(``ops.AlongAxis``) meets ``ALONG_AXIS_ROWS``, every reduction ``REDUCTION_ROWS``, every
argmax-like op ``ARG_EXTREMUM_ROWS``, each in the dtypes it allows; the ops are made
from the rows' parameters by their fields (``ops.ir_fields.from_ir``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from control_flow_cases import cond_op, scan_op, while_op
from equal_extent_rows import (
    EQUAL_EXTENT_BROADCASTS,
    EQUAL_EXTENT_DOTS,
    EQUAL_EXTENT_DTYPES,
    EQUAL_EXTENT_REDUCES,
    EQUAL_EXTENT_RESHAPES,
    EQUAL_EXTENT_TRANSPOSES,
    SQUARE,
)
from helpers import random_array, widen_dtype
from linalg_cases import ROWS as LINALG_ROWS
from linalg_cases import inputs as linalg_inputs
from ties import can_tie, is_index_op, is_selection, tied_inputs

from tidu_compile import ops
from tidu_compile.ops import (
    COMPLEX_DTYPES,
    DIFFERENTIABLE_DTYPES,
    FLOAT_DTYPES,
    OP_TABLE,
    TensorOp,
)
from tidu_compile.ops.base import INTEGER_DTYPES
from tidu_compile.ops.ir_fields import from_ir

ALL = DIFFERENTIABLE_DTYPES

#: The integer dtypes of the table's cases, where an op allows them (with bool); the
#: others (int8, int16, unsigned) are in ``test_integer_dtypes.py``.
CASE_INTEGER_DTYPES = ("int32", "int64")


@dataclass(frozen=True)
class Arg:
    """One input: shape, dtype and generator kind (see ``helpers.random_array``)."""

    shape: tuple[int, ...]
    dtype: str
    kind: str = "normal"

    @property
    def differentiable(self) -> bool:
        return self.dtype in DIFFERENTIABLE_DTYPES


@dataclass(frozen=True)
class Case:
    name: str
    op: TensorOp
    args: tuple[Arg, ...]
    #: custom input generator (overrides ``args``' kinds), e.g. to avoid ties.
    generate: Callable[[np.random.Generator], list[np.ndarray]] | None = None
    #: The inputs have ties (``tie_twins``): a selection's gradient is JAX's shared one,
    #: which central differences do not give (``ties.shared_gradient``).
    ties: bool = False

    @property
    def id(self) -> str:
        parts = "-".join(f"{_shape(a.shape)}{_short(a.dtype)}" for a in self.args)
        return f"{self.name}-{parts}"

    def inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        if self.generate is not None:
            return self.generate(rng)
        return [random_array(rng, a.shape, a.dtype, a.kind) for a in self.args]

    @property
    def differentiable(self) -> bool:
        """The op has a derivative and some input a tangent (not all integer or bool)."""
        return self.op.differentiable and not self.exact

    @property
    def exact(self) -> bool:
        """Every input is integer or bool: exact values, no tangent anywhere."""
        return not any(a.differentiable for a in self.args)


def _shape(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "s"


def _short(dtype: str) -> str:
    return {"float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128"}.get(
        dtype, dtype
    )


def wide_op(op: TensorOp) -> TensorOp:
    """The same op in double precision (only ``Convert`` carries dtypes)."""
    if isinstance(op, ops.Convert):
        return dataclasses.replace(
            op, dtype=widen_dtype(op.dtype), operand_dtype=widen_dtype(op.operand_dtype)
        )
    return op


def _same(name: str, op: TensorOp, shape: Sequence[int], dtype: str, n: int, kinds=None) -> Case:
    kinds = kinds or ("normal",) * n
    return Case(name, op, tuple(Arg(tuple(shape), dtype, k) for k in kinds))


def _no_ties(shape: tuple[int, ...], dtype: str):
    def generate(rng: np.random.Generator) -> list[np.ndarray]:
        x = rng.standard_normal(shape)
        gap = rng.uniform(0.2, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
        return [x.astype(dtype), (x + gap).astype(dtype)]

    return generate


def _indexed(
    data: tuple[int, ...], bound: tuple[int, ...], index: tuple[int, ...], dtype: str,
    index_dtype: str = "int64",
):
    """Data of ``data`` shape and one index array of ``index`` shape per entry of
    ``bound`` (the indexed dimension's size): repeated and negative indices included."""

    def generate(rng: np.random.Generator) -> list[np.ndarray]:
        arrays = [random_array(rng, data, dtype)]
        for size in bound:
            values = rng.integers(-size, size, index)
            if values.size > 1:  # at least one repeat, and a negative one
                values.flat[-1] = values.flat[0]
                values.flat[1] = -1
            arrays.append(values.astype(index_dtype))
        return arrays

    return generate


def with_zeros(shape: tuple[int, ...], dtype: str, flat: Sequence[int]):
    """Random inputs with zeros at the ``flat`` positions (products and their gradients)."""

    def generate(rng: np.random.Generator) -> list[np.ndarray]:
        x = random_array(rng, shape, dtype)
        x.flat[list(flat)] = 0
        return [x]

    return generate


def table_elementwise() -> list[type[TensorOp]]:
    """The parameterless unary and binary elementwise primitives of the op table: their
    cases derive from the table (dtypes from ``allowed_dtypes``, inputs from ``domain``)."""
    return [
        p for p in OP_TABLE.values()
        if issubclass(p, ops.Elementwise) and p.input_count in (1, 2)
        and not dataclasses.fields(p)  # type: ignore[arg-type]
    ]  # fmt: skip


def _fractional_quotients(shape: tuple[int, ...], dtype: str):
    """``(x, y)`` with ``x / y`` an integer plus [0.2, 0.8]: away from the jumps of mod
    (integers: any ``x``, a nonzero ``y`` of either sign)."""

    def generate(rng: np.random.Generator) -> list[np.ndarray]:
        if np.dtype(dtype).kind in "iu":
            return [random_array(rng, shape, dtype), random_array(rng, shape, dtype, "nonzero")]
        y = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
        quotient = rng.integers(-3, 4, shape) + rng.uniform(0.2, 0.8, shape)
        return [(quotient * y).astype(dtype), y.astype(dtype)]

    return generate


def _both_signs(shape: tuple[int, ...], dtype: str):
    """Magnitudes in [0.5, 2], alternately positive and negative (a scalar is positive):
    both sides of a kink at 0, and never an all-zero gradient."""

    def generate(rng: np.random.Generator) -> list[np.ndarray]:
        signs = np.where(np.arange(int(np.prod(shape))) % 2 == 0, 1.0, -1.0).reshape(shape)
        return [(rng.uniform(0.5, 2.0, shape) * signs).astype(dtype)]

    return generate


def _with_a_zero(shape: tuple[int, ...], dtype: str):
    """Random inputs with a zero at flat position 1 (a product's gradient stays exact)."""
    return with_zeros(shape, dtype, [1])


#: Input generators for table ops whose domain is not enough (min/max need no ties here:
#: their cases with ties are ``tie_twins``), and for family ops whose random inputs miss
#: what they must meet.
SPECIAL_INPUTS: dict[type[TensorOp], Callable[..., Callable[[np.random.Generator], list]]] = {
    ops.Maximum: _no_ties,
    ops.Minimum: _no_ties,
    ops.Fmax: _no_ties,
    ops.Fmin: _no_ties,
    ops.Mod: _fractional_quotients,
    ops.Relu: _both_signs,
    ops.CumProd: _with_a_zero,
}

F64 = ("float64",)

#: The rows of every op along an axis (the scans, argsort): (shape, axis, reverse,
#: dtypes), each in the dtypes the op allows; the rows with ``reverse`` only for an op
#: with that flag. Square shapes and both axes of one: a scan along the wrong axis of
#: a 3x3 array has the right shape.
ALONG_AXIS_ROWS = [
    ((4, 3), 0, False, ALL),
    ((3, 4), 1, False, F64),
    ((2, 5), 1, True, ALL),
    ((2, 3, 3), 1, True, F64),
    ((5,), 0, False, F64),
    ((6, 2), 0, False, F64),
    ((3, 3), 0, False, F64),
    ((3, 3), 1, False, F64),
]
#: The rows of every reduction: (operand shape, axes), square and repeated extents and
#: every axis combination, all in float64 and the third and fourth in the other dtypes
#: the reduction allows (random normals: no ties; the ties: ``tie_twins``).
REDUCTION_ROWS = [
    ((3, 3), (0,)),
    ((3, 3), (1,)),
    ((2, 3, 4), (1,)),
    ((2, 2, 2), (0, 2)),
    ((2, 3, 3), (1, 2)),
    ((2, 3, 4), (0, 1, 2)),
    ((4,), (0,)),
    ((2, 3), ()),
    ((2, 3, 4), (0,)),  # with the rows above: every single axis, distinct extents
    ((2, 3, 4), (2,)),
    ((3, 3, 3), (0,)),  # and equal ones
    ((3, 3, 3), (1,)),
    ((3, 3, 3), (2,)),
]
#: The rows of every argmax-like op: (shape, axis, dtypes); square: the reduced axis is
#: told apart by the values only.
ARG_EXTREMUM_ROWS = [
    ((3, 4), 0, FLOAT_DTYPES),
    ((3, 4), 1, FLOAT_DTYPES),
    ((3, 3), 0, F64),
    ((3, 3), 1, F64),
]


def family(base: type) -> list[type[TensorOp]]:
    """The primitives of the op table in the family of ``base``."""
    return [p for p in OP_TABLE.values() if issubclass(p, base)]


def _case_dtypes(primitive: type[TensorOp], dtypes: Sequence[str]) -> list[str]:
    allowed = getattr(primitive, "allowed_dtypes", DIFFERENTIABLE_DTYPES)
    return [d for d in dtypes if d in allowed]


def _family_case(name: str, op: TensorOp, shape: tuple[int, ...], dtype: str) -> Case:
    special = SPECIAL_INPUTS.get(type(op))
    args = tuple(Arg(shape, dtype) for _ in range(op.input_count))
    return Case(name, op, args, special(shape, dtype) if special else None)


def _family_cases() -> list[Case]:
    """The cases of the structural families, from their rows (module docstring)."""
    cases = []
    for primitive in family(ops.AlongAxis):
        flags = {f.name for f in dataclasses.fields(primitive)}  # type: ignore[arg-type]
        for shape, axis, reverse, dtypes in ALONG_AXIS_ROWS:
            if reverse and "reverse" not in flags:
                continue
            inputs = [shape] * primitive.input_count
            op = from_ir(primitive, {"axis": axis, "reverse": reverse}, inputs, shape)
            name = f"{primitive.mnemonic}{axis}{'_reverse' if reverse else ''}"
            cases += [_family_case(name, op, shape, d) for d in _case_dtypes(primitive, dtypes)]
    for primitive in family(ops.Reduction):
        for dtype in _case_dtypes(primitive, ALL):
            for operand, axes in REDUCTION_ROWS if dtype == "float64" else REDUCTION_ROWS[2:4]:
                op = from_ir(primitive, {"axes": axes}, [operand], ())
                cases.append(_family_case(f"{op.mnemonic}{axes}", op, operand, dtype))
    for primitive in family(ops.ArgExtremum):
        for shape, axis, dtypes in ARG_EXTREMUM_ROWS:
            op = from_ir(primitive, {"axis": axis}, [shape], ())
            cases += [_family_case(f"{op.mnemonic}{axis}", op, shape, d) for d in dtypes]
    return cases


def _build() -> list[Case]:
    cases: list[Case] = []
    add = cases.append

    # ---------------------------------------------------------------- from the op table
    for primitive in table_elementwise():
        generate = SPECIAL_INPUTS.get(primitive)
        kinds = (primitive.domain,) * primitive.input_count
        for dtype in primitive.allowed_dtypes:  # type: ignore[attr-defined]
            if dtype in INTEGER_DTYPES and dtype not in CASE_INTEGER_DTYPES:
                continue
            for shape in ((2, 3), ()) if dtype in ("float64", "complex128") else ((2, 3),):
                args = tuple(Arg(shape, dtype, k) for k in kinds)
                make = generate(shape, dtype) if generate is not None else None
                add(Case(primitive.mnemonic, primitive(), args, make))

    # ---------------------------------------------------------------- select / compare
    for dtype in ALL:
        add(Case("select", ops.Select(), (Arg((2, 3), "bool"), Arg((2, 3), dtype),
                                          Arg((2, 3), dtype))))  # fmt: skip
        add(_same("compare_eq", ops.Compare("eq"), (2, 3), dtype, 2))
    for dtype in FLOAT_DTYPES:
        for direction in ("lt", "ge"):
            add(_same(f"compare_{direction}", ops.Compare(direction), (2, 3), dtype, 2))
    add(_same("compare_ne", ops.Compare("ne"), (3,), "complex128", 2))

    # ---------------------------------------------------------------- unary with parameters
    unary = [
        ("pow2", ops.Pow(2.0), "normal"),
        ("pow3", ops.Pow(3.0), "normal"),
        ("pow0.5", ops.Pow(0.5), "positive"),
        ("pow-1", ops.Pow(-1.0), "nonzero"),
        ("pow1.5", ops.Pow(1.5), "positive"),
        ("pow-2.5", ops.Pow(-2.5), "positive"),
        ("scale", ops.Scale(2.5), "normal"),
        ("shift", ops.Shift(0.75), "normal"),
        ("conj", ops.Conj(), "normal"),
        ("full_like", ops.FullLike(3.0), "normal"),
        ("sincos", ops.SinCos(), "normal"),
    ]
    for dtype in ALL:
        for name, op, kind in unary:
            add(_same(name, op, (2, 3), dtype, 1, (kind,)))
    add(_same("conj", ops.Conj(), (), "complex128", 1))
    for dtype in COMPLEX_DTYPES:
        add(_same("scale_complex", ops.Scale(0.5 - 1.5j), (2, 3), dtype, 1))
        add(_same("real", ops.Real(), (2, 3), dtype, 1))
        add(_same("imag", ops.Imag(), (2, 3), dtype, 1))
    add(_same("real", ops.Real(), (), "complex128", 1))
    add(_same("imag", ops.Imag(), (), "complex128", 1))
    for dtype in FLOAT_DTYPES:
        add(_same("to_complex_re", ops.ToComplex(False), (2, 3), dtype, 1))
        add(_same("to_complex_im", ops.ToComplex(True), (2, 3), dtype, 1))

    # ---------------------------------------------------------------- convert
    for source, target in [
        ("float32", "float64"), ("float64", "float32"),
        ("float32", "complex64"), ("float64", "complex128"),
        ("complex64", "complex128"), ("complex128", "complex64"),
    ]:  # fmt: skip
        add(_same(f"convert_to_{_short(target)}", ops.Convert(target, source), (2, 3), source, 1))

    # ---------------------------------------------------------------- structural
    broadcasts = [
        ((3,), (2, 3), (1,)),
        ((2,), (2, 3), (0,)),
        ((3, 1), (3, 4), (0, 1)),
        ((1, 3), (2, 4, 3), (1, 2)),
        ((1, 1), (1, 3), (0, 1)),
        ((), (2, 3), ()),
        ((2, 3), (2, 3), (0, 1)),
        ((2, 1), (2, 2, 3), (0, 2)),
    ]
    reduces = [
        ((2, 3, 4), (0,)),
        ((2, 3, 4), (1,)),
        ((2, 3, 4), (2,)),
        ((2, 3, 4), (0, 2)),
        ((2, 3, 4), (0, 1, 2)),
        ((3,), (0,)),
        ((2, 3), ()),
    ]
    reshapes = [((2, 3), (3, 2)), ((2, 3), (6,)), ((6,), (1, 2, 3)), ((), (1, 1)),
                ((2, 3, 1), (2, 3))]  # fmt: skip
    transposes = [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 2, 1)),
                  ((3,), (0,))]  # fmt: skip
    dots = [  # name, lhs shape, rhs shape, lhs_c, rhs_c, lhs_b, rhs_b
        ("matmul", (2, 3), (3, 4), (1,), (0,), (), ()),
        ("matmul_lhs_t", (3, 2), (3, 4), (0,), (0,), (), ()),
        ("batched_matmul", (2, 3, 4), (2, 4, 5), (2,), (1,), (0,), (0,)),
        ("inner", (3,), (3,), (0,), (0,), (), ()),
        ("outer", (2,), (3,), (), (), (), ()),
        ("matvec", (2, 3), (3,), (1,), (0,), (), ()),
        ("vecmat", (3,), (3, 4), (0,), (0,), (), ()),
        ("two_contracting", (2, 3, 4), (4, 3, 5), (1, 2), (1, 0), (), ()),
        ("batch_not_leading", (3, 2, 4), (4, 5, 2), (2,), (0,), (1,), (2,)),
        ("two_batch_swapped", (2, 3, 4), (3, 2, 4), (2,), (2,), (0, 1), (1, 0)),
    ]
    # ---------------------------------------------------------------- indexing, joining
    windows = [  # start, step, small shape, big shape (square and repeated extents too)
        ((1,), (2,), (3,), (7,)),
        ((5,), (-1,), (6,), (6,)),
        ((1, 3), (1, -1), (3, 4), (4, 4)),
        ((0, 1, 2), (2, 1, -1), (2, 2, 3), (3, 3, 3)),
        ((0, 0), (1, 1), (2, 3), (2, 3)),
        ((3,), (-3,), (2,), (5,)),
    ]
    joins = [  # axis, operand shapes
        (0, ((2, 3), (4, 3))),
        (1, ((2, 3), (2, 1), (2, 2))),
        (1, ((3, 3), (3, 3))),
        (0, ((2,), (3,), (1,))),
        (2, ((2, 2, 1), (2, 2, 2))),
    ]
    for dtype in ALL:  # every case in f64, a few in the other dtypes (compiles cost time)
        every = dtype == "float64"
        for start, step, small, big in windows if every else windows[1::2]:
            add(_same(f"slice{start}{step}", ops.Slice(start, step, small, big), big, dtype, 1))
            add(_same(f"pad{start}{step}", ops.Pad(start, step, big, small), small, dtype, 1))
        add(_same("pad_value", ops.Pad((1, 0), (1, 2), (4, 5), (2, 3), 1.5), (2, 3), dtype, 1))
        for axis, shapes in joins if every else joins[:2]:
            add(Case(f"concatenate{axis}", ops.Concatenate(axis, shapes),
                     tuple(Arg(s, dtype) for s in shapes)))  # fmt: skip

    gathers = [  # axis, big shape, index shape, index count, index dtype
        (0, (5, 3), (4,), 1, "int64"),
        (1, (2, 4, 3), (2, 3), 1, "int32"),
        (0, (3, 3), (4,), 2, "int64"),
        (1, (3, 4), (), 1, "int64"),
        (0, (4,), (6,), 1, "int64"),
    ]
    for dtype in ALL:
        for axis, big, index, count, index_dtype in gathers if dtype == "float64" else gathers[:1]:
            bound = big[axis : axis + count]
            small = big[:axis] + index + big[axis + count :]
            for op, data in ((ops.Gather(axis, big, index, count), big),
                             (ops.ScatterAdd(axis, big, index, count), small)):  # fmt: skip
                args = (Arg(data, dtype), *(Arg(index, index_dtype) for _ in bound))
                add(Case(op.mnemonic, op, args, _indexed(data, bound, index, dtype, index_dtype)))

    # ---------------------------------------------------------------- structural families
    cases += _family_cases()
    for dtype in ALL:  # a product's gradient at one zero and at two
        add(Case("reduce_prod_one_zero", ops.ReduceProd((1,), (3, 4)), (Arg((3, 4), dtype),),
                 with_zeros((3, 4), dtype, [1])))  # fmt: skip
        add(Case("reduce_prod_two_zeros", ops.ReduceProd((0,), (3, 4)), (Arg((3, 4), dtype),),
                 with_zeros((3, 4), dtype, [1, 9])))  # fmt: skip

    for dtype in ALL:
        cases += _structural(dtype, broadcasts, reduces, reshapes, transposes, dots)

    # ---------------------------------------------------------------- equal extents
    # Square and repeated extents. A rule or kernel that mixes up two axes of the same
    # size (a ReduceSum transpose broadcasting along the wrong axis, a fused broadcast
    # indexed by the wrong loop, a square contraction's cotangent transposed) is wrong
    # only here: the all-distinct shapes above cannot tell the axes apart.
    # Elementwise ops once each (their rules and kernels see no axes; the 2x3 rows cover
    # the dtypes); axis-sensitive ops in real and complex double precision, and the
    # fusible ones (broadcasts and reductions share loop nests) in single precision too.
    sq = SQUARE
    for primitive in table_elementwise():
        allowed = primitive.allowed_dtypes  # type: ignore[attr-defined]
        dtype = "float64" if "float64" in allowed else allowed[0]
        generate = SPECIAL_INPUTS.get(primitive)
        args = tuple(Arg(sq, dtype, primitive.domain) for _ in range(primitive.input_count))
        add(Case(primitive.mnemonic, primitive(), args, generate(sq, dtype) if generate else None))
    add(_same("div", ops.Div(), sq, "complex128", 2, ("normal", "nonzero")))
    add(Case("select", ops.Select(), (Arg(sq, "bool"), Arg(sq, "float64"), Arg(sq, "float64"))))
    add(_same("compare_lt", ops.Compare("lt"), sq, "float64", 2))
    for name, op, kind in unary:
        add(_same(name, op, sq, "float64", 1, (kind,)))
    add(_same("scale_complex", ops.Scale(0.5 - 1.5j), sq, "complex128", 1))
    add(_same("real", ops.Real(), sq, "complex128", 1))
    add(_same("imag", ops.Imag(), sq, "complex128", 1))
    add(_same("to_complex_im", ops.ToComplex(True), sq, "float64", 1))
    add(_same("convert_to_c128", ops.Convert("complex128", "float64"), sq, "float64", 1))
    for dtype in ALL:
        cases += _structural(dtype, EQUAL_EXTENT_BROADCASTS, EQUAL_EXTENT_REDUCES,
                             name_broadcasts=True)  # fmt: skip
    for dtype in EQUAL_EXTENT_DTYPES:
        cases += _structural(dtype, (), (), EQUAL_EXTENT_RESHAPES, EQUAL_EXTENT_TRANSPOSES,
                             EQUAL_EXTENT_DOTS)  # fmt: skip
    for name, op, kinds, shapes, dtypes in LINALG_ROWS:  # square and batched matrices
        for dtype in dtypes:
            args = tuple(Arg(s, dtype) for s in shapes)
            add(Case(name, op, args, linalg_inputs(kinds, shapes, dtype)))
    cases += _control_flow_cases()
    return cases + tie_twins(cases)


def _control_flow_cases() -> list[Case]:
    """Scans (an RNN cell over 3 steps; reversed; saving its history), both branches of
    a cond, and an integer while loop (``control_flow_cases``)."""
    cases = []
    for dtype, options in (("float64", {}), ("float64", {"reverse": True}),
                           ("complex128", {"saves": True})):  # fmt: skip
        op = scan_op((3,), dtype, 3, **options)
        name = "scan" + "".join(f"_{k}" for k in options)
        cases.append(Case(name, op, (Arg((3,), dtype), Arg((3,), dtype), Arg((3, 3), dtype))))
    for pred in (True, False):
        def generate(rng: np.random.Generator, pred: bool = pred) -> list[np.ndarray]:
            a, b = (random_array(rng, (3, 3), "float64") for _ in range(2))
            return [np.array(pred), a, b]

        cases.append(Case(f"cond_{str(pred).lower()}", cond_op((3, 3), "float64"),
                          (Arg((), "bool"), Arg((3, 3), "float64"), Arg((3, 3), "float64")),
                          generate))  # fmt: skip

    def counters(rng: np.random.Generator) -> list[np.ndarray]:
        start = rng.integers(0, 3, (2, 2)).astype(np.int64)
        return [np.array(50, np.int64), np.ones((2, 2), np.int64), start]

    args = (Arg((), "int64"), Arg((2, 2), "int64"), Arg((2, 2), "int64"))
    cases.append(Case("while_loop", while_op((2, 2)), args, counters))
    return cases


def tie_twins(cases: Sequence[Case]) -> list[Case]:
    """Every real case of a selection (each result element one of its inputs: maximum,
    fmax, reduce_max over each axis, ...) or an index op (argmax, argsort) whose result
    elements have two candidates or more, again on inputs with ties (``ties.py``)."""
    twins = []
    for case in cases:
        shapes = [a.shape for a in case.args]
        dtype = case.args[0].dtype
        if dtype not in FLOAT_DTYPES or case.ties or len(shapes) > 2:
            continue
        probe = case.inputs(np.random.default_rng(0))
        if (is_selection(case.op) or is_index_op(case.op, probe)) and can_tie(case.op, shapes):
            def generate(rng: np.random.Generator, op=case.op, shapes=shapes, dtype=dtype):
                return tied_inputs(op, shapes, dtype, rng)

            twins.append(dataclasses.replace(case, name=f"{case.name}_ties", generate=generate,
                                             ties=True))  # fmt: skip
    return twins


def _structural(
    dtype: str,
    broadcasts: Sequence[tuple] = (),
    reduces: Sequence[tuple] = (),
    reshapes: Sequence[tuple] = (),
    transposes: Sequence[tuple] = (),
    dots: Sequence[tuple] = (),
    name_broadcasts: bool = False,
) -> list[Case]:
    """Rows of the shape ops and contractions in ``dtype``, from tables of
    (operand, shape, dims), (operand, axes), (operand, shape), (operand, perm) and
    (name, lhs, rhs, lhs_c, rhs_c, lhs_b, rhs_b). ``name_broadcasts`` puts the result
    shape and dims in a broadcast's name (two may share an operand shape)."""
    rows = []
    for operand, shape, dims in broadcasts:
        name = f"broadcast_in_dim_to{_shape(shape)}_dims{dims}" if name_broadcasts else (
            "broadcast_in_dim")  # fmt: skip
        rows.append(_same(name, ops.BroadcastInDim(shape, dims, operand), operand, dtype, 1))
    for operand, axes in reduces:
        rows.append(_same(f"reduce_sum{axes}", ops.ReduceSum(axes, operand), operand, dtype, 1))
    for operand, shape in reshapes:
        rows.append(_same(f"reshape_to{shape}", ops.Reshape(shape, operand), operand, dtype, 1))
    for operand, perm in transposes:
        rows.append(_same(f"transpose{perm}", ops.Transpose(perm), operand, dtype, 1))
    for name, lhs, rhs, lc, rc, lb, rb in dots:
        op = ops.DotGeneral(lc, rc, lb, rb, lhs, rhs)
        rows.append(Case(name, op, (Arg(lhs, dtype), Arg(rhs, dtype))))
    return rows


def has_equal_extents(case: Case) -> bool:
    """True if two dims of one argument, or of the op's first result, have the same size."""
    shapes = [a.shape for a in case.args]
    if isinstance(case.op, ops.BroadcastInDim):
        shapes.append(tuple(case.op.shape))
    return any(len(set(s)) < len(s) for s in shapes)


CASES: list[Case] = _build()
DIFFERENTIABLE_CASES = [c for c in CASES if c.differentiable]
NON_DIFFERENTIABLE_CASES = [c for c in CASES if not c.differentiable]


def params(cases: Sequence[Case]):
    import pytest

    return [pytest.param(c, id=c.id) for c in cases]

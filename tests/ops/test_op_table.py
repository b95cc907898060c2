"""The op table is complete: every primitive has what each layer needs of it.

``ops.OP_TABLE`` is the one source; these tests fail, naming the op, when a primitive
lacks a dialect op, a lowering row or a library marker (``library_call``), its
frontend functions, or, for a structural op, its oracle or a faithful dialect op (its
test cases: ``test_op_autodiff.test_case_table_covers_every_op_class``).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from op_cases import CASES, Case
from tidu_compile.dialects import tidu
from tidu_compile.dialects.tidu_base import ElementwiseOperation
from tidu_compile.passes.tidu_complex_lowering import COMPLEX_LOWERINGS
from tidu_compile.passes.tidu_fusion_access import EMBED_OPS, VIEW_OPS
from tidu_compile.passes.tidu_scalar_lowering import SCALAR_LOWERINGS
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer

import tidu_compile as tc
from tidu_compile import ops
from tidu_compile.compiler.plan_builder import LIBRARY_BY_DESIGN
from tidu_compile.ops import OP_TABLE, TensorOp

PRIMITIVES = list(OP_TABLE.values())
#: The primitives whose dialect op is made from their fields (``tidu_structural``).
STRUCTURAL = [p for p in PRIMITIVES if issubclass(tidu.op_class(p), tidu.StructuralOperation)]


@pytest.mark.parametrize("primitive", PRIMITIVES, ids=lambda p: p.mnemonic)
def test_every_primitive_has_its_dialect_op(primitive: type[ops.TensorOp]) -> None:
    op = tidu.op_class(primitive)
    assert op.name == f"tidu.{primitive.mnemonic}"
    assert tidu.primitive_class(op) is primitive


@pytest.mark.parametrize("primitive", STRUCTURAL, ids=lambda p: p.mnemonic)
def test_every_structural_primitive_has_an_oracle(primitive: type[TensorOp]) -> None:
    """The op tests check ``evaluate`` against it (``test_op_autodiff``)."""
    assert primitive.oracle is not TensorOp.oracle, (
        f"{primitive.__name__} has no oracle: write one in its block (plain numpy, apart "
        "from evaluate)"
    )


def _through_the_dialect(case: Case) -> TensorOp:
    """``case.op`` imported into its dialect op, printed, parsed back and exported."""
    types = [tidu.tensor_type(a.shape, a.dtype) for a in case.args]
    block = Block(arg_types=types)
    outs = case.op.infer_types(*(ops.TensorType(a.shape, a.dtype) for a in case.args))
    results = [tidu.tensor_type(out.shape, out.dtype) for out in outs]
    op_class = tidu.op_class(type(case.op))
    assert issubclass(op_class, tidu.StructuralOperation)
    block.add_ops([op := op_class.of_primitive(case.op, block.args, results),
                   func.ReturnOp(*op.results)])  # fmt: skip
    module = ModuleOp([func.FuncOp("f", (types, results), Region(block))])
    module.verify()
    text = io.StringIO()
    Printer(stream=text).print_op(module)
    context = Context()
    for dialect in (Builtin, func.Func, tidu.Tidu):
        context.load_dialect(dialect)
    parsed = Parser(context, text.getvalue()).parse_module()
    parsed.verify()
    (back,) = (o for o in parsed.walk() if isinstance(o, tidu.StructuralOperation))
    return back.to_primitive()


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id) for c in CASES
             if issubclass(tidu.op_class(type(c.op)), tidu.StructuralOperation)
             and not isinstance(c.op, ops.ControlFlow)],  # traced bodies: not in the text
)
def test_every_structural_op_survives_its_dialect_op(case: Case) -> None:
    """Import, print, parse and export give back the same primitive: its fields are all
    in the dialect op."""
    assert _through_the_dialect(case) == case.op, case.id


#: Elementwise ops that run as numpy library calls (counted in ``stats.fallbacks``) on
#: complex values, for want of a complex lowering row. A new op joins this list only on
#: purpose: the test below fails for any other complex-capable op without a row.
COMPLEX_LIBRARY_CALLS = {
    "log", "sin", "cos", "tanh", "sqrt", "sincos", "pow", "log1p", "expm1",
    "log2", "log10", "exp2", "tan", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
    "arctanh", "power",
}  # fmt: skip


def _accepts(primitive: type[ops.TensorOp], dtypes: tuple[str, ...]) -> bool:
    allowed = getattr(primitive, "allowed_dtypes", ops.DIFFERENTIABLE_DTYPES)
    return any(d in allowed for d in dtypes)


@pytest.mark.parametrize("primitive", PRIMITIVES, ids=lambda p: p.mnemonic)
def test_every_primitive_is_compiled_somewhere(primitive: type[ops.TensorOp]) -> None:
    """In a kernel (an elementwise op with a lowering row for every element type it
    takes; views such as broadcasts, slices and concatenations as operand maps; embeds
    such as reductions and pads as result maps) or, by design, as a library call
    between kernels."""
    op = tidu.op_class(primitive)
    if not issubclass(op, ElementwiseOperation):
        assert issubclass(op, (*VIEW_OPS, *EMBED_OPS, *LIBRARY_BY_DESIGN)), op.name
        return
    name = primitive.__name__
    real_in_real_out = primitive is not ops.ToComplex
    if real_in_real_out and _accepts(primitive, ops.FLOAT_DTYPES):
        assert primitive in SCALAR_LOWERINGS, f"{name} has no lowering row for real values"
    if _accepts(primitive, ops.COMPLEX_DTYPES) and primitive.mnemonic not in COMPLEX_LIBRARY_CALLS:
        assert primitive in COMPLEX_LOWERINGS, f"{name} has no lowering row for complex values"


@pytest.mark.parametrize(
    ("name", "primitive"),
    [(name, p) for p in PRIMITIVES for name in p.numpy_names],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_numpy_names_are_frontend_functions(name: str, primitive: type[ops.TensorOp]) -> None:
    function = getattr(tc, name)
    assert name in tc.__all__
    args = [tc.tensor(np.full(3, 1.5))] * primitive.input_count
    with np.errstate(invalid="ignore"):  # arcsin(1.5) is NaN
        result = function(*args)
        expected = primitive().evaluate(*(np.full(3, 1.5),) * primitive.input_count)[0]
    np.testing.assert_allclose(result.numpy(), expected)


def test_mnemonics_and_domains_are_checked_at_definition() -> None:
    with pytest.raises(ValueError, match="mnemonic 'exp' is taken by Exp"):

        @ops.primitive
        class Exp(ops.Unary):  # noqa: F811 - a clash on purpose
            numpy_fn = np.exp

    with pytest.raises(ValueError, match="domain"):

        @ops.primitive
        class Odd(ops.Unary):
            domain = "everywhere"
            numpy_fn = np.exp

    assert "odd" not in OP_TABLE and OP_TABLE["exp"] is ops.Exp

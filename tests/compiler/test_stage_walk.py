"""The stage table is the only pipeline: the executor's compile is a walk of it
(``compiler.stages.walk``), so its timings are the table's stages, a program whose
object code is known walks only up to ``kernels``, and a stage edited in the table
changes the code the executor compiles."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tidu_compile.tools.dump import backward_nodes

import tidu_compile as tc
from tidu_compile.backend.elf import read_elf_symbols
from tidu_compile.compiler import pipeline, stages
from tidu_compile.compiler.native import program_digest
from tidu_compile.compiler.objects import ObjectStore
from tidu_compile.compiler.ssa_program import NodeProgram
from tidu_compile.compiler.stages import route, stage, stages_between


def sin_program(rows: int) -> NodeProgram:
    """The backward program of ``sin`` in ``sum(sin(x))``: one kernel computing ``cos``."""
    x = tc.tensor(np.linspace(-1.0, 1.0, rows), requires_grad=True)
    node = backward_nodes(tc.sum(tc.sin(x)))[1]
    assert "Sin" in node.title()
    return node.program()


def names(between: tuple[stages.Stage, ...]) -> list[str]:
    return [s.name for s in between]


def test_the_executors_stage_seconds_are_the_stages_it_walks() -> None:
    objects = ObjectStore(None)
    first, other_size = sin_program(64), sin_program(48)
    artifact, generated = pipeline.compile_program(first, program_digest(first), objects)
    assert generated
    assert list(artifact.stage_seconds) == names(route("program", "codegen"))
    assert "asm" not in artifact.stage_seconds  # codegen is made from opt-ir, as asm is
    assert "llvm" not in artifact.stage_seconds  # llvm-ir is written from the kernels
    reused, generated = pipeline.compile_program(other_size, program_digest(other_size), objects)
    assert not generated and reused.object_code == artifact.object_code
    assert list(reused.stage_seconds) == names(stages_between("program", "kernels"))


def test_a_stage_edited_in_the_table_changes_what_the_executor_compiles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def compiled() -> tuple[bytes, tuple[str, ...]]:
        program = sin_program(32)
        artifact, _ = pipeline.compile_program(program, program_digest(program))
        assert artifact.object_code is not None
        return artifact.object_code, read_elf_symbols(artifact.object_code)[1]

    # expanded: the polynomial's guarded function (``backend.trig_guard``), whose slow
    # path is scalar libm ``cos`` (arguments past the polynomial's range)
    code, undefined = compiled()
    assert b"tidu_math_cos_f64" in code
    assert [s for s in undefined if "cos" in s] == ["cos"]
    loops = stage("loops")
    unexpanded = dataclasses.replace(loops, passes=loops.passes[:1])
    edited = tuple(unexpanded if s is loops else s for s in stages.PIPELINE)
    monkeypatch.setattr(stages, "PIPELINE", edited)
    code, undefined = compiled()
    assert b"tidu_math_cos" not in code
    assert any("cos" in symbol for symbol in undefined)  # libm's cos, or libmvec's


def test_a_walk_goes_only_where_the_table_leads() -> None:
    assert names(stages_between("node", "transposed")) == ["transposed"]  # read off the node
    assert names(stages_between("llvm", "asm")) == ["llvm-ir", "opt-ir", "asm"]
    with pytest.raises(ValueError, match="'codegen' is not made from 'asm'"):
        stages_between("asm", "codegen")
    with pytest.raises(ValueError, match="'tidu' is not made from 'transposed'"):
        stages_between("transposed", "tidu")  # the executor starts from the program
    with pytest.raises(ValueError, match="'tidu' comes before stage 'loops'"):
        stages_between("loops", "tidu")
    for each in stages.PIPELINE:
        assert each.run is not None or each.passes, f"{each.name}: nothing makes it"


@pytest.mark.parametrize(("setting", "verified"), [("1", ["tidu", "fused", "loops"]),
                                                   (None, ["tidu"])])  # fmt: skip
def test_the_compile_path_verifies_the_imported_module_and_by_setting_every_stage(
    monkeypatch: pytest.MonkeyPatch, setting: str | None, verified: list[str]
) -> None:
    """``TIDU_COMPILE_VERIFY=1`` (the suite's setting) verifies each MLIR stage's result
    the executor walks (not ``llvm``: its LLVM IR is written from the kernels); unset,
    only the ``tidu`` module (the ops' contract), and the object code is the same."""
    from xdsl.dialects.builtin import ModuleOp

    seen: list[str] = []
    original_verify = ModuleOp.verify

    def counted(module: ModuleOp, verify_nested_ops: bool = True) -> None:
        text = str(module)
        seen.append("llvm" if "llvm.func" in text else "loops" if "scf.for" in text
                    else "fused" if "tidu.kernel" in text else "tidu")  # fmt: skip
        original_verify(module, verify_nested_ops)

    if setting is None:
        monkeypatch.delenv(pipeline.VERIFY_ENV, raising=False)
    else:
        monkeypatch.setenv(pipeline.VERIFY_ENV, setting)
    monkeypatch.setattr(ModuleOp, "verify", counted)
    program = sin_program(40)
    artifact, generated = pipeline.compile_program(program, program_digest(program))
    assert generated and seen == verified
    monkeypatch.setenv(pipeline.VERIFY_ENV, "1")
    again, _ = pipeline.compile_program(program, program_digest(program))
    assert again.object_code == artifact.object_code


def test_the_imported_module_verifies_each_op_signature_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``verify_imported`` runs an op's verifier once per signature (class, types,
    properties, parent) and still rejects a wrong op among verified ones of its class."""
    from tidu_compile.dialects import tidu
    from xdsl.ir import Operation
    from xdsl.utils.exceptions import VerifyException

    from tidu_compile.compiler import to_tidu

    monkeypatch.setattr(to_tidu, "_VERIFIED", {})
    module = to_tidu.import_program(sin_program(8), "node")
    block = module.ops.first.body.block  # type: ignore[union-attr]
    x = block.args[0]
    for _ in range(5):
        block.insert_op_before(tidu.MulOp(x, x), block.last_op)  # type: ignore[arg-type]
    verified: list[str] = []
    original = Operation.verify

    def counted(op: Operation, verify_nested_ops: bool = True) -> None:
        verified.append(op.name)
        original(op, verify_nested_ops)

    monkeypatch.setattr(Operation, "verify", counted)
    to_tidu.verify_imported(module)
    assert verified.count("tidu.mul") == 1 and verified.count("func.return") == 1
    wrong = tidu.MulOp.create(operands=[x, x], result_types=[tidu.tensor_type((4,), "float64")])
    block.insert_op_before(wrong, block.last_op)
    with pytest.raises(VerifyException, match="shape"):
        to_tidu.verify_imported(module)

"""Fixtures for the tidu dialect tests: parse, print, round-trip and verify IR text."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest
from tidu_compile.dialects.tidu import Tidu
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

# Function arguments available to every snippet wrapped by `IR.wrap`.
ARGS = {
    "x": "tensor<4x8xf64>",
    "y": "tensor<4x8xf64>",
    "f": "tensor<4x8xf32>",
    "v": "tensor<8xf64>",
    "z": "tensor<4xcomplex<f64>>",
    "w": "tensor<4xcomplex<f32>>",
    "s": "tensor<4xf32>",
    "m": "tensor<4x8xi1>",
    "mz": "tensor<4xi1>",
    "e": "tensor<f64>",
    "d": "tensor<?xf64>",
    "i": "tensor<4xi32>",
    "n": "tensor<4xi64>",
    "k": "tensor<2x3x4xf64>",
    "l": "tensor<2x4x5xf64>",
    "q": "tensor<8x8xf64>",
    "u": "tensor<1x8xf64>",
    "a": "f64",
    "b": "f32",
    "c": "complex<f64>",
    "p": "i1",
}


@dataclass
class IR:
    """Parse, print and verify helpers on one context with builtin, func and tidu."""

    ctx: Context

    def wrap(self, body: str) -> str:
        args = ", ".join(f"%{name}: {type_}" for name, type_ in ARGS.items())
        return f"func.func @f({args}) {{\n{body}\n  func.return\n}}"

    def parse(self, text: str) -> ModuleOp:
        return Parser(self.ctx, text).parse_module()

    def print(self, op: Operation, generic: bool = False) -> str:
        stream = io.StringIO()
        Printer(stream=stream, print_generic_format=generic).print_op(op)
        return stream.getvalue()

    def round_trip(self, text: str, generic: bool, verify: bool = True) -> str:
        """parse -> print -> parse -> print; both prints must agree. Returns the print."""
        module = self.parse(text)
        if verify:
            module.verify()
        first = self.print(module, generic)
        again = self.parse(first)
        if verify:
            again.verify()
        second = self.print(again, generic)
        assert first == second
        return first

    def verify_error(self, text: str) -> str:
        """The message of the VerifyException raised when verifying `text`."""
        module = self.parse(text)
        with pytest.raises(VerifyException) as info:
            module.verify()
        return str(info.value)


@pytest.fixture(scope="session")
def ir() -> IR:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(Tidu)
    return IR(ctx)

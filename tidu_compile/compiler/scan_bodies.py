"""The compiler's side of ``tidu-lower-control`` (``passes/tidu_lower_control.py``).

The pass makes a ``tidu.scan`` one kernel from its body's kernels, so it lowers the body
through the stages as any program; a pass cannot import the compiler, which sits above
the passes, so the stage table installs this object in the pass module before its
first pass runs (``compiler.stages.available_passes``, giving it its own ``walk``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tidu_compile.compiler.plan import KernelStep
from tidu_compile.compiler.plan_builder import build_plan, kernel_functions, node_function
from tidu_compile.compiler.program import UnsupportedNode, graph_program
from tidu_compile.compiler.to_tidu import primitive_of
from tidu_compile.passes import tidu_lower_control
from tidu_compile.passes.tidu_lower_control import NotLowered

__all__ = ["CompilerScanBodies", "install"]


class CompilerScanBodies:
    """``tidu_lower_control.ScanBodies`` by the compiler's own stages: ``to_loops(program)``
    is the ``loops``-stage module of a program (``compiler.stages.walk``)."""

    def __init__(self, to_loops: Callable[[Any], ModuleOp]) -> None:
        self.to_loops = to_loops

    def lower(self, body: Any) -> ModuleOp:
        try:
            program = graph_program(body.recorded, body.input_types)
        except UnsupportedNode as error:
            raise NotLowered(f"the body has no program: {error}") from None
        module = self.to_loops(program)
        for step in build_plan(module, program).steps:
            if isinstance(step, KernelStep) and step.status_output >= 0:
                raise NotLowered(f"the body has a kernel with a status: {step.symbol}")
        return module

    def kernel_functions(self, module: ModuleOp) -> list[func.FuncOp]:
        return list(kernel_functions(module))

    def node_function(self, module: ModuleOp) -> func.FuncOp:
        return node_function(module)

    def primitive_of(self, op: Operation) -> Any:
        return primitive_of(op)



def install(to_loops: Callable[[Any], ModuleOp]) -> None:
    """Give ``tidu-lower-control`` the compiler's side (``compiler.stages`` calls it)."""
    tidu_lower_control.SCAN_BODIES = CompilerScanBodies(to_loops)

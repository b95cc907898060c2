"""tidu_compile: the tidu AD model in Python, with backward passes compiled to native code.

Everything in DESIGN.md's public contract is importable from here.
"""

from typing import Any

from tidu_compile import (
    autograd,  # torch.autograd's names (Function)
    func,  # noqa: E402 - the transforms build on everything above
    optim,  # torch.optim's optimizers, each step one compiled program
)
from tidu_compile.ad import (
    ADKey,
    ADRuleError,
    ADRuleKind,
    LinearizedGraph,
    Name,
    Primitive,
    PrimitiveBuilder,
    PrimitiveGraph,
    linear_transpose,
    linear_transpose_with_builder,
    linearize,
)
from tidu_compile.eager import (
    BackwardExecutor,
    EagerInput,
    EagerOutput,
    RecordedGraph,
    Recorder,
    Trace,
    backward,
)
from tidu_compile.eager_keys import KeySource
from tidu_compile.evaluation import evaluate_graph
from tidu_compile.executors.reference import ReferenceExecutor
from tidu_compile.frontend import (
    FUNCTIONS,
    Tensor,
    TracedValueError,
    enable_grad,
    function,
    get_default_executor,
    grad,
    is_grad_enabled,
    no_grad,
    set_default_executor,
    set_grad_enabled,
    tensor,
    use_executor,
)
from tidu_compile.frontend.control_flow import cond, fori_loop, scan, while_loop
from tidu_compile.frontend.custom_rules import custom_jvp, custom_vjp
from tidu_compile.frontend.state import install_default_executor
from tidu_compile.graph import (
    Derived,
    External,
    Graph,
    GraphBuilder,
    Input,
    InputDef,
    Linearized,
    Local,
    OperationKey,
    OperationNode,
    Primary,
    PrimitiveValue,
    ProducedDef,
    ResolvedView,
    ValueNode,
    resolve,
)
from tidu_compile.version import __version__ as __version__

globals().update(FUNCTIONS)  # exp, sum, matmul, where, ...: see tidu_compile.frontend


def _default_executor() -> BackwardExecutor:
    """The process's default executor, made on first use: a ``CompiledExecutor``, or the
    ``ReferenceExecutor`` where the compiler cannot be imported."""
    try:
        from tidu_compile.executors.compiled import CompiledExecutor
    except ImportError:
        return ReferenceExecutor()
    return CompiledExecutor()


install_default_executor(_default_executor)  # the frontend imports no executor

__all__ = [
    "ADKey", "ADRuleError", "ADRuleKind", "BackwardExecutor", "Derived", "EagerInput",
    "EagerOutput", "External", "Graph", "GraphBuilder", "Input", "InputDef", "KeySource",
    "Linearized", "LinearizedGraph", "Local", "Name", "OperationKey", "OperationNode", "Primary",
    "Primitive", "PrimitiveBuilder", "PrimitiveGraph", "PrimitiveValue", "ProducedDef",
    "RecordedGraph", "Recorder", "ReferenceExecutor", "ResolvedView", "Tensor", "Trace",
    "TracedValueError",
    "ValueNode", "backward", "enable_grad", "evaluate_graph", "function",
    "get_default_executor", "grad", "func", "is_grad_enabled", "linear_transpose",
    "linear_transpose_with_builder", "linearize", "no_grad", "resolve",
    "set_default_executor", "set_grad_enabled", "tensor", "use_executor", *FUNCTIONS,
    # control flow (tidu_compile.frontend.control_flow)
    "cond", "fori_loop", "scan", "while_loop",
]  # fmt: skip
__all__ += ["autograd", "custom_jvp", "custom_vjp"]  # custom rules
__all__ += ["optim"]  # torch.optim's optimizers (issue 22)
__all__ += ["vmap"]  # func.vmap, where jax has it (jax.vmap)

vmap = func.vmap


def __getattr__(name: str) -> Any:
    """``CompiledExecutor`` (and its error) import lazily: llvmlite and xDSL load on first use.

    (Typed ``Any``: for a type checker, the functions generated from the op table, which
    this module's namespace holds at run time, are reached through here.)
    """
    if name in ("CompiledExecutor", "CompileForbiddenError", "ExecutorStats"):
        from tidu_compile.executors import compiled

        return getattr(compiled, name)
    raise AttributeError(f"module 'tidu_compile' has no attribute {name!r}")

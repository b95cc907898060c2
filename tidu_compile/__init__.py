"""tidu_compile: the tidu AD model in Python, with backward passes compiled to native code.

Everything in DESIGN.md's public contract is importable from here.
"""

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
    KeySource,
    RecordedGraph,
    Recorder,
    Trace,
    backward,
)
from tidu_compile.executors.reference import ReferenceExecutor, evaluate_graph
from tidu_compile.frontend import (
    Tensor,
    add,
    broadcast_to,
    conj,
    cos,
    divide,
    exp,
    function,
    get_default_executor,
    grad,
    imag,
    log,
    matmul,
    maximum,
    mean,
    multiply,
    negative,
    no_grad,
    power,
    real,
    reshape,
    set_default_executor,
    sin,
    sincos,
    sqrt,
    subtract,
    sum,
    tanh,
    tensor,
    transpose,
    use_executor,
    where,
)  # fmt: skip
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

__version__ = "0.1.0"

__all__ = [
    "ADKey", "ADRuleError", "ADRuleKind", "BackwardExecutor", "Derived", "EagerInput",
    "EagerOutput", "External", "Graph", "GraphBuilder", "Input", "InputDef", "KeySource",
    "Linearized", "LinearizedGraph", "Local", "Name", "OperationKey", "OperationNode", "Primary",
    "Primitive", "PrimitiveBuilder", "PrimitiveGraph", "PrimitiveValue", "ProducedDef",
    "RecordedGraph", "Recorder", "ReferenceExecutor", "ResolvedView", "Tensor", "Trace",
    "ValueNode", "add", "backward", "broadcast_to", "conj", "cos", "divide", "evaluate_graph",
    "exp", "function",
    "get_default_executor", "grad", "imag", "linear_transpose", "linear_transpose_with_builder",
    "linearize", "log", "matmul", "maximum", "mean", "multiply", "negative", "no_grad", "power",
    "real", "reshape", "resolve", "set_default_executor", "sin", "sincos", "sqrt", "subtract",
    "sum", "tanh", "tensor", "transpose", "use_executor", "where",
]  # fmt: skip


def __getattr__(name: str) -> object:
    """``CompiledExecutor`` (and its error) import lazily: llvmlite and xDSL load on first use."""
    if name in ("CompiledExecutor", "CompileForbiddenError", "ExecutorStats"):
        from tidu_compile.executors import compiled

        return getattr(compiled, name)
    raise AttributeError(f"module 'tidu_compile' has no attribute {name!r}")

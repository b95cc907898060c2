"""Text and Graphviz renderings of graphs (the ``graph``/``linear``/``transposed`` stages).

Text form, one line per operation, values named by local id::

    graph(%0: in0, %1: in1) {
      %2 = Mul() [linear 1 0] (%0, ext:Cos()#0)
      outputs (%2)
    }

``ext:`` marks a value of a parent graph (an ``External`` reference), shown by the op
that produces it; ``[linear 1 0]`` is the role's active mask (absent for ``Primary``).
"""

from __future__ import annotations

from tidu_compile.graph import Derived, Graph, Linearized, Local, PrimitiveValue, ValueKey

__all__ = ["graph_to_dot", "graph_to_text"]


def _key_label(key: ValueKey) -> str:
    if isinstance(key, Derived):
        return f"{key.operation.operation!r}#{key.output_slot}"
    return str(key.key)


def _ref(graph: Graph, ref: PrimitiveValue) -> str:
    return f"%{ref.id}" if isinstance(ref, Local) else f"ext:{_key_label(ref.key)}"


def graph_to_text(graph: Graph, name: str = "graph") -> str:
    """A readable listing of ``graph``."""
    inputs = ", ".join(f"%{i}: {_key_label(graph.values[i].key)}" for i in graph.inputs)
    lines = [f"{name}({inputs}) {{"]
    for node in graph.operations:
        outs = ", ".join(f"%{o}" for o in node.outputs)
        role = ""
        if isinstance(node.role, Linearized):
            role = " [linear " + " ".join(str(int(b)) for b in node.role.active_mask) + "]"
        args = ", ".join(_ref(graph, r) for r in node.inputs)
        lines.append(f"  {outs} = {node.operation!r}{role} ({args})")
    lines.append("  outputs (" + ", ".join(f"%{o}" for o in graph.outputs) + ")")
    lines.append("}")
    return "\n".join(lines)


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def graph_to_dot(graph: Graph, name: str = "graph") -> str:
    """A Graphviz ``digraph``: ops are boxes (dashed for residuals), inputs ellipses."""
    lines = [f'digraph "{_dot_escape(name)}" {{', "  rankdir=TB;"]
    for i in graph.inputs:
        label = _dot_escape(_key_label(graph.values[i].key))
        lines.append(f'  v{i} [shape=ellipse, label="{label}"];')
    externals: dict[str, str] = {}
    producer_of: dict[int, int] = {}
    for index, node in enumerate(graph.operations):
        style = "solid" if isinstance(node.role, Linearized) else "dashed"
        label = _dot_escape(repr(node.operation))
        lines.append(f'  op{index} [shape=box, style={style}, label="{label}"];')
        for o in node.outputs:
            producer_of[o] = index
    for index, node in enumerate(graph.operations):
        for ref in node.inputs:
            if isinstance(ref, Local):
                source = f"op{producer_of[ref.id]}" if ref.id in producer_of else f"v{ref.id}"
            else:
                label = _key_label(ref.key)
                source = externals.setdefault(label, f"ext{len(externals)}")
            lines.append(f"  {source} -> op{index};")
    for label, node_id in externals.items():
        lines.append(f'  {node_id} [shape=note, label="{_dot_escape(label)}"];')
    for position, o in enumerate(graph.outputs):
        source = f"op{producer_of[o]}" if o in producer_of else f"v{o}"
        lines.append(f'  out{position} [shape=plaintext, label="output {position}"];')
        lines.append(f"  {source} -> out{position};")
    lines.append("}")
    return "\n".join(lines)

"""Slices, pads, gathers and scatter-adds fuse into their neighbours' kernels: the
backward of a composite node with indexing is ONE kernel, nothing copied (the fused
and loops stages of the real pipeline)."""

from __future__ import annotations

import re

import numpy as np
from tidu_compile.tools.dump import backward_nodes, stage_text

import tidu_compile as tc


def _only_node(loss: tc.Tensor):  # type: ignore[no-untyped-def]
    nodes = backward_nodes(loss)
    assert len(nodes) == 1
    return nodes[0]


def test_shifted_product_backward_is_one_kernel() -> None:
    """tanh(x[1:] * y[:-1]): the slices are operand maps (``0+1``), the pads of the
    cotangents result maps with a fill; no slice or pad is left, nothing else runs."""

    @tc.function
    def loss(x, y):
        return tc.sum(tc.tanh(x[1:] * y[:-1]))

    x = tc.tensor(np.linspace(-1, 1, 9), requires_grad=True)
    y = tc.tensor(np.linspace(0, 2, 9), requires_grad=True)
    node = _only_node(loss(x, y))
    fused = stage_text(node, "fused")
    assert fused.count("tidu.kernel ins(") == 1
    assert "tidu.slice" not in fused and "tidu.pad" not in fused
    header = next(line for line in fused.splitlines() if "tidu.kernel ins(" in line)
    operands, results = header.split(" -> ")
    assert "domain [8]" in operands and "[0+1]" in operands, header  # x[1:] read in place
    assert sorted(re.findall(r"\[[0-9+]+\] fill 0\.0+e\+00", results)) == [
        "[0+1] fill 0.000000e+00", "[0] fill 0.000000e+00",
    ], header  # dx = pad(..., 1 + i), dy = pad(..., i): written in place, the rest 0
    loops = stage_text(node, "loops")
    node_function = loops.split("func.func")[1]  # the node: one call, no library op
    assert node_function.count("func.call") == 1 and " = tidu." not in node_function


def test_gather_and_its_scatter_add_are_one_kernel() -> None:
    """tanh(x[idx]) with repeated indices: the backward reads x through the indices,
    computes tanh', and adds into the cotangent of x at the same indices."""

    @tc.function
    def loss(x, idx):
        return tc.sum(tc.tanh(x[idx]))

    x = tc.tensor(np.linspace(-1, 1, 15).reshape(5, 3), requires_grad=True)
    node = _only_node(loss(x, tc.tensor(np.array([0, 4, 4, -1, 2, 0]))))
    fused = stage_text(node, "fused")
    assert fused.count("tidu.kernel ins(") == 1
    assert "tidu.gather" not in fused and "tidu.scatter_add" not in fused
    header = next(line for line in fused.splitlines() if "tidu.kernel ins(" in line)
    assert re.search(r"domain \[6, 3\] maps .*\[in(\d), 1\].* -> \[\[in\1, 1\]\]", header), header

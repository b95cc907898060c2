"""``tidu-fuse-elementwise`` keeps every kernel within ``KERNEL_ARITY_LIMIT`` operands.

The runtime calls a kernel with one ctypes argument per buffer, and ctypes takes at most
1024: a long sum of distinct inputs (a whole tape captured as one program, a segment
taking its constants as inputs) once made one kernel of 1,591 operands, which failed to
bind. With the limit made 6 here, a chain of five adds over six inputs becomes several
kernels, each within the limit, computing the same sum.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from tidu_compile.dialects.tidu import KernelOp
from tidu_compile.passes import tidu_fusion_groups
from tidu_pass_support import compile_kernels, run_node, run_pipeline
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

CHAIN = """
func.func @node(%a0: tensor<4xf64>, %a1: tensor<4xf64>, %a2: tensor<4xf64>,
                %a3: tensor<4xf64>, %a4: tensor<4xf64>, %a5: tensor<4xf64>) -> tensor<4xf64> {
  %s1 = tidu.add %a0, %a1 : tensor<4xf64>
  %s2 = tidu.add %s1, %a2 : tensor<4xf64>
  %s3 = tidu.add %s2, %a3 : tensor<4xf64>
  %s4 = tidu.add %s3, %a4 : tensor<4xf64>
  %s5 = tidu.add %s4, %a5 : tensor<4xf64>
  func.return %s5 : tensor<4xf64>
}
"""


@pytest.mark.parametrize(("limit", "kernels"), [(1000, 1), (6, 3)])
def test_a_kernel_never_passes_the_arity_limit(
    ctx: Context, parse: Callable[[str], ModuleOp], monkeypatch: pytest.MonkeyPatch,
    limit: int, kernels: int,
) -> None:  # fmt: skip
    monkeypatch.setattr(tidu_fusion_groups, "KERNEL_ARITY_LIMIT", limit)
    module = run_pipeline(ctx, parse(CHAIN), "tidu-fuse-elementwise")
    fused = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert len(fused) == kernels
    assert all(len(k.operands) + len(k.results) <= limit for k in fused)
    run_pipeline(ctx, module, "tidu-lower-to-loops")
    args = [np.arange(4.0) + 10 * i for i in range(6)]
    (total,) = run_node(module, compile_kernels(module), args)
    np.testing.assert_array_equal(total, sum(args))

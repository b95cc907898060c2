"""Control-flow primitives for the op table's cases: small bodies built from ops.

``scan_op`` is an RNN cell ``c' = tanh(c * k + x), y = c' * x`` (complex: the
holomorphic ``c' = exp(c * k) + x``), ``cond_op`` picks ``a * b`` or ``exp(a) + b``, and
``while_op`` doubles an integer carry until its sum reaches a bound.
"""

from __future__ import annotations

from tidu_compile import ops
from tidu_compile.ops import TensorType
from tidu_compile.ops.loop_body import Body, BodyBuilder


def scan_body(shape: tuple[int, ...], dtype: str) -> Body:
    t = TensorType(shape, dtype)
    b = BodyBuilder([t, t, t])
    k, c, x = b.inputs
    (ck,) = b.operation(ops.Mul(), [c, k])
    if dtype.startswith("complex"):
        (e,) = b.operation(ops.Exp(), [ck])
        (new,) = b.operation(ops.Add(), [e, x])
    else:
        (s,) = b.operation(ops.Add(), [ck, x])
        (new,) = b.operation(ops.Tanh(), [s])
    (y,) = b.operation(ops.Mul(), [new, x])
    return b.finish([new, y])


def scan_op(shape: tuple[int, ...], dtype: str, length: int, *, reverse: bool = False,
            saves: bool = False) -> ops.Scan:  # fmt: skip
    body = scan_body(shape, dtype)
    if saves:
        body = ops.Scan(body, 1, 1, length).history_body()
    return ops.Scan(body, 1, 1, length, reverse, saves)


def cond_op(shape: tuple[int, ...], dtype: str) -> ops.Cond:
    t = TensorType(shape, dtype)
    first, second = BodyBuilder([t, t]), BodyBuilder([t, t])
    (product,) = first.operation(ops.Mul(), first.inputs)
    (e,) = second.operation(ops.Exp(), [second.inputs[0]])
    return ops.Cond(first.finish([product]), second.finish([second.add(e, second.inputs[1])]))


def while_op(shape: tuple[int, ...]) -> ops.WhileLoop:
    """``while sum(c) < bound: c = c + c + one`` on int64 (``bound`` and ``one`` 0-d)."""
    bound, carry = TensorType((), "int64"), TensorType(shape, "int64")
    test = BodyBuilder([bound, carry])
    (total,) = test.operation(ops.ReduceSum(tuple(range(len(shape))), shape), [test.inputs[1]])
    (below,) = test.operation(ops.Compare("lt"), [total, test.inputs[0]])
    step = BodyBuilder([carry, carry])
    one, c = step.inputs
    return ops.WhileLoop(test.finish([below]), step.finish([step.add(step.add(c, c), one)]), 1)

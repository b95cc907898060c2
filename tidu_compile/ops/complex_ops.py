"""Complex parts, dtype conversions and constants.

For a real loss of complex ``z`` the gradient is ``2 dL/dconj(z)`` (PyTorch's
convention). With ``ct_z = ct_y * conj(df/dz) + conj(ct_y) * df/dconj(z)``:

* ``conj``:  ``ct_z = conj(ct_y)``
* ``real``:  ``ct_z = ct_y + 0j``           (``Re z = (z + conj z)/2``)
* ``imag``:  ``ct_z = 1j * ct_y``           (``Im z = (z - conj z)/2i``)
* ``to_complex`` (``x -> x + 0j``): ``ct_x = Re(ct_y)``; imaginary (``x -> 1j x``):
  ``ct_x = Im(ct_y)``.
"""

from __future__ import annotations

import numpy as np

from tidu_compile.ad import ADRuleError, ADRuleKind
from tidu_compile.ops.base import (
    COMPLEX_DTYPES,
    DIFFERENTIABLE_DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    TensorOp,
    TensorType,
    complex_dtype_of,
    exact_dtype,
    linear,
    primitive,
    real_dtype_of,
)
from tidu_compile.ops.batching import batch_elementwise


@primitive
class Conj(TensorOp):
    """``conj(x)``; the identity on real dtypes. Linear (over the reals)."""
    batch_rule = batch_elementwise

    input_count = 1

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        self.check_dtype(inputs[0], DIFFERENTIABLE_DTYPES)
        return (inputs[0],)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        return (np.conj(x) if np.iscomplexobj(x) else x,)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, Conj(), [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, Conj(), [cts[0]], (True,))]


@primitive
class Real(TensorOp):
    """``Re(z)``: complex -> real of the same precision."""
    batch_rule = batch_elementwise

    input_count = 1

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        self.check_dtype(inputs[0], COMPLEX_DTYPES)
        return (TensorType(inputs[0].shape, real_dtype_of(inputs[0].dtype)),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.array(arrays[0].real, order="C"),)  # ascontiguousarray makes 0-d 1-d

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, Real(), [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, ToComplex(False), [cts[0]], (True,))]


@primitive
class Imag(TensorOp):
    """``Im(z)``: complex -> real of the same precision."""
    batch_rule = batch_elementwise

    input_count = 1

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        return Real().infer_types(*inputs)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.array(arrays[0].imag, order="C"),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, Imag(), [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        return [linear(b, ToComplex(True), [cts[0]], (True,))]


@primitive
class ToComplex(TensorOp):
    """Real -> complex of the same precision: ``x + 0j``, or ``1j * x`` when ``imaginary``."""
    batch_rule = batch_elementwise

    imaginary: bool
    input_count = 1

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        self.check_dtype(inputs[0], FLOAT_DTYPES)
        return (TensorType(inputs[0].shape, complex_dtype_of(inputs[0].dtype)),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        x = arrays[0]
        out = np.zeros(x.shape, dtype=complex_dtype_of(x.dtype.name))
        if self.imaginary:
            out.imag = x
        else:
            out.real = x
        return (out,)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        part = Imag() if self.imaginary else Real()
        return [linear(b, part, [cts[0]], (True,))]


@primitive
class Convert(TensorOp):
    """Change precision (f32 <-> f64, c64 <-> c128), real -> complex of one precision,
    integer or bool -> real or integer, real -> integer (numpy's ``astype``: towards zero;
    integers wrap). A result or operand of an integer or bool dtype carries no tangent.
    A bool result is ``x != 0`` (a ``Compare``), not a conversion."""
    batch_rule = batch_elementwise

    dtype: str
    operand_dtype: str
    input_count = 1

    def __post_init__(self) -> None:
        pair = (self.operand_dtype, self.dtype)
        same_kind = {*pair} <= {*FLOAT_DTYPES} or {*pair} <= {*COMPLEX_DTYPES}
        widening = self.operand_dtype in FLOAT_DTYPES and self.dtype == complex_dtype_of(
            self.operand_dtype
        )
        exact = exact_dtype(self.operand_dtype) or self.operand_dtype in FLOAT_DTYPES
        to_exact = exact and self.dtype in INTEGER_DTYPES + FLOAT_DTYPES
        if not (same_kind or widening or to_exact):
            raise TypeError(
                f"Convert: cannot convert {self.operand_dtype} to {self.dtype} "
                "(use real/imag for complex -> real, x != 0 for bool)"
            )

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        if inputs[0].dtype != self.operand_dtype:
            raise TypeError(
                f"{self!r}: input has dtype {inputs[0].dtype}, expected {self.operand_dtype}"
            )
        return (TensorType(inputs[0].shape, self.dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (arrays[0].astype(self.dtype),)

    def oracle(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (arrays[0].astype(self.dtype),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        if exact_dtype(self.dtype) or exact_dtype(self.operand_dtype):
            return [None]
        return [linear(b, self, [ts[0]], (True,))]

    def transpose_rule(self, b, cts, inputs, role, ctx):
        if self.operand_dtype in FLOAT_DTYPES and self.dtype in COMPLEX_DTYPES:
            return [linear(b, Real(), [cts[0]], (True,))]
        return [linear(b, Convert(self.operand_dtype, self.dtype), [cts[0]], (True,))]


@primitive
class Constant(TensorOp):
    """A tensor of shape ``shape`` filled with ``value``; no inputs."""
    batch_rule = batch_elementwise

    value: complex | float
    shape: tuple[int, ...]
    dtype: str
    input_count = 0
    library_call = True  # a filled buffer, not a kernel

    def __post_init__(self) -> None:
        if self.dtype not in DIFFERENTIABLE_DTYPES:
            raise TypeError(f"Constant: dtype {self.dtype!r} is not one of {DIFFERENTIABLE_DTYPES}")
        if isinstance(self.value, complex) and self.dtype not in COMPLEX_DTYPES:
            raise TypeError(f"Constant: complex value {self.value} needs a complex dtype")

    def infer_types(self, *inputs: TensorType) -> tuple[TensorType, ...]:
        self.check_arity(inputs)
        return (TensorType(tuple(self.shape), self.dtype),)

    def evaluate(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.full(self.shape, self.value, dtype=self.dtype),)

    def jvp_rule(self, b, xs, ys, ts, ctx):
        raise ADRuleError.invalid_input(self, ADRuleKind.JVP, "a constant has no inputs")

    def transpose_rule(self, b, cts, inputs, role, ctx):
        """A zero tangent made linear (``Linearized(())``: a loop's carry that starts at
        zero) sends nothing back: it has no inputs."""
        return []
